"""Integration engines behind `sp_ode.simulate`: diffrax (compiled, cached, vmapped) and scipy.

Both integrate one autonomous-or-not ODE dz/dt = rhs(t, z, dyn) on a flat state
z, where `dyn = (eps, args_dynamic)` is data (never baked into compiled code)
and the static part of `args` is part of the cache key.  The callers
(`sp_ode.simulate`, `sp_ode.manifolds.reduced`) build `rhs` from a system; inputs here
are already validated.

Status codes (shared by both backends): 0 success, 1 max_steps reached,
2 step size underflow / solver failure, 3 other; the callers add 4 when the
cause is the vector field itself (non-finite f or g, f/ε overflowing, Q(y) not
a generator or p_st(y) undefined).  Both engines also return the
last state reached (`t_end`, `z_end`), from which the caller diagnoses a
failure by its cause (docs/theory.md §9).
"""
from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sp_ode.core.errors import Error
from sp_ode.systems.options import controller_tolerances

STATUS_OK, STATUS_MAX_STEPS, STATUS_STEP_FAILURE, STATUS_OTHER, STATUS_VECTOR_FIELD = 0, 1, 2, 3, 4

# A solve without save times keeps every accepted step.  diffrax preallocates that buffer
# (t and z for each of max_steps steps), so a generous max_steps (10**9) would allocate
# ~24·(n+1) GB and hang.  Such solves instead run in chunks of at most this many steps,
# each restarted from the last state of the one before, until t1 or max_steps: memory
# grows with the steps actually taken, never with the budget.
STEP_CHUNK = 4096
# A rung of the escalation ladder stops itself when even this many times the budget it has left is predicted
# short of t1 (`predicted_steps`): climbing on would spend minutes to fail the same way.
PREDICTION_MARGIN = 4.0
# ... but never while its steps are growing: a last step this many times the interval's mean step (a solve
# leaving its initial layer) says the rate so far overstates the cost of the rest.
GROWING_STEPS = 10.0
# ... and never from fewer steps than this (a few steps of a starting solver say nothing of its rate).
MIN_CHECK_STEPS = 256


def predicted_steps(t_mark: float, t_now: float, t1: float, steps: int, h_last: float) -> float:
    """Steps a solve at `t_now` still needs to reach `t1`, from its last `steps` steps (taken since `t_mark`).

    Optimistic: the smaller of the interval's rate, steps·(t1 − t_now)/(t_now − t_mark), and the
    last step size kept for the rest, (t1 − t_now)/h_last. Both count work, never time, so the
    decision is the same under any load. NaN when undefined (no progress, no step size) or while the
    steps are growing (`GROWING_STEPS`).
    """
    covered, rest = t_now - t_mark, t1 - t_now
    if not (covered > 0 and rest > 0 and steps > 0 and np.isfinite(h_last) and h_last > 0):
        return float("nan")
    if h_last > GROWING_STEPS * covered / steps:
        return float("nan")
    return float(min(steps * rest / covered, rest / h_last))

_CACHE_SIZE = 64

# XLA options of the small programs the scipy engine calls once per step (the vector field, its
# Jacobian, a Q(y) probe): at optimisation level 0 they compile in about half the time (5-state master
# equation: 0.42 s against 0.81 s for f, 1.0 s against 1.6 s for its Jacobian, measured under load
# ≈ 7 on 2 cores, bench/systems/first_answer.py) and run as fast per call at these sizes; the large
# diffrax programs keep the default.
SMALL_PROGRAM_OPTIONS = {"xla_backend_optimization_level": 0}


@dataclass(frozen=True)
class Problem:
    """An ODE for the engines.

    key : hashable; equal keys must mean the same `make_rhs` (it keys the caches).
    make_rhs : `make_rhs(args_static) -> rhs(t, z, (eps, args_dynamic))`.
    """

    key: Hashable
    make_rhs: Callable
    # κ of the chord iteration of the Kvaerno methods: diffrax's default for a general
    # system, CHORD_KAPPA_MASTER for a master equation (see there)
    chord_kappa: float = 1e-2
    # the Kvaerno methods' step-size controller runs at (rtol, atol)·tol_factor:
    # TOL_FACTOR_GENERAL for a general system, 1 for a master equation (see there)
    tol_factor: float = 1.0


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


