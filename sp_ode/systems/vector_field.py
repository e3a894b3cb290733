"""A user's functions in sp_ode's signatures, computing in float64 (docs/theory.md §2, §9; README "Your own model").

Every solver calls f and g as `f(t, x, y, args)` and a master equation's generator
as `Q(y, args)`; many models are written `f(x, y)` or `Q(y)`.  `as_vector_field`
and `as_generator_function` accept both and return a `UserFunction`, one per user
function (cached on its identity, so that compiled solves keyed on it are shared by
every system built from it).  A `UserFunction` does three things around each call:

* **float64 without asking.**  A user's process does not enable JAX's float64, so
  module-level constants of their script are float32, and `jnp.arange(n) / (n - 1.0)`
  is a *weakly typed* float32 array.  Captured by f or g, such a constant crashed
  diffrax with a bare `AssertionError` (its closure conversion compares the dtype of
  a weak float32 constant as float64 on one side, float32 on the other).  The first
  call traces the function once (`jax.make_jaxpr`) and looks at the constants it
  captured; when one is weakly typed, every call evaluates the traced program with
  those constants made strongly typed (same dtype and values, so the same
  arithmetic).  Every floating output is then cast to float64, so a float32
  generator or vector field never reaches a float64 solver.
* **tracer errors named.**  A NumPy call, `float()`, or a Python `if` on a traced
  array raises JAX's tracer errors; they become a TypeError naming the function and
  saying "write it with jax.numpy" (the advice of `sp_ode.check_model`).
* **the shorthand signatures**, wrapped once: `f(x, y)` (exactly two required
  positional parameters) and `Q(y)` (one); `f(t, x, y, args)` and `Q(y, args)`
  pass their arguments through.  Any other count is refused with a message naming
  the function.

A `UserFunction` pickles as (its kind, the user's function), so a system travels to
a worker whenever the user's function does.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from sp_ode.core.cache import LRUCache

__all__ = ["UserFunction", "as_vector_field", "as_generator_function", "tracer_advice", "TRACER_HINTS",
           "user_function_of"]

#: What each of JAX's tracer errors means in a user's model (used by `check_model` too).
TRACER_HINTS = {
    "TracerArrayConversionError": "a NumPy function (np.…) or float()/array() was called on a traced array",
    "ConcretizationTypeError": "a Python `if`, `bool`, `int` or a NumPy call needed a concrete value",
    "TracerBoolConversionError": "a Python `if`/`and`/`or` tested a traced array (use jnp.where)",
    "TracerIntegerConversionError": "a traced array was used as a Python int (an index or a size)",
}


def tracer_advice(name: str, exc: BaseException) -> str | None:
    """The "write `name` with jax.numpy" message for a tracer error `exc`, or None for any other error."""
    hint = TRACER_HINTS.get(type(exc).__name__)
    if hint is None:
        return None
    return (f"`{name}` must be written with jax.numpy (jnp.…) so that sp_ode can trace it: {hint} "
            f"inside {name} (e.g. np.exp → jnp.exp, np.array([...]) → jnp.array([...]), if → jnp.where). "
            f"({type(exc).__name__})")


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


# How each kind of user function is called by sp_ode, and which shorthand it accepts.
_KINDS = {
    "vector_field": {"full": 4, "short": 2, "signature": "(t, x, y, args)", "shorthand": "(x, y)"},
    "generator": {"full": 2, "short": 1, "signature": "(y, args)", "shorthand": "(y)"},
}


def _strong(c):
    import jax.numpy as jnp

    return jnp.asarray(c, dtype=c.dtype)  # an explicit dtype makes the array strongly typed


def _to_float64(out):
    """Floating leaves of `out` as float64 (inside sp_ode's float64 scope; left alone outside it)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    if not jax.config.jax_enable_x64:
        return out

    def cast(leaf):
        dtype = getattr(leaf, "dtype", None)
        if dtype is not None and np.issubdtype(dtype, np.floating) and dtype != np.float64:
            return jnp.asarray(leaf, dtype=jnp.float64)
        return leaf
    return jax.tree_util.tree_map(cast, out)


def _ours(fn) -> bool:
    module = getattr(fn, "__module__", None) or type(fn).__module__ or ""
    return module.startswith("sp_ode.") or type(fn).__module__.startswith("sp_ode.")


class UserFunction:
    """A user's f, g or Q_of_y as sp_ode calls it (module docstring): float64 out, tracer errors named.

    Attributes
    ----------
    fn
        The user's function, as given.
    name
        "f", "g" or "Q_of_y", for messages.
    kind
        "vector_field" (called `(t, x, y, args)`) or "generator" (called `(y, args)`).
    shorthand
        Whether `fn` takes the shorthand `(x, y)` / `(y)`.
    """

    def __init__(self, name: str, fn: Callable, kind: str, shorthand: bool):
        self.name, self.fn, self.kind, self.shorthand = name, fn, kind, shorthand
        self.__name__ = getattr(fn, "__name__", name)
        self.__qualname__ = getattr(fn, "__qualname__", name)
        self.__doc__ = getattr(fn, "__doc__", None)
        # decided by the first call's trace; sp_ode's own functions (catalogue, families, the master
        # equation's f) capture no weak constants, and their probe would only cost a trace
        self._strengthen: bool | None = False if _ours(fn) else None

    def __reduce__(self):
        return (_rebuild, (self.name, self.fn, self.kind))

    def __repr__(self) -> str:
        return f"UserFunction({self.name}: {self.__qualname__})"

    def _raw(self, a: tuple):
        if self.kind == "vector_field":
            return self.fn(a[1], a[2]) if self.shorthand else self.fn(*a)
        return self.fn(a[0]) if self.shorthand else self.fn(*a)

    def _call(self, a: tuple):
        import jax

        if self._strengthen is False:
            return self._raw(a)
        # Trace once with every input closed over (static leaves stay Python objects): the
        # program's constants are then the arrays the function captured from its module.
        closed, shape = jax.make_jaxpr(lambda: self._raw(a), return_shape=True)()
        inputs = {id(leaf) for leaf in jax.tree_util.tree_leaves(a)}
        weak = [id(c) not in inputs and not isinstance(c, jax.core.Tracer) and bool(getattr(c, "weak_type", False))
                for c in closed.consts]
        if self._strengthen is None:
            self._strengthen = any(weak)
        if not any(weak):
            return self._raw(a)
        consts = [_strong(c) if w else c for c, w in zip(closed.consts, weak)]
        out = jax.core.eval_jaxpr(closed.jaxpr, consts)
        return jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(shape), out)

    def __call__(self, *a):
        try:
            out = self._call(a)
        except Exception as exc:
            advice = tracer_advice(self.name, exc)
            if advice is None:
                raise
            code = getattr(self.fn, "__code__", None)
            where = f" [{self.__qualname__} at {code.co_filename}:{code.co_firstlineno}]" if code is not None else ""
            raise TypeError(advice + where) from None
        return _to_float64(out)


