"""Invariants written once and applied across tests."""
from __future__ import annotations

import numpy as np

EPS = np.finfo(np.float64).eps


def assert_distribution(p, *, atol: float | None = None) -> None:
    """p is a float64 probability vector (last axis): entries ≥ 0, sum 1 to rounding."""
    p = np.asarray(p)
    assert p.dtype == np.float64, p.dtype
    assert np.all(np.isfinite(p)), p
    assert np.all(p >= 0), p.min()
    n = p.shape[-1]
    tol = atol if atol is not None else 8 * n * EPS
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=0, atol=tol)


def stationary_tolerance(Q, c: float = 50.0) -> float:
    """‖Qᵀp‖∞ that rounding alone explains: c · n · eps · max|Q|."""
    Q = np.asarray(Q.toarray() if hasattr(Q, "toarray") else Q)
    return c * Q.shape[-1] * EPS * float(np.max(np.abs(Q)))


def assert_stationary(Q, p, c: float = 50.0) -> None:
    """Qᵀp = 0 within a tolerance scaled to the rates, and p a distribution."""
    assert_distribution(p)
    Qd = np.asarray(Q.toarray() if hasattr(Q, "toarray") else Q)
    residual = np.max(np.abs(Qd.T @ p))
    assert residual <= stationary_tolerance(Qd, c), (residual, stationary_tolerance(Qd, c))


def max_rel_error(p, ref) -> float:
    """Componentwise relative error max_i |p_i − r_i| / r_i (ref > 0)."""
    p, ref = np.asarray(p, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    return float(np.max(np.abs(p - ref) / ref))


def convergence_order(hs, errors) -> float:
    """Least-squares slope of log(error) against log(h): the observed order."""
    hs, errors = np.log(np.asarray(hs, float)), np.log(np.asarray(errors, float))
    return float(np.polyfit(hs, errors, 1)[0])