def _is_data(leaf) -> bool:
    """Array leaves and real numbers are data to a compiled solve; ints, bools, strings, callables are static
    (they may set shapes or control flow in the user's f and g)."""
    if isinstance(leaf, (jax.Array, np.ndarray, np.floating, np.complexfloating)):
        return True
    return isinstance(leaf, (float, complex)) and not isinstance(leaf, bool)


@dataclass(frozen=True)
class StaticArgs:
    """The static part of `args`: its tree structure and non-data leaves (None where a data leaf goes)."""

    treedef: Any
    leaves: tuple

    def combine(self, dynamic) -> Any:
        """`args` again, from the data leaves `dynamic` (a tuple, in tree order)."""
        it = iter(dynamic)
        return jax.tree_util.tree_unflatten(self.treedef, [next(it) if leaf is _DATA else leaf
                                                           for leaf in self.leaves])


_DATA = object()   # placeholder of a data leaf in StaticArgs.leaves


def split_args(args):
    """Partition `args` into its data leaves (a tuple of arrays) and the static rest (`StaticArgs`), with a
    hashable key of the static rest.  ε, array parameters and real numbers are data: changing them never
    recompiles (docs/theory.md §9)."""
    leaves, treedef = jax.tree_util.tree_flatten(args)
    # NumPy leaves stay NumPy: the compiled call transfers them itself, and a jnp.asarray per leaf per
    # call costs more than many short solves; Python floats become float64 arrays
    dynamic = tuple(leaf if isinstance(leaf, (jax.Array, np.ndarray)) else np.asarray(leaf, dtype=np.float64)
                    if isinstance(leaf, float) else np.asarray(leaf) for leaf in leaves if _is_data(leaf))
    static = StaticArgs(treedef, tuple(_DATA if _is_data(leaf) else leaf for leaf in leaves))
    static_key = (treedef, tuple("data" if leaf is _DATA else _hashable(leaf) for leaf in static.leaves))
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
# same rtol (docs/bench/batched.md).  That noise floor is specific to f = Q(y)ᵀx with
# x on the simplex; a general stiff system keeps diffrax's κ = 1e-2, which it needs:
# HIRES at rtol 1e-7 (atol 1e-11) has 7.43 correct digits with κ = 1 and 9.54 with κ = 1e-2
# (scipy Radau: 8.28); κ = 1 costs VDPOL one digit as well (docs/bench/stiff.md).  The
# ε-free reduced flow keeps 1e-2 too.
CHORD_KAPPA = 1e-2
CHORD_KAPPA_MASTER = 1.0

# Tolerance proportionality of the Kvaerno methods on a general system.  Their controller
# bounds the *local* error per step by (rtol, atol); the global error it leaves at t1 is
# larger: at rtol 1e-7 on the Test Set (docs/bench/stiff.md) OREGO ended 5.8 tolerance
# units off (6.23 correct digits) and ROBER had 7.11, where scipy Radau, whose embedded
# estimate is of lower order and over-estimates, delivers 8.67 and 8.80.  So a general
# system runs its controller at (rtol, atol)·TOL_FACTOR_GENERAL and its chord iteration at
# κ = 1 of those tightened units, i.e. diffrax's κ = 1e-2 of the *requested* tolerance:
# the Newton stopping threshold is what it was, only the error control is tighter.
# Measured at rtol 1e-7 (Kvaerno5 scd · steps · rejected; Radau scd):
#     factor 1,    κ 1e-2: VDPOL 8.85 · 9808 · 3437, ROBER 7.11 · 2101 · 562,
#                          OREGO 6.23 · 5237 · 1506, HIRES 9.54 · 1181 · 242
#     factor 1e-2, κ 1e-2: 10.42 / 8.80 / 8.18 / 11.90 digits at 2.3–3× the steps
#     factor 1e-2, κ 1:    10.05 · 8912 · 1449, 8.77 · 2102 · 197, 8.02 · 4697 · 436,
#                          9.65 · 1130 · 12   (Radau 9.24, 8.80, 8.67, 8.28)
# i.e. 1–2 more digits at the same or fewer steps (far fewer rejections: a tight κ in
# tight units makes the chord iteration fail on rounding noise, see above).  A master
# equation keeps factor 1 and κ = 1: its error is already 10⁻⁵ of the tolerance
# (me10: 1.3e-12 at rtol 1e-7).  The factor never takes the controller's rtol below
# RTOL_FLOOR (≈ 450 unit roundoffs): closer to machine precision the error estimate is
# rounding noise and steps are rejected at random (the toy at rtol 1e-12 with the full
# factor exhausted 50 000 steps at ε = 1/512); there it is RTOL_FLOOR/rtol ≤ 1.
TOL_FACTOR_GENERAL = 1e-2
CHORD_KAPPA_GENERAL = CHORD_KAPPA / TOL_FACTOR_GENERAL  # = 1 in tightened units


