"""sp_ode.markov.generator: validation (table of bad inputs), builders, structure, spectrum."""
from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given

import sp_ode
from sp_ode.markov.generator import check_generator
from tests.strategies import generators

Q2 = np.array([[-2.0, 2.0], [3.0, -3.0]])


# --- bad inputs: (label, input, exception type, words the message must contain) ---
def _sparse_negative():
    A = sp.csr_array(np.array([[1.0, -1.0], [2.0, -2.0]]))
    return A


BAD = [
    ("non-square", np.zeros((2, 3)), ValueError, ["`Q`", "square", "(2, 3)"]),
    ("1-D", np.zeros(3), ValueError, ["`Q`", "2-D", "(3,)"]),
    ("3-D without batch", np.zeros((2, 2, 2)), ValueError, ["`Q`", "2-D"]),
    ("empty", np.zeros((0, 0)), ValueError, ["`Q`", "at least one state"]),
    ("NaN", np.array([[-1.0, np.nan], [1.0, -1.0]]), ValueError, ["`Q`", "finite", "nan"]),
    ("inf", np.array([[-np.inf, np.inf], [1.0, -1.0]]), ValueError, ["`Q`", "finite"]),
    ("negative rate", np.array([[1.0, -1.0], [1.0, -1.0]]), ValueError, ["`Q`", ">= 0", "(0, 1)"]),
    ("rows not summing to zero", np.array([[-1.0, 2.0], [1.0, -1.0]]), ValueError, ["`Q`", "sum to zero"]),
    ("stochastic matrix", np.array([[0.5, 0.5], [0.2, 0.8]]), ValueError, ["`Q`", "transition matrix", "P - I"]),
    ("complex", Q2.astype(complex), TypeError, ["`Q`", "real", "complex"]),
    ("object dtype", np.array([[-1, 1], [1, "a"]], dtype=object), TypeError, ["`Q`", "object"]),
    ("ragged list", [[-1.0, 1.0], [1.0]], TypeError, ["`Q`"]),
    ("string", "Q", TypeError, ["`Q`", "str"]),
    ("None", None, TypeError, ["`Q`"]),
    ("sparse negative off-diagonal", _sparse_negative(), ValueError, ["`Q`", ">= 0", "(0, 1)"]),
    ("sparse non-square", sp.csr_array(np.zeros((2, 3))), ValueError, ["`Q`", "square"]),
    ("sparse rows not summing to zero", sp.csr_array(np.array([[-1.0, 2.0], [1.0, -1.0]])), ValueError,
     ["`Q`", "sum to zero"]),
]


@pytest.mark.parametrize("label, Q, exc, words", BAD, ids=[b[0] for b in BAD])
def test_bad_generators_raise_typed_errors_naming_the_argument(label, Q, exc, words):
    with pytest.raises(exc) as info:
        check_generator(Q)
    for w in words:
        assert w in str(info.value), (label, str(info.value))
    # the solver front door reports the same rule
    with pytest.raises(exc):
        sp_ode.stationary_distribution(Q)


def test_reducible_generator_names_closed_classes():
    Q = sp_ode.from_rates({(0, 1): 1.0, (2, 3): 1.0, (3, 2): 2.0, (4, 0): 1.0}, n=5)
    with pytest.raises(sp_ode.NotIrreducibleError) as info:
        sp_ode.stationary_distribution(Q)
    err = info.value
    assert isinstance(err, ValueError)
    assert "{1}" in str(err) and "{2, 3}" in str(err)
    assert [c.tolist() for c in err.closed_classes] == [[1], [2, 3]]


def test_row_sum_tolerance_scales_with_rates():
    # A rounding-level row-sum error on rates of size 1e12 is accepted; an O(1e-3) relative one is not.
    big = 1e12 * np.array([[-1.0, 1.0], [1.0, -1.0]])
    big[0, 0] -= 1e-4  # relative 1e-16
    check_generator(big)
    big[0, 0] -= 1e9
    with pytest.raises(ValueError, match="sum to zero"):
        check_generator(big)


@given(generators())
def test_valid_generators_pass_and_are_returned_as_float64(Q):
    out = check_generator(Q)
    assert out.dtype == np.float64 and np.array_equal(out, Q)
    assert sp_ode.is_irreducible(Q)


# --- builders ---

