"""Tests of sp_ode.symbolic: exact p_st by the Markov chain tree theorem.

Provenance of expected values: closed forms of docs/theory.md §6 (2-state switch,
birth–death product formula), Cayley/Kirchhoff tree counts (n^(n−2) in-trees
per root of the complete graph, n per root of a ring), sympy's exact rational
`nullspace` on small numeric-rational instances (an independent method), a
brute-force in-tree enumerator (the readable reference), and the numeric GTH
solver `sp_ode.stationary_distribution` for the numeric bridge.
"""
from __future__ import annotations

import itertools
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
import sympy
from hypothesis import given, settings, strategies as st

import sp_ode
from sp_ode import symbolic as S
from sp_ode.symbolic.generator import symbolic_generator as sympy_generator
from sp_ode.symbolic.stationary import SymbolicTimeoutError, symbolic_stationary, verify_stationary
from sp_ode.symbolic.tree import count_in_trees, in_trees


def pos(*names):
    return sympy.symbols(names, positive=True)


# --- the tree enumeration against a brute-force reference ------------------------

def reference_in_trees(n, edges, root):
    """Readable reference: every choice of one out-edge per non-root state, kept when acyclic."""
    out = {v: [k for k, (i, _) in enumerate(edges) if i == v] for v in range(n)}
    others = [v for v in range(n) if v != root]
    found = set()
    for choice in itertools.product(*(out[v] for v in others)):
        parent = {edges[k][0]: edges[k][1] for k in choice}
        ok = True
        for v in others:
            seen, w = set(), v
            while w != root:
                if w in seen:
                    ok = False
                    break
                seen.add(w)
                w = parent[w]
            if not ok:
                break
        if ok:
            found.add(frozenset(choice))
    return found


@st.composite
def digraphs(draw):
    n = draw(st.integers(1, 5))
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    mask = draw(st.lists(st.booleans(), min_size=len(pairs), max_size=len(pairs)))
    return n, [e for e, keep in zip(pairs, mask) if keep]


@given(digraphs())
@settings(max_examples=40)
def test_in_trees_match_brute_force_and_kirchhoff(graph):
    n, edges = graph
    counts = count_in_trees(n, edges)
    for root in range(n):
        fast = in_trees(n, edges, root)
        assert len(set(map(frozenset, fast))) == len(fast)  # no tree twice
        assert set(map(frozenset, fast)) == reference_in_trees(n, edges, root)
        assert len(fast) == counts[root]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_tree_counts_complete_graph_cayley(n):
    Q = S.complete_generator(n)
    result = S.symbolic_stationary(Q)
    assert result.n_trees == n ** (n - 1)  # Cayley: n^(n-2) in-trees per root, n roots
    assert all(len(w) == n ** (n - 2) for w in result.weights)


def test_ring_has_n_trees_per_root():
    n = 12
    result = S.symbolic_stationary(S.ring_generator(n))
    assert result.n_trees == n * n  # delete one of the n undirected edges, orient towards the root
    assert result.verify().passed


# --- closed forms and an independent exact method ----------------------------

def test_two_state_switch_closed_form():
    a, b = pos("a", "b")
    result = S.symbolic_stationary(sympy.Matrix([[-a, a], [b, -b]]))
    expected = [b / (a + b), a / (a + b)]  # docs/theory.md §6
    assert all(sympy.cancel(p - e) == 0 for p, e in zip(result.p, expected))
    assert result.verify().positive is True


def test_birth_death_product_formula():
    n = 7
    result = S.symbolic_stationary(S.birth_death_generator(n))
    lam = [sympy.Symbol(f"lambda_{i}", positive=True) for i in range(n - 1)]
    mu = [None] + [sympy.Symbol(f"mu_{i}", positive=True) for i in range(1, n)]
    for k in range(n):
        ratio = sympy.prod([lam[i] / mu[i + 1] for i in range(k)])  # docs/theory.md §6: p_k ∝ Π λ_i/μ_{i+1}
        assert sympy.cancel(result.p[k] / result.p[0] - ratio) == 0
    # and the candidate built from the product formula passes the exact check on its own
    weights = [sympy.prod([lam[i] / mu[i + 1] for i in range(k)]) for k in range(n)]
    total = sum(weights)
    assert S.verify_stationary(result.Q, [w / total for w in weights]).passed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_matches_exact_rational_nullspace(seed):
    """At random rational rates the tree formula equals sympy's exact nullspace (n = 4: small)."""
    rng = np.random.default_rng(seed)
    Q = S.complete_generator(4)
    values = {s: sympy.Rational(int(rng.integers(1, 20)), int(rng.integers(1, 9))) for s in Q.free_symbols}
    p_tree = S.symbolic_stationary(Q).p.subs(values)
    (kernel,) = sympy.Matrix(Q.subs(values)).T.nullspace()
    p_ref = kernel / sum(kernel)
    assert sympy.simplify(p_tree - p_ref) == sympy.zeros(4, 1)


