"""Simulate a fast–slow system ε dx/dt = f(x, y), dy/dt = g(x, y) on the slow clock t.

Two backends integrate the concatenated state z = [x, y], dz/dt = [f/ε, g]
(docs/theory.md §2):

`diffrax`  an implicit stiff solver (Kvaerno5 with a PI step-size controller,
             pcoeff = icoeff = 0.3; stage equations solved by chord iterations).
             A general system runs the controller at (rtol, atol)/100, its chord
             iterations stopping at 1e-2 of the requested tolerance (diffrax's κ),
             so that the global error meets the request (Test Set: within one digit
             of Radau, docs/bench/stiff.md); a master equation runs at the requested
             tolerance with κ = 1 (see `integration.TOL_FACTOR_GENERAL`).  In
             float64, stepping to every save time, compiled once per (system, shapes, options) and cached; ε and array `args` are data to the compiled
             solve, so sweeping them does not recompile.  Batches of initial states
             (and optionally of `args`) run as one `jax.vmap`-ed solve.
`scipy`    a `scipy.integrate` OdeSolver (Radau, BDF or LSODA) stepped here, with
             the exact Jacobian ∂(dz/dt)/∂z from `jax.jacfwd` (jitted).

Compiled solves are cached by the identity of the system's `f` and `g` (shared by
copies from `with_eps`/`with_P`/`with_args`), the shapes and the options: build a
system once and reuse it, rather than wrapping f in a fresh closure per call.

Systems are checked at the door: f and g are evaluated once for their shapes
and dtypes (complex output is refused), x0 and y0 must be non-empty; for a
`MasterEquationSystem` Q(y0) must be a generator, and an x0 off the simplex is
refused (by how much, with the fix) unless the system opts in (`simplex=False`).  A failed solve is a status on the returned
`Trajectory` whose message names the cause, read off the last state reached
(`diagnosis`): non-finite f or g, f/ε overflowing, Q(y) not a generator, or the
step budget — each with its own advice (docs/theory.md §9).  With `throw=True`
(the default) it raises `SolverError` instead.
"""
from __future__ import annotations

import math
import numbers
import warnings
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from sp_ode.core.errors import Error
from sp_ode.core.precision import Float32Warning, float32_leaves, in_float64
from sp_ode.core.validation import check_finite_array
from sp_ode.markov.generator import check_generator
from sp_ode.systems import diagnosis, integration
from sp_ode.systems.options import BACKENDS, DEFAULT_MAX_STEPS, ESCALATION_BUDGET, SolveOptions
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float, PyTree, TimeSpan
    from sp_ode.systems.resolve import SystemLike

__all__ = ["simulate", "Trajectory", "SolverError", "BACKENDS"]



class SolverError(Error, RuntimeError):
    """A solve did not reach the end of its time span (raised when `throw=True`).

    Attributes
    ----------
    trajectory : Trajectory
        What was computed before the failure (its `status` and `message`).
    """

    def __init__(self, message: str, trajectory: Trajectory | None = None):
        super().__init__(message)
        self.trajectory = trajectory


