"""bench/networks/dsmts_00033_ssa.py: its independent SSA against the closed form of the model without the event."""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[3]


def _module():
    mod = importlib.import_module("bench.networks.dsmts_00033_ssa")
    return mod


def test_ssa_agrees_with_the_fsp_and_a_broken_trigger_does_not(monkeypatch):
    from sp_ode.networks.cme.transient import transient_distribution
    from sp_ode.networks.events import Event
    from sp_ode.networks.network import ReactionNetwork

    mod = _module()
    net = ReactionNetwork("2 P -> P2, k1; P2 -> 2 P, k2", parameters={"k1": mod.K1, "k2": mod.K2})
    exact = transient_distribution(net, {"P": 100}, mod.GRID, tol=1e-12,
                                   events=[Event("reset", {"P": 100, "P2": 0}, trigger="P2 > 30")])
    n = 2000
    _, P2 = mod.ssa(n, seed=1)
    z = np.sqrt(n) * (P2.mean(axis=1)[1:] - exact.mean("P2")[1:]) / exact.sds()["P2"][1:]
    assert np.abs(z).max() < 4.0                   # 50 standard normal Z_t (DSMTS's statistic; seeded: 2.3)
    # negative control: the SSA with the trigger one molecule late is rejected by the same statistic
    monkeypatch.setattr(mod, "CUT", 31)
    _, P2 = mod.ssa(n, seed=1)
    z = np.sqrt(n) * (P2.mean(axis=1)[1:] - exact.mean("P2")[1:]) / exact.sds()["P2"][1:]
    assert np.abs(z).max() > 8
