"""sp_ode.networks.cme._closed_moments: the exact moments of an affine CME, enclosed.

Provenance: a conversion A ⇌ B (rates k₁A, k₂B) from A(0) = n moves each molecule as an independent
two-state chain, so A(t) ~ Binomial(n, q(t)), q(t) = (k₂ + k₁e^{−(k₁+k₂)t})/(k₁ + k₂), and
Cov(A, B) = −n q(1 − q) (the negative covariance exercises the Σ⁺ − Σ⁻ split).  Immigration–death:
Poisson((a/m)(1 − e^{−mt})) at every horizon, including one where e^{−mt} underflows.
"""
from __future__ import annotations

import numpy as np
import pytest

from sp_ode.networks.cme._closed_moments import ClosedMoments
from sp_ode.networks.network import ReactionNetwork


def _at(cm, x0, times):
    z0 = cm.initial(np.array([x0], dtype=np.int64), np.array([1.0]))
    return cm.propagate(z0, np.asarray(times, dtype=float))


def test_conversion_binomial_law_with_its_negative_covariance():
    k1, k2, n = 2.0, 0.5, 30
    net = ReactionNetwork("A -> B, k1; B -> A, k2", parameters={"k1": k1, "k2": k2})
    cm = ClosedMoments(net, np.zeros(0))
    assert cm.available and cm.reason == ""
    ts = np.array([0.0, 0.1, 1.0, 10.0, 1000.0])
    lo, hi = _at(cm, [n, 0], ts)
    q = (k2 + k1 * np.exp(-(k1 + k2) * ts)) / (k1 + k2)
    (mlo, mhi), (vlo, vhi) = cm.observable(lo, hi, np.array([1.0, 0.0]), 0.0)
    assert np.all((mlo <= n * q) & (n * q <= mhi)) and np.all(mhi - mlo <= 1e-8 * n)   # ~1e-14·Λt
    var = n * q * (1 - q)
    assert np.all((vlo <= var + 1e-300) & (var <= vhi)) and np.all(vhi - vlo <= 1e-9 * n * (1 + (k1 + k2) * ts))
    # (the width grows with t here: Σ⁺ and Σ⁻ each grow along the conserved direction A + B, their difference
    # does not — still ~3e-6 relative at (k1 + k2)t = 2500)
    # A + B is conserved: its variance is 0, enclosed in [0, tiny]; A − B has variance 4 Var A
    (_, _), (slo, shi) = cm.observable(lo, hi, np.array([1.0, 1.0]), 0.0)
    assert np.all(slo == 0.0) and np.all(shi <= 1e-9 * n * n * (1 + (k1 + k2) * ts))
    (_, _), (vlo, vhi) = cm.observable(lo, hi, np.array([1.0, -1.0]), 0.0)
    assert np.all((vlo <= 4 * var) & (4 * var <= vhi))
    # negative control: the covariance's sign matters — taking Var(A + B) = 2 Var A (no covariance) is outside
    assert np.all(2 * var[1:] > shi[1:])


def test_immigration_death_poisson_at_long_horizons():
    net = ReactionNetwork("0 -> X, 7; X -> 0, 0.5")
    cm = ClosedMoments(net, np.zeros(0))
    ts = np.array([0.5, 5.0, 50.0, 5000.0])
    lo, hi = _at(cm, [3], ts)
    lam = 14 * (1 - np.exp(-0.5 * ts)) + 3 * np.exp(-0.5 * ts)          # Poisson part + surviving initials
    var = 14 * (1 - np.exp(-0.5 * ts)) + 3 * np.exp(-0.5 * ts) * (1 - np.exp(-0.5 * ts))
    (mlo, mhi), (vlo, vhi) = cm.observable(lo, hi, np.array([1.0]), 0.0)
    assert np.all((mlo <= lam) & (lam <= mhi)) and np.all((vlo <= var) & (var <= vhi))
    assert np.all((mhi - mlo) / lam <= 1e-8)


@pytest.mark.parametrize("reactions, why", [
    ("0 -> A, 1; 2 A -> 0, 1", "not affine"),
    ("0 -> A, 1; A => 0, 2", "does not vanish"),
    ("0 -> A, 1; A -> 0, 1; 0 -> B, 1; B => A, 0.1*A", "does not vanish"),
])
def test_moment_equations_that_do_not_close_are_refused_with_the_reason(reactions, why):
    cm = ClosedMoments(ReactionNetwork(reactions), np.zeros(0))
    assert not cm.available and why in cm.reason