def test_complete_graph_certificate_and_polys():
    result = S.symbolic_stationary(S.complete_generator(5))
    cert = result.verify()
    assert cert.passed and cert.positive is True
    assert len(cert.identities) == 5 + 2
    assert cert.to_dict()["identities"][0]["held"] is True
    polys = result.polys()
    assert all(p.is_homogeneous and p.total_degree() == 4 for p in polys)
    assert all(all(c > 0 for c in p.coeffs()) for p in polys)


def test_verify_rejects_a_wrong_candidate():
    a, b, c = pos("a", "b", "c")
    Q = S.symbolic_generator({(0, 1): a, (1, 2): b, (2, 0): c})
    cert = S.verify_stationary(Q, [sympy.Rational(1, 3)] * 3)  # uniform: stationary only if a = b = c
    assert not cert.passed
    assert [held for _, held in cert.identities] == [False, False, False, True]
    w = [b * c, a * c, a * b]  # the cycle's tree formula: w_i = product of the other two rates
    assert S.verify_stationary(Q, [x / sum(w) for x in w]).passed


def test_rational_function_rates_use_a_field():
    a, b = pos("a", "b")
    Q = S.symbolic_generator({(0, 1): a / (1 + b), (1, 0): b, (1, 2): 1, (2, 0): a})
    result = S.symbolic_stationary(Q)
    assert "Rational function field" in result.verify().domain
    assert result.verify().passed
    with pytest.raises(ValueError, match="rational functions"):
        result.polys()


def test_constant_integer_generator():
    Q = sympy.Matrix([[-2, 2], [1, -1]])
    result = S.symbolic_stationary(Q)
    assert list(result.p) == [sympy.Rational(1, 3), sympy.Rational(2, 3)]
    assert result.verify().passed


def test_one_state():
    result = S.symbolic_stationary(sympy.Matrix([[0]]))
    assert list(result.p) == [1] and result.verify().passed


# --- reversibility ----------------------------------------------------------------

def test_reversibility_birth_death_and_cycles():
    bd = S.birth_death_generator(6)
    assert S.detailed_balance(bd).reversible and S.kolmogorov_criterion(bd).reversible
    full = S.complete_generator(3)
    assert not S.detailed_balance(full).reversible
    kol = S.kolmogorov_criterion(full)
    assert not kol.reversible and kol.checked == 1
    # Constrain the one cycle: k20 = k02 k21 k10 / (k01 k12) makes it balance.
    k = {(i, j): sympy.Symbol(f"k_{i}_{j}", positive=True) for i in range(3) for j in range(3) if i != j}
    k[(2, 0)] = k[(0, 2)] * k[(2, 1)] * k[(1, 0)] / (k[(0, 1)] * k[(1, 2)])
    Qr = S.symbolic_generator(k, 3)
    assert S.detailed_balance(Qr).reversible and S.kolmogorov_criterion(Qr).reversible
    one_way = S.symbolic_generator({(0, 1): 1, (1, 2): 1, (2, 0): 1})
    assert not S.kolmogorov_criterion(one_way).reversible
    assert not S.detailed_balance(one_way).reversible


@given(st.integers(0, 10_000), st.integers(3, 5))
@settings(max_examples=15)
def test_kolmogorov_agrees_with_detailed_balance(seed, n):
    """Random symmetric-support graphs, some with reversible rates π_j/π_i-weighted, some not."""
    rng = np.random.default_rng(seed)
    pi = [sympy.Integer(int(x)) for x in rng.integers(1, 5, n)]
    rates = {}
    for i in range(n):
        for j in range(i + 1, n):
            if j == i + 1 or rng.random() < 0.5:  # a path keeps it irreducible
                r = sympy.Integer(int(rng.integers(1, 4)))
                rates[(i, j)] = r * pi[j]  # π_i Q_ij = π_j Q_ji: reversible by construction
                rates[(j, i)] = r * pi[i]
    if rng.random() < 0.5:
        i, j = next(iter(rates))
        rates[(i, j)] += 1
    Q = S.symbolic_generator(rates, n)
    assert S.kolmogorov_criterion(Q).reversible == S.detailed_balance(Q).reversible


