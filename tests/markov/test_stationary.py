"""sp_ode.markov.stationary: closed forms, exact rational references, invariants, methods, batching, JAX."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, strategies as st

import sp_ode
from sp_ode.markov.reference import birth_death_tail, ncd_chain
from sp_ode.markov.solvers._gth import gth_batched, gth_blocked, gth_reference
from tests.checkers import assert_distribution, assert_stationary, max_rel_error
from tests.strategies import generators

DENSE_METHODS = ["gth", "solve", "jax"]


# --- closed forms and exact arithmetic ---

@pytest.mark.parametrize("a, b", [(1.0, 1.0), (2.0, 3.0), (1e-12, 1.0), (1e8, 1e-8)])
def test_two_state_closed_form(a, b):
    # docs/theory.md §6: Q = [[−a, a], [b, −b]] ⇒ p = (b, a)/(a + b)
    p = sp_ode.stationary_distribution(np.array([[-a, a], [b, -b]]))
    assert max_rel_error(p, [b / (a + b), a / (a + b)]) <= 1e-15


def _birth_death_exact(lam: list[float], mu: list[float]) -> list[Fraction]:
    """docs/theory.md §6 product formula p_k ∝ Π_{i<k} λ_i/μ_{i+1}, in exact rationals."""
    w = [Fraction(1)]
    for l, m in zip(lam, mu):
        w.append(w[-1] * Fraction(l) / Fraction(m))
    total = sum(w)
    return [x / total for x in w]


@pytest.mark.parametrize("n, ratio", [(10, 0.5), (51, 1e-4), (26, 1e-8)])
def test_birth_death_product_formula_tails_to_1e_200(n, ratio):
    rng = np.random.default_rng(n)
    lam = list(ratio * rng.uniform(0.5, 2.0, n - 1))
    mu = list(rng.uniform(0.5, 2.0, n - 1))
    exact = _birth_death_exact(lam, mu)
    p = sp_ode.stationary_distribution(sp_ode.birth_death(lam, mu))
    ref = np.array([float(x) for x in exact])
    assert ref.min() < 1e-150 or ratio > 1e-4  # the deep cases do reach the far tail
    assert max_rel_error(p, ref) <= 1e-13


@pytest.mark.parametrize("delta", [1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 1e-15])
def test_gth_nearly_completely_decomposable_exact(delta):
    # Reference: exact rational elimination of the same rates (sp_ode.markov.reference.exact_stationary).
    Q, exact = ncd_chain(delta)
    p = sp_ode.stationary_distribution(Q, method="gth")
    assert max_rel_error(p, [float(x) for x in exact]) <= 1e-13


def test_gth_birth_death_tail_reference():
    Q, exact = birth_death_tail()
    ref = np.array([float(x) for x in exact])
    assert ref.min() < 1e-150
    assert max_rel_error(sp_ode.stationary_distribution(Q), ref) <= 1e-13


def test_lu_is_not_componentwise_accurate_on_ncd():
    # Why GTH is the default: the same chain defeats the bordered LU solve (checked, not assumed) —
    # and method="solve" knows it: its bound fails the tolerance and it escalates to GTH (issue 11).
    from sp_ode.markov.stationary import METHODS

    Q, exact = ncd_chain(1e-15)
    raw, raw_info = METHODS["solve"](Q)
    assert max_rel_error(raw, [float(x) for x in exact]) > 1e-6
    assert raw_info["bound"] >= np.abs(raw - np.array([float(x) for x in exact])).sum()
    p, info = sp_ode.stationary_distribution(Q, method="solve", return_info=True)
    assert info["method"] == "gth" and [e["method"] for e in info["escalations"]] == ["solve"]
    assert max_rel_error(p, [float(x) for x in exact]) <= 1e-13


def test_distribution_spanning_beyond_float_range_underflows_cleanly():
    # p_k ∝ 1e-8^k for k < 60 spans 1e-472: the exact float answer has zeros past 1e-308, and no NaN/inf.
    n = 60
    p = sp_ode.stationary_distribution(sp_ode.birth_death(np.full(n - 1, 1e-8), np.ones(n - 1)))
    assert_distribution(p)
    exact = [float(x) for x in _birth_death_exact([1e-8] * (n - 1), [1.0] * (n - 1))]
    normal = np.array(exact) > 1e-290
    assert max_rel_error(p[normal], np.array(exact)[normal]) <= 1e-13
    assert np.all(p[np.array(exact) == 0] == 0)


# --- implementations of GTH agree ---

@given(generators(min_n=1, max_n=12))
def test_gth_blocked_and_batched_match_reference(Q):
    ref = gth_reference(Q)
    np.testing.assert_allclose(gth_blocked(Q, block=3), ref, rtol=64 * Q.shape[0] * 2.2e-16, atol=0)
    np.testing.assert_allclose(gth_batched(Q[None])[0], ref, rtol=64 * Q.shape[0] * 2.2e-16, atol=0)


def test_gth_blocked_large_matches_reference():
    rng = np.random.default_rng(1)
    n = 300
    R = rng.random((n, n)) * (rng.random((n, n)) < 0.2)
    R += np.roll(np.eye(n), 1, axis=1)
    np.fill_diagonal(R, 0)
    Q = R - np.diag(R.sum(1))
    np.testing.assert_allclose(gth_blocked(Q, block=64), gth_reference(Q), rtol=1e-12, atol=0)


# --- invariants (Hypothesis over valid-by-construction generators) ---

@given(generators())
def test_distribution_and_stationarity(Q):
    for method in DENSE_METHODS:
        p = sp_ode.stationary_distribution(Q, method=method)
        assert_distribution(p)
    assert_stationary(Q, sp_ode.stationary_distribution(Q))


@given(generators(min_n=2), st.randoms(use_true_random=False))
def test_permutation_equivariance(Q, rnd):
    perm = np.array(rnd.sample(range(Q.shape[0]), Q.shape[0]))
    p = sp_ode.stationary_distribution(Q)
    p_perm = sp_ode.stationary_distribution(Q[np.ix_(perm, perm)])
    np.testing.assert_allclose(p_perm, p[perm], rtol=64 * Q.shape[0] * 2.2e-16, atol=0)


@given(generators(), st.floats(1e-6, 1e6))
def test_invariance_under_time_rescaling(Q, c):
    p = sp_ode.stationary_distribution(Q)
    np.testing.assert_allclose(sp_ode.stationary_distribution(c * Q), p, rtol=64 * Q.shape[0] * 2.2e-16, atol=0)


@given(generators(max_n=6, log_rate_range=2.0))
def test_all_methods_agree_on_well_conditioned_chains(Q):
    # rates within two decades: every method is accurate, so all agree to a normwise tolerance
    p = sp_ode.stationary_distribution(Q)
    for method in ["solve", "jax", "sparse"]:
        np.testing.assert_allclose(sp_ode.stationary_distribution(Q, method=method), p, atol=1e-10)


# --- batching, info, reducible chains ---

def test_batched_input_gives_batched_output():
    fam = sp_ode.get_family("cycle3")
    ys = fam.grid(7)
    Qs = fam.batch(ys).reshape(7, 1, 3, 3)
    for method in ["gth", "solve", "jax"]:
        P = sp_ode.stationary_distribution(Qs, method=method)
        assert P.shape == (7, 1, 3)
        for k in range(7):
            np.testing.assert_allclose(P[k, 0], sp_ode.stationary_distribution(Qs[k, 0]), atol=1e-14)
    big = sp_ode.get_family("ring50").batch(np.linspace(-1, 1, 3))
    np.testing.assert_allclose(sp_ode.stationary_distribution(big)[1], sp_ode.stationary_distribution(big[1]),
                               rtol=1e-14)


def test_batched_reducible_member_is_named():
    Qs = np.stack([np.array([[-1.0, 1.0], [1.0, -1.0]]), np.zeros((2, 2))])
    with pytest.raises(sp_ode.NotIrreducibleError, match=r"`Q\[1\]`"):
        sp_ode.stationary_distribution(Qs)


def test_return_info_reports_residual():
    Q = sp_ode.get_family("ring10")(0.3)
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    assert info["method"] == "gth"
    assert info["residual"] == pytest.approx(np.max(np.abs(Q.T @ p)), abs=1e-16)


def test_unknown_method_lists_valid_names():
    with pytest.raises(ValueError, match=r"`method` must be one of \('gth', 'solve', 'sparse', 'jax', 'banded'\); got 'lu'"):
        sp_ode.stationary_distribution(np.array([[-1.0, 1.0], [1.0, -1.0]]), method="lu")


def test_stationary_distributions_one_per_closed_class():
    # closed classes {1, 2} (rates 1→2: 2, 2→1: 1 ⇒ p = (1/3, 2/3)) and {3}; state 0 transient
    Q = sp_ode.from_rates({(0, 1): 1.0, (0, 3): 1.0, (1, 2): 2.0, (2, 1): 1.0})
    classes, P = sp_ode.stationary_distributions(Q)
    assert [c.tolist() for c in classes] == [[1, 2], [3]]
    np.testing.assert_allclose(P, [[0, 1 / 3, 2 / 3, 0], [0, 0, 0, 1]], rtol=1e-15)
    for row in P:  # each is stationary for the whole chain
        assert np.max(np.abs(Q.T @ row)) <= 1e-15


# --- JAX: jit, vmap, grad (T3) ---

@pytest.mark.usefixtures("x64")
def test_jax_method_is_jit_vmap_and_grad_compatible():
    import jax
    import jax.numpy as jnp

    from sp_ode.markov.stationary import stationary_jax

    fam = sp_ode.get_family("switch2")
    p_of_y = jax.jit(lambda y: stationary_jax(fam(y)))
    ys = jnp.linspace(-2.0, 2.0, 9)
    P = jax.vmap(p_of_y)(ys[:, None])
    for y, p in zip(np.asarray(ys), np.asarray(P)):
        np.testing.assert_allclose(p, fam.closed_form(y), rtol=1e-14)
    # closed form: p_1 = e^y/(1 + e^y) ⇒ dp_1/dy = e^y/(1 + e^y)²
    d = jax.grad(lambda y: p_of_y(y)[1])(jnp.array([0.7]))
    assert float(d[0]) == pytest.approx(np.exp(0.7) / (1 + np.exp(0.7)) ** 2, rel=1e-13)


@pytest.mark.usefixtures("x64")
def test_jax_derivative_matches_T3_formula():
    import jax
    import jax.numpy as jnp

    from sp_ode.markov.stationary import stationary_jax

    fam = sp_ode.get_family("cycle3")
    y = 0.4
    D = np.asarray(jax.jacfwd(lambda y: stationary_jax(fam(y)))(jnp.array([y])))[:, 0]
    # T3: Dp_st = −(A − p1ᵀ)⁻¹ (∂_y A) p with A = Qᵀ; ∂_y A by central differences of the smooth family
    A = fam(np.array([y])).T
    p = sp_ode.stationary_distribution(A.T)
    h = 1e-6
    dA = (fam(np.array([y + h])).T - fam(np.array([y - h])).T) / (2 * h)
    ref = -np.linalg.solve(A - np.outer(p, np.ones(3)), dA @ p)
    np.testing.assert_allclose(D, ref, atol=1e-8)


def test_dense_copies_of_a_sparse_q_are_estimated_before_they_are_made(monkeypatch):
    import scipy.sparse as sps

    from sp_ode.core import memory

    Q = sps.csr_array(sp_ode.birth_death(np.ones(299), np.full(299, 2.0)))       # n = 300: 1.44 MB dense ×2
    monkeypatch.setattr(memory, "available_memory", lambda: (10**6, "test limit"))
    with pytest.raises(sp_ode.MemoryBudgetError, match=r"method 'gth' \(a dense 300×300 copy"):
        sp_ode.stationary_distribution(Q, method="gth")
    with pytest.raises(sp_ode.MemoryBudgetError, match="stationary_distributions"):
        sp_ode.stationary_distributions(Q)
    # the sparse route still answers: the dense escalation is skipped, not crashed into
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    assert_stationary(Q.toarray(), p)
    monkeypatch.setattr(memory, "available_memory", lambda: (10**9, "test limit"))
    assert np.allclose(sp_ode.stationary_distribution(Q, method="gth"), p, rtol=1e-9)


# --- the default route on sparse input (docs/theory.md §7.9) ---

def test_default_route_takes_gth_when_predicted_cheap_and_sparse_otherwise(monkeypatch):
    import scipy.sparse as sps

    import sp_ode.markov.stationary as st_mod

    Q = sps.csr_array(sp_ode.birth_death(np.ones(199), np.full(199, 2.0)))
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    sel = info["selection"]
    assert info["method"] in ("banded", "gth") and sel["chosen"] == info["method"]
    assert "≤ 2 × the sparse" in sel["rule"]
    assert sel["predicted_seconds"][info["method"]] <= 2 * sel["predicted_seconds"]["sparse"]
    assert info["componentwise_bound"] is not None and info["uncertified_below"] is None
    # the same Q when GTH is predicted dear (a stand-in for a wide band): the sparse solve, refined and certified
    monkeypatch.setitem(st_mod.COST_CONSTANTS, "banded", (1.0, 1.0))
    monkeypatch.setitem(st_mod.COST_CONSTANTS, "gth", (1.0, 1.0))
    q, info = sp_ode.stationary_distribution(Q, return_info=True)
    assert info["method"] == "sparse" and "would cost more" in info["selection"]["rule"]
    assert info["componentwise_bound"] is not None and np.max(np.abs(q - p) / p) <= 2 * info["componentwise_bound"]


def test_a_band_above_its_byte_cap_routes_away_from_banded_gth(monkeypatch):
    # A band array above BANDED_GTH_MAX_BYTES once raised a MemoryBudgetError without its required fields, a
    # TypeError out of the default route (found by mypy's call-arg check); it rules banded GTH out instead.
    import scipy.sparse as sps

    import sp_ode.markov.stationary as st_mod

    Q = sps.csr_array(sp_ode.birth_death(np.ones(199), np.full(199, 2.0)))
    assert st_mod.predicted_seconds(Q)["banded"] is not None
    monkeypatch.setattr(st_mod, "BANDED_GTH_MAX_BYTES", 0)
    assert st_mod.predicted_seconds(Q)["banded"] is None
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    assert info["method"] != "banded"
    exact = 0.5 ** np.arange(200)          # detailed balance: p_k ∝ Π λ/μ = (1/2)^k
    assert max_rel_error(p, exact / exact.sum()) < 1e-12


def test_default_route_falls_back_to_the_sparse_solve_when_gth_breaks_its_promise(monkeypatch):
    # GTH that cannot keep its entrywise promise (a failure status) must not end the default route.
    import scipy.sparse as sps

    import sp_ode.markov.stationary as st_mod

    def broken(Q, **_):
        return np.full(Q.shape[0], np.nan), {"failure": "planted", "bound": math.inf, "algorithm": "x",
                                             "iterations": 0, "negatives_clipped": 0, "most_negative": 0.0}

    monkeypatch.setitem(st_mod.METHODS, "banded", broken)
    monkeypatch.setitem(st_mod.METHODS, "gth", broken)
    Q = sps.csr_array(sp_ode.birth_death(np.ones(49), np.full(49, 2.0)))
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    tried = [e["method"] for e in info["escalations"]]
    assert info["method"] == "sparse" and tried and set(tried) <= {"banded", "gth"}
    assert_stationary(Q.toarray(), p)


def test_failed_banded_gth_hands_over_to_the_cheapest_fallback_by_predicted_cost(monkeypatch):
    # Issue 35: banded GTH predicted cheap, then refused by its range guard, escalated to a dense GTH
    # predicted 30× the sparse solve (the 3721-state toggle switch, 20.5 s).  The fallbacks now run in the
    # order of their predicted cost; dense GTH stays the last resort.
    import scipy.sparse as sps

    import sp_ode.markov.stationary as st_mod

    def broken(Q, **_):
        return np.full(Q.shape[0], np.nan), {"failure": "planted range guard", "bound": math.inf,
                                             "algorithm": "x", "iterations": 0, "negatives_clipped": 0,
                                             "most_negative": 0.0}

    Q = sps.csr_array(sp_ode.birth_death(np.ones(49), np.full(49, 2.0)))
    monkeypatch.setitem(st_mod.METHODS, "banded", broken)
    monkeypatch.setitem(st_mod.COST_CONSTANTS, "gth", (1.0, 1.0))       # dense GTH predicted dear
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    assert info["selection"]["chosen"] == "banded" and info["method"] == "sparse"
    assert [e["method"] for e in info["escalations"]] == ["banded"]
    assert_stationary(Q.toarray(), p)
    assert st_mod._escalation("banded", 50, auto=True, predicted={"gth": 3.0, "sparse": 0.1}) == ["sparse", "gth"]
    assert st_mod._escalation("banded", 50, auto=True, predicted={"gth": 0.01, "sparse": 0.1}) == ["gth", "sparse"]
    # negative control: without the predictions the old order (dense GTH first) comes back
    assert st_mod._escalation("banded", 50, auto=True) == ["gth", "sparse"]


def test_banded_elimination_strided_and_blocked_equal_the_readable_loop():
    # The strided view (b < 32) and the blocked panels (b ≥ 32) add the same nonnegative terms as the
    # readable loop of explicit band offsets: equal to rounding of the summation order.
    from sp_ode.markov.reference import reversible_grids
    from sp_ode.markov.solvers._banded_gth import band_plan, banded_gth

    for k in (6, 40):                       # bandwidths ≈ 6 and ≈ 40
        Q, exact = reversible_grids(k, 1e-6)
        perm, b, _ = band_plan(Q)
        fast, info = banded_gth(Q, perm, b, log=True)
        slow, _ = banded_gth(Q, perm, b, log=True, reference=True)
        assert info["reliable"] and (b >= 32) == (k == 40)
        assert np.max(np.abs(fast - slow)) <= 64 * Q.shape[0] * 2.0**-53
        assert np.max(np.abs(np.expm1(fast - np.log(exact)))) <= 1e-12
