"""bench/networks/transient.py --smoke runs end to end and its record holds (the closed forms inside the bounds)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_bench_transient_smoke(tmp_path):
    out = tmp_path / "transient.json"
    run = subprocess.run([sys.executable, "-m", "bench.networks.transient", "--smoke", "--json",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text())
    p, b, leak = rec["poisson"], rec["birth_death"], rec["leak"]
    assert p["max_relative_error"] <= 1e-9 and p["l1_error_over_bound"] <= 1.0 and p["mean_inside"] and p["sd_inside"]
    assert b["mean_inside"] and b["sd_inside"] and leak["identity_holds"]
    assert rec["adaptive"]["last_bounds"]["A"] > rec["adaptive"]["first_bounds"]["A"]
    iv = rec["intervals"]
    for name in ("M", "P"):
        auto = iv["mp"]["species"][name]["auto"]
        assert auto["inside"] and auto["status"] == "certified" and max(auto["mean_rel_width"]) <= 1e-6
        assert max(auto["sd_rel_width"]) <= 1e-6 and iv["mp"]["species"][name]["projection"]["inside"]
    misses = iv["immigration_death_sweep"]["misses"]
    assert misses["auto"] == 0 and misses["projection"] == 0 and misses["zero_escape_control"] > 0
