"""bench/systems/cold_commands.py at smoke size: a cold `sp-ode demo --smoke` passes and its time is recorded."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_smoke_runs_the_demo_cold_and_records_its_verdict(tmp_path):
    out = tmp_path / "cold.json"
    proc = subprocess.run([sys.executable, "-m", "bench.systems.cold_commands", "--smoke", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    record = json.loads(out.read_text())
    (run,) = record["runs"]["demo_smoke"]
    assert run["returncode"] == 0 and "PASSED" in run["verdict"] and run["wall"] > 0
    assert record["summary"]["demo_smoke"]["all_passed"] is True
