"""A user's vector field in sp_ode's signature `fn(t, x, y, args)` (docs/theory.md §2; README "Your own model").

Every solver calls f and g as `f(t, x, y, args)`; many models are written
`f(x, y)`.  `as_vector_field` accepts both: a function with exactly two required
positional parameters is wrapped (once), one with four passes through unchanged,
and any other count is refused with a message naming the function.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["as_vector_field"]

_SHORTHAND = "_sp_ode_shorthand"


def _positional_arity(fn: Callable) -> int | None:
    """Number of required positional parameters, or None when it cannot be read (or *args)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    kinds = [p for p in sig.parameters.values()]
    if any(p.kind is p.VAR_POSITIONAL for p in kinds):
        return None
    return sum(1 for p in kinds if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty)


def as_vector_field(name: str, fn: Any) -> Callable:
    """`fn` as `fn(t, x, y, args)`: the shorthand `fn(x, y)` is wrapped, four arguments pass through.

    Parameters
    ----------
    name : "f" or "g"
        For messages.
    fn
        Callable `fn(t, x, y, args)` or `fn(x, y)`.

    Returns
    -------
    callable `(t, x, y, args) -> array`; the same object when it already takes four arguments.

    Raises
    ------
    TypeError
        `fn` is not callable, or takes a number of required positional arguments other than 2 or 4.
    """
    if not callable(fn):
        raise TypeError(f"`{name}` must be callable as {name}(t, x, y, args) or {name}(x, y); got {type(fn).__name__}.")
    if getattr(fn, _SHORTHAND, False):
        return fn
    arity = _positional_arity(fn)
    if arity is None or arity == 4:
        return fn
    if arity == 2:
        def wrapped(t, x, y, args):
            return fn(x, y)

        wrapped.__name__ = getattr(fn, "__name__", name)
        wrapped.__qualname__ = getattr(fn, "__qualname__", name)
        wrapped.__doc__ = getattr(fn, "__doc__", None)
        setattr(wrapped, _SHORTHAND, True)
        wrapped.__wrapped_shorthand__ = fn
        return wrapped
    raise TypeError(
        f"`{name}` must take (t, x, y, args) or the shorthand (x, y); "
        f"{getattr(fn, '__name__', name)} takes {arity} required positional argument(s)."
    )
