"""Validation and construction of symbolic generators (the boundary of `sp_ode.symbolic`).

A symbolic generator Q is an n×n sympy matrix: Q[i, j] (i ≠ j) is a rate — an exact
sympy expression declared positive or provably nonnegative — and each row sums to zero
exactly (docs/theory.md §2).  `parse_generator` converts every entry into one exact sparse domain
(sympy's `PolyRing`, or `FracField` when a rate has a symbolic denominator); every later
identity is decided by expansion in that domain.  Generators of the domain that are not
symbols (exp(y), sqrt(2), …) are treated as free variables, so an identity found there
holds for every value of them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import sympy

from sp_ode.core.errors import Error
from sp_ode.core.validation import check_positive_int
from sp_ode.markov.generator import NotIrreducibleError


class SignUndecidableError(Error, ValueError):
    """sympy cannot decide that a rate is nonnegative; declare the symbols' signs."""


# --- the boundary: a validated symbolic generator ----------------------------

def _seen(expr: Any) -> str:
    text = str(expr)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_matrix(Q: Any, name: str) -> sympy.ImmutableMatrix:
    if isinstance(Q, np.ndarray):
        raise TypeError(
            f"`{name}` must be a sympy Matrix of exact rates; got a numpy array "
            "(for numbers use sp_ode.stationary_distribution)."
        )
    if isinstance(Q, sympy.MatrixBase):
        M = sympy.ImmutableMatrix(Q)
    elif isinstance(Q, (list, tuple)) and all(isinstance(row, (list, tuple)) for row in Q):
        rows = [[as_entry(x, f"{name}[{i}, {j}]") for j, x in enumerate(row)] for i, row in enumerate(Q)]
        if len({len(r) for r in rows}) > 1:
            raise ValueError(f"`{name}` must be square; got rows of lengths {[len(r) for r in rows]}.")
        M = sympy.ImmutableMatrix(rows) if rows else sympy.ImmutableMatrix(0, 0, [])
    else:
        raise TypeError(
            f"`{name}` must be a sympy Matrix (or a list of lists of sympy expressions); "
            f"got {type(Q).__name__}."
        )
    if M.rows != M.cols or M.rows == 0:
        raise ValueError(f"`{name}` must be square with n ≥ 1; got shape {M.shape}.")
    for i in range(M.rows):
        for j in range(M.cols):
            as_entry(M[i, j], f"{name}[{i}, {j}]")
    return M


def as_entry(x: Any, where: str) -> sympy.Expr:
    """An exact sympy expression: ints and Fractions are fine, floats and strings are not."""
    if isinstance(x, bool) or isinstance(x, (float, np.floating, str)) or (
        isinstance(x, sympy.Basic) and x.has(sympy.Float)
    ):
        raise TypeError(
            f"`{where}` must be an exact sympy expression (symbols, integers, sympy.Rational); "
            f"got {type(x).__name__} {_seen(x)}: floating point cannot be checked exactly."
        )
    if isinstance(x, sympy.Basic):
        expr = x
    elif isinstance(x, (int, np.integer)):
        expr = sympy.Integer(int(x))
    elif isinstance(x, Fraction):
        expr = sympy.Rational(x.numerator, x.denominator)
    else:
        raise TypeError(f"`{where}` must be a sympy expression; got {type(x).__name__} {_seen(x)}.")
    if not isinstance(expr, sympy.Expr):
        raise TypeError(f"`{where}` must be a sympy expression; got {type(expr).__name__} {_seen(expr)}.")
    if expr.is_real is False:
        raise ValueError(f"`{where}` must be real; got {_seen(expr)}.")
    return expr


def _domain(exprs: Sequence[sympy.Expr]):
    """The sparse ring (or fraction field when a denominator is symbolic) holding every expression.

    Generators are detected by sympy (`sring`/`sfield`): symbols, exp(y), sqrt(2), …, each
    treated as a free variable, so a zero found in this domain is a true identity.
    """
    from sympy.polys.fields import sfield
    from sympy.polys.rings import sring

    exprs = list(exprs)
    nonzero = [k for k, e in enumerate(exprs) if e != 0]
    polynomial = all(exprs[k].as_numer_denom()[1].is_number for k in nonzero)
    K, elements = (sring if polynomial else sfield)([exprs[k] for k in nonzero] or [sympy.Integer(1)])
    out = [K.zero] * len(exprs)
    for k, x in zip(nonzero, elements):
        out[k] = x
    return K, out


