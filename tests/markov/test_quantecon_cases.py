"""QuantEcon.py's own ``gth_solve`` test cases (quantecon/markov/tests/test_gth_solve.py), ported.

Their matrices and expected values: P = [[0.4, 0.6], [0.2, 0.8]] → (1/4, 3/4);
the generator [[−3, 3], [4, −4]] → (4/7, 3/7); the KMR matrices with sequential moves
(N = 27, p = 1/3, ε = 1e-2 and N = 3, ε = 1e-14), for which QuantEcon checks only
xP = x to 1e-15 — here they are checked entrywise against the exact product formula
(birth–death, docs/theory.md §6); the reducible [[0.5, 0.5], [0, 1]] → (0, 1) and the
identity, whose stationary distributions are one per closed class.
A transition matrix P enters as the generator Q = P − I (same stationary law).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import sp_ode
from sp_ode.markov.reference import exact_stationary


def kmr_sequential(N: int, p: float, epsilon: float) -> np.ndarray:
    """QuantEcon's KMR_Markov_matrix_sequential, same formulas."""
    P = np.zeros((N + 1, N + 1))
    P[0, 0], P[0, 1] = 1 - epsilon * (1 / 2), epsilon * (1 / 2)
    for n in range(1, N):
        P[n, n - 1] = (n / N) * (epsilon * (1 / 2) + (1 - epsilon) * (((n - 1) / (N - 1) < p)
                                                                     + ((n - 1) / (N - 1) == p) * (1 / 2)))
        P[n, n + 1] = ((N - n) / N) * (epsilon * (1 / 2) + (1 - epsilon) * ((n / (N - 1) > p)
                                                                           + (n / (N - 1) == p) * (1 / 2)))
        P[n, n] = 1 - P[n, n - 1] - P[n, n + 1]
    P[N, N - 1], P[N, N] = epsilon * (1 / 2), 1 - epsilon * (1 / 2)
    return P


def generator_of(P: np.ndarray) -> np.ndarray:
    Q = np.array(P, dtype=float)
    np.fill_diagonal(Q, 0.0)
    np.fill_diagonal(Q, -Q.sum(axis=1))
    return Q


def product_formula(P: np.ndarray) -> list[Fraction]:
    """Exact p for a birth–death P: p_{k+1}/p_k = P[k, k+1]/P[k+1, k], in rationals of the float entries."""
    w = [Fraction(1)]
    for k in range(P.shape[0] - 1):
        w.append(w[-1] * Fraction(P[k, k + 1]) / Fraction(P[k + 1, k]))
    total = sum(w)
    return [x / total for x in w]


@pytest.mark.parametrize("Q, expected", [
    (generator_of(np.array([[0.4, 0.6], [0.2, 0.8]])), [0.25, 0.75]),
    (np.array([[-3.0, 3.0], [4.0, -4.0]]), [4 / 7, 3 / 7]),
])
def test_quantecon_known_answers(Q, expected):
    for method in ["gth", "solve", "jax"]:
        p = sp_ode.stationary_distribution(Q, method=method)
        np.testing.assert_allclose(p, expected, rtol=0, atol=1e-15)  # QuantEcon: TOL = 1e-15
    assert [float(x) for x in exact_stationary(Q)] == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("N, eps", [(27, 1e-2), (3, 1e-14)])
def test_quantecon_kmr_entrywise_exact(N, eps):
    P = kmr_sequential(N, 1 / 3, eps)
    exact = product_formula(P)
    for method in ["gth", "solve", "sparse", "jax"]:
        p, info = sp_ode.stationary_distribution(generator_of(P), method=method, return_info=True)
        assert float(sum(abs(Fraction(float(x)) - e) for x, e in zip(p, exact))) <= info["bound"]
        np.testing.assert_allclose(p @ P, p, rtol=0, atol=1e-15)  # QuantEcon's own check, same tolerance
    p = sp_ode.stationary_distribution(generator_of(P))
    assert max(abs(Fraction(float(x)) - e) / e for x, e in zip(p, exact)) <= 1e-13


@pytest.mark.parametrize("P, expected", [
    (np.array([[0.5, 0.5], [0.0, 1.0]]), [[0.0, 1.0]]),
    (np.eye(2), [[1.0, 0.0], [0.0, 1.0]]),
])
def test_quantecon_reducible(P, expected):
    with pytest.raises(sp_ode.NotIrreducibleError):
        sp_ode.stationary_distribution(generator_of(P))
    classes, dists = sp_ode.stationary_distributions(generator_of(P))
    assert sorted(map(list, dists.tolist())) == sorted(expected)
