"""Checks at the door for a user's own model (docs/theory.md §2; README "Your own model").

A fast–slow model ε dx/dt = f, dy/dt = g is given to sp_ode as JAX-traceable
functions, because every solver, Newton step and Jacobian traces them:

* `f(t, x, y, args) -> (m,)` and `g(t, x, y, args) -> (d,)`, with t a scalar,
  x of shape (m,), y of shape (d,) — written with `jax.numpy` (`jnp.…`), never
  `numpy`, `math` or Python `if` on array values (use `jnp.where`);
* the shorthand `f(x, y)` / `g(x, y)` (exactly two positional parameters) is
  accepted and wrapped by `sp_ode.systems.vector_field.as_vector_field` (on construction);
* for a master equation, `Q_of_y(y) -> (n, n)` with y of shape (d,) (also for d = 1:
  write `y[0]`), rows summing to zero;
* m and d are inferred from `x0` and `y0` (n from `Q(y0)`) unless declared.

`check_model` traces f and g (and Q) once with the shapes of x0, y0 — `jax.eval_shape`,
so nothing runs — and turns the two common mistakes into messages that name the
function: a NumPy call on a traced array ("write f with jax.numpy (jnp.…)") and an output
of the wrong shape (the expected and the actual shape).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sp_ode.core.precision import float64
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem
from sp_ode.systems.vector_field import as_vector_field

__all__ = ["ModelCheck", "as_vector_field", "check_model"]

@dataclass(frozen=True)
class ModelCheck:
    """What `check_model` established.

    Attributes
    ----------
    m, d
        Fast and slow dimensions (from x0, y0).
    n
        Number of states of Q(y) for a master equation, else None.
    system
        The system with shorthand f/g wrapped and m, d set from x0, y0 when they were not
        declared (the same object when nothing changed).
    """

    m: int
    d: int
    n: int | None
    system: Any


_TRACER_HINT = {
    "TracerArrayConversionError": "a NumPy function (np.…) or float()/array() was called on a traced array",
    "ConcretizationTypeError": "a Python `if`, `bool`, `int` or a NumPy call needed a concrete value",
    "TracerBoolConversionError": "a Python `if`/`and`/`or` tested a traced array (use jnp.where)",
    "TracerIntegerConversionError": "a traced array was used as a Python int (an index or a size)",
}


def _trace(name: str, fn: Callable, *arrays):
    """jax.eval_shape of fn(*arrays); tracer errors become a TypeError naming `name`."""
    import jax

    try:
        return jax.eval_shape(fn, *arrays)
    except Exception as exc:
        hint = _TRACER_HINT.get(type(exc).__name__)
        if hint is None:
            raise
        raise TypeError(
            f"`{name}` must be written with jax.numpy (jnp.…) so that sp_ode can trace it: {hint} "
            f"inside {name} (e.g. np.exp → jnp.exp, if → jnp.where). ({type(exc).__name__})"
        ) from exc


def _shape(out) -> str:
    shape = getattr(out, "shape", None)
    return str(tuple(shape)) if shape is not None else f"a {type(out).__name__}, not an array"


def check_model(system: Any, x0: Any, y0: Any, *, args: Any = None, t0: float = 0.0) -> ModelCheck:
    """Trace a user's system once with the shapes of x0, y0 and check what f, g (and Q) return.

    Parameters
    ----------
    system
        `sp_ode.FastSlowSystem` or `sp_ode.MasterEquationSystem`.
    x0 : array (m,)
        The fast initial state (for a master equation, a distribution on n states).
    y0 : array (d,)
        The slow initial state (a scalar is taken as d = 1).
    args
        Parameters for f and g (default: the system's).
    t0
        Time at which f and g are traced.

    Returns
    -------
    ModelCheck
        m, d (and n); `system` with a shorthand `f(x, y)`/`g(x, y)` wrapped and the
        inferred m, d recorded.

    Raises
    ------
    TypeError
        `system` is not a FastSlowSystem; f, g or Q_of_y is not JAX-traceable (the message
        names the function and says "write … with jax.numpy (jnp.…)"); a bad signature.
    ValueError
        x0 or y0 is not 1-D and finite, or f, g, Q_of_y returns the wrong shape (the message
        names the function, the expected and the actual shape).
    """
    import jax.numpy as jnp
    import numpy as np


    if not isinstance(system, FastSlowSystem):
        raise TypeError(
            "`system` must be an sp_ode.FastSlowSystem or MasterEquationSystem (build one with "
            f"sp_ode.FastSlowSystem(f, g, eps=…)); got {type(system).__name__}."
        )
    arrays = {}
    for label, value in (("x0", x0), ("y0", y0)):
        a = np.atleast_1d(np.asarray(value, dtype=np.float64)) if value is not None else None
        if a is None or a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
            seen = None if a is None else a.shape
            raise ValueError(f"`{label}` must be a finite 1-D array (shape (m,) for x0, (d,) for y0); got shape {seen}.")
        arrays[label] = a
    m, d = arrays["x0"].shape[0], arrays["y0"].shape[0]
    for label, dim, got in (("m", system.m, m), ("d", system.d, d)):
        if dim is not None and dim != got:
            raise ValueError(f"system {system.name!r} declares {label} = {dim}; "
                             f"{'x0' if label == 'm' else 'y0'} has {got} entries.")
    f = system.f if isinstance(system, MasterEquationSystem) else as_vector_field("f", system.f)
    g = as_vector_field("g", system.g)
    changes = {k: v for k, v in (("f", f), ("g", g)) if v is not getattr(system, k)}
    # Dimensions inferred from x0, y0 are recorded on the returned system (m = n for a master equation).
    changes.update({k: v for k, v in (("m", m), ("d", d)) if getattr(system, k) is None})
    args = system.args if args is None else args
    n = None
    with float64():
        x = jnp.asarray(arrays["x0"])
        y = jnp.asarray(arrays["y0"])
        t = jnp.asarray(t0, dtype=jnp.float64)
        if isinstance(system, MasterEquationSystem):
            Qs = _trace("Q_of_y", lambda yy: system.Q_of_y(yy), y)
            if getattr(Qs, "shape", None) != (m, m):
                raise ValueError(
                    f"`Q_of_y` must return an (n, n) generator with n = len(x0) = {m} for y of shape ({d},); "
                    f"got {_shape(Qs)}."
                )
            n = m
        fx = _trace("f", lambda xx, yy: f(t, xx, yy, args), x, y)
        if getattr(fx, "shape", None) != (m,):
            raise ValueError(f"`f` must return shape (m,) = ({m},), the shape of x0; got {_shape(fx)}.")
        gy = _trace("g", lambda xx, yy: g(t, xx, yy, args), x, y)
        if getattr(gy, "shape", None) != (d,):
            raise ValueError(f"`g` must return shape (d,) = ({d},), the shape of y0; got {_shape(gy)}.")
    checked = system._replace(**changes) if changes else system
    return ModelCheck(m=m, d=d, n=n, system=checked)
