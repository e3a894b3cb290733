"""bench/markov/nested_claims.py --smoke runs and finds every claim TRUE both ways (so the benchmark cannot rot)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MODULE = "bench.markov.nested_claims"


def test_bench_nested_claims_smoke(tmp_path: Path):
    out = subprocess.run([sys.executable, "-m", MODULE, "--smoke", "--out", str(tmp_path / "b.json")],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    record = json.loads((tmp_path / "b.json").read_text())
    assert record["passed"] and [r["L"] for r in record["rows"]] == [3, 4]
    assert all(r["nested_as_written"]["true"] and r["together_first"]["true"] for r in record["rows"])