def _diffrax_solver(method: str, kappa: float):
    import diffrax

    if method.startswith("Kvaerno"):
        chord = diffrax.with_stepsize_controller_tols(diffrax.VeryChord)(kappa=kappa)
        return getattr(diffrax, method)(root_finder=chord)
    return getattr(diffrax, method)()


# Implicit (Kvaerno) solvers step *to* every save time.  Their dense output is a 3rd-order
# Hermite interpolant, whose error between steps exceeds the 5th-order step error by up to
# two orders of magnitude: me3 at the default rtol 1e-8 had 4.3e-10 at 4 save times but
# 2.1e-8 at 17 (the old rule interpolated above 16 save times).  Stepping to them keeps the
# error at every save time at the step error (1.0e-10 … 6.0e-10 for 4 … 201 save times) at
# the cost of at least one step per save interval (me3, 201 save times: 492 steps against
# 129; docs/benchmarks.md).  Those forced steps are added to the step budget, so a dense
# grid does not eat into `max_steps`.  The explicit solvers' interpolants match their
# order; they keep their own steps.


def _build_diffrax(problem, args_static, method, max_steps, save_steps, batch_axes, step_to_ts=False,
                   given_dt0=False):
    import diffrax

    rhs = problem.make_rhs(args_static)
    solver = _diffrax_solver(method, problem.chord_kappa)
    implicit = method.startswith("Kvaerno")

    def one(z0, scalars, ts, args_dyn):
        # t0, t1, rtol, atol, ε travel as one array: one host-to-device transfer per call
        t0, t1, rtol, atol, eps = scalars[0], scalars[1], scalars[2], scalars[3], scalars[4]
        dt0 = scalars[5] if given_dt0 else None  # a continued chunk resumes with its last step size
        # PI controller with the coefficients recommended for stiff problems (diffrax docs).
        step_ts = ts if step_to_ts else None
        controller = diffrax.PIDController(rtol=rtol, atol=atol, pcoeff=0.3 if implicit else 0.0,
                                           icoeff=0.3 if implicit else 1.0, step_ts=step_ts)
        main = diffrax.SubSaveAt(t0=True, steps=True) if save_steps else diffrax.SubSaveAt(ts=ts)
        saveat = diffrax.SaveAt(subs=[main, diffrax.SubSaveAt(t1=True)])
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(rhs), solver, t0, t1, dt0, z0, args=(eps, args_dyn), saveat=saveat,
            stepsize_controller=controller, max_steps=max_steps, throw=False,
        )
        # the t1 sub-save holds the last state reached, also after a failure
        (ts_out, tend), (zs, zend) = sol.ts, sol.ys
        stats = {k: sol.stats[k] for k in ("num_steps", "num_accepted_steps", "num_rejected_steps")}
        # the outcome as one of our status codes, by diffrax's public comparisons of its RESULTS
        status = jnp.where(sol.result == diffrax.RESULTS.successful, STATUS_OK,
                           jnp.where(sol.result == diffrax.RESULTS.max_steps_reached, STATUS_MAX_STEPS,
                                     jnp.where(sol.result == diffrax.RESULTS.dt_min_reached, STATUS_STEP_FAILURE,
                                               STATUS_OTHER)))
        return ts_out, zs, tend[-1], zend[-1], status, stats

    if batch_axes is None:
        return one
    z_ax, args_ax = batch_axes
    return jax.vmap(one, in_axes=(z_ax, None, None, args_ax))


