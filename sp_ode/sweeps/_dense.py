"""The dense engine's inputs and plan: what `sp_ode.sweep` checks before a `FastSlowSystem` is swept.

Swept names must be keys of the system's dict `args` with one value (of the arg's shape) per point, and
must be read by f, g or Q(y) — found by tracing them once (`_probe_used`), so a sweep of a name that
changes nothing is refused, not run.  ε is per point (`sp_ode.sweeps.engine.check_eps`).  Starts are
(m,) | (N, m) | "manifold" and (d,) | (N, d).  The plan is a `sp_ode.sweeps._paths.SweepPlan`.
"""
from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np

from sp_ode.sweeps import _paths as paths, _stacked as stacked
from sp_ode.sweeps.engine import check_eps, check_values
from sp_ode.systems.simulation import check_state, check_system
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

__all__ = ["prepare", "stack_width", "make_plan"]


def _probe_used(system: FastSlowSystem, args: dict, x0, y0, t0: float) -> set:
    """The keys of `args` whose leaves f or g actually read (traced once, nothing run)."""
    keys = sorted(args)
    flat = [np.asarray(args[k], dtype=np.float64) for k in keys]

    def both(*leaves):
        a = dict(zip(keys, leaves))
        return system.f(t0, x0, y0, a), system.g(t0, x0, y0, a)

    closed = jax.make_jaxpr(both)(*flat)
    used = set()
    for eqn in closed.jaxpr.eqns:
        used.update(id(v) for v in eqn.invars if hasattr(v, "aval") and not hasattr(v, "val"))
    used.update(id(v) for v in closed.jaxpr.outvars)
    return {k for k, v in zip(keys, closed.jaxpr.invars) if id(v) in used}


def _check_params(system: FastSlowSystem, params, x0_probe, y0_probe, t0) -> tuple[dict, int]:
    values, N = check_values(params)
    base = system.args if system.args is not None else {}
    swept = [n for n in values if n != "eps"]
    if swept and not isinstance(base, Mapping):
        raise TypeError(f"`params` {swept} need the system's `args` to be a dict of named parameters; "
                        f"system {system.name!r} has args of type {type(base).__name__}.")
    for name in swept:
        if name not in base:
            raise ValueError(f"`params` name {name!r} is not a parameter of system {system.name!r}; "
                             f"its args are {sorted(base)} (and 'eps').")
        want = (N,) + np.shape(base[name])
        if values[name].shape != want:
            raise ValueError(f"`params[{name!r}]` must have shape {want} (one {np.shape(base[name])} value per "
                             f"point); got {values[name].shape}.")
    if swept:
        used = _probe_used(system, dict(base), x0_probe, y0_probe, t0)
        unused = [n for n in swept if n not in used]
        if unused:
            where = "f, g or Q(y)" if isinstance(system, MasterEquationSystem) else "f or g"
            raise ValueError(f"`params` {unused} are not read by {where} of system {system.name!r} "
                             "(traced): sweeping them would change nothing.")
    values["eps"] = check_eps(values, N, system.eps)
    return values, N


def _check_states(system, x0, y0, N):
    """x0: (m,) | (N, m) | "manifold" → (N, m) or None; y0: (d,) | (N, d) → (N, d)."""
    y0 = check_state("y0", y0, system.d)
    if y0.ndim == 2 and y0.shape[0] != N:
        raise ValueError(f"`y0` must have shape (d,) or (N, d) with N = {N} points; got {y0.shape}.")
    y0 = np.broadcast_to(y0, (N, y0.shape[-1])).copy()
    if isinstance(x0, str):
        if x0 != "manifold":
            raise ValueError(f"`x0` must be an array or 'manifold'; got {x0!r}.")
        return None, y0
    x0 = check_state("x0", x0, system.m)
    if x0.ndim == 2 and x0.shape[0] != N:
        raise ValueError(f"`x0` must have shape (m,) or (N, m) with N = {N} points; got {x0.shape}.")
    return np.broadcast_to(x0, (N, x0.shape[-1])).copy(), y0


def prepare(system, params, x0, y0, t0: float) -> tuple:
    """(system, values, N, x0 (N, m) | None, y0 (N, d), (m, d)): the dense engine's checks (module docstring);
    a system built without m or d gets them from x0 and y0, as `simulate` does."""
    system = check_system(system)
    probe_y = check_state("y0", np.asarray(y0)[0] if np.ndim(y0) == 2 else y0, system.d)
    if isinstance(x0, str):
        if system.m is None:
            raise ValueError("`x0='manifold'` needs the fast dimension: build the system with `m=`.")
        probe_x = np.zeros(system.m)
    else:
        probe_x = check_state("x0", np.asarray(x0)[0] if np.ndim(x0) == 2 else x0, system.m)
    values, N = _check_params(system, params, probe_x, probe_y, t0)
    x0_arr, y0_arr = _check_states(system, x0, y0, N)
    m, d = probe_x.size, probe_y.size
    if system.m is None or system.d is None:    # dimensions read off x0, y0 (as simulate does)
        system = system._replace(m=m, d=d)
    return system, values, N, x0_arr, y0_arr, (m, d)


def stack_width(m: int, d: int) -> int:
    """The unknowns per point of a stacked dense solve: the whole state (m + d)."""
    return m + d


def make_plan(system, names: tuple, t_span: tuple, ts: np.ndarray, tol: float, max_order: int, *, safety: float,
              route: str, y_scale: float, group: int, dims: tuple) -> paths.SweepPlan:
    """The plan every chunk of a dense sweep is solved with (`sp_ode.sweeps._paths.SweepPlan`)."""
    m, d = dims
    base = dict(system.args) if isinstance(system.args, Mapping) else {}
    return paths.SweepPlan(system, base, names, t_span, ts, tol, max_order, safety=safety, route=route,
                           sizes=stacked.pad_sizes(group, m + d), y_scale=y_scale, dims=dims, group=group,
                           first=group if route == "auto" else 0)
