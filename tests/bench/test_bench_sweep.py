"""bench/bench_sweep.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bench_sweep_smoke(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_sweep.py"), "--smoke", "--json",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text())  # the file records every printed number
    assert rec["points"] == 8 and rec["scipy_subset"] == 2
    # the sweep meets tol against the independent Radau reference
    assert rec["sweep"]["max_error_on_reference_points"] <= rec["tol"]
    assert rec["sweep"]["summary"]["failed"] == 0
    # every baseline ran at the loosest ladder rtol meeting tol (the ones before it missed)
    choices = [rec["vmap_kvaerno5"]] + [v for v in rec["scipy_loop"].values()]
    for choice in choices:
        assert choice["error"] <= rec["tol"]
    errors = [e for _, e in rec["vmap_kvaerno5"]["tried"]]
    assert all(e > rec["tol"] for e in errors[:-1])
    # cost per ε decade: one row per decade present, both methods timed
    rows = rec["cost_by_eps_decade"]
    assert rows and all(r["vmap_ms_per_point"] > 0 and r["sweep_ms_per_point"] > 0 for r in rows)


def test_gpu_sweep_code_path_on_cpu(tmp_path):
    """The prepared GPU script runs end to end on the CPU device, and its sweep meets tol against Radau."""
    out = tmp_path / "gpu.json"
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_sweep.py"), "--device", "cpu", "--smoke",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(out.read_text())
    mm = rec["systems"]["mm"]
    assert rec["platform"] == "cpu" and mm["points"] == 8
    assert mm["sweep_max_error"] <= rec["tol"] and mm["vmap_max_error"] <= rec["tol"]
    assert mm["summary"]["failed"] == 0


def test_gpu_sweep_skips_cleanly_without_a_gpu():
    run = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_sweep.py"), "--smoke"], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "skipped" in run.stdout
