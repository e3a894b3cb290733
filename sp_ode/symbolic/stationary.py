"""Exact symbolic stationary distributions of generators with sympy rates.

A symbolic generator Q is an n×n sympy matrix whose off-diagonal entries
Q[i, j] (i ≠ j) are rates — sympy expressions in symbols or in functions of a
slow variable y — and whose rows sum to zero (docs/theory.md §2).  For irreducible Q
the stationary distribution p_st (Qᵀp = 0, 1ᵀp = 1) is given by the Markov
chain tree theorem,

    w_r = Σ_{spanning in-trees T rooted at r} Π_{(i → j) ∈ T} Q[i, j],
    p_st = w / S,   S = 1ᵀw,

so p_st is a ratio of polynomials in the rates with positive coefficients: no
elimination, no division, no `Matrix.nullspace` (which takes 55 s for a fully
symbolic 4-state generator).  `symbolic_stationary` enumerates the in-trees
(`sp_ode.symbolic.tree`) and multiplies the rates in sympy's sparse polynomial ring
(`PolyElement`), or in its rational-function field when a rate has a symbolic
denominator.  Generators that are not plain symbols (exp(y), sqrt(2), …)
become ring generators; because an identity in this free ring holds for every
value of the generators, each zero found here is a true identity.

`StationaryCertificate` records the exact check: each (Qᵀw)_j expanded to the
zero polynomial, S ≠ 0, and — when every generator is declared positive and
every coefficient of w_r is positive — strict positivity of p_st.

Reversibility: `detailed_balance` (p_i Q[i, j] = p_j Q[j, i] for every pair,
exactly) and `kolmogorov_criterion` (the product of rates around every cycle
equals the product in reverse; it suffices to check the fundamental cycles of
one spanning tree of the undirected support, because those conditions
define a potential π with π_i Q[i, j] = π_j Q[j, i] on every edge).

Rates must be declared positive (`Symbol('a', positive=True)`) or be
provably nonnegative; when sympy cannot decide a sign, `SignUndecidableError`
says so instead of guessing.  `SymbolicSizeError` refuses, before any symbolic
work, a problem whose number of spanning in-trees (counted in floating point
by Kirchhoff's theorem) exceeds `max_trees`.
"""
from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import sympy

from sp_ode.core.errors import Error
from sp_ode.core.summary import Summarised, number
from sp_ode.core.validation import check_finite, check_finite_array, check_positive
from sp_ode.markov.stationary import stationary_distribution
from sp_ode.symbolic.generator import (
    GeneratorData,
    as_entry,
    balanced_sum,
    parse_generator,
)
from sp_ode.symbolic.tree import count_in_trees, in_trees

#: default size guard: the complete graph on 7 states has 7⁶ = 117 649 in-trees.
MAX_TREES = 250_000

class SymbolicSizeError(Error, ValueError):
    """The symbolic problem is beyond the size guard (too many spanning in-trees)."""


class SymbolicTimeoutError(Error, TimeoutError):
    """A symbolic computation reached its `max_seconds` deadline; `stage` says where it stopped.

    The deadline is checked between steps (one claim entry, one identity, one root of the
    tree formula); a single step is not interrupted.
    """

    def __init__(self, message: str, stage: str = "", seconds: float = 0.0):
        super().__init__(message)
        self.stage = stage
        self.seconds = seconds


def _check_max_seconds(max_seconds) -> float | None:
    if max_seconds is None:
        return None
    return check_positive("max_seconds", max_seconds)


class _Deadline:
    """`check(stage)` raises SymbolicTimeoutError once `max_seconds` have passed since the start."""

    def __init__(self, max_seconds: float | None, what: str):
        self.start = time.perf_counter()
        self.max_seconds, self.what = max_seconds, what

    def check(self, stage: str) -> None:
        if self.max_seconds is None:
            return
        elapsed = time.perf_counter() - self.start
        if elapsed > self.max_seconds:
            raise SymbolicTimeoutError(
                f"{self.what} stopped after {elapsed:.1f} s (max_seconds = {self.max_seconds:g}) at {stage}; "
                "the expressions are too large to expand in time. Write the claim over one common denominator, "
                "fix some rates to numbers, or allow more time.", stage, elapsed)