# --- numeric bridge and output ----------------------------------------------------

def test_numeric_bridge_matches_gth_on_the_cycle3_family():
    y = sympy.Symbol("y", real=True)
    e = sympy.exp
    # The built-in cycle3 family of sp_ode.markov.families, written symbolically.
    Q = S.symbolic_generator({
        (0, 1): 2 * e(y), (0, 2): sympy.Rational(1, 2),
        (1, 0): 1, (1, 2): 1 + e(-y),
        (2, 0): sympy.Rational(3, 2) * e(y / 2), (2, 1): sympy.Rational(3, 10),
    })
    report = S.numeric_bridge(S.symbolic_stationary(Q), y, np.linspace(-2, 2, 21))
    assert report.passed and report.n_points == 21
    fam = sp_ode.FAMILIES["cycle3"]
    p_fam = sp_ode.stationary_distribution(np.asarray(fam(np.array([0.7]))))
    p_sym = S.symbolic_stationary(Q).lambdify(y)(0.7)
    np.testing.assert_allclose(p_sym, p_fam, rtol=100 * 9 * np.finfo(float).eps)


def test_numeric_bridge_with_params_and_errors():
    a = sympy.Symbol("a", positive=True)
    y = sympy.Symbol("y", real=True)
    Q = S.symbolic_generator({(0, 1): a * e_(y), (1, 0): 1, (1, 2): a, (2, 0): 2})
    report = S.numeric_bridge(Q, y, np.linspace(0, 1, 5), params={a: 3})
    assert report.passed
    with pytest.raises(ValueError, match="missing"):
        S.numeric_bridge(Q, y, np.linspace(0, 1, 5))
    with pytest.raises(ValueError, match="missing"):
        S.symbolic_stationary(Q).lambdify(y)
    with pytest.raises(ValueError, match="`grid` must be finite"):
        S.numeric_bridge(Q, y, [0.0, np.nan], params={a: 1})


def e_(y):
    return sympy.exp(y)


def test_latex_output():
    a, b = pos("a", "b")
    text = S.symbolic_stationary(sympy.Matrix([[-a, a], [b, -b]])).latex()
    assert text.startswith("\\begin{aligned}") and "p_{0} &= \\frac{b}{D}" in text and "D &= a + b" in text
    inline = S.symbolic_stationary(sympy.Matrix([[-a, a], [b, -b]])).latex(common_denominator=False)
    assert "p_{0} &= \\frac{b}{a + b}" in inline


def test_common_form_divides_out_the_shared_factor():
    # 3-cycle with every rate scaled by c: each in-tree has 2 edges, so c^2 divides every w_r;
    # p ∝ (bd, ad, ab) with D = ab + ad + bd (the c's cancel), by hand from Qᵀp = 0.
    a, b, c, d = pos("a", "b", "c", "d")
    Q = S.symbolic_generator({(0, 1): c * a, (1, 2): c * b, (2, 0): c * d}, 3)
    nums, den = S.symbolic_stationary(Q).common_form
    assert [sympy.expand(x) for x in nums] == [b * d, a * d, a * b]
    assert sympy.expand(den - (a * b + a * d + b * d)) == 0


def test_false_claim_leftover_is_the_residual():
    # uniform p on a 3-cycle a, b, c: (Qᵀp)_0 = (c − a)/3 by hand.
    a, b, c = pos("a", "b", "c")
    Q = S.symbolic_generator({(0, 1): a, (1, 2): b, (2, 0): c}, 3)
    cert = S.verify_stationary(Q, [sympy.Rational(1, 3)] * 3)
    left = dict(cert.leftover)
    assert not cert.passed and sympy.simplify(left["(Q^T p)_0"] - (c - a) / 3) == 0
    assert "1^T p - 1" not in left
    assert "S &=" in S.symbolic_stationary(sympy.Matrix([[-a, a], [b, -b]])).latex(normalised=False)