# One UserFunction per (kind, name, user function): compiled solves are cached on its identity.
_WRAPPERS = LRUCache(1024)


def _key(name: str, fn: Callable, kind: str):
    try:
        key = (kind, name, fn)
        hash(key)
    except TypeError:  # an unhashable callable object: its identity (the value keeps it alive)
        key = (kind, name, "id", id(fn))
    return key


def _rebuild(name: str, fn: Callable, kind: str) -> UserFunction:
    return (as_vector_field if kind == "vector_field" else as_generator_function)(name, fn)


def user_function_of(fn: Any) -> Any:
    """The user's own function behind a `UserFunction` (`fn` itself otherwise)."""
    return fn.fn if isinstance(fn, UserFunction) else fn


def _wrap(name: str, fn: Any, kind: str) -> UserFunction:
    spec = _KINDS[kind]
    if isinstance(fn, UserFunction):
        if fn.kind != kind:
            raise TypeError(f"`{name}` must be callable as {name}{spec['signature']}; got the {fn.kind} {fn!r}.")
        return fn
    if not callable(fn):
        raise TypeError(f"`{name}` must be callable as {name}{spec['signature']} or {name}{spec['shorthand']}; "
                        f"got {type(fn).__name__}.")
    arity = _positional_arity(fn)
    if arity is not None and arity not in (spec["full"], spec["short"]):
        raise TypeError(f"`{name}` must take {spec['signature']} or the shorthand {spec['shorthand']}; "
                        f"{getattr(fn, '__name__', name)} takes {arity} required positional argument(s).")
    shorthand = arity == spec["short"]
    return _WRAPPERS.get_or_make(_key(name, fn, kind), lambda: UserFunction(name, fn, kind, shorthand))


def as_vector_field(name: str, fn: Any) -> UserFunction:
    """`fn` as `fn(t, x, y, args)` (module docstring): the shorthand `fn(x, y)` is accepted.

    Parameters
    ----------
    name
        "f" or "g", for messages.
    fn
        Callable `fn(t, x, y, args)` or `fn(x, y)`, or a `UserFunction` (returned as is).

    Returns
    -------
    UserFunction
        The same object for the same `fn` (so compiled solves keyed on it are reused).

    Raises
    ------
    TypeError
        `fn` is not callable, or takes a number of required positional arguments other than 2 or 4.
    """
    return _wrap(name, fn, "vector_field")


def as_generator_function(name: str, fn: Any) -> UserFunction:
    """`fn` as `fn(y, args)` (module docstring): `Q_of_y(y)` and `Q_of_y(y, args)` are accepted.

    Raises
    ------
    TypeError
        `fn` is not callable, or takes a number of required positional arguments other than 1 or 2.
    """
    return _wrap(name, fn, "generator")
