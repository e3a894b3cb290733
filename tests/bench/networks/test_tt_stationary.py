"""bench/networks/tt_stationary.py --smoke: both routes certified at the same tol, the closed form inside the bounds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_bench_tt_stationary_smoke(tmp_path):
    from bench.networks.tt_stationary import markdown

    out = tmp_path / "tt.json"
    run = subprocess.run([sys.executable, "-m", "bench.networks.tt_stationary", "--smoke", "--json", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text()) and rec["complete"]
    by = {c["route"]: c for c in rec["cases"]}
    assert set(by) == {"tt", "sparse"}
    for c in by.values():
        # the Poisson product (Jahnke & Huisinga) inside each route's certified bound, at the same tol
        assert c["status"] == "certified" and c["bound"] <= rec["tol"] and c["bound_holds"]
        assert c["worst_marginal_max"] <= 1e-8
    assert by["tt"]["n"] >= by["sparse"]["n"]               # the TT box: every side raised to 2^L − 1
    assert all(((b + 1) & b) == 0 for b in by["tt"]["box"])
    table = markdown(rec)
    assert table.count("\n| smoke |") == 2 and "Sparse seconds over TT seconds: smoke:" in table