def _progress(iterable, total: int, desc: str, show: bool):
    if not show:
        return iterable
    from sp_ode.core.reporting import progress

    return progress(iterable, total=total, desc=desc)

# --- the tree theorem ------------------------------------------------------------

def _tree_weights(G: GeneratorData, trees_by_root: list[list[tuple[int, ...]]], deadline: _Deadline | None = None,
                  show: bool = False) -> list:
    """w_r = Σ_T Π rates, in G.domain; a numpy fast path when every rate is one monomial."""
    K = G.domain
    rates = [G.entry[e] for e in G.edges]
    from sympy.polys.rings import PolyRing

    if isinstance(K, PolyRing) and all(len(r) == 1 for r in rates):
        # Each tree's product is one monomial: add exponent vectors, multiply coefficients.
        ngens = max(len(K.gens), 0)
        expo = np.array([next(iter(r.keys())) for r in rates], dtype=np.int64).reshape(len(rates), ngens)
        coef = [next(iter(r.values())) for r in rates]
        unit = all(c == K.domain.one for c in coef)
        weights = []
        for r, trees in enumerate(_progress(trees_by_root, G.n, "tree weights", show)):
            if deadline is not None:
                deadline.check(f"the tree weight of state {r}")
            if not trees:
                weights.append(K.zero)
                continue
            T = np.array(trees, dtype=np.intp).reshape(len(trees), G.n - 1)
            monomials = expo[T].sum(axis=1) if G.n > 1 else np.zeros((1, ngens), dtype=np.int64)
            terms: dict = {}
            for t, row in enumerate(monomials.tolist()):
                c = K.domain.one
                if not unit:
                    for e in trees[t]:
                        c = c * coef[e]
                key = tuple(row)
                terms[key] = terms.get(key, K.domain.zero) + c
            weights.append(K.from_dict({k: c for k, c in terms.items() if c}))
        return weights
    weights = []
    for r, trees in enumerate(_progress(trees_by_root, G.n, "tree weights", show)):
        if deadline is not None:
            deadline.check(f"the tree weight of state {r}")
        products = []
        for tree in trees:
            prod = K.one
            for e in tree:
                prod = prod * rates[e]
            products.append(prod)
        weights.append(balanced_sum(products, K.zero))
    return weights

def _expr(x: Any) -> sympy.Expr:
    """A ring/field element as a sympy expression, fast for squarefree monomials in plain symbols.

    `PolyElement.as_expr` canonicalises every monomial through `Mul(*factors)` (≈60 µs for
    63 factors; 8 s for the 64-state ring).  When every generator is a commutative Symbol and a
    monomial is squarefree, its factors in the global canonical order (`_args_sortkey`, the key
    Mul itself sorts by) *are* the canonical argument tuple, so `Mul._from_args` builds the same
    object without re-sorting; tests compare the two paths.
    """
    if hasattr(x, "numer") and hasattr(x, "denom"):  # FracElement
        return _expr(x.numer) / _expr(x.denom)
    ring = x.ring
    gens = ring.symbols
    if not all(isinstance(g, sympy.Symbol) and g.is_commutative for g in gens):
        return x.as_expr()
    from sympy.core.basic import _args_sortkey

    order = sorted(range(len(gens)), key=lambda i: _args_sortkey(gens[i]))
    to_sympy = ring.domain.to_sympy
    terms = []
    for monom, coeff in x.items():
        c = to_sympy(coeff)
        if all(e <= 1 for e in monom):
            factors = [gens[i] for i in order if monom[i]]
            term = sympy.Mul._from_args(factors, True) if len(factors) > 1 else (factors[0] if factors else sympy.Integer(1))
            terms.append(term if c == 1 else c * term)
        else:
            terms.append(sympy.Mul(c, *[g**e for g, e in zip(gens, monom) if e]))
    return sympy.Add(*terms)


