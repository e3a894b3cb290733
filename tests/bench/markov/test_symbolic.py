"""bench/markov/symbolic.py --smoke runs, verifies, and prints its tables (so the benchmark cannot rot)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MODULE = "bench.markov.symbolic"


def test_bench_symbolic_smoke(tmp_path: Path):
    out = subprocess.run(
        [sys.executable, "-m", MODULE, "--smoke", "--out", str(tmp_path / "bench.json")],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "side by side" in out.stdout and "passed: True" in out.stdout
    record = json.loads((tmp_path / "bench.json").read_text())
    assert record["passed"] and all(r["verified"] for r in record["targets"])
    # every baseline that finished found the same p_st as the tree formula
    for entry in record["comparison"]:
        for method in ("minors", "nullspace"):
            assert entry[method].get("agrees_with_tree") in (True, None)
