"""sp_ode.markov.reference: the exact reference chains used by the accuracy tests and benchmark."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from sp_ode.markov.reference import birth_death_tail, componentwise_error, exact_stationary, ncd_chain


def _exact_residual(Q, p):
    """Qᵀp in rationals, with the diagonal the exact negative off-diagonal row sum (the convention)."""
    n = len(p)
    rate = [[Fraction(float(Q[i, j])) for j in range(n)] for i in range(n)]
    for i in range(n):
        rate[i][i] = -sum(rate[i][j] for j in range(n) if j != i)
    return [sum(rate[i][j] * p[i] for i in range(n)) for j in range(n)]


@pytest.mark.parametrize("delta", [1e-4, 1e-15])
def test_ncd_exact_p_is_exactly_stationary(delta):
    Q, p = ncd_chain(delta)
    assert Q.shape == (12, 12) and len(p) == 12
    assert sum(p) == 1 and min(p) > 0
    assert all(r == 0 for r in _exact_residual(Q, p))
    # Rows sum to zero up to the one rounding of the float diagonal.
    assert np.abs(Q.sum(axis=1)).max() <= 4 * np.finfo(float).eps


def test_birth_death_closed_form_equals_rational_elimination():
    Q, p = birth_death_tail()
    assert exact_stationary(Q) == p  # two independent exact routes: detailed balance vs elimination
    assert 1e-201 < float(p[-1]) < 1e-199


def test_componentwise_error_is_exact():
    p = [Fraction(1, 3), Fraction(2, 3)]
    assert componentwise_error([1 / 3, 2 / 3], p) <= np.finfo(float).eps
    assert componentwise_error([0.5, 0.5], p) == pytest.approx(0.5)


def test_reducible_chain_is_rejected():
    Q = np.array([[0.0, 0.0], [1.0, -1.0]])
    Q2 = np.zeros((3, 3))
    Q2[0, 1], Q2[0, 0] = 1.0, -1.0  # states 1 and 2 both absorbing
    with pytest.raises(ValueError, match="irreducible"):
        exact_stationary(Q2)
    assert exact_stationary(Q) == [1, 0]  # one closed class: still a unique stationary law


@pytest.mark.parametrize(("call", "match"), [
    (lambda: ncd_chain(0.0), "`delta` must be in"),
    (lambda: ncd_chain(1e-3, n_blocks=1), "n_blocks >= 2"),
    (lambda: birth_death_tail(1), "`n` must be >= 2"),
    (lambda: birth_death_tail(60), "underflows"),
])
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