@dataclass(frozen=True, repr=False)
class StationaryCertificate(Summarised):
    """The record of an exact stationarity check.

    Attributes
    ----------
    identities : ((statement, held), ...)
        One per checked identity.
    leftover
        ((statement, expression), ...): for each identity that failed, what is left
        of its left-hand side, factored (e.g. (Qᵀp)_j for a false claimed p); empty when passed.
    passed
        Every identity held.
    positive
        True when p_st > 0 is certified (every generator declared positive and every
        coefficient of every w_r positive), None when it could not be decided.
    seconds
        Wall time of the check.
    domain
        The exact domain the identities were expanded in.
    method
        How they were checked.
    proportional
        For a checked claim: True when Qᵀp = 0 holds exactly but 1ᵀp ≠ 1, i.e. the
        claim is c·p_st (Q irreducible, so ker Qᵀ is one-dimensional, T1); None otherwise.
    normalisation
        C = 1ᵀp (factored) when `proportional`; the claim divided by c is p_st.
    """

    identities: tuple[tuple[str, bool], ...]
    passed: bool
    positive: bool | None
    seconds: float
    domain: str
    method: str = "expansion to the zero polynomial in an exact sparse domain (no floating point)"
    leftover: tuple[tuple[str, sympy.Expr], ...] = ()
    proportional: bool | None = None
    normalisation: sympy.Expr | None = None

    @property
    def verdict(self) -> str:
        """One phrase: "TRUE", "FALSE", or "proportional to p_st (normalisation c = …)"."""
        if self.passed:
            return "TRUE"
        if self.proportional:
            return f"proportional to p_st (normalisation c = {self.normalisation}): the claim divided by c is p_st"
        return "FALSE"

    def _summary_title(self) -> str:
        return f"StationaryCertificate: {self.verdict}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        held = sum(1 for _, h in self.identities if h)
        rows = [("identities", f"{held} of {len(self.identities)} hold exactly"),
                ("p > 0", {True: "certified", None: "not decided", False: "not certified"}[self.positive]),
                ("domain", self.domain), ("seconds", number(self.seconds, 3))]
        rows += [(f"leftover {s}", str(e)[:120]) for s, e in self.leftover[:5]]
        return rows

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "verdict": self.verdict,
            "positive": self.positive,
            "proportional": self.proportional,
            "normalisation": None if self.normalisation is None else str(self.normalisation),
            "seconds": self.seconds,
            "domain": self.domain,
            "method": self.method,
            "identities": [{"identity": s, "held": h} for s, h in self.identities],
            "leftover": [{"identity": s, "leftover": str(e)} for s, e in self.leftover],
        }


def _positive_coefficients(K: Any, x: Any) -> bool:
    """Every coefficient of x (numerator and denominator for a fraction) is > 0 and x ≠ 0."""
    parts = (x.numer, x.denom) if hasattr(x, "numer") else (x,)
    return all(len(part) > 0 and all(c > 0 for c in part.values()) for part in parts)


def _domain_name(K: Any) -> str:
    return str(K).replace(" with lex order", "")[:200]


