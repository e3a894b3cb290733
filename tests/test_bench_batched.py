"""bench/bench_batched.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_batched_smoke(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_batched.py"), "--smoke", "--json",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text())  # the file records every printed number
    assert rec["batch"] == 4 and rec["scipy_loop"]["subset"] == 2 and rec["scipy_loop"]["extrapolated"]
    assert rec["diffrax_vmap"]["all_succeeded"] and rec["scipy_loop"]["all_succeeded"]
    # the vmapped diffrax sweep and the scipy loop solve the same problems to rtol 1e-8
    assert rec["max_abs_diff_vmap_vs_scipy"] <= 1e-6
    assert rec["diffrax_vmap"]["compile_s"] > 0 and rec["diffrax_vmap"]["solve_s"] > 0
    assert rec["ratio_scipy_loop_over_vmap"] > 0 and isinstance(rec["target"]["met"], bool)