# --- signs, bad input, size guard ---------------------------------------------------

def test_sign_handling():
    a = sympy.Symbol("a")  # no sign declared
    Q = sympy.Matrix([[-a, a], [1, -1]])
    with pytest.raises(S.SignUndecidableError, match=r"`Q\[0, 1\]`.*cannot decide"):
        S.symbolic_stationary(Q)
    result = S.symbolic_stationary(Q, assume_nonnegative=True)
    assert result.rate_signs[(0, 1)] == "assumed" and result.verify().passed
    assert result.verify().positive is None  # a is not declared positive: p > 0 not certified
    x = sympy.Symbol("x", nonnegative=True)
    Q2 = sympy.Matrix([[-(x + 1), x + 1], [x**2, -(x**2)]])
    assert S.symbolic_stationary(Q2).rate_signs == {(0, 1): "positive", (1, 0): "nonnegative"}


@pytest.mark.parametrize(
    "Q, exc, match",
    [
        (np.array([[-1.0, 1.0], [1.0, -1.0]]), TypeError, "numpy array"),
        ("[[-1, 1], [1, -1]]", TypeError, "sympy Matrix"),
        (sympy.Matrix([[-1, 1, 0], [1, -1, 0]]), ValueError, "square"),
        (sympy.Matrix([[1, -1], [1, -1]]), ValueError, r"`Q\[0, 1\]` is a rate and must be ≥ 0"),
        (sympy.Matrix([[-1, 1], [1, -2]]), ValueError, "row 1 sums to -1"),
        (sympy.Matrix([[-0.5, 0.5], [1, -1]]), TypeError, "floating point"),
        ([[-1, 1], [1.0, -1]], TypeError, "floating point"),
        (sympy.Matrix([[-1, 1], [0, 0]]), sp_ode.NotIrreducibleError, "irreducible"),
    ],
)
def test_bad_input(Q, exc, match):
    with pytest.raises(exc, match=match):
        S.symbolic_stationary(Q)


def test_lists_and_fractions_are_accepted():
    result = S.symbolic_stationary([[-1, 1], [Fraction(1, 2), Fraction(-1, 2)]])
    assert list(result.p) == [sympy.Rational(1, 3), sympy.Rational(2, 3)]


def test_size_guard_refuses_quickly():
    with pytest.raises(S.SymbolicSizeError, match="spanning in-trees"):
        S.symbolic_stationary(S.complete_generator(8))  # 8^7 ≈ 2.1e6 trees > default guard
    with pytest.raises(S.SymbolicSizeError, match="max_trees=5"):
        S.symbolic_stationary(S.complete_generator(3), max_trees=5)
    with pytest.raises(ValueError, match="max_trees"):
        S.symbolic_stationary(S.complete_generator(3), max_trees=0)


def test_import_sp_ode_does_not_import_sympy():
    code = "import sys, sp_ode; assert 'sympy' not in sys.modules; sp_ode.symbolic_stationary; assert 'sympy' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fast_expression_builder_matches_sympy_reference():
    """`_expr` (Mul._from_args on canonically ordered factors) equals PolyElement.as_expr, the reference."""
    from sp_ode.symbolic.stationary import _expr

    a, b = pos("a", "b")
    y = sympy.Symbol("y", real=True)
    cases = [
        S.complete_generator(4),
        S.ring_generator(7),
        S.symbolic_generator({(0, 1): a, (1, 2): a, (2, 0): sympy.Rational(3, 2) * b, (1, 0): 2 * a * b}),  # powers, coefficients
        S.symbolic_generator({(0, 1): sympy.exp(y), (1, 0): sympy.exp(y / 2), (1, 2): 1, (2, 1): a}),  # non-Symbol generators
        S.symbolic_generator({(0, 1): a / (1 + b), (1, 0): b}),  # fraction field
    ]
    for Q in cases:
        result = S.symbolic_stationary(Q)
        for w in list(result.weights) + [result.normaliser_element]:
            fast, ref = _expr(w), w.as_expr()
            assert fast == ref and hash(fast) == hash(ref) and sympy.srepr(fast) == sympy.srepr(ref)