@dataclass(eq=False, repr=False)
class SymbolicStationary(Summarised):
    """p_st of a symbolic generator by the Markov chain tree theorem.

    Attributes
    ----------
    Q : sympy.ImmutableMatrix (n, n)
        The validated generator.
    weights
        Tuple of n elements of `domain`: w_r, the unnormalised polynomial form.
    domain
        Sympy sparse polynomial ring (or rational-function field) of the rates.
    n_trees
        Number of spanning in-trees summed (= number of terms before merging).
    rate_signs : per edge
        "positive", "nonnegative" or "assumed" (by the caller).
    seconds
        Wall time of the tree enumeration and products.
    """

    Q: sympy.ImmutableMatrix
    weights: tuple
    domain: Any
    n_trees: int
    rate_signs: dict
    seconds: float
    _G: GeneratorData = field(repr=False)

    @property
    def n(self) -> int:
        return self.Q.rows

    @cached_property
    def normaliser_element(self) -> Any:
        return balanced_sum(list(self.weights), self.domain.zero)

    @cached_property
    def unnormalised(self) -> tuple[sympy.Expr, ...]:
        """w_r as sympy expressions (Σ over in-trees rooted at r of the product of rates)."""
        return tuple(_expr(w) for w in self.weights)

    @cached_property
    def normaliser(self) -> sympy.Expr:
        """S = Σ_r w_r."""
        return _expr(self.normaliser_element)

    @cached_property
    def p(self) -> sympy.ImmutableMatrix:
        """Normalised p_st = w / S, an (n, 1) sympy matrix of expressions."""
        S = self.normaliser
        return sympy.ImmutableMatrix([w / S for w in self.unnormalised])

    def polys(self) -> tuple[sympy.Poly, ...]:
        """w_r as `sympy.Poly` over the rate generators (polynomial domains only).

        Raises
        ------
        ValueError
            When the rates have symbolic denominators (w_r are then rational functions).
        """
        from sympy.polys.fields import FracField

        if isinstance(self.domain, FracField):
            raise ValueError("the rates have symbolic denominators; `weights` are rational functions, not polynomials.")
        gens = self.domain.symbols
        if not gens:  # constant rates: the weights are numbers
            return tuple(sympy.Poly(w.as_expr(), sympy.Dummy("x")) for w in self.weights)
        return tuple(sympy.Poly.from_dict(dict(w), *gens, domain=self.domain.domain) for w in self.weights)

    def verify(self) -> StationaryCertificate:
        """Exact check of Qᵀw = 0 (each row expanded to the zero polynomial), S ≠ 0, and positivity."""
        start = time.perf_counter()
        G, K, n = self._G, self.domain, self.n
        identities = []
        for j in range(n):
            residual = balanced_sum([G.entry[(i, j)] * self.weights[i] for i in range(n) if G.entry[(i, j)] != 0], K.zero)
            identities.append((f"(Q^T w)_{j} = 0", residual == 0))
        S = self.normaliser_element
        identities.append(("S = 1^T w != 0, so 1^T p = 1 with p = w/S", S != 0))
        positive = None
        gens_positive = all(g.is_positive for g in K.symbols)
        if gens_positive and all(_positive_coefficients(K, w) for w in self.weights):
            positive = True
            identities.append(("every coefficient of every w_r > 0 (all generators positive), so p > 0", True))
        seconds = time.perf_counter() - start
        return StationaryCertificate(
            identities=tuple(identities),
            passed=all(h for _, h in identities),
            positive=positive,
            seconds=seconds,
            domain=_domain_name(K),
        )

    @cached_property
    def common_form(self) -> tuple[tuple[sympy.Expr, ...], sympy.Expr]:
        """(numerators, denominator) with p_r = numerator_r / denominator and no common factor left.

        The weights w_r and S = Σ w_r share the polynomial gcd of the w_r (e.g. a rate that
        appears in every spanning tree); it is divided out exactly, then each part is factored.
        """
        from sympy.polys.fields import FracField

        weights = list(self.weights)
        if not isinstance(self.domain, FracField) and len(self.domain.gens) > 0:
            g = weights[0]
            for w in weights[1:]:
                g = g.gcd(w)
            if g != 0 and g != self.domain.one:
                weights = [w.exquo(g) for w in weights]
        S = balanced_sum(list(weights), self.domain.zero)
        small = sum(len(w.numer) + len(w.denom) if hasattr(w, "numer") else len(w) for w in weights) < 400
        exprs = [_expr(w) for w in weights] + [_expr(S)]
        exprs = [sympy.factor(e) for e in exprs] if small else exprs  # factoring is for readability only
        return tuple(exprs[:-1]), exprs[-1]

    def latex(self, *, normalised: bool = True, labels: Sequence[str] | None = None,
              common_denominator: bool = True) -> str:
        """LaTeX of p_st, one aligned line per state.

        With `common_denominator` (the default) the denominator is written once:
        `p_r = N_r / D` on each line, then `D = …` (docs/theory.md §3.1: D = Σ_r N_r).
        Without it each line is the full fraction.  `normalised=False` writes the tree
        weights w_r and S = Σ w_r instead.  `labels` names the states (default 0 … n−1).
        """
        names = [str(k) for k in range(self.n)] if labels is None else [str(x) for x in labels]
        if len(names) != self.n:
            raise ValueError(f"`labels` must have n = {self.n} entries; got {len(names)}.")
        sub = [sympy.latex(sympy.Symbol(x)) for x in names]
        lines = []
        if not normalised:
            for r in range(self.n):
                lines.append(f"w_{{{sub[r]}}} &= {sympy.latex(self.unnormalised[r])}")
            lines.append(f"S &= {sympy.latex(self.normaliser)}")
        elif common_denominator and self.n > 1:
            nums, den = self.common_form
            for r in range(self.n):
                lines.append(f"p_{{{sub[r]}}} &= \\frac{{{sympy.latex(nums[r])}}}{{D}}")
            lines.append(f"D &= {sympy.latex(den)}")
        else:
            for r in range(self.n):
                lines.append(f"p_{{{sub[r]}}} &= {sympy.latex(self.p[r])}")
        return "\\begin{aligned}\n" + " \\\\\n".join(lines) + "\n\\end{aligned}"

    def _summary_title(self) -> str:
        return f"SymbolicStationary: exact p_st of an {self.n}-state generator ({self.n_trees} spanning in-trees)"

    def _summary_rows(self) -> list[tuple[str, str]]:
        nums, den = self.common_form
        rows = [(f"p[{r}]", f"({str(nums[r])[:100]}) / D") for r in range(min(self.n, 8))]
        if self.n > 8:
            rows.append(("…", f"{self.n - 8} more (`.text()` prints all)"))
        return rows + [("D", str(den)[:160]), ("seconds", number(self.seconds, 3))]

    def text(self, labels: Sequence[str] | None = None) -> str:
        """Plain-text p_st with the common denominator written once (sympy-parsable pieces)."""
        names = [str(k) for k in range(self.n)] if labels is None else [str(x) for x in labels]
        nums, den = self.common_form
        width = max(len(x) for x in names)
        rows = [f"  p[{x}]{' ' * (width - len(x))} = ({nums[r]}) / D" for r, x in enumerate(names)]
        return "\n".join(rows + [f"  D{' ' * (width + 2)} = {den}"])

    def lambdify(self, args: Sequence[sympy.Symbol] | sympy.Symbol):
        """A NumPy function of `args` returning p_st, shape (..., n), normalised numerically.

        The unnormalised w_r (sums of positive products) are evaluated and divided by their
        sum, which keeps componentwise relative accuracy; free symbols not in `args` are an error.
        """
        args_t = (args,) if isinstance(args, sympy.Basic) else tuple(args)
        free = set().union(*(w.free_symbols for w in self.unnormalised)) - set(args_t)
        if free:
            raise ValueError(
                f"`args` must include every free symbol of p_st; missing {sorted(map(str, free))} "
                "(substitute numbers for parameters first, e.g. with Q.subs)."
            )
        fn = sympy.lambdify(args_t, list(self.unnormalised), modules="numpy")

        def p_numeric(*values):
            w = [np.asarray(v, dtype=np.float64) for v in fn(*values)]
            w = np.stack(np.broadcast_arrays(*w), axis=-1)
            return w / w.sum(axis=-1, keepdims=True)

        return p_numeric


