"""sp_ode.markov.cme: the two-species CME generator (toggle switch / independent birth–death)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import poisson

import sp_ode
from sp_ode.markov.cme import cme_two_species
from tests.checkers import assert_distribution, max_rel_error


def _reference_cme(N, production, degradation, repression):
    """Readable loop builder (one reaction at a time) to compare the vectorised one against."""
    (a1, a2), (d1, d2) = production, degradation
    Q = np.zeros((N * N, N * N))
    for x in range(N):
        for y in range(N):
            i = x * N + y
            fx = a1 if repression is None else a1 / (1 + (y / repression[0]) ** repression[1])
            fy = a2 if repression is None else a2 / (1 + (x / repression[0]) ** repression[1])
            if x + 1 < N:
                Q[i, (x + 1) * N + y] = fx
            if x > 0:
                Q[i, (x - 1) * N + y] = d1 * x
            if y + 1 < N:
                Q[i, x * N + y + 1] = fy
            if y > 0:
                Q[i, x * N + y - 1] = d2 * y
            Q[i, i] = -Q[i].sum()
    return Q


@pytest.mark.parametrize("repression", [None, (3.0, 2.0), (2.5, 0.0)])
def test_vectorised_matches_loop_reference(repression):
    N, production, degradation = 7, (4.0, 2.5), (1.0, 0.5)
    Q = cme_two_species(N, production=production, degradation=degradation, repression=repression)
    assert isinstance(Q, sp.csr_array) and Q.dtype == np.float64 and Q.shape == (49, 49)
    ref = _reference_cme(N, production, degradation, repression)
    # Same rates by construction; the diagonal is the same sum in a possibly different order.
    np.testing.assert_allclose(Q.toarray(), ref, rtol=4 * np.finfo(float).eps, atol=0)


def test_is_a_valid_irreducible_generator_with_five_point_stencil():
    Q = cme_two_species(30, repression=(7.5, 2.0))
    checked = sp_ode.check_generator(Q)  # raises if any rule of docs/theory.md §2 fails
    assert sp_ode.is_irreducible(checked)
    assert Q.nnz <= 5 * Q.shape[0]
    assert np.all(Q.diagonal() < 0)


def test_independent_species_is_product_of_truncated_poissons():
    # Closed form (module docstring): with constant production the truncated chain satisfies
    # detailed balance, p(x, y) ∝ Poisson(x; α₁/δ₁) · Poisson(y; α₂/δ₂) on the box.
    N, (a1, a2), (d1, d2) = 25, (6.0, 9.0), (1.0, 1.5)
    Q = cme_two_species(N, production=(a1, a2), degradation=(d1, d2))
    k = np.arange(N)
    exact = np.outer(poisson.pmf(k, a1 / d1), poisson.pmf(k, a2 / d2)).ravel()
    exact /= exact.sum()
    p = sp_ode.stationary_distribution(Q.toarray(), method="gth")
    assert_distribution(p)
    # GTH is componentwise accurate (issue 2 §3), down to the ~1e-30 corner of the box;
    # scipy's pmf carries a few ulps of its own per factor.
    assert max_rel_error(p, exact) <= 1e-12


def test_symmetric_toggle_switch_is_symmetric():
    # Swapping X and Y maps the chain to itself when parameters are equal, so p(x, y) = p(y, x).
    N = 20
    Q = cme_two_species(N, production=12.0, degradation=1.0, repression=(5.0, 2.0))
    P = sp_ode.stationary_distribution(Q.toarray()).reshape(N, N)
    assert max_rel_error(P, P.T) <= 1e-12
    # Bistable parameters (α/K = 2.4 > 2 at h = 2): more mass off the diagonal than on it.
    assert np.trace(P) < 0.1


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"N": 1}, ValueError, "`N` must be >= 2"),
        ({"N": 2.5}, TypeError, "`N` must be a positive integer"),
        ({"N": 5, "production": -1.0}, ValueError, r"`production\[0\]` must be > 0"),
        ({"N": 5, "degradation": (1.0, float("nan"))}, ValueError, r"`degradation\[1\]` must be finite"),
        ({"N": 5, "production": (1.0, 2.0, 3.0)}, ValueError, "`production` must be a number or a pair"),
        ({"N": 5, "repression": 3.0}, ValueError, "`repression` must be None or a pair"),
        ({"N": 5, "repression": (0.0, 2.0)}, ValueError, r"`repression\[0\] \(K\)` must be > 0"),
        ({"N": 5, "repression": (1.0, -1.0)}, ValueError, r"`repression\[1\] \(h\)` must be >= 0"),
        ({"N": 5, "production": "fast"}, TypeError, r"`production\[0\]` must be a real number"),
    ],
)
def test_bad_input_names_the_argument(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        cme_two_species(**kwargs)
