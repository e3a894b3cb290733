"""NetworkSystem.master_equation_system: the dense JAX bridge against the sparse paths (independent machinery)."""
from __future__ import annotations

import numpy as np

import sp_ode
from sp_ode.networks.models import get_network_model
from sp_ode.systems.network import NetworkSystem


def _system(name, eps=1e-2, **kw):
    m = get_network_model(name, **kw)
    return m, NetworkSystem(m.network, m.space(), m.slow, eps=eps)


def test_h1_agrees_with_slow_manifold_of_the_dense_bridge():
    """The invariance-equation series of sp_ode.slow_manifold (JAX forward mode) on the dense bridge."""
    m, s = _system("telegraph", N=12)
    y = np.array([0.8])
    ws = s.stationary_solver()
    p, _ = ws.solve(s.Q(y), y)
    terms = sp_ode.slow_manifold(s.master_equation_system(), order=1).terms(y)
    np.testing.assert_allclose(terms[0], p, atol=1e-12)
    np.testing.assert_allclose(terms[1], s.h1(y, p, ws), atol=1e-9)


def test_sparse_full_solve_matches_the_dense_jax_system():
    m, s = _system("telegraph", N=10, eps=1e-2)
    p0, _ = s.stationary([1.0])
    ts = np.array([0.5, 1.0])
    sparse = s.simulate((0, 1), [1.0], rtol=1e-11, atol=1e-13, t_eval=ts)
    dense = sp_ode.simulate(s.master_equation_system(), (0, 1), p0, np.array([1.0]), ts=ts, rtol=1e-11, atol=1e-13,
                           backend="scipy", method="Radau")
    np.testing.assert_allclose(sparse.y, dense.y, atol=1e-9)
    np.testing.assert_allclose(sparse.x, dense.x, atol=1e-9)
