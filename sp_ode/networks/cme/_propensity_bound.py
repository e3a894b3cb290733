"""A certified upper bound of a propensity over all counts: bounded non-affine rates (docs/theory.md §7.10).

A Hill or Michaelis–Menten-type propensity such as a/(1 + (B/K)^h) or V·S/(K + S) is bounded by a
constant on the whole orthant x ≥ 0.  On the moments of the chain it then acts like a bounded input:
in the drift of a Lyapunov function V, a_r·Δ_r ≤ sup(a_r)·Δ_r when Δ_r > 0 (`_moments`).

The bound is found *by construction*: the expression tree is evaluated in interval arithmetic with
every species in [0, ∞] (each endpoint rounded outward by a relative 4u), so the result encloses
the range of the expression over all real counts ≥ 0 (a superset of the integer lattice).  Naive
interval evaluation overestimates expressions where a variable appears twice (S/(K + S) gives
[0, ∞]); the rational rewritings `cancel` and, per species, `apart` (S/(K + S) = 1 − K/(K + S)) are
tried as well, and the smallest finite upper end is kept.  Every candidate is an enclosure, so any of
them is a valid bound; None means no finite bound was proved (not that none exists).
"""
from __future__ import annotations

import math

__all__ = ["propensity_sup"]

_U = 2.0**-53
_WIDEN = 4 * _U      # outward rounding per operation (one correctly rounded op is ≤ u; 4u leaves margin)


def _down(x: float) -> float:
    return x if math.isinf(x) or x == 0 else x - abs(x) * _WIDEN


def _up(x: float) -> float:
    return x if math.isinf(x) or x == 0 else x + abs(x) * _WIDEN


def _mul(a: float, b: float) -> float:
    # endpoint products of closed intervals of finite reals: 0·∞ contributes 0
    return 0.0 if a == 0 or b == 0 else a * b


def _interval(e, species: set) -> tuple[float, float] | None:
    """[lo, hi] ⊇ {e(x) : x ≥ 0}, or None for a form it does not handle."""
    import sympy

    if e.is_Number:
        v = float(e)
        return _down(v), _up(v)
    if e.is_Symbol:
        return (0.0, math.inf) if e in species else None
    if e.is_Add:
        lo = hi = 0.0
        for t in e.args:
            iv = _interval(t, species)
            if iv is None:
                return None
            lo, hi = _down(lo + iv[0]), _up(hi + iv[1])
        return lo, hi
    if e.is_Mul:
        lo = hi = 1.0
        for t in e.args:
            iv = _interval(t, species)
            if iv is None:
                return None
            c = [_mul(lo, iv[0]), _mul(lo, iv[1]), _mul(hi, iv[0]), _mul(hi, iv[1])]
            lo, hi = _down(min(c)), _up(max(c))
        return lo, hi
    if e.is_Pow:
        base, ex = e.args
        if not ex.is_Number:
            return None
        iv = _interval(base, species)
        if iv is None:
            return None
        lo, hi = iv
        p = float(ex)
        if ex.is_Integer and p > 0:
            if lo >= 0 or p % 2 == 1:          # monotone
                return _down(lo**p), _up(hi**p)
            if hi <= 0:                        # an even power of a nonpositive interval
                return _down(hi**p), _up(lo**p)
            return 0.0, _up(max(-lo, hi) ** p)
        if lo < 0:
            return None
        if p > 0:
            return _down(lo**p), _up(hi**p)
        if lo == 0:
            return None                        # 1/0 reachable
        return (0.0 if math.isinf(hi) else _down(hi**p)), _up(lo**p)
    if isinstance(e, sympy.exp):
        iv = _interval(e.args[0], species)
        if iv is None:
            return None
        lo = 0.0 if iv[0] == -math.inf else math.exp(iv[0])
        hi = math.inf if iv[1] > 700 else math.exp(iv[1])
        return _down(lo), _up(hi)
    return None


def propensity_sup(expr, species) -> float | None:
    """A certified upper bound of `expr` over all real counts x ≥ 0 (module docstring), or None.

    Parameters
    ----------
    expr : sympy.Expr
        A propensity with every parameter and slow variable substituted by a number
    species : sequence of sympy.Symbol
        The count symbols

    Returns
    -------
    float or None
        sup bound (finite), or None when no finite bound was proved
    """
    import sympy

    sp_set = set(species)
    present = [s for s in species if s in expr.free_symbols]
    if not present:
        iv = _interval(expr, sp_set)
        return None if iv is None or math.isinf(iv[1]) else iv[1]
    candidates = [expr]
    try:
        c = sympy.cancel(sympy.nsimplify(expr, rational=True))
        candidates.append(c)
        if len(present) == 1:
            candidates.append(sympy.apart(c, present[0]))
    except (sympy.PolynomialError, NotImplementedError, ValueError, TypeError):  # not a rational function
        pass
    best = None
    for cand in candidates:
        iv = _interval(sympy.sympify(cand), sp_set)
        if iv is not None and not math.isinf(iv[1]):
            best = iv[1] if best is None else min(best, iv[1])
    return best