@dataclass(frozen=True)
class Trajectory:
    """A solution of a fast–slow system.

    Attributes
    ----------
    t : ndarray (K,)
        Save times (`ts`, or the solver's accepted steps when `ts` was None for
        a single solve).
    x : ndarray (K, m), or (B, K, m) for a batch
        Fast state.  Save times not reached by a failed solve hold `inf`.
    y : ndarray (K, d), or (B, K, d)
        Slow state.
    status : int, or ndarray (B,) of int
        0 success; 1 max_steps reached; 2 step size underflow / solver failure; 3 other;
        4 the vector field itself failed (non-finite f or g, f/ε overflowing float64,
        Q(y) not a generator, p_st(y) undefined on a reduced path).
    message : str
        Empty on success; otherwise says where the solve stopped, why, and what to change.
    stats : dict
        `num_steps` (accepted), `num_rejected_steps` (diffrax), `nfev`, `njev`,
        `nlu` (scipy), `t_end` (time reached), `wall_time` and `compile_time`
        (seconds, apart; compile_time is 0 when a cached compiled solve was reused).
    backend, method : str
    name : str or None
        The label of the system solved, when the caller gave one (None otherwise).

    Printing a Trajectory (`repr` and `str`) gives a summary of at most six lines,
    whatever its size: name, backend/method, status, t range and number of save times,
    the shapes of x and y, the step counts, and y at the last time reached (6
    significant digits, long vectors elided).  The arrays themselves are the attributes.
    """

    t: np.ndarray
    x: np.ndarray
    y: np.ndarray
    status: Any
    message: str
    stats: dict = field(repr=False)
    backend: str = "diffrax"
    method: str = "Kvaerno5"
    name: str | None = None

    @property
    def success(self) -> bool:
        """True when every solve reached the end of its time span."""
        return bool(np.all(np.asarray(self.status) == 0))

    @property
    def batched(self) -> bool:
        return self.x.ndim == 3

    def __repr__(self) -> str:
        # A summary, not the arrays: the dataclass repr of a 201 × 20 solution prints
        # thousands of lines, which buries the status a user printed the result to see.
        status = np.atleast_1d(np.asarray(self.status))
        t = np.asarray(self.t)
        head = f"{self.name}, " if self.name else ""
        if self.batched:
            ok = int(np.sum(status == 0))
            verdict = f"batch of {status.size}: {ok} of {status.size} succeeded"
        else:
            verdict = "success" if self.success else f"FAILED (status {int(status[0])})"
        lines = [f"Trajectory({head}{self.backend}/{self.method}, {verdict})"]
        if t.size:
            lines.append(f"  t: [{t[0]:.6g}, {t[-1]:.6g}], {t.size} saved time{'s' if t.size != 1 else ''}")
        else:
            lines.append("  t: no saved times")
        lines.append(f"  x: shape {tuple(np.shape(self.x))}, y: shape {tuple(np.shape(self.y))}")
        steps = self._count_summary(self.stats, "num_steps", "accepted")
        if steps:
            rejected = self._count_summary(self.stats, "num_rejected_steps", "rejected")
            lines.append(f"  steps: {steps}" + (f", {rejected}" if rejected else "")
                         + (" (per solve)" if self.batched else ""))
        lines.extend(self._final_lines())
        if self.message:
            first = self.message.splitlines()[0] if self.message.strip() else self.message
            lines.append(f"  message: {first[:200]}{'…' if len(first) > 200 else ''}")
        return "\n".join(lines)

    __str__ = __repr__

    def _final_lines(self) -> list[str]:
        """y at the last save time reached (finite), solve 0 of a batch; [] when there is none."""
        y = np.asarray(self.y)
        ys = y[0] if self.batched else y  # (K, d)
        if ys.ndim != 2 or ys.shape[0] == 0:
            return []
        # a failed solve leaves inf at save times it did not reach: report the last one it did
        reached = np.flatnonzero(np.all(np.isfinite(ys), axis=-1))
        if reached.size == 0:
            return ["  y: no save time reached"]
        k = int(reached[-1])
        where = f"t={float(np.asarray(self.t)[k]):.6g}"
        which = f" (solve 0 of {y.shape[0]})" if self.batched else ""
        text = np.array2string(ys[k], precision=6, threshold=12, edgeitems=3, max_line_width=100,
                               separator=", ").replace("\n", "")
        return [f"  y({where}){which} = {text}"]

    @staticmethod
    def _count_summary(stats, key: str, label: str) -> str:
        """'N label' from stats[key] (min–max over a batch); '' when absent."""
        if not isinstance(stats, dict) or key not in stats:
            return ""
        v = np.atleast_1d(np.asarray(stats[key]))
        if v.size == 0 or not np.issubdtype(v.dtype, np.number):
            return ""
        lo, hi = int(np.min(v)), int(np.max(v))
        return f"{lo} {label}" if lo == hi else f"{lo}–{hi} {label}"


# --- validation ---------------------------------------------------------------------------

def check_t_span(t_span) -> tuple[float, float]:
    """(t0, t1), finite reals with t1 > t0."""
    if isinstance(t_span, (str, bytes)) or not hasattr(t_span, "__len__") or len(t_span) != 2:
        raise TypeError(f"`t_span` must be a pair (t0, t1); got {t_span!r}.")
    t0, t1 = t_span
    for label, v in (("t0", t0), ("t1", t1)):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, np.floating, np.integer)) and not (
                isinstance(v, (np.ndarray, jax.Array)) and np.ndim(v) == 0):
            raise TypeError(f"`t_span` must hold two real numbers; {label} is {type(v).__name__} {v!r}.")
    t0, t1 = float(t0), float(t1)
    if not (math.isfinite(t0) and math.isfinite(t1)):
        raise ValueError(f"`t_span` must be finite; got ({t0}, {t1}).")
    if not t1 > t0:
        raise ValueError(f"`t_span` must have t1 > t0; got ({t0}, {t1}).")
    return t0, t1


def check_ts(ts, t0: float, t1: float) -> np.ndarray | None:
    """Save times: 1-D, finite, non-decreasing, inside [t0, t1]."""
    if ts is None:
        return None
    ts = check_finite_array("ts", ts)
    if ts.ndim != 1 or ts.size == 0:
        raise ValueError(f"`ts` must be a non-empty 1-D array of times; got shape {ts.shape}.")
    if np.any(np.diff(ts) < 0):
        raise ValueError("`ts` must be non-decreasing.")
    if ts[0] < t0 or ts[-1] > t1:
        raise ValueError(f"`ts` must lie inside t_span [{t0}, {t1}]; got [{ts[0]}, {ts[-1]}].")
    return ts


