"""bench/markov/stationary_choice.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_bench_stationary_choice_smoke(tmp_path):
    out = tmp_path / "choice.json"
    run = subprocess.run([sys.executable, "-m", "bench.markov.stationary_choice", "--smoke",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(out.read_text())
    assert [r["case"] for r in rec["cases"]] == ["toggle N=20", "cascade N=20"]
    for row in rec["cases"]:    # every method timed, the default's choice recorded with its predictions
        assert set(row["methods"]) == {"banded", "gth", "sparse"} and row["default"]["chosen"]
        assert set(row["predicted_seconds"]) == {"banded", "gth", "sparse"}
    (cert,) = rec["certified"]
    assert cert["status"] == "certified" and cert["exact_l1_error"] <= cert["bound"] <= 1e-6
    assert cert["bound"] >= cert["truncation"] > 0 and cert["linear_algebra"] < cert["truncation"]