@dataclass(frozen=True)
class GeneratorData:
    """A validated symbolic generator and its entries in an exact domain."""

    Q: sympy.ImmutableMatrix
    domain: Any
    entry: dict  # (i, j) -> domain element, every entry of Q
    edges: tuple  # ((i, j), ...) off-diagonal entries not identically zero
    signs: tuple  # per edge: "positive" | "nonnegative" | "assumed"

    @property
    def n(self) -> int:
        return self.Q.rows


def _rate_sign(expr: sympy.Expr, where: str, assume_nonnegative: bool) -> str:
    if expr.is_positive:
        return "positive"
    if expr.is_negative:
        raise ValueError(f"`{where}` is a rate and must be ≥ 0; got {_seen(expr)}, which is negative.")
    if expr.is_nonnegative:
        return "nonnegative"
    if assume_nonnegative:
        return "assumed"
    raise SignUndecidableError(
        f"`{where}` is a rate and must be ≥ 0, but sympy cannot decide the sign of {_seen(expr)}. "
        "Declare its symbols, e.g. sympy.Symbol('a', positive=True), or pass "
        "assume_nonnegative=True to take nonnegativity as a stated assumption."
    )


def parse_generator(Q: Any, name: str = "Q", *, assume_nonnegative: bool = False, extra=()) -> tuple[GeneratorData, list]:
    """Validate Q (and convert `extra` expressions into the same domain)."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    M = _as_matrix(Q, name)
    n = M.rows
    cells = [(i, j) for i in range(n) for j in range(n)]
    K, elements = _domain([M[c] for c in cells] + list(extra))
    entry = dict(zip(cells, elements[: len(cells)]))
    edges, signs = [], []
    for i, j in cells:
        if i != j and entry[(i, j)] != 0:
            signs.append(_rate_sign(M[i, j], f"{name}[{i}, {j}]", assume_nonnegative))
            edges.append((i, j))
    for i in range(n):
        row_sum = sum((entry[(i, j)] for j in range(n)), K.zero)
        if row_sum != 0:
            raise ValueError(
                f"`{name}` rows must sum to zero exactly; row {i} sums to {_seen(row_sum.as_expr())}. "
                f"Set {name}[{i}, {i}] = -(sum of the row's rates) (sp_ode.symbolic_generator builds it)."
            )
    if n > 1:
        ij = np.array(edges, dtype=np.intp).reshape(-1, 2)
        graph = csr_array((np.ones(len(edges)), (ij[:, 0], ij[:, 1])), shape=(n, n))
        n_classes, labels = connected_components(graph, directed=True, connection="strong")
        if n_classes > 1:

            leaves = {labels[i] for i, j in edges if labels[i] != labels[j]}
            closed = [np.flatnonzero(labels == c) for c in range(n_classes) if c not in leaves]
            classes = [np.flatnonzero(labels == c).tolist() for c in range(n_classes)]
            raise NotIrreducibleError(
                f"`{name}` must be irreducible (A2): its rate graph has {n_classes} communicating "
                f"classes {classes[:4]}{' ...' if n_classes > 4 else ''} of which {len(closed)} closed; "
                "p_st is then not given by one tree formula.",
                closed,
            )
    return GeneratorData(M, K, entry, tuple(edges), tuple(signs)), elements[len(cells):]


def check_symbolic_generator(Q: Any, name: str = "Q", *, assume_nonnegative: bool = False) -> sympy.ImmutableMatrix:
    """Validate a symbolic generator and return it as an immutable sympy matrix.

    Parameters
    ----------
    Q : sympy Matrix (n, n)
        Or a list of lists of sympy expressions / ints
        Q[i, j] ≥ 0 is the rate i → j; rows sum to zero (exactly).
    name
        Argument name used in error messages.
    assume_nonnegative : bool
        Take rates whose sign sympy cannot decide as nonnegative (a stated assumption).

    Returns
    -------
    sympy.ImmutableMatrix (n, n)

    Raises
    ------
    TypeError
        Not a sympy matrix, or an entry that is not an exact sympy expression (floats included).
    ValueError
        Not square; a negative rate; a row that does not sum to zero.
    SignUndecidableError
        sympy cannot decide that a rate is ≥ 0 (and `assume_nonnegative` is False).
    NotIrreducibleError
        The rate graph is not strongly connected (assumption A2).
    """
    return parse_generator(Q, name, assume_nonnegative=assume_nonnegative)[0].Q


# --- builders ------------------------------------------------------------------

def symbolic_generator(rates: Mapping[tuple[int, int], Any] | Any, n: int | None = None) -> sympy.ImmutableMatrix:
    """Generator Q = R − diag(R1) from off-diagonal rates.

    Parameters
    ----------
    rates
        {(i, j): rate} or an (n, n) sympy Matrix whose diagonal is ignored.
    n
        Number of states (default: 1 + the largest index in `rates`).

    Returns
    -------
    sympy.ImmutableMatrix (n, n)
    """
    if isinstance(rates, sympy.MatrixBase):
        R = sympy.Matrix(rates)
        for i in range(R.rows):
            R[i, i] = 0
    elif isinstance(rates, Mapping):
        if n is None:
            n = 1 + max((max(k) for k in rates if isinstance(k, tuple)), default=0)
        n = check_positive_int("n", n)
        R = sympy.zeros(n, n)
        for key, value in rates.items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise TypeError(f"`rates` keys must be (i, j) pairs; got {key!r}.")
            i, j = key
            if i == j or not (0 <= i < n and 0 <= j < n):
                raise ValueError(f"`rates` key {key!r} must be an off-diagonal index of an {n}×{n} matrix.")
            R[i, j] = as_entry(value, f"rates[{key!r}]")
    else:
        raise TypeError(f"`rates` must be a dict {{(i, j): rate}} or a sympy Matrix; got {type(rates).__name__}.")
    for i in range(R.rows):
        R[i, i] = -sum(R[i, j] for j in range(R.cols) if j != i)
    return sympy.ImmutableMatrix(R)


def complete_generator(n: int, symbol: str = "k") -> sympy.ImmutableMatrix:
    """The complete graph on n states with n(n − 1) independent positive rate symbols k_{ij}."""
    n = check_positive_int("n", n)
    return symbolic_generator(
        {(i, j): sympy.Symbol(f"{symbol}_{i}_{j}", positive=True) for i in range(n) for j in range(n) if i != j}, n
    )


def ring_generator(n: int, forward: str = "a", backward: str = "b") -> sympy.ImmutableMatrix:
    """A ring of n ≥ 3 states: a_i for i → i+1 and b_i for i+1 → i (indices mod n), all positive."""
    n = check_positive_int("n", n)
    if n < 3:
        raise ValueError(f"`n` must be ≥ 3 for a ring (n = 2 is a birth–death chain); got {n}.")
    rates = {}
    for i in range(n):
        rates[(i, (i + 1) % n)] = sympy.Symbol(f"{forward}_{i}", positive=True)
        rates[((i + 1) % n, i)] = sympy.Symbol(f"{backward}_{i}", positive=True)
    return symbolic_generator(rates, n)


def birth_death_generator(n: int, birth: str = "lambda", death: str = "mu") -> sympy.ImmutableMatrix:
    """Birth–death chain on states 0 … n−1: λ_i for i → i+1, μ_i for i → i−1, all positive."""
    n = check_positive_int("n", n)
    rates = {}
    for i in range(n - 1):
        rates[(i, i + 1)] = sympy.Symbol(f"{birth}_{i}", positive=True)
        rates[(i + 1, i)] = sympy.Symbol(f"{death}_{i + 1}", positive=True)
    return symbolic_generator(rates, n)


def balanced_sum(terms: list, zero: Any) -> Any:
    """Σ terms by pairwise halving: O(N log N) term copies instead of O(N²) for a running sum."""
    if not terms:
        return zero
    while len(terms) > 1:
        paired = [terms[k] + terms[k + 1] for k in range(0, len(terms) - 1, 2)]
        if len(terms) % 2:
            paired.append(terms[-1])
        terms = paired
    return terms[0]
