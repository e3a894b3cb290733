"""bench/networks/transient_vs_ssa.py --smoke runs end to end: GillesPy2's dimerisation example, certified p(t)
against GillesPy2's SSA (200 trajectories, 11 output times), the record's structure and agreement."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
pytest.importorskip("gillespy2")


@pytest.mark.slow
def test_bench_transient_vs_ssa_smoke(tmp_path):
    out = tmp_path / "transient_vs_ssa.json"
    run = subprocess.run([sys.executable, "-m", "bench.networks.transient_vs_ssa", "--smoke", "--json",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text())
    assert rec["tol"] == 1e-6 and rec["trajectories"] == 200
    assert rec["ssa_solver"] in ("SSACSolver", "NumPySSASolver") and (rec["ssa_solver"] == "SSACSolver") == (
        rec["ssa_solver_why"] is None)                             # a fallback always says why
    (row,) = rec["models"]
    assert row["model"] == "dimerization" and row["status"] == "compared" and row["times"] == 11
    assert row["n_states"] == 16                                   # monomer + 2·dimer = 30: dimer ∈ {0 … 15}
    assert row["certified_within_tol"] and 0 <= row["certified_l1"] <= rec["tol"]
    assert row["trajectories"] == 200 and row["ssa_solver"] == rec["ssa_solver"]
    assert 0 <= row["z_max"]["mean"] <= 4.0 and 0 <= row["z_max"]["sd"] <= 4.0
    # the SSA's standard error of a mean, σ/√200 with σ ≤ 7.5 (dimer ∈ [0, 15]), far above the certified ℓ1 bound
    assert row["certified_l1"] < 1e-3 * row["ssa_standard_error"] and row["ssa_standard_error"] <= 7.5 / np.sqrt(200)
    for side in ("certified_seconds", "ssa_seconds"):
        assert all(v > 0 for v in row[side].values())
    assert row["ratio_cold"] == pytest.approx(row["ssa_seconds"]["process"] / row["certified_seconds"]["process"])


def test_z_scores_reject_a_wrong_law():
    # negative control: the same comparison against a law whose mean is off by one SSA standard error × 10
    from bench.networks.transient_vs_ssa import z_scores

    n = 10_000
    cert = {"moments": {"X": {"mean": [0.0, 5.0], "sd": [0.0, 2.0], "m4": [0.0, 3 * 2.0**4]}}}
    exact = {"trajectories": n, "stats": {"X": {"mean": [0.0, 5.0], "sd": [0.0, 2.0]}}}
    off = {"trajectories": n, "stats": {"X": {"mean": [0.0, 5.0 + 10 * 2.0 / np.sqrt(n)], "sd": [0.0, 2.0]}}}
    assert z_scores(cert, exact)["mean"] == 0.0 and z_scores(cert, exact)["sd"] == 0.0
    assert z_scores(cert, off)["mean"] == pytest.approx(10.0)
    assert z_scores(cert, exact)["ssa_standard_error"] == pytest.approx(2.0 / np.sqrt(n))
    moved = {"trajectories": n, "stats": {"X": {"mean": [1.0, 5.0], "sd": [0.0, 2.0]}}}   # σ = 0 at t = 0, SSA moved
    assert z_scores(cert, moved)["mean"] == float("inf")


def test_without_scons_the_ssa_is_numpys_and_says_why(monkeypatch):
    from bench.networks import transient_vs_ssa as mod

    monkeypatch.setattr(mod.shutil, "which", lambda name, path=None: None)
    monkeypatch.setattr(mod, "find_spec", lambda name: None)
    assert mod.ssa_solver_name() == ("NumPySSASolver", "SCons (GillesPy2's C++ build tool) is not installed")
