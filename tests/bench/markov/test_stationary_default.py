"""bench/markov/stationary_default.py runs at smoke size and its record holds what it prints."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_bench_stationary_default_smoke(tmp_path):
    out = tmp_path / "default.json"
    r = subprocess.run([sys.executable, "-m", "bench.markov.stationary_default", "--smoke", "--repeat", "1",
                        "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    record = json.loads(out.read_text())
    assert record["command"].endswith("--smoke --repeat 1") and len(record["rows"]) == 3
    for row in record["rows"]:
        # the default route is entrywise accurate on every case, whatever method it took
        assert row["default_method"] in ("banded", "gth", "sparse") and row["default_tail_error"] <= 1e-10
        assert row["default_componentwise_bound"] is not None
        assert row["default_tail_error"] <= row["default_componentwise_bound"] + 1e-12
    assert set(record["fitted"]) == {"banded", "banded_blocked", "gth", "sparse"}