def test_from_rates_dict_and_edge_list_agree_and_add_repeats():
    a = sp_ode.from_rates({(0, 1): 1.5, (1, 2): 2.0, (2, 0): 0.5})
    b = sp_ode.from_rates([(0, 1, 1.0), (0, 1, 0.5), (1, 2, 2.0), (2, 0, 0.5)])
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, [[-1.5, 1.5, 0], [0, -2, 2], [0.5, 0, -0.5]])
    assert sp.issparse(sp_ode.from_rates({(0, 1): 1.0}, n=3, sparse=True))


@pytest.mark.parametrize("rates, exc, words", [
    ({(0, 0): 1.0}, ValueError, "self-loops"),
    ({(0, 1): -1.0}, ValueError, ">= 0"),
    ({(0, 1.5): 1.0}, TypeError, "integers"),
    ({(0, 5): 1.0}, ValueError, "out of range"),
    ([(0, 1)], ValueError, "(i, j, rate)"),
])
def test_from_rates_rejects_bad_edges(rates, exc, words):
    with pytest.raises(exc, match=words.replace("(", r"\(").replace(")", r"\)")):
        sp_ode.from_rates(rates, n=3 if 5 not in [j for (_, j) in (rates if isinstance(rates, dict) else [])] else 3)


def test_birth_death_structure_and_errors():
    Q = sp_ode.birth_death([1.0, 2.0], [3.0, 4.0])
    np.testing.assert_array_equal(Q, [[-1, 1, 0], [3, -5, 2], [0, 4, -4]])
    with pytest.raises(ValueError, match="same length"):
        sp_ode.birth_death([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="`death`"):
        sp_ode.birth_death([1.0], [-1.0])


@given(generators(min_n=2))
def test_uniformize_round_trip(Q):
    P, lam = sp_ode.uniformize(Q)
    assert np.all(P >= -1e-15) and np.allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(sp_ode.from_transition_matrix(P, lam), Q, rtol=1e-12, atol=1e-12 * lam)


def test_uniformize_rejects_small_lambda_and_stochastic_check():
    with pytest.raises(ValueError, match="`lam`"):
        sp_ode.uniformize(Q2, lam=1.0)
    with pytest.raises(ValueError, match="`P` rows must sum to one"):
        sp_ode.from_transition_matrix(np.array([[0.5, 0.4], [0.5, 0.5]]))


# --- structure ---

def test_communicating_and_closed_classes():
    # 0 → 1 ⇄ 2, 3 ⇄ 4, 5 → 3: classes {0}, {1,2}, {3,4}, {5}; closed {1,2}, {3,4}
    Q = sp_ode.from_rates({(0, 1): 1, (1, 2): 1, (2, 1): 1, (3, 4): 1, (4, 3): 1, (5, 3): 1})
    assert [c.tolist() for c in sp_ode.communicating_classes(Q)] == [[0], [1, 2], [3, 4], [5]]
    assert [c.tolist() for c in sp_ode.closed_classes(Q)] == [[1, 2], [3, 4]]
    assert not sp_ode.is_irreducible(Q)
    assert sp_ode.is_irreducible(np.zeros((1, 1)))


# --- spectrum ---

def test_spectral_gap_two_state_closed_form():
    # eigenvalues of [[-a, a], [b, -b]] are 0 and -(a + b)
    assert sp_ode.spectral_gap(Q2) == pytest.approx(5.0, rel=1e-14)


@pytest.mark.parametrize("n, mu, sparse", [(40, 2.0, False), (3000, 1.001, True)])
def test_spectral_gap_birth_death_closed_form(n, mu, sparse):
    # Constant rates λ = 1, μ on 0…n−1: the nonzero eigenvalues are
    # −(λ + μ) + 2√(λμ) cos(kπ/n), k = 1 … n−1 (the chain is reversible; its symmetrisation is
    # tridiagonal Toeplitz with reflecting ends).  Q is so non-normal (p spans 2^{-n}) that a
    # general eigensolver returns noise here; the symmetrised path must not.
    Q = sp_ode.birth_death(np.full(n - 1, 1.0), np.full(n - 1, mu), sparse=sparse)
    gap = (1 + mu) - 2 * np.sqrt(mu) * np.cos(np.pi / n)
    assert sp_ode.spectral_gap(Q) == pytest.approx(gap, rel=1e-9)


@given(generators(min_n=2, max_n=7, log_rate_range=3.0))
def test_group_inverse_identities(Q):
    A = Q.T
    G = sp_ode.group_inverse(Q)
    scale = np.linalg.norm(A) * np.linalg.norm(G)
    tol = 1e-10 * scale * np.linalg.norm(G)
    assert np.max(np.abs(A @ G @ A - A)) <= 1e-10 * scale * np.linalg.norm(A)
    assert np.max(np.abs(G @ A @ G - G)) <= tol
    assert np.max(np.abs(A @ G - G @ A)) <= 1e-10 * scale
    # T4: q − p = A^# (Qᵀ q) for q on the simplex; and the matrix-free apply agrees
    p = sp_ode.stationary_distribution(Q)
    q = np.linspace(1.0, 2.0, Q.shape[0])
    q /= q.sum()
    np.testing.assert_allclose(G @ (A @ q), q - p, atol=1e-9 * scale)
    np.testing.assert_allclose(sp_ode.group_inverse_apply(Q, A @ q), G @ (A @ q), atol=1e-9 * scale)


def test_group_inverse_apply_validates_v():
    with pytest.raises(ValueError, match="`v`"):
        sp_ode.group_inverse_apply(Q2, np.ones(3))


# --- float32 generators (issue 25: "rows must sum to zero (max |row sum| 6e-08)" blamed the user) ---

def _rates(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    R = rng.uniform(0.1, 3.0, (n, n)) * (rng.uniform(size=(n, n)) < 0.7)
    R[np.arange(n), (np.arange(n) + 1) % n] += 0.5            # a ring: irreducible
    np.fill_diagonal(R, 0.0)
    return R


def _float32_generator(R64: np.ndarray) -> np.ndarray:
    """As a user's jnp code builds Q outside float64 mode: rates and the diagonal rounded to float32."""
    R = R64.astype(np.float32)
    return R - np.diag(R.sum(axis=1, dtype=np.float32))


def test_float32_generator_is_accepted_with_its_rounding_in_the_bound():
    n = 6
    R64 = _rates(n, 0)
    Q32 = _float32_generator(R64)
    assert np.abs(Q32.astype(np.float64).sum(axis=1)).max() > 1e-8   # the premise: float32 row sums
    with pytest.raises(ValueError, match="rows must sum to zero"):
        check_generator(Q32.astype(np.float64))                        # as float64 it is rightly refused
    p, info = sp_ode.stationary_distribution(Q32, return_info=True)
    p_meant = sp_ode.stationary_distribution(R64 - np.diag(R64.sum(axis=1)))  # the rates before rounding
    assert info["input_rounding"] == pytest.approx(((1 + 2**-24) / (1 - 2**-24)) ** (n - 1) - 1, rel=1e-9)
    assert np.abs(p - p_meant).sum() <= info["bound"]                  # the bound covers the rounding
    assert np.all(np.abs(p - p_meant) <= info["componentwise_bound"] * p_meant)
    assert info["bound"] < 10 * info["input_rounding"]                 # and is not vacuous
    for method in ("solve", "jax"):
        q, extra = sp_ode.stationary_distribution(Q32, method=method, return_info=True)
        assert np.abs(q - p_meant).sum() <= extra["bound"]
    with pytest.raises(sp_ode.ConvergenceError, match=r"float32.*more than `tol` = 1e-09.*sp_ode.float64"):
        sp_ode.stationary_distribution(Q32, tol=1e-9)                 # a tol below float32 is refused, saying why
    bad = Q32.copy()
    bad[0, 0] += 1e-3
    with pytest.raises(ValueError, match="float32 input is allowed"):  # beyond float32 rounding: says float32
        sp_ode.stationary_distribution(bad)


def test_input_rounding_bound_is_attained_for_two_states():
    # p_0 = b/(a + b) (DESIGN §6); rates a(1 + δ), b(1 − δ) with b/a → 0 move p_0 by the factor
    # (1 − δ)/(1 + δ), which is the bound for n = 2 (exact rational arithmetic)
    from fractions import Fraction

    from sp_ode.markov.bounds import input_rounding_bound

    delta = Fraction(1, 2**24)
    a, b = Fraction(10**9), Fraction(1)
    p0 = b / (a + b)
    p0_moved = b * (1 - delta) / (a * (1 + delta) + b * (1 - delta))
    change = float(p0 / p0_moved - 1)
    assert change <= input_rounding_bound(2, float(delta)) <= change * (1 + 1e-6)
    rng = np.random.default_rng(1)                # and never exceeded by random perturbations (n = 5)
    R = _rates(5, 1)
    p = sp_ode.stationary_distribution(R - np.diag(R.sum(axis=1)))
    d = 1e-3
    for _ in range(20):
        Rp = R * (1 + d * rng.uniform(-1, 1, R.shape))
        q = sp_ode.stationary_distribution(Rp - np.diag(Rp.sum(axis=1)))
        assert np.max(np.abs(q / p - 1)) <= input_rounding_bound(5, d)


# --- numeric detailed balance ------------------------------------------------------------------

def test_detailed_balance_of_a_birth_death_chain_gives_its_potential():
    lam, mu = np.array([1.0, 2.0, 0.5]), np.array([3.0, 1.0, 4.0])
    Q = sp_ode.birth_death(lam, mu)
    check = sp_ode.check_detailed_balance(Q)
    assert check.reversible and check.checked == 0            # a path: every pair is a tree edge
    w = np.concatenate([[1.0], np.cumprod(lam / mu)])         # p_k ∝ Π λ_i/μ_{i+1} (DESIGN §6)
    np.testing.assert_allclose(check.potential, w / w.sum(), rtol=1e-14)


def _reversible_ring(n: int, seed: int) -> np.ndarray:
    """Q_ij = s_ij / π_i with s symmetric: detailed balance π_i Q_ij = s_ij holds exactly by construction."""
    rng = np.random.default_rng(seed)
    pi = rng.uniform(0.5, 2.0, n)
    S = np.zeros((n, n))
    for i in range(n):
        j = (i + 1) % n
        S[i, j] = S[j, i] = rng.uniform(0.5, 2.0)
    S[0, n // 2] = S[n // 2, 0] = 1.3                         # a chord: two independent cycles
    R = S / pi[:, None]
    return R - np.diag(R.sum(axis=1)), pi / pi.sum()


def test_detailed_balance_tolerance_comes_from_rounding_and_catches_small_violations():
    Q, pi = _reversible_ring(7, 0)
    check = sp_ode.check_detailed_balance(Q, states=list("ABCDEFG"))
    assert check.reversible and check.checked == 2, check.message
    np.testing.assert_allclose(check.potential, pi, rtol=1e-13)
    assert check.tolerance < 1e-13                              # float64 rates: a few hundred u
    broken = Q.copy()
    broken[2, 3] *= 1 + 1e-11                                   # one rate off by 1e-11: a cycle no longer balances
    broken[2, 2] = -(broken[2].sum() - broken[2, 2])
    bad = sp_ode.check_detailed_balance(broken, states=list("ABCDEFG"))
    assert not bad.reversible and bad.worst == pytest.approx(1e-11, rel=0.05) and bad.potential is None
    assert "<->" in bad.message and "tolerance" in bad.message
    # the same chain in float32: rounding of 2⁻²⁴ per rate is within the tolerance, not a violation
    R32 = (Q - np.diag(np.diag(Q))).astype(np.float32)
    assert sp_ode.check_detailed_balance(R32 - np.diag(R32.sum(axis=1))).reversible
    cycle = sp_ode.check_detailed_balance(sp_ode.get_family("cycle3")(0.3), states=["x", "y", "z"])
    assert not cycle.reversible and re.search(r"worst pair [xyz] <-> [xyz]", cycle.message), cycle.message


def test_one_way_rate_and_reducible_chain_are_named_by_state():
    Q = np.array([[-1.0, 1.0, 0.0], [0.0, -2.0, 2.0], [3.0, 1.0, -4.0]])
    check = sp_ode.check_detailed_balance(Q, states=["C", "O", "I"])
    assert not check.reversible and "C -> O" in check.message and "O -> C is 0" in check.message
    R = np.array([[-1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    with pytest.raises(sp_ode.NotIrreducibleError, match=r"\{O\}, \{I\}"):
        sp_ode.stationary_distribution(R, states=["C", "O", "I"])
    with pytest.raises(ValueError, match=r"rate O -> I"):
        check_generator(np.array([[-1.0, 1.0, 0.0], [1.0, 0.0, -1.0], [0.0, 1.0, -1.0]]), states=["C", "O", "I"])
