"""sp_ode.markov.generator: validation (table of bad inputs), builders, structure, spectrum."""
from __future__ import annotations

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
