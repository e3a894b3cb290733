"""Issue 11: stationary distributions that are never silently wrong.

Each measured defect of the issue is a test here (it failed on the old code); every
expected number comes from exact rational arithmetic (birth–death product formula,
``sp_ode.markov.reference.exact_stationary``) or a reversible construction whose p_st
is known in closed form (docs/theory.md §6).
"""
from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

import sp_ode
from sp_ode.markov.bounds import ConvergenceError, hitting_time_bound, posterior_bound
from sp_ode.markov.reference import exact_birth_death, exact_stationary, kmr_chain
from sp_ode.markov.stationary import METHODS
from tests.checkers import assert_distribution

METHODS_ALL = ["gth", "solve", "sparse", "jax"]


# --- exact references ---

# The KMR-type chain and the exact birth–death product formula (sp_ode.markov.reference).
kmr_rates = kmr_chain
birth_death_exact = exact_birth_death


def rel_errors_above(p, exact, floor=1e-290) -> float:
    """max |p_i − e_i| / e_i over the entries e_i ≥ floor, in exact arithmetic."""
    return float(max(abs(Fraction(float(x)) - e) / e for x, e in zip(p, exact) if e >= floor))


def l1_error(p, exact) -> float:
    return float(sum(abs(Fraction(float(x)) - e) for x, e in zip(p, exact)))


def exact_log(x: Fraction) -> float:
    getcontext().prec = 50
    return float(Decimal(x.numerator).ln() - Decimal(x.denominator).ln())


def ncd4() -> np.ndarray:
    """The issue's nearly decoupled 4-state chain: 1e6 inside each pair, 1e-10 / 2e-10 across."""
    Q = np.zeros((4, 4))
    Q[0, 1] = Q[1, 0] = Q[2, 3] = Q[3, 2] = 1e6
    Q[1, 2], Q[3, 0] = 1e-10, 2e-10
    np.fill_diagonal(Q, -Q.sum(axis=1))
    return Q


# --- the measured defects ---

def test_sparse_birth_death_not_converged_is_no_longer_silent():
    # Defect 1: the sparse solve returned ≈ [0.6, 3e-15, 6e-15, 0.4] against ≈ [5e-15, 7.5e-29, 1.5e-14, 1].
    lam, mu = [5e-15, 2 / 3, 1 / 3], [1 / 3, 1e-14 / 3, 5e-15]
    exact = birth_death_exact(lam, mu)
    Q = sp_ode.birth_death(lam, mu, sparse=True)
    raw, raw_info = METHODS["sparse"](Q, tol=1e-8, maxiter=None)
    assert raw_info["bound"] >= l1_error(raw, exact)  # the raw answer is wrong, and its bound says so
    p, info = sp_ode.stationary_distribution(Q, method="sparse", return_info=True)
    assert info["escalations"] and info["escalations"][0]["method"] == "sparse"
    assert rel_errors_above(p, exact) <= 1e-13


@pytest.mark.parametrize("N, eps", [(27, 1e-10), (100, 1e-6), (200, 1e-15), (3, 1e-4)])
def test_kmr_through_the_default_sparse_path(N, eps):
    # Defect 2: N = 27, ε = 1e-10 put 78 % of the mass in the wrong basin while reporting converged.
    up, down = kmr_rates(N, eps)
    exact = birth_death_exact(up, down)
    p, info = sp_ode.stationary_distribution(sp_ode.birth_death(up, down, sparse=True), return_info=True)
    assert rel_errors_above(p, exact) <= 1e-8
    assert info["bound"] >= l1_error(p, exact)


def test_gth_keeps_the_states_behind_an_underflowing_valley():
    # Defect 3: N = 100, ε = 1e-6 gave p[0] == 0.0; the exact value is 1.16e-208.
    up, down = kmr_rates(100, 1e-6)
    exact = birth_death_exact(up, down)
    p = sp_ode.stationary_distribution(sp_ode.birth_death(up, down))
    assert float(exact[0]) == pytest.approx(1.1641142197800162e-208, rel=1e-15)
    assert rel_errors_above(p, exact, floor=1e-300) <= 1e-13


def test_log_p_far_below_the_float_range():
    # N = 400 valley: entries down to e^-3608 ≈ 1e-1567, against exact rationals (50-digit logs).
    up, down = kmr_rates(400, 1e-6)
    exact = birth_death_exact(up, down)
    logp, info = sp_ode.stationary_distribution(sp_ode.birth_death(up, down), log=True, return_info=True)
    ref = np.array([exact_log(x) for x in exact])
    assert ref.min() < -800 * math.log(10)
    # relative error of p ≤ componentwise bound ⇒ |log p̂ − log p| ≤ bound + the rounding of log p̂ itself
    tol = info["componentwise_bound"] + 4 * np.spacing(np.abs(ref))
    assert np.all(np.abs(logp - ref) <= tol)