def symbolic_stationary(
    Q: Any,
    *,
    max_trees: int = MAX_TREES,
    assume_nonnegative: bool = False,
    max_seconds: float | None = None,
    progress: bool = False,
) -> SymbolicStationary:
    """Exact p_st of a symbolic generator by the Markov chain tree theorem.

    w_r = Σ_{in-trees T rooted at r} Π_{(i→j) ∈ T} Q[i, j] and p_st = w / 1ᵀw
    (docs/theory.md §3.1 (T1): for irreducible Q this is the unique stationary distribution).

    Parameters
    ----------
    Q : sympy Matrix (n, n)
        Irreducible symbolic generator: rates declared positive or provably ≥ 0, rows summing to 0.
    max_trees : int
        Size guard: refuse (before any symbolic work) when Q has more spanning in-trees.
    assume_nonnegative : bool
        Take rates of undecidable sign as nonnegative (recorded in `rate_signs`).
    max_seconds : float, optional
        Stop with `SymbolicTimeoutError` once this much wall time has passed (checked before
        each state's tree weight).
    progress : bool
        A progress bar on stderr over the states (`sp_ode.core.reporting.progress`).

    Returns
    -------
    SymbolicStationary
        `.weights` (unnormalised polynomials), `.p` (normalised expressions, (n, 1)),
        `.verify()` (exact certificate), `.latex()`, `.lambdify(args)`.

    Raises
    ------
    TypeError, ValueError, SignUndecidableError, NotIrreducibleError
        As `check_symbolic_generator`.
    SymbolicSizeError
        More than `max_trees` spanning in-trees.
    SymbolicTimeoutError
        `max_seconds` passed.
    """
    if isinstance(max_trees, bool) or not isinstance(max_trees, (int, np.integer)) or max_trees < 1:
        raise ValueError(f"`max_trees` must be a positive integer; got {max_trees!r}.")
    deadline = _Deadline(_check_max_seconds(max_seconds), "symbolic_stationary")
    start = time.perf_counter()
    G, _ = parse_generator(Q, "Q", assume_nonnegative=assume_nonnegative)
    n = G.n
    counts = count_in_trees(n, G.edges)
    total = float(counts.sum())
    if total > max_trees:
        raise SymbolicSizeError(
            f"`Q` has {total:.3g} spanning in-trees (the tree formula's number of terms), more than "
            f"max_trees={max_trees}; the exact computation would not finish in reasonable time. "
            "Fix some rates to numbers, raise `max_trees` knowingly, or use sp_ode.stationary_distribution."
        )
    trees = []
    for r in range(n):
        deadline.check(f"the in-trees of state {r}")
        trees.append(in_trees(n, G.edges, r))
    weights = _tree_weights(G, trees, deadline, progress)
    return SymbolicStationary(
        Q=G.Q,
        weights=tuple(weights),
        domain=G.domain,
        n_trees=sum(len(t) for t in trees),
        rate_signs=dict(zip(G.edges, G.signs)),
        seconds=time.perf_counter() - start,
        _G=G,
    )