def check_state(name: str, value, dim: int | None) -> np.ndarray:
    """A finite state (k,) or batch (B, k), k ≥ 1, float64; a scalar becomes (1,); last axis `dim` if known."""
    arr = check_finite_array(name, value)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim > 2:
        raise ValueError(f"`{name}` must have shape (k,) or, for a batch, (B, k); got {arr.shape}.")
    if arr.shape[-1] == 0:
        kind = "fast" if name.startswith("x") else "slow"
        raise ValueError(f"`{name}` must have at least one component (a fast–slow system needs a {kind} variable); "
                         f"got shape {arr.shape}. A system without one is an ordinary ODE: put every variable in "
                         "the other block with ε = 1.")
    if dim is not None and arr.shape[-1] != dim:
        raise ValueError(f"`{name}` must have last dimension {dim}; got shape {arr.shape}.")
    return arr


def check_system(system) -> FastSlowSystem:
    """A FastSlowSystem from what the dense doors accept: the system or a catalogue entry (its `.system`),
    through the one door `sp_ode.systems.resolve.as_system`; a network system is refused here, by name."""
    from sp_ode.systems.resolve import as_system  # the resolver knows the catalogue, which imports this module

    system = as_system(system)
    if not isinstance(system, FastSlowSystem):
        raise TypeError(f"`system` must be a FastSlowSystem (or a catalogue entry) here; got the "
                        f"{type(system).__name__} {system.name!r}, whose fast part is a sparse master equation: "
                        "use `sp_ode.simulate`, `sp_ode.simulate_reduced`, `sp_ode.verify` or `sp_ode.sweep`.")
    return system