def test_spectral_gap_is_never_negative_and_says_when_unresolved():
    # Defect 4: N = 27, ε = 1e-8 returned −5.2e-16; the true gap is ~1.9e-69.
    up, down = kmr_rates(27, 1e-8)
    gamma, info = sp_ode.spectral_gap(sp_ode.birth_death(up, down), return_info=True)
    assert gamma >= 0.0 and info["resolved"] is False and info["symmetrised"]
    assert gamma <= 1.9e-69 <= info["upper_bound"]
    assert sp_ode.spectral_gap(sp_ode.birth_death(up, down)) >= 0.0


@pytest.mark.parametrize("fmt", ["dense", "csr", "csc", "coo"])
@pytest.mark.parametrize("method", METHODS_ALL)
def test_nearly_decoupled_four_states_every_method_and_format(fmt, method):
    # Defect 5/6: CSR gave [0.5, 0.5, 0, 0] against [1/3, 1/3, 1/6, 1/6] (converged=True); solve/jax O(1) off.
    Q = ncd4()
    exact = exact_stationary(Q)
    assert [float(x) for x in exact] == pytest.approx([1 / 3, 1 / 3, 1 / 6, 1 / 6], rel=1e-9)
    Qf = Q if fmt == "dense" else sp.csr_array(Q).asformat(fmt)
    p, info = sp_ode.stationary_distribution(Qf, method=method, return_info=True)
    assert l1_error(p, exact) <= info["bound"] <= 1e-8
    assert rel_errors_above(p, exact) <= 1e-12


def test_pyamg_coarse_grid_failure_is_a_status_not_a_traceback(capfd):
    # Defect 5: a 12-state directed cycle with rates 1e-12 … 5e8 crashed inside pyamg's pinv.
    rates = np.geomspace(1e-12, 5e8, 12)
    Q = sp_ode.from_rates([(i, (i + 1) % 12, r) for i, r in enumerate(rates)])
    exact = exact_stationary(Q.toarray() if sp.issparse(Q) else Q)
    p, info = sp_ode.stationary_distribution(sp.csr_array(Q), method="sparse", return_info=True)
    assert l1_error(p, exact) <= info["bound"]
    assert rel_errors_above(p, exact) <= 1e-12
    assert capfd.readouterr().out == ""


def test_bound_is_honest_on_the_raw_normwise_methods():
    # The bound must hold (≥ the true ℓ1 error) even where the answer is poor (δ = 1e-12 NCD, no escalation).
    from sp_ode.markov.reference import ncd_chain

    Q, exact = ncd_chain(1e-12)
    for m in ["solve", "jax"]:
        p, info = METHODS[m](Q)
        assert info["bound"] >= l1_error(p, exact), m
    # and it is not vacuous on an easy chain
    Q, exact = ncd_chain(1e-1)
    p, info = METHODS["solve"](Q)
    assert l1_error(p, exact) <= info["bound"] <= 1e-12


def test_wrong_hitting_times_are_not_certified():
    # The certificate fails on a deliberately wrong ŷ (Gŷ = 0; negative; NaN).
    Q = ncd4()
    assert math.isinf(hitting_time_bound(Q, 3, np.zeros(3)))
    assert math.isinf(hitting_time_bound(Q, 3, np.array([1.0, -1.0, 1.0])))
    assert math.isinf(hitting_time_bound(Q, 3, np.array([np.nan, 1.0, 1.0])))
    # a deliberately wrong distribution gets a bound that covers its (large) error
    exact = exact_stationary(Q)
    y = np.linalg.solve(-Q[:3, :3], np.ones(3))
    q = np.array([0.25, 0.25, 0.25, 0.25])
    bound, H = posterior_bound(Q, q, 3, y)
    assert bound >= l1_error(q, exact) and H >= y.max()
    # one-sided: a candidate 3× too large (‖1 − Gŷ‖∞ = 2) still certifies, and tightly (ŷ ≥ m·y, m = 3),
    # on a well-conditioned chain (a birth–death chain with unit rates; y by an exact dense solve)
    B = np.diag(np.ones(3), 1) + np.diag(np.ones(3), -1)
    B -= np.diag(B.sum(axis=1))
    yb = np.linalg.solve(-B[:3, :3], np.ones(3))
    assert yb.max() <= hitting_time_bound(B, 3, 3.0 * yb) <= yb.max() * (1 + 1e-9)
    assert yb.max() <= hitting_time_bound(B, 3, yb) <= yb.max() * (1 + 1e-9)


