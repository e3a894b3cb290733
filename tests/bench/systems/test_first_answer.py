"""bench/systems/first_answer.py at smoke size: every route runs in its own fresh process and agrees with the reference."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_smoke_times_each_route_and_checks_its_accuracy(tmp_path):
    out, md = tmp_path / "fa.json", tmp_path / "fa.md"
    proc = subprocess.run([sys.executable, "-m", "bench.systems.first_answer", "--smoke", "--out", str(out),
                           "--md", str(md)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    fhn = record["models"]["fhn"]
    # FitzHugh–Nagumo at rtol 1e-8: both answers agree with scipy Radau at rtol 1e-13 to the requested accuracy
    assert fhn["errors"]["sp_ode"] < 1e-6 and fhn["errors"]["scipy LSODA"] < 1e-6
    assert fhn["route"] == "scipy/LSODA"
    for key in ("cold", "cache", "reduced", "import_jax"):
        assert fhn["median"][key] > 0
    assert fhn["ratio_cold"] == fhn["median"]["cold"] / fhn["median"]["scipy"]["LSODA"]
    assert "| fhn |" in md.read_text()
    # records are never overwritten: refused before any work (in this process: the refusal, not a process, is tested)
    import bench.systems.first_answer as bench

    with pytest.raises(SystemExit, match=f"{out.name} exists; choose another --out"):
        bench.main(["--smoke", "--out", str(out)])