def prepare_batch(x0, y0, args, batch_args: bool) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Broadcast x0 (m,)|(B, m) and y0 (d,)|(B, d) (and batched args) to a common batch size."""
    sizes = {a.shape[0] for a in (x0, y0) if a.ndim == 2}
    if batch_args:
        leaves = jax.tree_util.tree_leaves(args)
        if not leaves:
            raise ValueError("`batch_args=True` needs `args` with array leaves of leading batch axis B.")
        sizes |= {np.shape(leaf)[0] if np.ndim(leaf) else -1 for leaf in leaves}
    if not sizes:
        return x0, y0, None
    if len(sizes) != 1 or -1 in sizes:
        raise ValueError(f"batch sizes must agree: `x0`, `y0` (and with batch_args, every leaf of `args`) "
                         f"need the same leading axis B; got x0 {x0.shape}, y0 {y0.shape}, B ∈ {sorted(sizes)}.")
    B = sizes.pop()
    x0 = x0 if x0.ndim == 2 else np.broadcast_to(x0, (B, x0.shape[0]))
    y0 = y0 if y0.ndim == 2 else np.broadcast_to(y0, (B, y0.shape[0]))
    return np.ascontiguousarray(x0), np.ascontiguousarray(y0), B


def failure_message(status, t_end, t0, t1, solver_message, max_steps, cause: str | None = None,
                    predicted: tuple[float, int] | None = None) -> str:
    """An actionable message for the first failed solve (empty when all succeeded).

    `cause`, when a diagnosis found one (`diagnosis.diagnose`), replaces the generic advice;
    `predicted` = (steps still needed, steps taken, the checking interval) when a rung stopped itself.
    """
    status = np.atleast_1d(np.asarray(status))
    bad = np.flatnonzero(status != 0)
    if bad.size == 0:
        return ""
    i = int(bad[0])
    te = float(np.atleast_1d(t_end)[i])
    where = f"at t={te:.6g} of [{t0:g}, {t1:g}]"
    if cause is not None:
        text = f"solve stopped {where}: {cause}"
    elif status[i] == integration.STATUS_MAX_STEPS and predicted is not None:
        text = (f"stopped {where} after {predicted[1]} steps: at the rate of its last {predicted[2]} steps the "
                f"rest needs about {predicted[0]:.2g} more, over {integration.PREDICTION_MARGIN:g}x the budget "
                "left on the escalation ladder, so the ladder was not climbed further; raise max_steps above that, "
                "loosen rtol/atol or shorten t_span.")
    elif status[i] == integration.STATUS_MAX_STEPS:
        text = f"max_steps ({max_steps}) reached {where}; raise max_steps or loosen rtol/atol."
    elif status[i] == integration.STATUS_STEP_FAILURE:
        detail = str(np.atleast_1d(solver_message)[i]).strip()
        text = (f"step size underflow {where} ({detail}); the solution may blow up or leave the domain of f/g "
                "there — check the vector field near that time, or shorten t_span.")
    else:
        text = f"solver failed {where}: {np.atleast_1d(solver_message)[i]}"
    if status.size > 1:
        text = f"{bad.size} of {status.size} solves failed; first (batch index {i}): {text}"
    return text


# --- the public function ------------------------------------------------------------------

# Shape checks already passed, keyed by (f, g, declared m and d, shapes, static args): the
# check traces f and g (`jax.eval_shape`), which costs milliseconds — as much as a whole
# compiled solve of a small system — so it runs once per key, not once per call.
_shapes_ok: OrderedDict[Any, tuple[int, int]] = OrderedDict()


def _checked_shapes(system: FastSlowSystem, x0, y0, args, batch_args: bool, batched: bool, t0: float):
    """(m, d) from `system.check_shapes` on the first (or only) state, cached per key."""
    dynamic, _, static_key = integration.split_args(args)
    key = (type(system), system.f, system.g, system.m, system.d, x0.shape, y0.shape, static_key,
           integration.tree_spec(dynamic), batch_args)
    found = _shapes_ok.get(key)
    if found is not None:
        _shapes_ok.move_to_end(key)
        return found
    probe_args = jax.tree_util.tree_map(lambda a: np.asarray(a)[0], args) if batch_args else args
    found = system.check_shapes(x0[0] if batched else x0, y0[0] if batched else y0, probe_args, t0)
    _warn_float32_leaves(system, found, probe_args)
    _shapes_ok[key] = found
    if len(_shapes_ok) > 256:
        _shapes_ok.popitem(last=False)
    return found


def _warn_float32_leaves(system: FastSlowSystem, md: tuple[int, int], args) -> None:
    """Warn, at the first solve of a system, when f or g closes over float32 values (`float32_leaves`)."""
    m, d = md
    xs, ys = jax.ShapeDtypeStruct((m,), jnp.float64), jax.ShapeDtypeStruct((d,), jnp.float64)
    ts = jax.ShapeDtypeStruct((), jnp.float64)
    for name, fn in (("f", system.f), ("g", system.g)):
        try:
            leaves = float32_leaves(lambda t, x, y, fn=fn: fn(t, x, y, args), ts, xs, ys)
        except Exception:  # noqa: BLE001 - the shape check passed; a trace this one cannot make is not the user's error
            continue
        if leaves:
            warnings.warn(f"`{name}` of system {system.name!r} closes over {', '.join(leaves[:3])}"
                          f"{' and more' if len(leaves) > 3 else ''}: computed in float32, each keeps about 7 digits "
                          "(relative rounding 6e-8) whatever rtol, so a solve asked for rtol < 1e-7 cannot reach it. "
                          "Make them float64 (a Python float, np.float64, or create them inside "
                          "`with sp_ode.float64():`).", Float32Warning, stacklevel=4)


def fast_slow_problem(system: FastSlowSystem, m: int) -> integration.Problem:
    """The engines' ODE dz/dt = [f/ε, g] of `system` (z = [x, y], ε and the array args as data), with the
    solver constants of its type (general or master equation)."""
    f, g = system.f, system.g

    def make_rhs(args_static):
        def rhs(t, z, dyn):
            eps, args_dyn = dyn
            args = args_static.combine(args_dyn)
            x, y = z[:m], z[m:]
            return jnp.concatenate([f(t, x, y, args) / eps, g(t, x, y, args)])
        return rhs

    # Solver constants per system type (measured in `integration`): a general system runs
    # the controller at (rtol, atol)/100 with the chord iteration stopping at diffrax's 1e-2
    # of the requested tolerance (TOL_FACTOR_GENERAL, CHORD_KAPPA_GENERAL); a master
    # equation, whose f/ε rounding floor defeats a tight κ and whose error is far below
    # the tolerance anyway, keeps the requested tolerance and κ = 1.
    master = isinstance(system, MasterEquationSystem)
    kappa = integration.CHORD_KAPPA_MASTER if master else integration.CHORD_KAPPA_GENERAL
    factor = 1.0 if master else integration.TOL_FACTOR_GENERAL
    return integration.Problem(key=("fast-slow", f, g, m), make_rhs=make_rhs, chord_kappa=kappa, tol_factor=factor)


def check_master_start(system: MasterEquationSystem, x0: np.ndarray, y0: np.ndarray, args,
                       batch_args: bool = False) -> None:
    """Q(y0) must be a generator (ValueError naming `Q_of_y`); x0 must be on the simplex unless the system opts out.

    The master equation conserves 1ᵀx (Q(y)1 = 0, docs/theory.md §3.1): an x0 off the
    simplex stays off it, and φ(y) = p_st(y) is then not the state x approaches.  Refused
    (ValueError naming the fix) unless the system was built with `simplex=False`.
    """
    if batch_args or y0.ndim == 2:  # a batch: Q at every start (with its own args) in one vmapped evaluation
        ys = y0.reshape(-1, y0.shape[-1])
        in_axes = (0, 0 if batch_args else None)
        Qs = np.asarray(jax.vmap(lambda y, a: jnp.asarray(system.Q_fn(y, a), dtype=jnp.float64), in_axes=in_axes)(
            jnp.asarray(ys), args))
        try:
            check_generator(Qs, "Q_of_y(y0)", batch=True, states=system.states)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"`Q_of_y` must return a generator at every y0 of the batch: {exc}") from None
    else:
        system.check_generator_at(y0, args)
    xs = x0.reshape(-1, x0.shape[-1])
    mass_err = np.abs(xs.sum(axis=-1) - 1.0)
    neg = -np.minimum(xs.min(axis=-1), 0.0)
    tol = 64 * xs.shape[-1] * np.finfo(np.float64).eps
    if (mass_err.max() > tol or neg.max() > tol) and system.simplex:
        raise ValueError(
            f"`x0` must be a probability vector on the simplex for the master equation {system.name!r}: 1ᵀx0 differs "
            f"from 1 by up to {mass_err.max():.3g} and its most negative entry is {-neg.max():.3g}. The master "
            "equation conserves 1ᵀx, so x(t) would stay off the simplex and not approach p_st(y). Pass x0 / x0.sum() "
            "(with no negative entries), or, if x is not a distribution (e.g. a population), build the system with "
            "MasterEquationSystem(..., simplex=False).")


def check_solver_options(backend, method, rtol, atol, max_steps, t_span, ts, escalate: bool = True):
    """Validate the options shared by `simulate` and `simulate_reduced`: (SolveOptions, (t0, t1), ts)."""
    options = SolveOptions.checked(backend, method, rtol, atol, max_steps, escalate)
    t0, t1 = check_t_span(t_span)
    return options, (t0, t1), check_ts(ts, t0, t1)


# --- the engines and the escalation ladder ------------------------------------------------------

ESCALATE_ON = (integration.STATUS_MAX_STEPS, integration.STATUS_STEP_FAILURE, integration.STATUS_OTHER)


def ladder(backend: str, method: str, max_steps: int, escalate: bool, batched: bool = False
           ) -> list[tuple[str, str, int]]:
    """The rungs (backend, method, step budget) a solve climbs on a budget, step-size or Newton failure:
    the same method with `ESCALATION_BUDGET`× the budget, then scipy Radau with that budget
    (`sp_ode.systems.options`).  The lanes of a vmapped diffrax batch share their time span, so they cannot
    each continue from where they stopped: their failed lanes go to scipy Radau directly."""
    rungs = [(backend, method, max_steps)]
    if escalate:
        big = max_steps * ESCALATION_BUDGET
        if not (batched and backend == "diffrax"):
            rungs.append((backend, method, big))
        if (backend, method) != ("scipy", "Radau"):
            rungs.append(("scipy", "Radau", big))
    return rungs


def run_engines(problem: integration.Problem, z0, t0: float, t1: float, ts, *, eps, args, options: SolveOptions,
                batched: bool, batch_args: bool, split=None, diagnose: Callable | None = None) -> dict:
    """Solve on the route `options` picks, climbing `ladder` while solves fail (module docstring).

    A solve that ran out of budget retries the same method with the larger budget; one whose step size
    or stage equations failed goes straight to scipy Radau (a larger budget cannot help it); the climb
    stops when `diagnose` names a cause in the vector field itself, or when a retry made no progress in
    t (a singularity: neither budget nor method helps).  Failed lanes of a batch climb alone.  Returns
    the raw engine output with `backend`, `method`, `route` and `escalations` (a list of dicts).
    """
    split = integration.split_args(args) if split is None else split
    dim = int(np.shape(z0)[-1])
    backend, method, reason = options.route(batched=batched, dim=dim)
    rungs = ladder(backend, method, options.max_steps, options.escalate, batched)
    escalations: list[dict] = []
    raw, lanes, k, reached = None, None, 0, None
    while True:
        b, m, budget = rungs[k]
        z_now = z0 if lanes is None else z0[lanes]
        args_now = split[0] if lanes is None or not batch_args else tuple(np.asarray(a)[lanes] for a in split[0])
        kw = dict(eps=eps, args=None, rtol=options.rtol, atol=options.atol, method=m, max_steps=budget,
                  batched=batched, batch_args=batch_args, split=(args_now, split[1], split[2]))
        if b == "diffrax":   # a larger budget continues with the program compiled for the first one
            out = integration.solve_diffrax(problem, z_now, t0, t1, ts, chunk=options.max_steps, **kw)
        else:   # a rung above the first checks, every first-attempt budget, whether it can still finish
            out = integration.solve_scipy(problem, z_now, t0, t1, ts, check_every=options.max_steps if k else 0,
                                          **kw)
        raw = out if raw is None else (_merge_lanes(raw, out, lanes) if lanes is not None else _carry_stats(out, raw))
        status = np.atleast_1d(np.asarray(raw["status"]))
        failing = np.flatnonzero(np.isin(status, ESCALATE_ON))
        if failing.size == 0:
            break
        first = int(failing[0])
        t_first = float(np.atleast_1d(raw["t_end"])[first])
        if diagnose is not None:
            # judged at the last state reached (not at a rejected trial stage): there a failing vector field
            # cannot be helped by a bigger budget or another method; a method that stopped at its first
            # non-finite trial (LSODA) climbs on to one that closes in on where f fails (Radau)
            z_end = np.asarray(raw["z_end"]).reshape(status.size, -1)[first]
            if diagnose(first, t_first, z_end) is not None:
                break
        stalled = reached is not None and t_first - reached <= 1e-9 * (t1 - t0)
        if stalled:
            break              # the retry got no further: a singularity, not a budget or a method
        if np.isfinite(np.atleast_1d(raw.get("predicted_steps", np.nan))[first]):
            break              # the rung itself predicted it cannot finish: so can no later one (integration)
        budget_only = status[first] == integration.STATUS_MAX_STEPS
        nxt = k + 1 if budget_only else next((i for i in range(k + 1, len(rungs)) if rungs[i][:2] != (b, m)),
                                              len(rungs))
        if nxt >= len(rungs):
            break
        escalations.append({"from": f"{b}/{m}", "to": f"{rungs[nxt][0]}/{rungs[nxt][1]}",
                            "budget": int(rungs[nxt][2]), "solves": int(failing.size),
                            "reason": str(np.atleast_1d(raw["solver_message"])[first]) or "failed",
                            "t_reached": t_first})
        lanes = failing if batched else None
        reached, k = t_first, nxt
    final = escalations[-1]["to"].split("/") if escalations else (backend, method)
    raw.update(backend=final[0], method=final[1], route=f"{backend}/{method}: {reason}", escalations=escalations,
               budget=int(rungs[k][2]))
    return raw


def failure_state(raw: dict, i: int, size: int) -> tuple[float, np.ndarray]:
    """(t, z) to diagnose solve i at: where the vector field was found non-finite (scipy reports that trial
    state), else the last state reached."""
    t_bad = np.atleast_1d(raw.get("t_bad", np.nan))
    if t_bad.size == size and np.isfinite(t_bad[i]):
        return float(t_bad[i]), np.asarray(raw["z_bad"]).reshape(size, -1)[i]
    return float(np.atleast_1d(raw["t_end"])[i]), np.asarray(raw["z_end"]).reshape(size, -1)[i]


def _carry_stats(new: dict, old: dict) -> dict:
    """An unbatched retry replaces the result; the work of the failed attempt is added to its counts."""
    for key in ("compile_time", "wall_time"):
        new[key] = float(new.get(key, 0.0)) + float(old.get(key, 0.0))
    return new


def _merge_lanes(raw: dict, out: dict, lanes: np.ndarray) -> dict:
    """The batch result with `lanes` replaced by their retry `out`."""
    for key in ("z", "t_end", "z_end", "status", "solver_message", "num_steps", "num_rejected_steps"):
        if key in raw and key in out:
            target = np.array(raw[key], dtype=object if key == "solver_message" else None)
            target[lanes] = np.asarray(out[key])
            raw[key] = target
    for key in ("compile_time", "wall_time"):
        raw[key] = float(raw.get(key, 0.0)) + float(out.get(key, 0.0))
    return raw


@in_float64
def simulate(system: SystemLike, t_span: TimeSpan, x0: Float[ArrayLike, "*batch m"], y0: Float[ArrayLike, "*batch d"],
             *, backend: str = "auto", method: str | None = None, rtol: float = 1e-8, atol: float = 1e-10,
             ts: Float[ArrayLike, " K"] | None = None, throw: bool = True,
             max_steps: int = DEFAULT_MAX_STEPS, args: PyTree | None = None, batch_args: bool = False,
             escalate: bool = True) -> Trajectory:
    """Integrate ε dx/dt = f(t, x, y, args), dy/dt = g(t, x, y, args) over `t_span`.

    Parameters
    ----------
    system : FastSlowSystem (or a catalogue entry from `sp_ode.systems.get_system`)
    t_span : (t0, t1)
        Finite, t1 > t0, on the slow clock t.
    x0 : array (m,) or (B, m)
        Initial fast state(s); a leading axis B makes a batch.
    y0 : array (d,) or (B, d)
        Initial slow state(s).  A 1-D x0 or y0 is broadcast against the batch.
    backend : {"auto", "diffrax", "scipy"}
        `"auto"` (default): scipy LSODA with the compiled vector field and Jacobian for one
        solve of a small system (a first answer in about scipy's own time), diffrax Kvaerno5
        for a batch or a large system (`sp_ode.systems.options`).  The choice and its reason
        are in `stats["backend"]`, `stats["method"]`, `stats["route"]`.
    method : str, optional
        diffrax: "Kvaerno5" (its default), "Kvaerno4", "Kvaerno3" (implicit, stiff),
        "Tsit5", "Dopri5", "Dopri8" (explicit).  scipy: "LSODA" (its default), "Radau", "BDF".
    rtol, atol : float
        Requested tolerances on the *global* error (per component: atol + rtol·|z|).  Each
        method's controller runs at a measured fraction of them (`CONTROLLER_FACTOR`: a
        hundredth for LSODA, BDF and Kvaerno on a general system; Radau as asked), never
        below rtol 1e-13, so that the error left at the end meets the request.
    ts : array (K,), optional
        Save times inside t_span.  None: the solver's accepted steps for a single
        solve, (t0, t1) for a batch.  The implicit diffrax solvers step to every save
        time (their dense output is a 3rd-order Hermite interpolant, whose error would
        set the accuracy between steps), so the error at a save time does not depend on
        how many there are; those forced steps do not count against `max_steps`.
    throw : bool
        Raise `SolverError` on failure (True) or return the status (False).
    max_steps : int
        Step budget per solve (of the first attempt, see `escalate`).  Memory never scales with
        it: without `ts` the steps are kept as they are taken (in chunks of
        `integration.STEP_CHUNK`), so a generous budget costs nothing until it is used.
    escalate : bool
        On a budget, step-size or Newton failure, retry with 8× the budget, then with scipy
        Radau (default True); each retry is recorded in `stats["escalations"]`.  False keeps
        `max_steps` a hard limit.
    args : pytree, optional
        Parameters for f and g; defaults to `system.args`.  Array leaves are data
        (changing them does not recompile); other leaves are compile-time constants.
    batch_args : bool
        If True, every array leaf of `args` has a leading batch axis B and solve b
        uses slice b (a parameter sweep, `jax.vmap`-ed on diffrax).

    Returns
    -------
    Trajectory
        `t` (K,), `x` (K, m) | (B, K, m), `y` (K, d) | (B, K, d), `status`, `message`, `stats`.

    Raises
    ------
    TypeError
        `system` not a FastSlowSystem; `t_span` not a pair of reals; `max_steps` not an int;
        f or g returning complex values (names `f` or `g`).
    ValueError
        Unknown `backend`/`method`; non-finite, empty or mis-shaped `x0`/`y0`; t1 ≤ t0;
        bad `ts`; f/g output shapes that do not match x/y (names `f` or `g`); for a
        `MasterEquationSystem`, Q(y0) not a generator (names `Q_of_y`), or x0 off the simplex
        (by how much, and the fix) unless the system was built with `simplex=False`.
    SolverError
        With `throw=True`, when a solve fails (the message names the cause — non-finite
        f or g, f/ε overflowing, Q(y) not a generator, step budget — and what to change).
    Exceptions raised inside the user's f or g propagate unchanged.
    """
    from sp_ode.systems.network import NetworkSystem
    from sp_ode.systems.resolve import as_system

    system = as_system(system)
    if isinstance(system, NetworkSystem):
        return _simulate_network(system, t_span, x0, y0, backend=backend, method=method, rtol=rtol, atol=atol,
                                 ts=ts, args=args, batch_args=batch_args)
    system = check_system(system)
    options, (t0, t1), ts = check_solver_options(backend, method, rtol, atol, max_steps, t_span, ts, escalate)
    x0 = check_state("x0", x0, system.m)
    y0 = check_state("y0", y0, system.d)
    args = system.args if args is None else args
    x0, y0, B = prepare_batch(x0, y0, args, bool(batch_args))
    batched = B is not None
    m, d = _checked_shapes(system, x0, y0, args, bool(batch_args), batched, t0)
    if isinstance(system, MasterEquationSystem):
        check_master_start(system, x0, y0, args, bool(batch_args))
    return simulate_checked(system, (t0, t1), x0, y0, ts=ts, options=options, args=args,
                            batch_args=bool(batch_args), throw=throw)


def _simulate_network(system, t_span, x0, y0, *, backend, method, rtol, atol, ts, args, batch_args):
    """`simulate` of a `NetworkSystem`: its full stiff sparse solve (scipy BDF, Radau or LSODA with the sparse
    Jacobian, `NetworkSystem.simulate`), returned as its `NetworkPath`.  x0 = None starts on the critical
    manifold p_st(y0)."""
    if backend not in ("auto", "scipy"):
        raise ValueError(f"`backend` must be 'auto' or 'scipy' for the NetworkSystem {system.name!r} (a sparse "
                         f"master equation is solved by scipy); got {backend!r}.")
    if args is not None or batch_args:
        raise ValueError(f"`args`/`batch_args` do not apply to the NetworkSystem {system.name!r}: its rate "
                         "constants are set by `system.with_parameters(...)`.")
    t0, t1 = check_t_span(t_span)
    return system.simulate((t0, t1), y0, x0, method=method or "BDF", rtol=rtol, atol=atol,
                           t_eval=None if ts is None else np.asarray(ts, dtype=np.float64))


@in_float64
def simulate_checked(system: FastSlowSystem, t_span: tuple[float, float], x0: np.ndarray, y0: np.ndarray, *,
                     ts: np.ndarray | None, options: SolveOptions, args=None, batch_args: bool = False,
                     throw: bool = False) -> Trajectory:
    """`simulate` on input already checked: the validated core that sweeps, the certificate, the visited
    region and the identity check call with one `SolveOptions` (no re-validation).

    `x0` (m,) | (B, m) and `y0` (d,) | (B, d) are float64 arrays of the system's dimensions, broadcast to a
    common batch (`prepare_batch`); `t_span` is (t0, t1) with t1 > t0 and `ts` inside it (or None).
    """
    t0, t1 = t_span
    args = system.args if args is None else args
    batched = x0.ndim == 2
    m = x0.shape[-1]
    if batched and ts is None:
        ts = np.array([t0, t1])

    def diagnose(i, t_end, z_end):
        args_i = jax.tree_util.tree_map(lambda a: np.asarray(a)[i], args) if batch_args else args
        f, g = system.f, system.g
        master = isinstance(system, MasterEquationSystem)
        return diagnosis.diagnose(
            t_end, z_end, f=lambda t, z: f(t, z[:m], z[m:], args_i), g=lambda t, z: g(t, z[:m], z[m:], args_i),
            eps=system.eps, m=m, span=t1 - t0,
            Q=(lambda y: system.Q(y, args_i)) if master else None, states=system.states if master else None)

    z0 = np.concatenate([x0, y0], axis=-1)
    raw = run_engines(fast_slow_problem(system, m), z0, t0, t1, ts, eps=system.eps, args=args, options=options,
                      batched=batched, batch_args=batch_args, diagnose=diagnose)
    return finish(raw, m, t0, t1, options.max_steps, throw, batched, diagnose, name=getattr(system, "name", None))


def finish(raw: dict, m: int, t0: float, t1: float, max_steps: int, throw: bool, batched: bool,
           diagnose: Callable | None = None, name: str | None = None) -> Trajectory:
    """Package an engine's raw output as a Trajectory; raise SolverError when asked.

    `diagnose(i, t_end, z_end) -> str | None` names the cause of solve i's failure from its
    last state; when it finds one the status becomes 4 (`integration.STATUS_VECTOR_FIELD`).
    """
    z = raw["z"]
    status_arr = np.array(np.atleast_1d(raw["status"]), dtype=np.int64)
    cause = None
    bad = np.flatnonzero(status_arr != 0)
    if bad.size and diagnose is not None:
        i = int(bad[0])
        cause = diagnose(i, *failure_state(raw, i, status_arr.size))
        if cause is not None:
            status_arr[i] = integration.STATUS_VECTOR_FIELD
    raw["status"] = status_arr if batched else status_arr.reshape(np.shape(raw["status"]))
    status = raw["status"] if batched else int(status_arr[0])
    need = np.atleast_1d(raw.get("predicted_steps", np.nan))
    bad_i = np.flatnonzero(np.atleast_1d(status_arr) != 0)
    predicted = ((float(need[bad_i[0]]), int(np.atleast_1d(raw["num_steps"])[bad_i[0]]), int(max_steps))
                 if bad_i.size and need.size > bad_i[0] and np.isfinite(need[bad_i[0]]) else None)
    message = failure_message(raw["status"], raw["t_end"], t0, t1, raw["solver_message"],
                              raw.pop("budget", max_steps), cause, predicted)
    backend, method = raw.pop("backend"), raw.pop("method")
    if message and raw.get("escalations"):
        steps = " → ".join([raw["escalations"][0]["from"]] + [f"{e['to']} ({e['budget']} steps)"
                                                              for e in raw["escalations"]])
        message = f"{message} (after escalating {steps})"
    stats = {k: v for k, v in raw.items() if k not in ("t", "z", "z_end", "status", "solver_message", "t_bad", "z_bad")}
    stats["backend"], stats["method"] = backend, method
    if not batched:
        stats = {k: (v.item() if isinstance(v, np.ndarray) and v.size == 1 else v) for k, v in stats.items()}
    traj = Trajectory(t=raw["t"], x=z[..., :m], y=z[..., m:], status=status, message=message,
                      stats=stats, backend=backend, method=method, name=name)
    if throw and message:
        raise SolverError(message, traj)
    return traj