def test_two_grids_coupled_by_one_weak_pair():
    # Reversible by construction (docs/theory.md §6): conductances 1 on each 12×12 grid, δ = 2⁻⁴⁵ ≈ 2.8e-14
    # on one pair joining them, weights π = 2^(−(x+y) mod 3) on the first grid, 2^(−(x mod 2)) · 2 on the second;
    # Q_ij = c_ij/π_i (powers of two: exact floats) ⇒ p ∝ π exactly.
    side = 12
    idx = np.arange(side * side).reshape(side, side)
    x, y = np.divmod(np.arange(side * side), side)
    pi = np.concatenate([2.0 ** -((x + y) % 3), 2.0 * 2.0 ** -(x % 2)])
    n = pi.size
    rows, cols, cond = [], [], []
    for off in (0, side * side):
        for a, b in [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])]:
            rows += list(a.ravel() + off)
            cols += list(b.ravel() + off)
            cond += [1.0] * a.size
    rows.append(side * side - 1)
    cols.append(side * side)
    cond.append(2.0**-45)
    r, c, w = np.array(rows + cols), np.array(cols + rows), np.array(cond + cond)
    Q = sp.csr_array((w / pi[r], (r, c)), shape=(n, n))
    Q = (Q - sp.diags_array(np.asarray(Q.sum(axis=1)).ravel())).tocsr()
    total = sum(Fraction(v) for v in pi)
    exact = [Fraction(v) / total for v in pi]
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    half = side * side
    assert abs(p[:half].sum() - float(sum(exact[:half]))) <= 1e-8 * float(sum(exact[:half]))
    assert rel_errors_above(p, exact) <= 1e-8
    assert l1_error(p, exact) <= info["bound"]


def test_cme_builder_refuses_before_allocating():
    # Defect 7: cme_two_species(10**9) allocated until the kernel killed the process.
    with pytest.raises(sp_ode.MemoryBudgetError, match=r"N` = 1000000000.*1e\+18 states.*bytes"):
        sp_ode.cme_two_species(10**9)
    with pytest.raises(sp_ode.MemoryBudgetError, match="max_bytes"):
        sp_ode.cme_two_species(100, max_bytes=1000)
    assert sp_ode.cme_two_species(10, max_bytes=10**6).shape == (100, 100)


# --- escalation, the error, the info ---

def test_convergence_error_names_bound_tol_and_remedy():
    Q = ncd4()
    with pytest.raises(ConvergenceError, match=r"tol` = 1e-20.*tried.*gth.*Try") as exc:
        sp_ode.stationary_distribution(Q, tol=1e-20)
    assert isinstance(exc.value, RuntimeError) and exc.value.tol == 1e-20 and exc.value.bound > 1e-20
    assert sp_ode.ConvergenceError is ConvergenceError is sp_ode.markov.ConvergenceError


def test_return_info_reports_bound_clipping_and_escalations():
    Q = sp_ode.birth_death([1.0, 2.0], [3.0, 4.0])
    p, info = sp_ode.stationary_distribution(Q, method="solve", return_info=True)
    for key in ["method", "iterations", "residual", "bound", "negatives_clipped", "most_negative", "escalations",
                "bound_kind", "hitting_time", "tol"]:
        assert key in info, key
    assert info["method"] == "solve" and info["escalations"] == [] and info["bound"] <= 1e-13
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    assert info["componentwise_bound"] == pytest.approx(8 * 27 * 2.0**-53, rel=1e-6)


def test_stacks_carry_the_worst_bound():
    Qs = np.stack([ncd4(), sp_ode.birth_death([1.0, 2.0, 3.0], [3.0, 4.0, 5.0])])
    p, info = sp_ode.stationary_distribution(Qs, method="solve", return_info=True)
    assert info["method"] == "gth" and p.shape == (2, 4)  # the stack escalated as a whole
    assert_distribution(p)


# --- bad input ---