# --- exact checks of a given candidate -------------------------------------------

def verify_stationary(Q: Any, p: Any, *, assume_nonnegative: bool = False, states: Sequence[str] | None = None,
                      max_seconds: float | None = None, progress: bool = False) -> StationaryCertificate:
    """Exact check that a candidate p (sympy expressions) satisfies Qᵀp = 0 and 1ᵀp = 1.

    Each entry is first brought over one denominator (`sympy.together`), so a claim written
    as fractions of fractions costs what the same claim written flat costs (a 7-state
    chain's nested claim: 7.4 s before, 0.3 s after; the conversion to the exact field would
    otherwise expand every nested quotient).  When Qᵀp = 0 holds but 1ᵀp ≠ 1, the claim is
    c·p_st with c = 1ᵀp (Q irreducible, T1): reported as `proportional`, with c.

    Parameters
    ----------
    Q : sympy Matrix (n, n)
        A symbolic generator (validated as in `check_symbolic_generator`).
    p
        Sequence or sympy Matrix of n sympy expressions.
    states : sequence of n str, optional
        State names for the identities and leftovers.
    max_seconds : float, optional
        Stop with `SymbolicTimeoutError` past this wall time
        (checked between entries and identities).
    progress : bool
        A progress bar on stderr over the entries and the identities.

    Returns
    -------
    StationaryCertificate
        `positive` is None here (positivity of an arbitrary candidate is not decided).

    Raises
    ------
    TypeError, ValueError
        Bad `Q` (as `check_symbolic_generator`), or `p` of the wrong kind or length.
    SymbolicTimeoutError
        `max_seconds` passed.
    """
    if isinstance(p, sympy.MatrixBase):
        p_list = list(p)
    elif isinstance(p, (list, tuple)):
        p_list = list(p)
    else:
        raise TypeError(f"`p` must be a sequence or sympy Matrix of sympy expressions; got {type(p).__name__}.")
    p_list = [as_entry(x, f"p[{k}]") for k, x in enumerate(p_list)]
    deadline = _Deadline(_check_max_seconds(max_seconds), "verify_stationary")
    start = time.perf_counter()
    flat = []
    for k, x in enumerate(_progress(p_list, len(p_list), "claim entries", progress)):
        deadline.check(f"claim entry {k}")
        flat.append(sympy.together(x))
    deadline.check("the conversion of the claim to exact polynomials")
    G, pe = parse_generator(Q, "Q", assume_nonnegative=assume_nonnegative, extra=flat)
    if len(pe) != G.n:
        raise ValueError(f"`p` must have length n = {G.n}; got {len(pe)}.")
    K, n = G.domain, G.n
    names = [str(j) for j in range(n)] if states is None else [str(x) for x in states]
    if len(names) != n:
        raise ValueError(f"`states` must name each of the n = {n} states; got {len(names)}.")
    identities, leftover = [], []
    for j in _progress(range(n), n, "identities", progress):
        deadline.check(f"the identity (Q^T p)_{names[j]} = 0")
        residual = balanced_sum([G.entry[(i, j)] * pe[i] for i in range(n)], K.zero)
        identities.append((f"(Q^T p)_{names[j]} = 0", residual == 0))
        if residual != 0:
            leftover.append((f"(Q^T p)_{names[j]}", _simplified(residual)))
    deadline.check("the identity 1^T p = 1")
    mass = balanced_sum(list(pe), K.zero)
    total = mass - K.one
    identities.append(("1^T p = 1", total == 0))
    if total != 0:
        leftover.append(("1^T p - 1", _simplified(total)))
    stationary = all(h for s_, h in identities[:-1])
    proportional = bool(stationary and total != 0 and mass != 0) or None
    return StationaryCertificate(
        identities=tuple(identities),
        passed=all(h for _, h in identities),
        positive=None,
        seconds=time.perf_counter() - start,
        domain=_domain_name(K),
        leftover=tuple(leftover),
        proportional=proportional,
        normalisation=_simplified(mass) if proportional else None,
    )


