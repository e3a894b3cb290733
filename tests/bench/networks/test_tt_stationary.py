"""bench/networks/tt_stationary.py --smoke: both routes certified at the same tol, the closed form inside the bounds."""
from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_bench_tt_stationary_smoke(tmp_path, capsys):
    from bench.networks.tt_stationary import main, markdown

    out = tmp_path / "tt.json"
    assert main(["--smoke", "--json", "--out", str(out)]) == 0       # in-process at --smoke
    rec = json.loads(capsys.readouterr().out)
    assert rec == json.loads(out.read_text()) and rec["complete"] and "one process" in rec["note"]
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