@pytest.mark.parametrize("kwargs, err, words", [
    ({"tol": 0.0}, ValueError, "`tol` must be finite and > 0"),
    ({"tol": -1e-8}, ValueError, "`tol`"),
    ({"tol": float("nan")}, ValueError, "`tol`"),
    ({"tol": float("inf")}, ValueError, "`tol`"),
    ({"tol": "1e-8"}, TypeError, "`tol` must be a real number"),
    ({"maxiter": 0}, ValueError, "`maxiter` must be >= 1"),
    ({"maxiter": 2.5}, TypeError, "`maxiter` must be an integer"),
    ({"log": True, "method": "solve"}, ValueError, "`log=True` needs method 'gth'"),
    ({"log": True, "method": "sparse"}, ValueError, "method='sparse'"),
    ({"log": "yes"}, TypeError, "`log` must be a bool"),
])
def test_bad_arguments_are_typed_errors_naming_the_argument(kwargs, err, words):
    with pytest.raises(err, match=words.replace("(", r"\(").replace("[", r"\[")):
        sp_ode.stationary_distribution(ncd4(), **kwargs)


# --- fuzzing (issue 11: never silently wrong, never a dependency's traceback, nothing on stdout) ---

@st.composite
def wild_generators(draw):
    """Irreducible by construction (a ring plus random edges), rates 1e-12 … 1e12, n = 1 … 30."""
    n = draw(st.integers(1, 30))
    logs = draw(st.lists(st.floats(-12, 12), min_size=n, max_size=n))
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(-12, 12)),
                          max_size=2 * n))
    R = np.zeros((n, n))
    for i in range(n):
        R[i, (i + 1) % n] += 10.0 ** logs[i]
    for i, j, lg in extra:
        if i != j:
            R[i, j] = 10.0**lg
    np.fill_diagonal(R, 0.0)
    fmt = draw(st.sampled_from(["dense", "csr", "csc", "coo"]))
    return R - np.diag(R.sum(axis=1)), fmt


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(wild_generators())
def test_fuzz_every_answer_is_within_its_bound_or_raises(capfd, case):
    Q, fmt = case
    exact = exact_stationary(Q)
    Qf = Q if fmt == "dense" else sp.csr_array(Q).asformat(fmt)
    for method in METHODS_ALL:
        try:
            p, info = sp_ode.stationary_distribution(Qf, method=method, return_info=True)
        except ConvergenceError:
            continue
        assert_distribution(p)
        assert l1_error(p, exact) <= info["bound"], (method, info)
        if info["componentwise_bound"] is not None:
            assert rel_errors_above(p, exact, floor=1e-300) <= info["componentwise_bound"], (method, info)
    assert capfd.readouterr().out == ""


def test_subnormal_rates_escalate_instead_of_nan():
    # Defect 6: "jax" returned NaN for subnormal rates (XLA flushes them to zero).
    a, b = 1e-310, 1.0
    Q = np.array([[-a, a], [b, -b]])
    exact = [Fraction(b) / (Fraction(a) + Fraction(b)), Fraction(a) / (Fraction(a) + Fraction(b))]
    for method in METHODS_ALL:
        p, info = sp_ode.stationary_distribution(Q, method=method, return_info=True)
        assert np.all(np.isfinite(p)) and l1_error(p, exact) <= info["bound"], method
    p = sp_ode.stationary_distribution(Q)
    assert abs(Fraction(float(p[1])) - exact[1]) <= 2.0**-1074  # exact to the subnormal spacing


def test_spectral_gap_symmetrises_chains_whose_p_leaves_the_float_range():
    # Constant rates λ, μ on n states: γ = λ + μ − 2√(λμ)·cos(π/n) (closed form of the reflecting walk).
    # p_k ∝ (λ/μ)^k spans 1e-472 here, so the old D^{1/2}QD^{-1/2} divided by zero and fell back to eigvals.
    lam, mu, n = 1e-8, 1.0, 60
    gamma, info = sp_ode.spectral_gap(sp_ode.birth_death([lam] * (n - 1), [mu] * (n - 1)), return_info=True)
    assert info["symmetrised"] and info["resolved"]
    assert gamma == pytest.approx(lam + mu - 2 * math.sqrt(lam * mu) * math.cos(math.pi / n), rel=1e-13)


@pytest.mark.parametrize("rates", [
    # 0→1, 0→2, 1→0, 1→2, 2→0: products of 1e-300 rates underflow inside the scaled elimination,
    # harmlessly (next to an O(1) entry) in the first chain; exact answers by rational elimination.
    {(0, 1): 1.0, (0, 2): 1e-300, (1, 0): 1e-300, (1, 2): 1.0, (2, 0): 1.0},
    {(0, 1): 1.0, (0, 2): 1e-300, (1, 0): 1e-300, (1, 2): 1e-300, (2, 0): 1e-300},
])
def test_rates_spanning_600_decades(rates):
    Q = np.zeros((3, 3))
    for (i, j), r in rates.items():
        Q[i, j] = r
    np.fill_diagonal(Q, -Q.sum(axis=1))
    exact = exact_stationary(Q)
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    assert info["underflow_terms"] == 0
    assert rel_errors_above(p, exact, floor=1e-300) <= info["componentwise_bound"]


