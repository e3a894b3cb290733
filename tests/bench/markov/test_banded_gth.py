"""bench/markov/banded_gth.py runs at smoke size and its record holds what it prints."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_bench_banded_gth_smoke(tmp_path):
    out = tmp_path / "banded.json"
    r = subprocess.run([sys.executable, "-m", "bench.markov.banded_gth", "--smoke", "--out", str(out)],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    rows = json.loads(out.read_text())["rows"]
    assert {row["requested"] for row in rows} == {"banded", "sparse", "gth"}
    for row in rows:  # every accepted answer is within its bound and componentwise accurate
        assert row["l1_error"] <= row["bound"]
        assert row["max_rel_error"] <= 1e-12
