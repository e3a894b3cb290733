"""bench/markov/fuzz_stationary.py --smoke runs end to end and finds no answer outside its bound (issue 11)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_fuzz_stationary_smoke():
    run = subprocess.run([sys.executable, "-m", "bench.markov.fuzz_stationary", "--smoke", "--json"],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)  # stdout is only the record: nothing a dependency printed
    assert rec["passed"] and rec["wild"]["calls"] == 32 and rec["blocks"]["calls"] == 24