# --- componentwise certificate of a sparse answer (docs/theory.md §7.9) ---

def _telegraph_Q(N=120):
    from sp_ode.networks.models import telegraph

    m = telegraph(N, k_on=0.7, k_off=1.9, k_m=23.0)
    space = m.space()
    return m.network.generator(space, [1.0]), space


def test_sparse_answer_refined_in_log_space_is_certified_entrywise():
    # The normwise sparse answer's tail is wrong by 14 orders of magnitude; the refinement of §7.9
    # brings every entry (down to e^-117) within its certified bound of subtraction-free GTH in log
    # space (banded GTH: an independent method with its own a-priori entrywise bound c·n³·u).
    Q, _ = _telegraph_Q()
    ref, ref_info = sp_ode.stationary_distribution(Q, method="banded", log=True, return_info=True)
    raw, raw_info = sp_ode.stationary_distribution(Q, method="sparse", componentwise=False, return_info=True)
    with np.errstate(divide="ignore"):
        assert np.max(np.abs(np.expm1(np.log(raw) - ref))) > 1.0          # before: the tail is not even close
    assert raw_info["componentwise_bound"] is None and raw_info["uncertified_below"] == raw_info["bound"]
    assert "NOT componentwise" in raw_info["bound_kind"]
    p, info = sp_ode.stationary_distribution(Q, method="sparse", return_info=True)
    kappa = info["componentwise_bound"]
    assert info["refinement"]["certified"] and kappa <= 1e-10
    err = np.max(np.abs(np.expm1(np.log(p) - ref)))
    assert err <= kappa + ref_info["componentwise_bound"]
    assert info["bound"] >= float(np.abs(p - np.exp(ref)).sum())


def test_componentwise_certificate_covers_a_deliberately_wrong_vector():
    # The certificate is checked on a wrong candidate: its bound must cover the planted error.
    from sp_ode.markov.bounds import componentwise_certificate

    Q, _ = _telegraph_Q(60)
    ref = sp_ode.stationary_distribution(Q, method="banded", log=True)
    k = int(np.argmax(ref))
    good = componentwise_certificate(Q, ref, k)
    assert good["certified"] and good["componentwise_bound"] <= 1e-10
    rng = np.random.default_rng(0)
    for planted in (1e-8, 1e-4):
        wrong = ref + planted * rng.uniform(-1, 1, ref.size)          # log p̂ off by up to `planted`
        wrong -= np.log(np.exp(wrong).sum())
        true_err = float(np.max(np.abs(np.expm1(ref - wrong))))       # max |p_i − p̂_i| / p̂_i
        cert = componentwise_certificate(Q, wrong, k)
        assert true_err > planted / 10
        assert not cert["certified"] or cert["componentwise_bound"] >= true_err, (planted, cert)


def test_ncd_chain_is_labelled_normwise_with_its_uncertified_level():
    # Two grids coupled by δ = 1e-15 (reversible: p ∝ exp(−V) exactly): the sparse answer cannot be
    # certified entrywise (the jump count of the reversed chain is ~1/δ); it says so, and with
    # componentwise=True the call escalates to banded GTH, which is exact.
    from sp_ode.markov.reference import reversible_grids

    Q, exact = reversible_grids(12, 1e-15)
    p, info = sp_ode.stationary_distribution(Q, method="sparse", tol=1.0, return_info=True)
    if info["method"] == "sparse":
        assert info["componentwise_bound"] is None and info["uncertified_below"] == pytest.approx(info["bound"])
        assert info["componentwise_failure"]
    p, info = sp_ode.stationary_distribution(Q, method="sparse", componentwise=True, return_info=True)
    assert info["method"] in ("banded", "gth") and info["escalations"][0]["method"] == "sparse"
    assert np.max(np.abs(p - exact) / exact) <= 1e-12


def test_componentwise_must_be_a_bool():
    with pytest.raises(TypeError, match="`componentwise` must be None, True or False; got str"):
        sp_ode.stationary_distribution(sp_ode.birth_death([1.0], [2.0]), componentwise="yes")
