"""Why a solve stopped: the cause of a failure, read off the last state reached (docs/theory.md §9).

An implicit solver that meets NaN or ∞ in its vector field rejects the step,
shrinks h and tries again until its step budget runs out: the status alone
("max_steps reached") would send the user to raise `max_steps`, which cannot
help.  Both engines return the last accepted state (t_end, z_end); here the
vector field is evaluated there, and just beyond it along the flow, and the
first cause found is named with the advice that fits it:

* the state itself non-finite (the solution blew up);
* `f` or `g` non-finite at (or next to) the state — the solution leaves the
  domain of the vector field;
* f finite but f/ε overflowing float64 — rescale f or raise ε;
* for a master equation, Q(y) no longer a generator at y (negative rate, row
  sums ≠ 0), or, on the reduced path, p_st(y) undefined because Q(y) is
  reducible (the closed classes are named, docs/theory.md §3.1 (T1)).

When none applies the failure is the step budget (or step-size underflow) and
the caller keeps its own advice.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from sp_ode.core.precision import float64
from sp_ode.markov.generator import check_generator, closed_classes

_FLOAT_MAX = float(np.finfo(np.float64).max)


def _where(t: float, z: np.ndarray, m: int | None) -> str:
    with np.printoptions(precision=4, threshold=8):
        if m is None:
            return f"t={t:.6g}, y={z}"
        return f"t={t:.6g}, x={z[:m]}, y={z[m:]}"


def _bad(values: np.ndarray) -> str:
    bad = np.flatnonzero(~np.isfinite(values))
    kinds = sorted({"nan" if np.isnan(values[i]) else "inf" for i in bad})
    return f"{'/'.join(kinds)} at components {bad[:6].tolist()}{' …' if bad.size > 6 else ''}"


def _evaluate(fn: Callable, t: float, z: np.ndarray) -> np.ndarray | None:
    with float64(), np.errstate(all="ignore"):
        try:
            return np.asarray(fn(t, z), dtype=np.float64).reshape(-1)
        except (FloatingPointError, ArithmeticError):
            return np.array([np.nan])


def format_classes(classes: list[np.ndarray], limit: int = 4) -> str:
    shown = ["{" + ", ".join(map(str, c.tolist()[:6])) + (", …" if c.size > 6 else "") + "}" for c in classes[:limit]]
    return ", ".join(shown) + (f" and {len(classes) - limit} more" if len(classes) > limit else "")


def generator_cause(Q: np.ndarray, y: np.ndarray, *, need_irreducible: bool) -> str | None:
    """Why Q (= Q(y)) is not a usable generator, or None."""
    with np.printoptions(precision=4, threshold=8):
        try:
            Q = check_generator(Q, "Q_of_y(y)")
        except (TypeError, ValueError) as exc:
            return (f"Q(y) is not a generator at y={y}: {exc} A master equation needs off-diagonal rates "
                    ">= 0 and rows summing to 0 for every y it visits; fix Q_of_y.")
        # p_st is unique exactly when there is one closed class (transient states are allowed)
        classes = closed_classes(Q) if need_irreducible else []
        if len(classes) > 1:
            return (f"p_st(y) is undefined at y={y}: Q(y) has {len(classes)} closed classes, "
                    f"{format_classes(classes)}, each with its own stationary law (sp_ode.stationary_distributions); "
                    "the reduced flow y' = g(p_st(y), y) does not exist there.")
    return None


def diagnose(t: float, z: np.ndarray, *, f: Callable | None, g: Callable, eps: float, m: int | None,
             span: float, Q: Callable | None = None, need_irreducible: bool = False) -> str | None:
    """The cause of a failed solve at its last state (t, z), or None when none is found.

    Parameters
    ----------
    t, z
        Last time and state reached; z = [x, y] (or y alone when `m` is None).
    f
        Callable `f(t, z) -> (m,)` (not divided by ε), or None for a reduced flow.
    g
        Callable `g(t, z) -> (d,)`.
    eps
        Ε (f/ε is checked for overflow).
    span
        T1 − t0, the scale of the probe steps beyond z.
    Q
        Callable `Q(y) -> (n, n)` for a master equation, else None.
    need_irreducible
        Also require Q(y) irreducible (the reduced flow needs p_st).
    """
    z = np.asarray(z, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(z)):
        return (f"the solution became non-finite ({_bad(z)}) at t={t:.6g}: it blows up in finite time or "
                "the vector field overflows there; shorten t_span or check f and g.")
    parts = ([("f", f)] if f is not None else []) + [("g", g)]

    def cause_at(tq: float, zq: np.ndarray, near: str) -> tuple[str | None, dict]:
        yq = zq if m is None else zq[m:]
        if Q is not None:
            with float64():
                cause = generator_cause(np.asarray(Q(yq), dtype=np.float64), yq, need_irreducible=need_irreducible)
            if cause is not None:
                return f"{near}t={tq:.6g}: {cause}", {}
        values = {}
        for name, fn in parts:
            values[name] = out = _evaluate(fn, tq, zq)
            if not np.all(np.isfinite(out)):
                return (f"`{name}` returns non-finite values ({_bad(out)}) {near}{_where(tq, zq, m)}: the solution "
                        f"has reached the edge of the domain of {name} (e.g. a square root or log of a negative "
                        f"number, a division by zero); check {name} near that state. Raising max_steps or "
                        "loosening rtol/atol will not help."), values
        if f is not None:
            scale = float(np.max(np.abs(values["f"]), initial=0.0))
            if scale / eps > _FLOAT_MAX:
                return (f"f/ε overflows float64 {near}{_where(tq, zq, m)}: max|f| = {scale:.3g} with ε = {eps:.3g} "
                        f"exceeds {_FLOAT_MAX:.3g}; rescale the variables of f, or raise ε."), values
        return None, values

    cause, values = cause_at(t, z, "at ")
    if cause is not None:
        return cause
    # The solver's trial stages lie just beyond z along the flow: probe there too.
    rhs = np.concatenate([values["f"] / eps, values["g"]]) if f is not None else values["g"]
    # Steps short enough that they move z by at most 1e-6 (relative): a probe must not
    # wander off where the solver would never go.
    reach = 1e-6 * (1.0 + float(np.max(np.abs(z)))) / max(float(np.max(np.abs(rhs))), 1e-300)
    for k in (6, 9, 12):
        h = min(span * 10.0 ** -k, reach * 10.0 ** (6 - k))
        with np.errstate(all="ignore"):
            zh = z + h * rhs
        cause, _ = cause_at(t + h, zh, f"within {h:.1g} in time of the state reached, at ")
        if cause is not None:
            return cause
    return None