@st.composite
def sparse_symbolic_generators(draw):
    """Irreducible by construction: a directed ring plus random extra edges, each rate its own symbol."""
    n = draw(st.integers(2, 5))
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=2 * n))
    edges = {(i, (i + 1) % n) for i in range(n)} | {(i, j) for i, j in extra if i != j}
    return S.symbolic_generator({e: sympy.Symbol(f"r_{e[0]}_{e[1]}", positive=True) for e in sorted(edges)}, n)


@given(sparse_symbolic_generators(), st.integers(0, 2**32 - 1))
@settings(max_examples=25)
def test_random_sparse_generators_verify_and_match_gth(Q, seed):
    """Exact certificate on random sparse graphs, and GTH agreement at random rational rates."""
    result = S.symbolic_stationary(Q)
    cert = result.verify()
    assert cert.passed and cert.positive is True
    assert result.n_trees == int(count_in_trees(Q.rows, list(result.rate_signs)).sum())
    rng = np.random.default_rng(seed)
    values = {s: sympy.Rational(int(rng.integers(1, 1000)), int(rng.integers(1, 1000))) for s in Q.free_symbols}
    p_exact = np.array([float(x) for x in result.p.subs(values)])
    p_gth = sp_ode.stationary_distribution(np.array(Q.subs(values), dtype=np.float64))
    np.testing.assert_allclose(p_gth, p_exact, rtol=100 * Q.rows**2 * np.finfo(float).eps)


# --- issue 25: claims written as fractions of fractions, deadlines, normalisation --------------------

def _proofreading(L: int):
    """A chain E → C1 → … → C_L with every C_i returning to E, its p_st written Horner-style (nested quotients).

    p_C_k / p_E = Π_{i<k} r_i with r_i = k_{2i} / (k_{2i+1} + k_{2i+2}) (flux balance at each C),
    and p_E = 1 / (1 + r_0 (1 + r_1 (1 + …))): the form a person derives by hand.
    """
    k = sympy.symbols(f"k0:{2 * L + 2}", positive=True)
    rates = {}
    for i in range(L):
        rates[(i, i + 1)] = k[2 * i]
        rates[(i + 1, 0)] = k[2 * i + 1]
    Q = sympy_generator(rates, L + 1)
    r = [k[2 * i] / (k[2 * i + 1] + (k[2 * i + 2] if i + 1 < L else 0)) for i in range(L)]

    def nest(i):
        return sympy.Integer(1) if i == L else 1 + r[i] * nest(i + 1)

    prods = [sympy.Integer(1)]
    for i in range(L):
        prods.append(prods[-1] * r[i])
    return Q, [sympy.Mul(p, 1 / nest(0), evaluate=False) for p in prods]


def test_nested_claim_is_normalised_before_comparing():
    # before: the 7-state nested claim (L = 6) took 7.4 s and L = 8 ran for minutes, expanding every
    # quotient inside the exact field; brought over one denominator first, L = 8 takes well under 10 s
    Q, claim = _proofreading(8)
    cert = verify_stationary(Q, claim, max_seconds=60)
    assert cert.passed and cert.seconds < 10, cert.seconds


def test_max_seconds_stops_with_the_stage_named():
    Q, claim = _proofreading(3)
    with pytest.raises(SymbolicTimeoutError, match=r"stopped after .* at claim entry 0") as info:
        verify_stationary(Q, claim, max_seconds=1e-12)
    assert info.value.stage == "claim entry 0"
    with pytest.raises(SymbolicTimeoutError, match="in-trees of state 0"):
        symbolic_stationary(Q, max_seconds=1e-12)
    with pytest.raises(ValueError, match="`max_seconds` must be > 0"):
        verify_stationary(Q, claim, max_seconds=0)


def test_claim_proportional_to_p_st_reports_c_and_names_states():
    Q, claim = _proofreading(2)
    cert = verify_stationary(Q, [3 * x for x in claim], states=["E", "C1", "C2"])
    assert not cert.passed and cert.proportional and cert.normalisation == 3
    assert cert.verdict.startswith("proportional to p_st (normalisation c = 3)")
    wrong = verify_stationary(Q, [claim[1], claim[0], claim[2]], states=["E", "C1", "C2"])
    assert wrong.proportional is None and wrong.verdict == "FALSE"
    assert any(name.startswith("(Q^T p)_C1") or name.startswith("(Q^T p)_E") for name, _ in wrong.leftover)
