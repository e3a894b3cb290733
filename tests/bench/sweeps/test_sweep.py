"""bench/sweeps/sweep.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.sweeps import gpu

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_bench_sweep_smoke(tmp_path):
    """Each contender ran in a fresh process at the loosest ladder rtol meeting tol (the ones before it
    missed), the sweep met tol against the independent Radau reference, and the verdict is computed."""
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "-m", "bench.sweeps.sweep", "--smoke", "--json",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text())  # the file records every printed number
    [case] = rec["cases"]
    assert case["points"] == 8 and case["range"] == "all"
    sweep = case["contenders"]["sweep"]
    assert sweep["max_error_on_reference"] <= rec["tol"] and sweep["summary"]["failed"] == 0
    assert sweep["process_s"] > sweep["work_s"] > 0 and sweep["import_s"] > 0
    assert set(case["contenders"]) == {"sweep", "numpy_LSODA"}  # --smoke: one baseline, one child process fewer
    c = case["contenders"]["numpy_LSODA"]
    assert c["max_error_on_reference"] <= rec["tol"]
    tried = [e for _, e in case["choices"]["numpy_LSODA"]["tried"]]
    assert all(e > rec["tol"] for e in tried[:-1]) and tried[-1] <= rec["tol"]
    v = case["verdict"]
    assert v["faster_baseline"] == "numpy_LSODA" and v["ratio_sweep_to_faster_baseline"] > 0


@pytest.mark.slow
def test_bench_sweep_network_smoke(tmp_path):
    """The network sweep meets tol against its BDF reference; the baseline ran at its loosest rtol."""
    out = tmp_path / "net.json"
    run = subprocess.run([sys.executable, "-m", "bench.sweeps.network", "--smoke", "--json",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text())
    [case] = rec["cases"]
    assert case["n"] == 36 and case["sweep"]["within_tol_on_reference"]
    assert case["fastest_full"] in ("BDF", "Radau") and case["speedup_vs_fastest_full_loop"] > 0
    base = case["baselines"][case["fastest_full"]]
    assert base["error"] <= case["tol"] and all(e > case["tol"] for _, e in base["tried"][:-1])


@pytest.mark.slow
def test_gpu_sweep_code_path_on_cpu(tmp_path):
    """The prepared GPU script runs end to end on the CPU device, and its sweep meets tol against Radau."""
    out = tmp_path / "gpu.json"
    # in this process: the script sets no global state (its device and float64 are scoped `with` blocks)
    assert gpu.main(["--device", "cpu", "--smoke", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    mm = rec["systems"]["mm"]
    assert rec["platform"] == "cpu" and mm["points"] == 8
    assert mm["sweep_max_error"] <= rec["tol"] and mm["vmap_max_error"] <= rec["tol"]
    assert mm["summary"]["failed"] == 0


def test_gpu_sweep_skips_cleanly_without_a_gpu(capsys):
    assert gpu.main(["--smoke"]) == 0
    assert "skipped" in capsys.readouterr().out
