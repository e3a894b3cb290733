"""Integration engines behind `sp_ode.simulate`: diffrax (compiled, cached, vmapped) and scipy.

Both integrate one autonomous-or-not ODE dz/dt = rhs(t, z, dyn) on a flat state
z, where ``dyn = (eps, args_dynamic)`` is data (never baked into compiled code)
and the static part of ``args`` is part of the cache key.  The callers
(`sp_ode.simulate`, `sp_ode.systems.reduced`) build ``rhs`` from a system; inputs here
are already validated.

Status codes (shared by both backends): 0 success, 1 max_steps reached,
2 step size underflow / solver failure, 3 other.
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np

DIFFRAX_METHODS = ("Kvaerno5", "Kvaerno4", "Kvaerno3", "Tsit5", "Dopri5", "Dopri8")
SCIPY_METHODS = ("Radau", "BDF", "LSODA")
STATUS_OK, STATUS_MAX_STEPS, STATUS_STEP_FAILURE, STATUS_OTHER = 0, 1, 2, 3

_CACHE_SIZE = 64


@dataclass(frozen=True)
class Problem:
    """An ODE for the engines.

    key : hashable; equal keys must mean the same ``make_rhs`` (it keys the caches).
    make_rhs : ``make_rhs(args_static) -> rhs(t, z, (eps, args_dynamic))``.
    """

    key: Hashable
    make_rhs: Callable
    # κ of the chord iteration of the Kvaerno methods (see CHORD_KAPPA); diffrax's default
    # 1e-2 unless the caller's rhs carries a 1/ε-amplified stiff part
    chord_kappa: float = 1e-2


class _ById:
    """Hash/compare an unhashable static object by identity (and keep it alive)."""

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _ById) and other.obj is self.obj


def _hashable(obj):
    try:
        hash(obj)
        return obj
    except TypeError:
        return _ById(obj)


def split_args(args):
    """Partition ``args`` into array leaves (data) and the rest (static, hashable key part)."""
    dynamic, static = eqx.partition(args, eqx.is_array)
    # NumPy leaves stay NumPy: the compiled call transfers them itself, and a jnp.asarray
    # per leaf per call costs more than many short solves
    dynamic = jax.tree_util.tree_map(lambda a: a if isinstance(a, (jax.Array, np.ndarray)) else jnp.asarray(a),
                                     dynamic)
    leaves, treedef = jax.tree_util.tree_flatten(static)
    static_key = (treedef, tuple(_hashable(leaf) for leaf in leaves))
    return dynamic, static, static_key


def tree_spec(tree) -> tuple:
    """Structure, shapes and dtypes of a pytree: what a compiled function is specialised to."""
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return treedef, tuple((np.shape(a), np.result_type(getattr(a, "dtype", a)).str) for a in leaves)


# --- diffrax ------------------------------------------------------------------------------

_diffrax_cache: OrderedDict[Hashable, Any] = OrderedDict()


# Stopping constant κ of the chord iteration that solves the implicit stages of the Kvaerno
# methods for a fast–slow system: stop once the estimated remaining error ρ/(1 − ρ)·‖Δ‖ is
# below κ tolerance units (‖·‖ the controller's RMS norm, scaled by atol + rtol|·|).  diffrax
# iterates on the stage derivatives k = dz/dt, whose fast part f/ε carries rounding of
# about u‖Q‖‖x‖/ε (u = 2.2e-16): ~1e-3–1e-2 tolerance units at ε = 1e-3, rtol 1e-8, i.e. at
# diffrax's default κ = 1e-2.  There the rate estimates are noise, steps are rejected as
# "diverged", and the controller shrinks h: on the ring20 master equation (ε = 1e-3,
# rtol 1e-8, x0 = e₀) Kvaerno5 took 820 + 167 rejected steps for an error of 5.0e-12;
# at κ = 1 it takes 320 + 8 steps for 4.4e-10, against 4.8e-10 for scipy Radau at the
# same rtol (docs/bench/batched.md).  The ε-free reduced flow keeps diffrax's κ = 1e-2.
CHORD_KAPPA = 1.0


def _diffrax_solver(method: str, kappa: float):
    import diffrax

    if method.startswith("Kvaerno"):
        chord = diffrax.with_stepsize_controller_tols(diffrax.VeryChord)(kappa=kappa)
        return getattr(diffrax, method)(root_finder=chord)
    return getattr(diffrax, method)()


# Implicit (Kvaerno) solvers step *to* the save times when there are at most this many: their
# dense output is only a 3rd-order Hermite interpolant, whose error at the save times exceeded
# the 5th-order step error by 40x (ring20, ε = 1e-3, rtol 1e-8: 8.6e-9 interpolated against
# 1.8e-10 at step ends, for 5 % more steps; docs/bench/batched.md).  A denser grid (a plot)
# would force at least one step per save time (me3: 64 save times took 301 steps, its own
# steps are 127), so there the interpolant is used.  The
# explicit solvers' interpolants match their order; they keep their own steps.
STEP_TO_TS_MAX = 16


def _build_diffrax(problem, args_static, method, max_steps, save_steps, batch_axes, step_to_ts=False):
    import diffrax

    rhs = problem.make_rhs(args_static)
    solver = _diffrax_solver(method, problem.chord_kappa)
    implicit = method.startswith("Kvaerno")

    def one(z0, scalars, ts, args_dyn):
        # t0, t1, rtol, atol, ε travel as one array: one host-to-device transfer per call
        t0, t1, rtol, atol, eps = scalars[0], scalars[1], scalars[2], scalars[3], scalars[4]
        # PI controller with the coefficients recommended for stiff problems (diffrax docs).
        step_ts = ts if step_to_ts else None
        controller = diffrax.PIDController(rtol=rtol, atol=atol, pcoeff=0.3 if implicit else 0.0,
                                           icoeff=0.3 if implicit else 1.0, step_ts=step_ts)
        main = diffrax.SubSaveAt(t0=True, steps=True) if save_steps else diffrax.SubSaveAt(ts=ts)
        saveat = diffrax.SaveAt(subs=[main, diffrax.SubSaveAt(t1=True)])
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(rhs), solver, t0, t1, None, z0, args=(eps, args_dyn), saveat=saveat,
            stepsize_controller=controller, max_steps=max_steps, throw=False,
        )
        (ts_out, tend), (zs, _) = sol.ts, sol.ys
        stats = {k: sol.stats[k] for k in ("num_steps", "num_accepted_steps", "num_rejected_steps")}
        return ts_out, zs, tend[-1], sol.result._value, stats

    if batch_axes is None:
        return one
    z_ax, args_ax = batch_axes
    return jax.vmap(one, in_axes=(z_ax, None, None, args_ax))


def solve_diffrax(problem: Problem, z0, t0, t1, ts, *, eps, args, rtol, atol, method, max_steps,
                  batched: bool = False, batch_args: bool = False, split=None) -> dict:
    """Integrate with diffrax; ``z0`` is (n,) or, when `batched`, (B, n).

    `split`, when given, is ``split_args(args)`` already computed by the caller.

    Returns a dict of NumPy arrays: t, z, t_end, status, num_steps, num_rejected_steps
    (leading B axis when batched), and compile_time, wall_time (seconds).
    """
    import diffrax

    args_dyn, args_static, static_key = split_args(args) if split is None else split
    save_steps = ts is None and not batched
    if ts is None:
        ts = np.array([t0, t1]) if batched else np.zeros(0)
    scalars = np.array([t0, t1, rtol, atol, eps], dtype=np.float64)
    call = (np.asarray(z0, dtype=np.float64), scalars, np.asarray(ts, dtype=np.float64), args_dyn)
    batch_axes = (0, 0 if batch_args else None) if batched else None
    step_to_ts = method.startswith("Kvaerno") and not save_steps and len(ts) <= STEP_TO_TS_MAX
    key = (problem.key, static_key, method, problem.chord_kappa, max_steps, save_steps, batch_axes, step_to_ts,
           tree_spec(call))
    compiled = _diffrax_cache.get(key)
    compile_time = 0.0
    if compiled is None:
        start = time.perf_counter()
        fn = _build_diffrax(problem, args_static, method, max_steps, save_steps, batch_axes, step_to_ts)
        compiled = jax.jit(fn).lower(*call).compile()
        compile_time = time.perf_counter() - start
        _diffrax_cache[key] = compiled
        if len(_diffrax_cache) > _CACHE_SIZE:
            _diffrax_cache.popitem(last=False)
    else:
        _diffrax_cache.move_to_end(key)
    start = time.perf_counter()
    ts_out, zs, t_end, result, stats = jax.device_get(compiled(*call))  # waits for the result
    wall_time = time.perf_counter() - start

    result = np.asarray(result)
    status = np.full(result.shape, STATUS_OTHER, dtype=np.int64)
    status[result == diffrax.RESULTS.successful._value] = STATUS_OK
    status[result == diffrax.RESULTS.max_steps_reached._value] = STATUS_MAX_STEPS
    status[result == diffrax.RESULTS.dt_min_reached._value] = STATUS_STEP_FAILURE
    messages = np.full(result.shape, "", dtype=object)
    for i in np.ndindex(result.shape):
        if result[i] != diffrax.RESULTS.successful._value:  # look up the failures only
            messages[i] = diffrax.RESULTS._index_to_message[int(result[i])]
    out = {
        "t": ts_out, "z": zs, "t_end": t_end, "status": status,
        "solver_message": messages,
        "num_steps": stats["num_accepted_steps"],
        "num_rejected_steps": stats["num_rejected_steps"],
        "compile_time": compile_time, "wall_time": wall_time,
    }
    if save_steps:
        keep = np.isfinite(out["t"])  # diffrax pads the step buffer with inf
        out["t"], out["z"] = out["t"][keep], out["z"][keep]
    elif batched:
        out["t"] = out["t"][0]
    return out


# --- scipy --------------------------------------------------------------------------------

_scipy_cache: OrderedDict[Hashable, Any] = OrderedDict()


def _scipy_functions(problem: Problem, args_static, static_key):
    key = (problem.key, static_key)
    pair = _scipy_cache.get(key)
    if pair is None:
        rhs = problem.make_rhs(args_static)
        # Jacobian by forward-mode autodiff: exact, and square (n × n) so jacfwd is the right mode.
        pair = (jax.jit(rhs), jax.jit(jax.jacfwd(rhs, argnums=1)), [True])
        _scipy_cache[key] = pair
        if len(_scipy_cache) > _CACHE_SIZE:
            _scipy_cache.popitem(last=False)
    return pair


def _scipy_one(fun, jac, z0, t0, t1, ts, rtol, atol, method, max_steps) -> dict:
    import scipy.integrate

    solver_cls = getattr(scipy.integrate, method)
    solver = solver_cls(fun, t0, z0, t1, rtol=rtol, atol=atol, jac=jac)
    t_list, z_list = ([t0], [np.array(z0)]) if ts is None else ([], [])
    next_i = 0
    if ts is not None:  # ts[0] may equal t0
        while next_i < len(ts) and ts[next_i] <= t0:
            t_list.append(ts[next_i])
            z_list.append(np.array(z0))
            next_i += 1
    status, message, steps = STATUS_OK, "", 0
    while solver.status == "running":
        if steps >= max_steps:
            status, message = STATUS_MAX_STEPS, "The maximum number of solver steps was reached."
            break
        msg = solver.step()
        steps += 1
        if solver.status == "failed":
            status, message = STATUS_STEP_FAILURE, msg or "scipy solver failed."
            break
        if ts is None:
            t_list.append(solver.t)
            z_list.append(solver.y.copy())
        else:
            stop = np.searchsorted(ts, solver.t, side="right")
            if stop > next_i:
                dense = solver.dense_output()
                for tq in ts[next_i:stop]:
                    t_list.append(tq)
                    z_list.append(dense(tq) if tq < solver.t else solver.y.copy())
                next_i = stop
    n = len(z0)
    z = np.array(z_list).reshape(-1, n)
    t = np.array(t_list, dtype=np.float64)
    if ts is not None and len(t) < len(ts):  # failed early: unreached saves are inf, as diffrax does
        t = np.concatenate([t, np.asarray(ts[len(t):])])
        z = np.concatenate([z, np.full((len(ts) - len(z), n), np.inf)])
    return {"t": t, "z": z, "t_end": float(solver.t), "status": status, "solver_message": message,
            "num_steps": steps, "nfev": int(solver.nfev), "njev": int(solver.njev),
            "nlu": int(getattr(solver, "nlu", 0))}


def solve_scipy(problem: Problem, z0, t0, t1, ts, *, eps, args, rtol, atol, method, max_steps,
                batched: bool = False, batch_args: bool = False, split=None) -> dict:
    """Integrate with a scipy OdeSolver (Radau/BDF/LSODA) and the JAX Jacobian; loops over a batch.

    `split`, when given, is ``split_args(args)`` already computed by the caller.
    """
    args_dyn, args_static, static_key = split_args(args) if split is None else split
    fun_jit, jac_jit, fresh = _scipy_functions(problem, args_static, static_key)
    eps_arr = jnp.asarray(eps, dtype=jnp.float64)
    ts_np = None if ts is None else np.asarray(ts, dtype=np.float64)
    z0 = np.asarray(z0, dtype=np.float64)
    B = z0.shape[0] if batched else None

    def run(zi, args_i):
        dyn = (eps_arr, args_i)
        fun = lambda t, z: np.asarray(fun_jit(t, z, dyn))
        jac = lambda t, z: np.asarray(jac_jit(t, z, dyn))
        return _scipy_one(fun, jac, zi, float(t0), float(t1), ts_np, rtol, atol, method, max_steps)

    compile_time = 0.0
    if fresh[0]:  # first use of these jitted functions: time their compilation apart from the solve
        start = time.perf_counter()
        a0 = jax.tree_util.tree_map(lambda a: a[0], args_dyn) if batch_args else args_dyn
        zz = jnp.asarray(z0[0] if batched else z0)
        jax.block_until_ready((fun_jit(t0, zz, (eps_arr, a0)), jac_jit(t0, zz, (eps_arr, a0))))
        compile_time = time.perf_counter() - start
        fresh[0] = False
    start = time.perf_counter()
    if not batched:
        out = run(z0, args_dyn)
    else:
        runs = []
        for b in range(B):
            a_b = jax.tree_util.tree_map(lambda a: a[b], args_dyn) if batch_args else args_dyn
            runs.append(run(z0[b], a_b))
        out = {k: np.array([r[k] for r in runs], dtype=object if k == "solver_message" else None)
               for k in runs[0] if k not in ("t", "z")}
        if ts_np is None:
            raise RuntimeError("internal: batched solves need ts")  # simulate always sets ts for batches
        out["t"] = runs[0]["t"]
        out["z"] = np.stack([r["z"] for r in runs])
    out["wall_time"] = time.perf_counter() - start
    out["compile_time"] = compile_time
    return out
