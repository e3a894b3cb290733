"""sp_ode.markov.solvers._sparse: AMG-preconditioned GMRES for large sparse generators (method="sparse")."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from scipy.stats import poisson

import sp_ode
from sp_ode.markov.cme import cme_two_species
from sp_ode.markov.solvers._sparse import pinned_direct_stationary, sparse_stationary
from tests.checkers import EPS, assert_distribution
from tests.strategies import generators

INFO_KEYS = {"residual", "relative_residual", "iterations", "converged", "method", "pinned_state",
             "negatives_clipped", "most_negative", "residual_before_sweep"}


def random_sparse_generator(n: int, seed: int, decades: float = 6.0) -> sp.csr_array:
    """Irreducible by construction: a ring i → i+1 plus ~3 random edges per state, rates over `decades`."""
    rng = np.random.default_rng(seed)
    rows = np.concatenate([np.arange(n), rng.integers(0, n, 3 * n)])
    cols = np.concatenate([(np.arange(n) + 1) % n, rng.integers(0, n, 3 * n)])
    rates = 10.0 ** rng.uniform(-decades / 2, decades / 2, rows.size)
    keep = rows != cols
    R = sp.csr_array((rates[keep], (rows[keep], cols[keep])), shape=(n, n))
    R.sum_duplicates()
    return (R - sp.diags_array(np.asarray(R.sum(axis=1)).ravel())).tocsr()


def assert_t4_bound(Q, p, p_ref):
    """docs/theory.md §3.4 (T4): for 1ᵀp = 1, p − p_st = A^#(Qᵀp), so ‖p − p_st‖₂ ≤ ‖A^#‖₂ ‖Qᵀp‖₂.

    p_ref (GTH) stands for p_st; its own error is componentwise O(n·eps) (issue 2 §3).
    """
    Qd = Q.toarray()
    n = Qd.shape[0]
    bound = np.linalg.norm(sp_ode.group_inverse(Qd, p_ref), 2) * np.linalg.norm(Qd.T @ p, 2)
    err = np.linalg.norm(p - p_ref)
    assert err <= 1.01 * bound + 100 * n * EPS * np.linalg.norm(p_ref), (err, bound)


def assert_residual_bound(info, n, tol=1e-12):
    """‖Qᵀp‖∞ ≤ ‖r‖₁ ≤ √n·tol·‖b‖₂ ≤ n·tol·max|Q| for the pinned residual r (b = Q[k, ·]); plus rounding."""
    assert info["relative_residual"] <= n * tol + 100 * n * EPS, info


@pytest.mark.parametrize(("n", "seed"), [(2, 0), (3, 1), (17, 2), (120, 3), (400, 4)])
def test_random_sparse_matches_gth(n, seed):
    Q = random_sparse_generator(n, seed)
    p, info = sparse_stationary(Q)
    assert INFO_KEYS <= info.keys()
    assert_distribution(p)
    assert info["converged"] and info["iterations"] >= 0
    assert_residual_bound(info, n)
    np.testing.assert_allclose(info["residual"], np.abs(Q.T @ p).max(), rtol=1e-12, atol=0)
    assert_t4_bound(Q, p, sp_ode.stationary_distribution(Q.toarray(), method="gth"))


@settings(max_examples=15)
@given(generators(min_n=2, max_n=8))
def test_small_dense_catalogue_matches_gth(Q):
    p, info = sparse_stationary(sp.csr_array(Q))
    assert_distribution(p)
    assert_t4_bound(sp.csr_array(Q), p, sp_ode.stationary_distribution(Q, method="gth"))


def test_two_state_closed_form():
    a, b = 3.0, 0.25  # docs/theory.md §6: p = (b, a) / (a + b)
    p, info = sparse_stationary(sp.csr_array(np.array([[-a, a], [b, -b]])))
    np.testing.assert_allclose(p, [b / (a + b), a / (a + b)], rtol=1e-13)
    assert info["converged"]


def test_single_state():
    p, info = sparse_stationary(sp.csr_array(np.zeros((1, 1))))
    assert p.tolist() == [1.0] and info["residual"] == 0.0


def test_cme_closed_form_and_nonnegativity_handling():
    # Independent species: p = product of truncated Poissons (sp_ode.markov.cme docstring).  Far from the
    # mode p falls to ~1e-50, below what any normwise solver resolves, so the Krylov iterate has
    # rounding-level negative entries there: they must be reported and none may survive.
    N, lam = 100, 30.0  # measured: ~3000 negative entries in the iterate (none at N = 60)
    Q = cme_two_species(N, production=lam, degradation=1.0)
    p, info = sparse_stationary(Q)
    k = np.arange(N)
    exact = np.outer(poisson.pmf(k, lam), poisson.pmf(k, lam)).ravel()
    exact /= exact.sum()
    assert_distribution(p)
    assert (p >= 0).all() and not np.signbit(p).any()
    assert info["negatives_clipped"] > 0 and info["most_negative"] < 0
    assert_residual_bound(info, N * N)
    # T4-style normwise accuracy: the error is a residual-sized multiple of max p, not of p_i.
    assert np.abs(p - exact).max() <= 1e-9 * exact.max()
    mode = exact >= 1e-3 * exact.max()
    assert np.max(np.abs(p - exact)[mode] / exact[mode]) <= 1e-7
    # The pinned state is a mode-region state (stage 1), not a corner of the grid.
    assert exact[info["pinned_state"]] >= 1e-3 * exact.max()


def test_matches_readable_direct_reference_on_toggle_switch():
    N = 40
    Q = cme_two_species(N, repression=(N / 5, 2.0))
    p, info = sparse_stationary(Q)
    ref = pinned_direct_stationary(Q, pin=info["pinned_state"])
    assert_residual_bound(info, N * N)
    # Both solve the same pinned M-matrix system; the direct one to rounding.  Agreement is
    # normwise at the GMRES tolerance (1e-12) times a modest condition factor.
    assert np.abs(p - ref).max() <= 1e-9 * ref.max()


def test_through_public_api():
    Q = cme_two_species(30, repression=(6.0, 2.0))
    p, info = sp_ode.stationary_distribution(Q, method="sparse", return_info=True)
    assert info["method"] == "sparse" and "AMG" in info["algorithm"]  # the solver names its algorithm
    assert info["converged"]
    assert_distribution(p)
    np.testing.assert_allclose(p, sp_ode.stationary_distribution(Q.toarray(), method="gth"), rtol=0,
                               atol=1e-10 * p.max())


def test_non_convergence_is_a_status_not_an_exception():
    Q = cme_two_species(50, repression=(10.0, 2.0))
    p, info = sparse_stationary(Q, tol=1e-300, maxiter=1)
    assert info["converged"] is False
    assert_distribution(p)  # still a distribution: nonnegative, sums to one
    assert info["residual"] > 0


def test_repins_when_the_first_pin_is_improbable(monkeypatch):
    # Force stage 1 to point at the grid corner, where p ≈ 1e-56: x = p / p_k would need a
    # backward error far below eps, so GMRES cannot converge; the solver must move the pin to
    # the mode of that first solution and solve again (sp_ode.markov.solvers._sparse, _REPIN_BELOW).
    import sp_ode.markov.solvers._sparse as sparse_mod

    N = 100
    Q = cme_two_species(N, production=30.0)

    def corner(A):
        g = np.zeros(A.shape[0])
        g[-1] = 1.0
        return g

    monkeypatch.setattr(sparse_mod, "locate_mass", corner)
    p, info = sparse_mod.sparse_stationary(Q, maxiter=60)
    assert info["attempts"] == 2 and info["converged"]
    assert p[info["pinned_state"]] >= 0.1 * p.max()
    assert_distribution(p)
    assert_residual_bound(info, N * N)


def test_stage_one_breakdown_falls_back_to_the_uniform_guess():
    # pyamg's classical interpolation on the *singular* −Qᵀ of the telegraph model (N = 40,
    # y = 1) leaves NaN in a coarse level and its coarsest pseudo-inverse raises; before the
    # fallback the whole sparse solve failed and escalated to banded GTH.  Now it stays
    # sparse, certified, and the mRNA marginal matches the Poisson–beta closed form
    # (Peccoud & Ycart 1995; `network_models.poisson_beta_pmf`), truncated at N = 40.
    from sp_ode.networks.models import get_network_model
    from sp_ode.systems.network import NetworkSystem

    model = get_network_model("telegraph", N=40)
    system = NetworkSystem(model.network, model.space(), model.slow, eps=1e-2)
    p, info = sparse_stationary(system.Q(np.array([1.0])))
    assert info.get("failure") is None and info["converged"] and info["bound"] < 1e-10
    space = model.space()
    m_index = space.species.index("M")
    counts = space.states[:, m_index]
    marginal = np.bincount(counts, weights=p, minlength=41)
    exact = model.closed_form["marginal M"](np.array([1.0]))
    assert np.max(np.abs(marginal - exact / exact.sum())) < 1e-8


def test_krylov_restart_follows_the_memory_cap(monkeypatch):
    """GMRES keeps restart 100 while the basis fits (≤ 6 GB and ≤ 30 % of available memory) and
    shrinks towards 20 only beyond; a 1 GB cap had forced restart 20 at 10⁷ states (3× the steps)."""
    from sp_ode.markov.solvers import _sparse

    monkeypatch.setattr(_sparse, "_available_bytes", lambda: 100e9)
    assert _sparse._restart_length(10**6, 400) == 100
    assert _sparse._restart_length(10**7, 400) == 74        # 6e9 / (8·(10⁷ + 1))
    assert _sparse._restart_length(10**9, 400) == 20        # never below the floor
    assert _sparse._restart_length(50, 400) == 50 and _sparse._restart_length(10**6, 30) == 30
    monkeypatch.setattr(_sparse, "_available_bytes", lambda: 4e9)   # 30 % of 4 GB = 1.2 GB
    assert _sparse._restart_length(10**7, 400) == 20
    assert _sparse._restart_length(10**6, 400) == 100
