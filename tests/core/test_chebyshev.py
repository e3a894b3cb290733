"""sp_ode.core.chebyshev: the one adaptive Chebyshev builder, against closed forms."""
from __future__ import annotations

import numpy as np
import pytest

from sp_ode.core.chebyshev import ChebyshevConvergenceError, chebyshev_fit


def test_a_smooth_function_is_fitted_to_its_tolerance_and_each_node_is_computed_once():
    calls = []

    def v(y):
        calls.append(y)
        return np.array([np.exp(y), np.sin(3 * y)])

    fit = chebyshev_fit(v, -1.0, 2.0, tol=1e-12, max_nodes=257)
    y = np.linspace(-1.0, 2.0, 101)
    exact = np.stack([np.exp(y), np.sin(3 * y)], axis=-1)
    assert np.max(np.abs(fit(y) - exact)) < 1e-11
    assert fit.error <= 1e-12
    assert len(calls) == len(set(calls)) == fit.degree + 1      # nested nodes: none computed twice
    assert np.all(np.diff(fit.nodes) < 0)                       # one direction (b down to a): warm starts in order


def test_a_polynomial_of_degree_below_eight_is_exact_at_the_first_doubling():
    fit = chebyshev_fit(lambda y: np.array([y ** 5 - 2 * y]), 0.0, 1.0, tol=1e-13, max_nodes=257)
    assert fit.degree == 16 and fit.error < 1e-13
    assert abs(fit(0.3)[0] - (0.3 ** 5 - 0.6)) < 1e-14


def test_a_kink_does_not_converge_within_the_budget_and_says_so():
    with pytest.raises(ChebyshevConvergenceError, match=r"did not converge on \[-1, 1\] with 33 nodes.*narrow it"):
        chebyshev_fit(lambda y: np.array([abs(y)]), -1.0, 1.0, tol=1e-12, max_nodes=33, remedy="narrow it")


def test_a_tensor_fit_of_a_smooth_function_meets_its_tolerance_off_the_nodes():
    """v(y, k) = (exp(yk), sin(y + k)) on [0, 1] × [0.8, 1.2]: both changes ≤ tol, the interpolant within 1e-11
    between the nodes, its y-series at fixed k the 1-D fit there; a judged mask leaves the other component's
    changes reported; a degree that is not a power of 2 is named."""
    from sp_ode.core.chebyshev import chebyshev_fit_tensor

    def v(nodes, k):
        return np.stack([np.exp(nodes * k), np.sin(nodes + k)], axis=1)

    fit = chebyshev_fit_tensor(v, 0.0, 1.0, 0.8, 1.2, degree_y=8, tol=1e-12, max_nodes=257)
    assert fit.error_k <= 1e-12 and fit.error_y <= 1e-12
    rng = np.random.default_rng(0)
    y, k = rng.uniform(0, 1, 50), rng.uniform(0.8, 1.2, 50)
    assert np.max(np.abs(fit(y, k) - np.stack([np.exp(y * k), np.sin(y + k)], axis=-1))) < 1e-11
    series = np.polynomial.chebyshev.chebval(2 * y - 1, fit.y_coef(1.0)).T
    assert np.max(np.abs(series - np.stack([np.exp(y), np.sin(y + 1)], axis=-1))) < 1e-11
    half = chebyshev_fit_tensor(v, 0.0, 1.0, 0.8, 1.2, degree_y=8, tol=1e-12, max_nodes=257,
                                judged=np.array([False, True]))
    assert half.error_k <= 1e-12 and np.isfinite(half.free_k) and np.isfinite(half.free_y)
    with pytest.raises(ValueError, match="`degree_y` must be a power of 2"):
        chebyshev_fit_tensor(v, 0.0, 1.0, 0.8, 1.2, degree_y=6, tol=1e-12, max_nodes=257)