def solve_diffrax(problem: Problem, z0, t0, t1, ts, *, eps, args, rtol, atol, method, max_steps,
                  batched: bool = False, batch_args: bool = False, split=None, chunk: int | None = None) -> dict:
    """Integrate with diffrax; `z0` is (n,) or, when `batched`, (B, n).

    `split`, when given, is `split_args(args)` already computed by the caller.
    Without save times (single solve) the accepted steps are returned, computed in
    chunks of at most `STEP_CHUNK` steps so that memory never scales with `max_steps`.
    With save times, a budget above `chunk` (the budget the program is compiled for; default
    `max_steps`) is spent by continuing from the last state reached with the same compiled
    program, so a larger budget costs no compilation (the escalation ladder of
    `sp_ode.systems.options`).

    Returns a dict of NumPy arrays: t, z, t_end, z_end (last state reached), status,
    num_steps, num_rejected_steps (leading B axis when batched), and compile_time,
    wall_time (seconds).
    """
    split = split_args(args) if split is None else split
    if ts is None and not batched:
        return _solve_diffrax_steps(problem, z0, t0, t1, eps=eps, split=split, rtol=rtol, atol=atol,
                                    method=method, max_steps=max_steps)
    if ts is None:
        ts = np.array([t0, t1])
    ts = np.asarray(ts, dtype=np.float64)
    step_to_ts = method.startswith("Kvaerno")
    chunk = max_steps if chunk is None else min(chunk, max_steps)
    extra = len(ts) if step_to_ts else 0   # forced steps do not count against max_steps
    kw = dict(eps=eps, split=split, rtol=rtol, atol=atol, method=method, max_steps=chunk + extra, save_steps=False,
              batched=batched, batch_args=batch_args, step_to_ts=step_to_ts)
    out = _run_diffrax(problem, z0, t0, t1, ts, **kw)
    used = chunk
    # (a vmapped batch shares its time span: only a single solve can continue from where it stopped)
    while not batched and used < max_steps and np.any(np.asarray(out["status"]) == STATUS_MAX_STEPS):
        before = np.min(np.atleast_1d(out["t_end"]))
        out = _continue_diffrax(problem, out, ts, t1, kw)
        used += chunk
        if np.min(np.atleast_1d(out["t_end"])) <= before:
            break                      # no progress in a whole chunk: more of the same cannot help
    return out


def _continue_diffrax(problem: Problem, out: dict, ts: np.ndarray, t1: float, kw: dict) -> dict:
    """Resume a single solve that ran out of budget from its last state, with the same compiled program.

    The save times not yet reached are passed first and padded with t1 to the compiled length.
    """
    t_restart = float(out["t_end"])
    remaining = ts[ts > t_restart]
    pad = np.concatenate([remaining, np.full(len(ts) - len(remaining), t1)])
    nxt = _run_diffrax(problem, np.asarray(out["z_end"], dtype=np.float64), t_restart, t1, pad, **kw)
    merged = dict(nxt)
    z = np.array(out["z"], dtype=np.float64)
    z[len(ts) - len(remaining):] = np.asarray(nxt["z"])[:len(remaining)]
    merged["z"], merged["t"] = z, out["t"]
    for key in ("num_steps", "num_rejected_steps", "compile_time", "wall_time"):
        merged[key] = out[key] + nxt[key]
    return merged