def _simplified(x: Any) -> sympy.Expr:
    """A nonzero ring/field element as a factored sympy expression (numerator and denominator apart)."""
    expr = _expr(x)
    return sympy.factor(expr) if sympy.count_ops(expr) < 2000 else expr

# --- numeric bridge -------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class BridgeReport(Summarised):
    """Symbolic p_st(y) against the numeric solver on a grid.

    Attributes
    ----------
    max_abs_error, max_rel_error
        Over the grid and the states (relative: componentwise).
    rtol
        The tolerance `passed` used (componentwise relative).
    passed
        Max_rel_error ≤ rtol.
    n_points
        Grid size.
    method
        The numeric method of `sp_ode.stationary_distribution`.
    """

    max_abs_error: float
    max_rel_error: float
    rtol: float
    passed: bool
    n_points: int
    method: str

    def _summary_title(self) -> str:
        return f"BridgeReport: {'passed' if self.passed else 'FAILED'}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        return [("max rel error", f"{number(self.max_rel_error)} (rtol {number(self.rtol)})"),
                ("max abs error", number(self.max_abs_error)), ("points", str(self.n_points)),
                ("method", str(self.method))]


def numeric_bridge(
    result: SymbolicStationary | Any,
    y: sympy.Symbol | Sequence[sympy.Symbol],
    grid: Any,
    *,
    params: Mapping[sympy.Symbol, Any] | None = None,
    method: str | None = None,
    rtol: float | None = None,
) -> BridgeReport:
    """Lambdify p_st(y) and compare it with `sp_ode.stationary_distribution(Q(y))` on a grid.

    Parameters
    ----------
    result : SymbolicStationary
        Or a symbolic generator (solved first).
    y
        The slow variable(s): one sympy Symbol or a sequence of d symbols.
    grid
        Array (N,) for one symbol or (N, d).
    params
        Values for every other free symbol.
    method
        Numeric method passed to `stationary_distribution` (default: its default, GTH).
    rtol
        Componentwise relative tolerance; default 100 · n² · eps (both sides are
        componentwise accurate: sums of positive products, and subtraction-free GTH).

    Returns
    -------
    BridgeReport

    Raises
    ------
    TypeError, ValueError
        Bad `y`, `grid` (non-finite, wrong shape) or missing parameter values.
    """

    if not isinstance(result, SymbolicStationary):
        result = symbolic_stationary(result)
    ys = (y,) if isinstance(y, sympy.Basic) else tuple(y)
    if not ys or not all(isinstance(s, sympy.Symbol) for s in ys):
        raise TypeError(f"`y` must be a sympy Symbol or a non-empty sequence of Symbols; got {y!r}.")
    grid = check_finite_array("grid", grid)
    grid = grid.reshape(-1, 1) if grid.ndim == 1 and len(ys) == 1 else grid
    if grid.ndim != 2 or grid.shape[1] != len(ys):
        raise ValueError(f"`grid` must have shape (N,) or (N, d) with d = {len(ys)}; got {grid.shape}.")
    subs = {}
    for s, v in (params or {}).items():
        if not isinstance(s, sympy.Symbol):
            raise TypeError(f"`params` keys must be sympy Symbols; got {s!r}.")
        # a float parameter enters as the exact rational of its decimal representation
        subs[s] = v if isinstance(v, sympy.Basic) else sympy.Rational(repr(check_finite(f"params[{s}]", v)))
    Qy = result.Q.subs(subs)
    free = Qy.free_symbols - set(ys)
    if free:
        raise ValueError(f"`params` must give a value for every symbol other than `y`; missing {sorted(map(str, free))}.")
    solved = result if not subs else symbolic_stationary(Qy, max_trees=max(result.n_trees, 1))
    p_sym = solved.lambdify(ys)
    Q_num = sympy.lambdify(ys, Qy, modules="numpy")
    n = result.n
    rtol = 100.0 * n * n * np.finfo(np.float64).eps if rtol is None else check_positive("rtol", rtol)
    abs_err = rel_err = 0.0
    for point in grid:
        p_ref = stationary_distribution(np.asarray(Q_num(*point), dtype=np.float64), method=method)
        p_s = p_sym(*point)
        abs_err = max(abs_err, float(np.max(np.abs(p_s - p_ref))))
        rel_err = max(rel_err, float(np.max(np.abs(p_s - p_ref) / p_ref)))
    return BridgeReport(abs_err, rel_err, float(rtol), bool(rel_err <= rtol), len(grid), method or "default")
