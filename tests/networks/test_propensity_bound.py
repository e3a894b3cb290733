"""sp_ode.networks.cme._propensity_bound: certified sup of a propensity over the counts.

Provenance: the suprema are known in closed form — a/(1 + (B/K)^h) → a (at B = 0), V·S/(K + S) → V
(S → ∞), a·S²/(K² + S²) → a — and a bound may exceed them only by the outward rounding (≤ 1e-13 relative).
"""
from __future__ import annotations

import pytest
import sympy

from sp_ode.networks.cme._propensity_bound import propensity_sup

A, B, S, E = sympy.symbols("A B S E")


@pytest.mark.parametrize("expr, sup", [
    (20 / (1 + (B / 6.0) ** 3.0), 20.0),
    (3.5 * S / (0.7 + S), 3.5),
    (9 * S**2 / (4 + S**2), 9.0),
    (sympy.Float(2.5), 2.5),
    (4 * sympy.exp(-S), 4.0),
])
def test_bounded_propensities_have_a_certified_sup(expr, sup):
    K = propensity_sup(expr, [A, B, S, E])
    assert K is not None and sup <= K <= sup * (1 + 1e-13)


@pytest.mark.parametrize("expr", [S, 3 * S * E / (1 + S), S**2 / (1 + S), 1 / S, sympy.Max(S, 1)])
def test_unbounded_or_unproved_propensities_give_none(expr):
    # S/(1 + S) · E grows with E; S²/(1 + S) grows with S; 1/S is infinite at S = 0; Max is not handled
    assert propensity_sup(expr, [A, B, S, E]) is None