def _solve_diffrax_steps(problem, z0, t0, t1, *, eps, split, rtol, atol, method, max_steps) -> dict:
    """Every accepted step of one solve, in chunks of at most STEP_CHUNK steps."""
    chunk = min(max_steps, STEP_CHUNK)
    ts_parts, zs_parts = [], []
    t_start, z_start, used, dt0 = t0, np.asarray(z0, dtype=np.float64), 0, 0.0
    compile_time = wall_time = 0.0
    accepted = rejected = 0
    while True:
        out = _run_diffrax(problem, z_start, t_start, t1, np.zeros(0), eps=eps, split=split, rtol=rtol, atol=atol,
                           method=method, max_steps=chunk, save_steps=True, batched=False, batch_args=False,
                           step_to_ts=False, dt0=dt0)
        compile_time += out["compile_time"]
        wall_time += out["wall_time"]
        accepted += int(out["num_steps"])
        rejected += int(out["num_rejected_steps"])
        used += int(out["num_steps"]) + int(out["num_rejected_steps"])  # diffrax's max_steps counts both
        first = 0 if not ts_parts else 1  # a restart repeats its starting state
        ts_parts.append(out["t"][first:])
        zs_parts.append(out["z"][first:])
        more = (out["status"] == STATUS_MAX_STEPS and used < max_steps and out["t_end"] > t_start
                and np.all(np.isfinite(out["z_end"])))
        if not more:
            break
        t_start, z_start = float(out["t_end"]), np.asarray(out["z_end"])
        dt0 = float(out["t"][-1] - out["t"][-2]) if len(out["t"]) >= 2 else 0.0
        chunk = min(max_steps - used, STEP_CHUNK)
    out["t"], out["z"] = np.concatenate(ts_parts), np.concatenate(zs_parts)
    out["num_steps"], out["num_rejected_steps"] = accepted, rejected
    out["compile_time"], out["wall_time"] = compile_time, wall_time
    return out


