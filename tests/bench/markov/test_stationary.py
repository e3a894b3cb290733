"""bench/markov/stationary.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json

from bench.markov import stationary


def test_bench_stationary_smoke(tmp_path, capsys):
    out = tmp_path / "bench.json"
    # in this process: the script sets no global state (its sparse cases run in children of their own)
    assert stationary.main(["--smoke", "--json", "--out", str(out)]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec == json.loads(out.read_text())  # the file records every printed number
    # Accuracy target (issue 2): gth within 1e-14 of the exact rational p* on every case.
    assert rec["accuracy"] and all(r["gth"] <= 1e-14 for r in rec["accuracy"])
    # The baseline loses digits on the δ = 1e-15 NCD chain — the benchmark measures a real contrast.
    assert max(r["numpy_lu"] for r in rec["accuracy"]) > 1e-6
    assert {r["n"] for r in rec["dense_speed"]} == {200}
    rows = {r["solver"]: r for r in rec["sparse_scale"]}
    assert set(rows) == {"amg", "spsolve_pinned", "spsolve_bordered"}
    amg = rows["amg"]
    assert amg["negatives"] == 0 and amg["converged"] and amg["relative_residual"] <= 1e-10
    # AMG-GMRES vs SuperLU on the same pinned system: agreement at the GMRES tolerance.
    assert rows["spsolve_pinned"]["max_abs_diff_vs_amg_over_max_p"] <= 1e-9
    assert rec["targets"]["sparse_negatives"]["met"]
    # Issue 11: the bound holds (≥ the exact ℓ1 error) in every row, raw and escalated.
    assert rec["bounds"] and all(r["bound_holds"] for r in rec["bounds"])
    assert {r["method"] for r in rec["bounds"]} == {"gth", "solve", "sparse", "jax"}
    assert rec["bound_cost"] and rec["targets"]["bound_holds_every_row"]["met"]