def _run_diffrax(problem, z0, t0, t1, ts, *, eps, split, rtol, atol, method, max_steps, save_steps, batched,
                 batch_args, step_to_ts, dt0: float = 0.0) -> dict:
    args_dyn, args_static, static_key = split
    factor = problem.tol_factor if method.startswith("Kvaerno") else None
    rtol_c, atol_c = controller_tolerances(method, rtol, atol, factor)
    scalars = np.array([t0, t1, rtol_c, atol_c, eps, dt0], dtype=np.float64)
    call = (np.asarray(z0, dtype=np.float64), scalars, np.asarray(ts, dtype=np.float64), args_dyn)
    batch_axes = (0, 0 if batch_args else None) if batched else None
    given_dt0 = dt0 > 0
    key = (problem.key, static_key, method, problem.chord_kappa, max_steps, save_steps, batch_axes, step_to_ts,
           given_dt0, tree_spec(call))
    compiled = _diffrax_cache.get(key)
    compile_time = 0.0
    if compiled is None:
        start = time.perf_counter()
        fn = _build_diffrax(problem, args_static, method, max_steps, save_steps, batch_axes, step_to_ts, given_dt0)
        compiled = jax.jit(fn).lower(*call).compile()
        compile_time = time.perf_counter() - start
        _diffrax_cache[key] = compiled
        if len(_diffrax_cache) > _CACHE_SIZE:
            _diffrax_cache.popitem(last=False)
    else:
        _diffrax_cache.move_to_end(key)
    start = time.perf_counter()
    ts_out, zs, t_end, z_end, status, stats = jax.device_get(compiled(*call))  # waits for the result
    wall_time = time.perf_counter() - start

    status = np.asarray(status).astype(np.int64)
    messages = np.full(status.shape, "", dtype=object)
    messages[status == STATUS_MAX_STEPS] = "the maximum number of solver steps was reached"
    messages[status == STATUS_STEP_FAILURE] = "the step size fell below its minimum"
    messages[status == STATUS_OTHER] = "the implicit stage equations did not converge (Newton/chord iteration)"
    out = {
        "t": ts_out, "z": zs, "t_end": t_end, "z_end": z_end, "status": status,
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


class NonFiniteField(Error, FloatingPointError):
    """The vector field returned a non-finite value at (t, z), raised from inside a scipy step."""

    def __init__(self, t: float, z: np.ndarray):
        super().__init__(f"the vector field is not finite at t = {t:.6g}")
        self.t, self.z = t, z


class _AfterJob:
    """`fn`, called only once `job` (its ahead-of-time compilation) has finished; its errors surface here."""

    def __init__(self, fn, job):
        self._fn, self._job = fn, job

    def __call__(self, *args):
        if self._job is not None:
            self._job.result()
            self._job = None
        return self._fn(*args)


def _scipy_functions(problem: Problem, args_static, static_key, z0: np.ndarray, dyn) -> tuple:
    """The vector field and its Jacobian, compiled ahead of time for exactly the types scipy passes
    (t a float64 scalar, z a float64 (n,) array, the parameters `dyn`), cached per problem and types.

    Returns (fun, jac, compile_seconds); compile_seconds is 0 when both came from the cache.  The two
    programs are compiled concurrently (XLA's compiler releases the GIL), and only `fun` is waited for:
    the first call of `jac` waits for its compilation if it is still running.  LSODA starts non-stiff and
    asks for the Jacobian only once it switches to BDF (a reduced flow often never does), so the first
    answer waits for f's compilation alone; Radau and BDF ask at their first step, no later than before.
    """
    t_spec = jax.ShapeDtypeStruct((), jnp.float64)
    z_spec = jax.ShapeDtypeStruct(np.shape(z0), jnp.float64)
    dyn_spec = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), getattr(a, "dtype", None) or
                                                                     np.result_type(a)), dyn)
    key = (problem.key, static_key, tree_spec(dyn), np.shape(z0))
    found = _scipy_cache.get(key)
    if found is not None:
        _scipy_cache.move_to_end(key)
        return found[0], found[1], 0.0
    start = time.perf_counter()
    rhs = problem.make_rhs(args_static)
    # Jacobian by forward-mode autodiff: exact, and square (n × n) so jacfwd is the right mode.  Compiled
    # ahead of time in two threads; the calls then go through `jax.jit`, whose dispatch finds the compiled
    # programs (same types) and costs less per call than calling them directly (68 against 85 µs measured).
    fun, jac = (jax.jit(fn, compiler_options=SMALL_PROGRAM_OPTIONS) for fn in (rhs, jax.jacfwd(rhs, argnums=1)))
    lowered = [fn.lower(t_spec, z_spec, dyn_spec) for fn in (fun, jac)]
    pool = ThreadPoolExecutor(max_workers=2)
    fun_job, jac_job = (pool.submit(low.compile) for low in lowered)
    pool.shutdown(wait=False)    # the threads end with their compilations
    import scipy.integrate  # noqa: F401  (its import, 0.4 s, overlaps the compilation: XLA releases the GIL)

    fun_job.result()
    jac = _AfterJob(jac, jac_job)
    _scipy_cache[key] = (fun, jac)
    if len(_scipy_cache) > _CACHE_SIZE:
        _scipy_cache.popitem(last=False)
    return fun, jac, time.perf_counter() - start


def _scipy_one(fun, jac, z0, t0, t1, ts, rtol, atol, method, max_steps, check_every: int = 0) -> dict:
    """One scipy solve of at most `max_steps` steps.

    With `check_every` > 0 (a rung of the escalation ladder above the first) it predicts, after every
    `check_every` steps from the second interval on (the first repeats the failed attempt and may be an
    initial layer), what the rest costs at the last interval's rate, and stops when even
    `PREDICTION_MARGIN` times the budget left cannot reach t1 (`predicted_steps` in the result).
    """
    import scipy.integrate

    solver_cls = getattr(scipy.integrate, method)
    rtol_c, atol_c = controller_tolerances(method, rtol, atol)
    solver = solver_cls(fun, t0, z0, t1, rtol=rtol_c, atol=atol_c, jac=jac)
    t_list, z_list = ([t0], [np.array(z0)]) if ts is None else ([], [])
    next_i = 0
    if ts is not None:  # ts[0] may equal t0
        while next_i < len(ts) and ts[next_i] <= t0:
            t_list.append(ts[next_i])
            z_list.append(np.array(z0))
            next_i += 1
    status, message, steps = STATUS_OK, "", 0
    bad = None          # (t, z) where the vector field was found non-finite
    t_mark, predicted = None, float("nan")
    while solver.status == "running":
        if steps >= max_steps:
            status, message = STATUS_MAX_STEPS, "The maximum number of solver steps was reached."
            break
        if check_every >= MIN_CHECK_STEPS and steps and steps % check_every == 0:
            if t_mark is not None:
                need = predicted_steps(t_mark, float(solver.t), t1, check_every, float(solver.step_size or np.nan))
                if need > PREDICTION_MARGIN * (max_steps - steps):
                    status, predicted = STATUS_MAX_STEPS, need
                    message = "Stopped: the steps left in the budget are predicted not to reach the end."
                    break
            t_mark = float(solver.t)
        try:  # an exception leaves solver.t, solver.y at the last accepted step
            msg = solver.step()
        except NonFiniteField as exc:
            # keep the state where f or g failed (a trial stage past the last accepted step): the caller's
            # diagnosis names the cause there, and no escalation can help
            status, message, bad = STATUS_STEP_FAILURE, str(exc), (exc.t, exc.z)
            break
        except (ValueError, ArithmeticError, np.linalg.LinAlgError) as exc:
            # scipy's LU refuses a non-finite Jacobian (ValueError from check_finite), and the
            # step arithmetic can overflow: a failure at the last state, diagnosed by the caller
            # (non-finite f or g, overflow of f/ε, …) instead of a traceback from numpy
            status, message = STATUS_STEP_FAILURE, f"{type(exc).__name__}: {exc}"
            break
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
    t_bad, z_bad = bad if bad is not None else (np.nan, np.full(n, np.nan))
    return {"t": t, "z": z, "t_end": float(solver.t), "z_end": np.array(solver.y, dtype=np.float64),
            "t_bad": t_bad, "z_bad": z_bad,
            "status": status, "solver_message": message,
            "num_steps": steps, "nfev": int(solver.nfev), "njev": int(solver.njev),
            "nlu": int(getattr(solver, "nlu", 0)), "predicted_steps": predicted}


def solve_scipy(problem: Problem, z0, t0, t1, ts, *, eps, args, rtol, atol, method, max_steps,
                batched: bool = False, batch_args: bool = False, split=None, check_every: int = 0) -> dict:
    """Integrate with a scipy OdeSolver (Radau/BDF/LSODA) and the JAX Jacobian; loops over a batch.

    `split`, when given, is `split_args(args)` already computed by the caller.
    """
    args_dyn, args_static, static_key = split_args(args) if split is None else split
    ts_np = None if ts is None else np.asarray(ts, dtype=np.float64)
    z0 = np.asarray(z0, dtype=np.float64)
    B = z0.shape[0] if batched else None
    eps_arr = np.asarray(eps, dtype=np.float64)
    guard = method == "LSODA"
    lane_dyn = jax.tree_util.tree_map(lambda a: np.asarray(a)[0], args_dyn) if batch_args else args_dyn
    fun_c, jac_c, compile_time = _scipy_functions(problem, args_static, static_key, z0[0] if batched else z0,
                                                  (eps_arr, lane_dyn))

    def run(zi, args_i):
        dyn = (eps_arr, args_i)

        def fun(t, z):
            out = np.asarray(fun_c(np.float64(t), z, dyn))
            # LSODA's Fortran core steps on through NaN and reports success: a non-finite f or g must stop
            # it here (Radau and BDF stop by themselves, at their LU's finiteness check, closer to the point)
            if guard and not np.isfinite(out).all():
                raise NonFiniteField(float(t), np.array(z, dtype=np.float64))
            return out

        jac = lambda t, z: np.asarray(jac_c(np.float64(t), z, dyn))
        return _scipy_one(fun, jac, zi, float(t0), float(t1), ts_np, rtol, atol, method, max_steps, check_every)

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
