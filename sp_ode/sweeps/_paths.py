"""The per-chunk engine of `sp_ode.sweep` for a `FastSlowSystem`: routes, error estimates, full solves.

A chunk is a batch of parameter points (ε_b, p_b, x0_b, y0_b).  Each point takes one **route**,
chosen by the cost model (`sp_ode.sweeps._cost`) before the chunks run:

* `full`: the stiff system, every point of the chunk in one stacked LSODA solve
  (`sp_ode.sweeps._stacked`) at controller tolerances rtol = atol = `FULL_TOL_FACTOR`·tol;
* `reduced k`: the corrected reduced flow y' = g(h^{(k)}(y), y), h^{(k)} = φ + εh₁ + … + εᵏh_k
  (T3, docs/theory.md §3.3), stacked the same way, together with the order-(k+1) flow that
  estimates its error (one solve of the pair [y_k, y_{k+1}] per point).

What is estimated.  The error of the order-k reduced path in y at the save times t_i,
E_k = max_i ‖y(t_i) − y_k(t_i)‖∞, is estimated by

    Ê_k = max_i ‖y_{k+1}(t_i) − y_k(t_i)‖∞  +  L  +  floor.

The first term is the effect on y of the next term ε^{k+1}h_{k+1} of the expansion, propagated
through the reduced flow (an embedded estimate, like a Runge–Kutta pair).  L is the initial layer.
Both paths start at the base point y* of the fast fibre through (x0, y0) (`project_starts`, the
"projected" start of `sp_ode.simulate_reduced`, docs/theory.md §7.5): the layer solved on the fast
clock τ = t/ε over [0, S], γS = `LAYER_DECAY`, then the order-(k+1) flow followed back over εS.  L is
then what the projection leaves, ε ‖D_x g‖ ‖x(S) − h^{(k+1)}(y(S))‖ / γ plus the layer solve's
tolerance.  Where the unprojected term ε ‖D_x g‖₂ ‖x0 − h^{(k+1)}(y0)‖₂ / γ(y0) (γ the decay rate of D_x f
at (φ(y0), y0), the spectral gap of Q(y0) for a master equation, §3.2 (T2), §7.4) is already below
`LAYER_SKIP`·safety·tol the start is kept and that term is L; it is no bound (it linearises g about φ:
for g quadratic in x it undershot 5×, tests/sweeps/test_validation.py), which is why every larger
layer is projected.  The floor, `REDUCED_TOL_FACTOR`·tol·(1 + max|y_k|), is the reduced solves' own
tolerance (below it the difference of two paths is solver noise).  None of the terms is a bound:
they are leading-order asymptotics (§7.5), so `sp_ode.sweep` validates them against a tighter full
solve on a sample stratified by path, reports the worst ratio true/estimated per path, and re-solves
the points that ratio no longer covers.

The full route's estimate is `FULL_GLOBAL_FACTOR` × its controller tolerance atol + rtol·max|y|:
LSODA's global error in units of the local tolerance it controls, measured 4.4 on the 100-point
Michaelis–Menten stack (ε ∈ [1e-6, 1e-2], docs/bench/sweep.md), validated like the others.

`x0="manifold"` starts each point on h^{(1)}(y0) = φ(y0) + εh₁(y0): the layer it leaves is O(ε²)
in x and O(ε³) in y, projected like any other when it matters (never reported as "x0 off the
manifold": `Reason.FULL_LAYER` is only for an x0 given off it).

Manifold terms: `sp_ode.sweeps._terms` (orders ≤ 1 from `sp_ode.slow_manifold`, higher orders by one
step of the invariance equation each).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sp_ode.core.cache import LRUCache
from sp_ode.core.precision import in_float64
from sp_ode.sweeps import _stacked as stacked
from sp_ode.sweeps._reasons import Reason
from sp_ode.sweeps._terms import manifold
from sp_ode.systems.integration import split_args
from sp_ode.systems.options import RTOL_FLOOR, SolveOptions
from sp_ode.systems.simulation import simulate_checked
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

PATH_FULL = -1
# status codes of a point
STATUS_OK = 0            # its path's estimate ≤ tol (and, if validated, the true error ≤ tol)
STATUS_RESOLVED = 1      # validated error > tol: replaced by the reference full solve
STATUS_FAILED = 2        # the full solve failed (y holds inf)

# Controller tolerances relative to `tol`: the reduced and full solves must not spend the error
# budget themselves; the reference must be ≫ more accurate than tol.
REDUCED_TOL_FACTOR = 1e-3
FULL_TOL_FACTOR = 1e-2
FULL_GLOBAL_FACTOR = 10.0
REFERENCE_TOL_FACTOR = 1e-5
MAX_STEPS = 50_000
MAX_ORDER = 4        # highest reduced order (its estimate needs order 5: sp_ode.manifolds.slow_manifold.MAX_ORDER)
# The initial-layer projection (sp_ode.manifolds.initial_layer, "projected"): the layer is solved on the fast
# clock to γS = LAYER_DECAY, then the flow on h^{(k+1)} is followed back over εS by RK4_STEPS steps.  A point
# whose unprojected layer term is below LAYER_SKIP·safety·tol keeps y0 (and that term in its estimate); one
# whose layer εS would take more than LAYER_SPAN of the time span is not projected (solved fully).
LAYER_DECAY = 40.0
RK4_STEPS = 16
LAYER_SKIP = 1e-3
LAYER_SPAN = 0.1

# Manifold terms, lifted systems and kernels per system (keyed on its vector fields), so that repeated
# sweeps over one system, and every chunk on a Dask worker, reuse one set of functions and programs.
_BUILT = LRUCache(16)


@dataclass(eq=False)
class SweepPlan:
    """Everything a worker needs for any chunk of one sweep (sent once per worker).

    `base_args` is the system's args dict; the swept names replace its leaves per point.
    `decision` is the cost model's (`sp_ode.sweeps._cost.Decision`): which reduced orders to try
    at which ε; None tries none (every point full).  `sizes` are the stack sizes programs are
    compiled for.
    """

    system: FastSlowSystem
    base_args: dict
    names: tuple
    t_span: tuple
    ts: np.ndarray
    tol: float
    max_order: int
    safety: float = 0.5
    route: str = "auto"
    sizes: tuple = (8, 64, 512)
    decision: Any = None
    max_steps: int = MAX_STEPS
    y_scale: float = 1.0
    dims: tuple | None = None       # (m, d) read off x0/y0 when the system declares none
    group: int = 8                  # G: points i with equal i // G are solved together (`stacked.stack_group`)
    first: int = 0                  # points i < first are solved fully (they priced the full route)
    _split: tuple = field(default=None, repr=False)

    def __post_init__(self):
        # numpy leaves: the plan travels to Dask workers by pickle, and a float64 JAX array unpickled
        # outside JAX's float64 scope comes back float32 (see FastSlowSystem.__getstate__)
        self.base_args = {k: jax.tree_util.tree_map(_numeric, v) for k, v in self.base_args.items()}

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_split"] = None
        return state

    @property
    def split(self):
        """(data leaves, static part, static key) of `base_args` (`sp_ode.systems.integration.split_args`)."""
        if self._split is None:
            self._split = split_args(self.base_args)
        return self._split

    @property
    def system_key(self) -> tuple:
        s = self.system
        return (type(s).__name__, s.f, s.g, s.m, s.d, self.split[2])

    @property
    def built(self) -> dict:
        """Functions built for this system in this process (shared by every sweep over it)."""
        return _BUILT.get_or_make(self.system_key, dict)

    @property
    def m(self) -> int:
        return int(self.system.m if self.system.m is not None else self.dims[0])

    @property
    def d(self) -> int:
        return int(self.system.d if self.system.d is not None else self.dims[1])

    def size_for(self, b: int) -> int:
        """The smallest compiled stack size that holds b points (the largest size if none does)."""
        return next((s for s in self.sizes if s >= b), self.sizes[-1])


def _numeric(leaf):
    """Numbers and arrays as numpy arrays (data to the compiled programs), real floating ones in float64
    (a float32 constant of a user's script is computed with in float64); anything else kept (static)."""
    if isinstance(leaf, (jax.Array, np.ndarray, np.generic, int, float)) and not isinstance(leaf, bool):
        arr = np.asarray(leaf)
        return arr.astype(np.float64) if np.issubdtype(arr.dtype, np.floating) else arr
    return leaf


@dataclass
class ChunkInput:
    """The points of one chunk: global indices and per-point data (leading axis B)."""

    index: int
    points: np.ndarray         # (B,) global point indices
    eps: np.ndarray            # (B,)
    values: dict               # name -> (B, ...)
    x0: np.ndarray | None      # (B, m), or None for x0 on the manifold
    y0: np.ndarray             # (B, d)


# --- the routes as one-point functions ----------------------------------------------------------

def _args(plan: SweepPlan, lane_args: tuple):
    return plan.split[1].combine(lane_args)


def full_one(plan: SweepPlan):
    """z' = [f(t, x, y)/ε, g(t, x, y)] of one point (lane = {"eps", "args"})."""
    if "full_one" not in plan.built:
        f, g, m = plan.system.f, plan.system.g, plan.m

        def one(t, z, lane):
            a = _args(plan, lane["args"])
            x, y = z[:m], z[m:]
            return jnp.concatenate([f(t, x, y, a) / lane["eps"], g(t, x, y, a)])
        plan.built["full_one"] = one
    return plan.built["full_one"]


def _pair_one(plan: SweepPlan, k: int):
    """[y_k, y_{k+1}]' = [g(h^{(k)}(y_k), y_k), g(h^{(k+1)}(y_{k+1}), y_{k+1})] of one point."""
    key = ("pair_one", k)
    if key not in plan.built:
        g, d = plan.system.g, plan.d
        lo, hi = manifold(plan, k), manifold(plan, k + 1)

        def one(t, z, lane):
            a, e = _args(plan, lane["args"]), lane["eps"]
            ya, yb = z[:d], z[d:]
            return jnp.concatenate([g(t, lo(ya, e, a), ya, a), g(t, hi(yb, e, a), yb, a)])
        plan.built[key] = one
    return plan.built[key]


def _start_fn(plan: SweepPlan, order: int):
    """y0 -> h^{(order)}(y0) of one point."""
    h = manifold(plan, order)
    return lambda y0, lane: h(y0, lane["eps"], _args(plan, lane["args"]))


def _layer_fn(plan: SweepPlan, k: int):
    """y0 -> (h^{(k+1)}(y0), ‖D_x g‖₂, D_x f) at (φ(y0), y0) of one point (the initial-layer term)."""
    top, phi0 = manifold(plan, k + 1), manifold(plan, 0)
    f, g = plan.system.f, plan.system.g

    def one(y0, lane):
        e, a = lane["eps"], _args(plan, lane["args"])
        x_phi = phi0(y0, 0.0, a)
        Gx = jax.jacfwd(lambda x: g(0.0, x, y0, a))(x_phi)
        Fx = jax.jacfwd(lambda x: f(0.0, x, y0, a))(x_phi)
        return top(y0, e, a), jnp.linalg.norm(Gx, 2), Fx
    return one


def _layer_one(plan: SweepPlan):
    """[x, y]' = [f(t0 + ετ, x, y), ε g(t0 + ετ, x, y)] of one point on the fast clock τ (the initial layer)."""
    if "layer_one" not in plan.built:
        f, g, m, t0 = plan.system.f, plan.system.g, plan.m, plan.t_span[0]

        def one(tau, z, lane):
            a, e = _args(plan, lane["args"]), lane["eps"]
            x, y = z[:m], z[m:]
            t = t0 + e * tau
            return jnp.concatenate([f(t, x, y, a), e * g(t, x, y, a)])
        plan.built["layer_one"] = one
    return plan.built["layer_one"]


def _back_fn(plan: SweepPlan, k: int):
    """(y(t0 + εS), lane with "span" = εS) -> (y*, h^{(k+1)}(y(t0 + εS))): RK4 back along
    y' = g(h^{(k+1)}(y), y) from t0 + εS to t0, and the manifold where the layer ended (its residual)."""
    hi, g, t0 = manifold(plan, k + 1), plan.system.g, plan.t_span[0]

    def one(y, lane):
        a, e = _args(plan, lane["args"]), lane["eps"]
        dt = -lane["span"] / RK4_STEPS

        def rhs(tt, yy):
            return g(tt, hi(yy, e, a), yy, a)

        def step(i, y):   # a loop, not unrolled: h^{(k+1)} is traced once, not 4·RK4_STEPS times
            t = t0 + lane["span"] + i * dt
            k1 = rhs(t, y)
            k2 = rhs(t + dt / 2, y + dt / 2 * k1)
            k3 = rhs(t + dt / 2, y + dt / 2 * k2)
            k4 = rhs(t + dt, y + dt * k3)
            return y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return jax.lax.fori_loop(0, RK4_STEPS, step, y), hi(y, e, a)   # (y*, h^{(k+1)}(y(t0 + εS)))
    return one


def project_starts(plan: SweepPlan, k: int, x0: np.ndarray, y0: np.ndarray, lanes: dict, gamma: np.ndarray,
                   gx: np.ndarray):
    """(y* (b, d), residual (b,)): each start moved to the base point of its fast fibre on the order-k path
    (the "projected" initial layer of `sp_ode.simulate_reduced`, stacked; module docstring).

    The layer is solved with the coupling on over τ ∈ [0, S], S = LAYER_DECAY/min γ (one span for the
    stack), then y is followed back over εS along the order-(k+1) flow.  The residual is what the
    projection leaves: ε‖D_x g‖‖x(S) − h^{(k+1)}(y(S))‖/γ (the layer not yet decayed at S) plus the
    layer solve's own tolerance; inf where it cannot be projected (γ ≤ 0, εS > LAYER_SPAN of the span,
    a failed solve)."""
    b = y0.shape[0]
    ystar, residual = y0.copy(), np.full(b, np.inf)
    good = np.flatnonzero(gamma > 0)
    if good.size == 0:
        return ystar, residual
    S = LAYER_DECAY / float(np.min(gamma[good]))
    eps = np.asarray(lanes["eps"], dtype=np.float64)
    good = good[eps[good] * S <= LAYER_SPAN * (plan.t_span[1] - plan.t_span[0])]
    if good.size == 0:
        return ystar, residual
    m, d = plan.m, plan.d
    tol = plan.tol * REDUCED_TOL_FACTOR
    B = plan.size_for(good.size)
    zS = np.full((good.size, m + d), np.inf)
    ok = np.zeros(good.size, dtype=bool)
    for start in range(0, good.size, B):
        sl = np.arange(start, min(good.size, start + B))
        sub = take(lanes, good[sl])
        prog = stacked.program(route_key(plan, "layer"), _layer_one(plan), B, m + d, pad_like(sub, B))
        z, status, _ = stacked.solve(prog, np.concatenate([x0[good[sl]], y0[good[sl]]], axis=1), sub, (0.0, S),
                                     np.array([S]), rtol=tol / plan.y_scale, atol=tol, max_steps=plan.max_steps)
        zS[sl], ok[sl] = z[:, -1], status == stacked.STATUS_OK
    good, zS = good[ok], zS[ok]
    if good.size == 0:
        return ystar, residual
    B = plan.size_for(good.size)
    gnorm = np.empty(good.size)
    for start in range(0, good.size, B):
        sl = np.arange(start, min(good.size, start + B))
        sub = take(lanes, good[sl])
        sub["span"] = np.asarray(sub["eps"]) * S
        sub, y = stacked.pad(sub, sl.size, B), stacked.pad(zS[sl, m:], sl.size, B)
        prog, _ = _kernel(plan, ("back", k), _back_fn(plan, k), B, sub, y)
        yb, hS = (np.asarray(v)[:sl.size] for v in jax.device_get(prog(y, sub)))
        ystar[good[sl]] = yb
        gnorm[sl] = np.linalg.norm(zS[sl, :m] - hS, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        tail = eps[good] * gnorm * gx[good] / gamma[good]
    residual[good] = np.where(np.isfinite(tail), tail + tol, np.inf)
    bad = ~np.all(np.isfinite(ystar[good]), axis=1)
    residual[good[bad]] = np.inf
    return ystar, residual


# Keys of the compiled programs of a plan, by route (the cost model asks which are compiled).
def route_key(plan: SweepPlan, route) -> tuple:
    return (route, plan.system_key)


_KERNELS = LRUCache(32)


def _kernel(plan: SweepPlan, name, fn, B: int, lanes, y0):
    """jit(vmap(fn)) for B points, compiled once per (system, name, B); returns (program, seconds)."""
    key = (route_key(plan, name), B, stacked.program_key(name, B, plan.d, lanes)[3])
    found = _KERNELS.get(key)
    if found is not None:
        return found, 0.0
    start = time.perf_counter()
    # evaluated once per chunk: compile time matters, run time does not (XLA at its lowest optimisation)
    prog = jax.jit(jax.vmap(fn)).lower(y0, lanes).compile({"xla_backend_optimization_level": 0})
    seconds = time.perf_counter() - start
    _KERNELS[key] = prog
    stacked.record_compile(route_key(plan, name), seconds)
    return prog, seconds


def lanes_of(plan: SweepPlan, eps: np.ndarray, values: dict, idx: np.ndarray) -> dict:
    """{"eps": (b,), "args": the data leaves of the base args (tree order), swept ones per point} for `idx`."""
    data, _, _ = plan.split
    out = []
    for name, base in zip(_data_names(plan), data):
        if name in values:
            out.append(np.asarray(values[name][idx], dtype=np.float64))
        else:
            arr = np.asarray(base)
            out.append(np.broadcast_to(arr, (idx.size,) + arr.shape).copy())
    return {"eps": np.asarray(eps[idx], dtype=np.float64), "args": tuple(out)}


def _data_names(plan: SweepPlan) -> list:
    """The top-level args key of each data leaf of base_args, in tree order (as `split_args` orders them:
    the numpy leaves; swept names are top-level keys holding one array)."""
    if "data_names" not in plan.__dict__:
        flat = jax.tree_util.tree_flatten_with_path(plan.base_args)[0]
        plan.__dict__["data_names"] = [path[0].key for path, leaf in flat if isinstance(leaf, np.ndarray)]
    return plan.__dict__["data_names"]


def take(lanes: dict, idx: np.ndarray) -> dict:
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], lanes)


# --- solves -----------------------------------------------------------------------------------

def full_tolerances(plan: SweepPlan, factor: float) -> tuple[float, float]:
    """(rtol, atol) of a full solve at `factor`·tol on y (rtol scaled by the size of y, floored)."""
    atol = max(factor * plan.tol, RTOL_FLOOR * plan.y_scale)
    rtol = max(factor * plan.tol / plan.y_scale, RTOL_FLOOR)
    return rtol, atol


def solve_full(plan: SweepPlan, x0: np.ndarray, y0: np.ndarray, lanes: dict, factor: float, *,
               B: int | None = None):
    """The full system for b points: stacked LSODA, per-point `simulate_checked` (with its escalation
    ladder) for any point that fails in a stack of its own.  Returns (y (b, K, d), ok (b,), stats)."""
    b = x0.shape[0]
    B = plan.size_for(b) if B is None else B
    rtol, atol = full_tolerances(plan, factor)
    y = np.full((b, plan.ts.size, plan.d), np.inf)
    ok = np.zeros(b, dtype=bool)
    stats = {"fallbacks": 0, "steps": 0, "nfev": 0, "njev": 0, "work": 0.0, "B": B, "flops": (0.0, 0.0)}
    for start in range(0, b, B):
        sl = np.arange(start, min(b, start + B))
        sub = take(lanes, sl)
        prog = stacked.program(route_key(plan, "full"), full_one(plan), B, plan.m + plan.d, pad_like(sub, B))
        z, status, info = stacked.solve(prog, np.concatenate([x0[sl], y0[sl]], axis=1), sub, plan.t_span, plan.ts,
                                        rtol=rtol, atol=atol, max_steps=plan.max_steps)
        y[sl] = z[..., plan.m:]
        ok[sl] = status == stacked.STATUS_OK
        stats["flops"] = prog.flops
        for key in ("steps", "nfev", "njev", "work"):
            stats[key] = stats.get(key, 0) + info[key]
    for i in np.flatnonzero(~ok):     # alone and still failing: the escalation ladder of simulate
        y[i], ok[i] = _fallback(plan, x0[i], y0[i], take(lanes, np.array([i])), rtol, atol)
        stats["fallbacks"] += 1
    return y, ok, stats


def pad_like(lanes: dict, B: int) -> dict:
    """A lanes example with leading axis B (only shapes matter: it keys and specialises the program)."""
    return jax.tree_util.tree_map(lambda a: np.broadcast_to(np.asarray(a)[:1], (B,) + np.shape(a)[1:]), lanes)


def _full_system(plan: SweepPlan) -> FastSlowSystem:
    """f(t, x, y, a["args"])/a["eps"], g(t, x, y, a["args"]): ε as data (the fallback's system)."""
    if "full_system" not in plan.built:
        f, g, s = plan.system.f, plan.system.g, plan.system

        def f_l(t, x, y, a):
            return f(t, x, y, _args(plan, a["args"])) / a["eps"]

        def g_l(t, x, y, a):
            return g(t, x, y, _args(plan, a["args"]))
        plan.built["full_system"] = FastSlowSystem(f_l, g_l, eps=1.0, m=s.m, d=s.d, name=f"{s.name}/sweep")
    return plan.built["full_system"]


def _fallback(plan, x0, y0, lane, rtol, atol):
    lane = {"eps": np.asarray(lane["eps"][0]), "args": tuple(np.asarray(a[0]) for a in lane["args"])}
    options = SolveOptions(backend="scipy", method="LSODA", rtol=rtol, atol=atol, max_steps=plan.max_steps)
    traj = simulate_checked(_full_system(plan), plan.t_span, np.asarray(x0, dtype=np.float64),
                            np.asarray(y0, dtype=np.float64), ts=plan.ts, options=options, args=lane)
    y = np.asarray(traj.y)
    good = traj.status == 0 and y.shape == (plan.ts.size, plan.d) and bool(np.all(np.isfinite(y)))
    return (y if good else np.full((plan.ts.size, plan.d), np.inf)), bool(good)


def solve_pair(plan: SweepPlan, k: int, y0: np.ndarray, lanes: dict, *, B: int | None = None):
    """[y_k, y_{k+1}] at the save times for b points (stacked LSODA; differences in the band for the
    Jacobian: the reduced flow is rarely stiff).  Returns (y_k, y_{k+1}, ok, counts): the counts of
    `stacked.solve` summed over the stacks, with "flops" of one call for B points and the stack size B."""
    b = y0.shape[0]
    B = plan.size_for(b) if B is None else B
    d = plan.d
    tol = plan.tol * REDUCED_TOL_FACTOR
    ya, yb = np.full((b, plan.ts.size, d), np.inf), np.full((b, plan.ts.size, d), np.inf)
    ok = np.zeros(b, dtype=bool)
    counts = {"steps": 0, "nfev": 0, "njev": 0, "work": 0.0, "B": B, "flops": (0.0, 0.0)}
    for start in range(0, b, B):
        sl = np.arange(start, min(b, start + B))
        sub = take(lanes, sl)
        prog = stacked.program(route_key(plan, ("pair", k)), _pair_one(plan, k), B, 2 * d, pad_like(sub, B),
                               jacobian=False)
        z, status, info = stacked.solve(prog, np.concatenate([y0[sl], y0[sl]], axis=1), sub, plan.t_span, plan.ts,
                                        rtol=tol / plan.y_scale, atol=tol, max_steps=plan.max_steps)
        ya[sl], yb[sl] = z[..., :d], z[..., d:]
        ok[sl] = status == stacked.STATUS_OK
        for key in ("steps", "nfev", "njev", "work"):
            counts[key] += info[key]
        counts["flops"] = prog.flops
    return ya, yb, ok, counts


def manifold_start(plan: SweepPlan, y0: np.ndarray, lanes: dict, order: int = 1) -> np.ndarray:
    """x0 = h^{(order)}(y0) per point (the start of `x0="manifold"`)."""
    b = y0.shape[0]
    B = plan.size_for(b)
    out = np.empty((b, plan.m))
    for start in range(0, b, B):
        sl = np.arange(start, min(b, start + B))
        sub, y = stacked.pad(take(lanes, sl), sl.size, B), stacked.pad(y0[sl], sl.size, B)
        prog, _ = _kernel(plan, ("start", order), _start_fn(plan, order), B, sub, y)
        out[sl] = np.asarray(prog(y, sub))[:sl.size]
    return out


def layer_term(plan: SweepPlan, k: int, x0: np.ndarray, y0: np.ndarray, lanes: dict) -> tuple:
    """(ε ‖D_x g‖₂ ‖x0 − h^{(k+1)}(y0)‖₂ / γ(y0) (inf where the manifold does not attract), ‖D_x g‖₂, γ) per point:
    the unprojected initial-layer shift estimate and the two rates the projection needs."""
    b = y0.shape[0]
    B = plan.size_for(b)
    out, gx, gam = np.empty(b), np.empty(b), np.empty(b)
    master = isinstance(plan.system, MasterEquationSystem)
    for start in range(0, b, B):
        sl = np.arange(start, min(b, start + B))
        sub, y = stacked.pad(take(lanes, sl), sl.size, B), stacked.pad(y0[sl], sl.size, B)
        prog, _ = _kernel(plan, ("layer", k), _layer_fn(plan, k), B, sub, y)
        top, gnorm, Fx = (np.asarray(v)[:sl.size] for v in jax.device_get(prog(y, sub)))
        gamma = decay_rate(Fx, master)
        with np.errstate(divide="ignore", invalid="ignore"):
            val = np.asarray(lanes["eps"])[sl] * gnorm * np.linalg.norm(x0[sl] - top, axis=1) / gamma
        out[sl] = np.where((gamma > 0) & np.isfinite(val), val, np.inf)
        gx[sl], gam[sl] = gnorm, gamma
    return out, gx, gam


def decay_rate(Fx: np.ndarray, master: bool) -> np.ndarray:
    """γ = min −Re λ(D_x f) (B,), leaving out the conserved mode λ = 0 of a master equation."""
    lam = np.linalg.eigvals(Fx)                       # (B, m)
    if master:  # Q(y)ᵀ has one zero eigenvalue (probability is conserved): drop the one nearest 0
        drop = np.argmin(np.abs(lam), axis=1)
        keep = np.ones(lam.shape, dtype=bool)
        keep[np.arange(lam.shape[0]), drop] = False
        lam = lam[keep].reshape(lam.shape[0], -1)
    if lam.shape[1] == 0:
        return np.full(lam.shape[0], np.inf)
    return np.min(-lam.real, axis=1)


def max_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max over save times and components of |a − b|, per point (inf where either is not finite)."""
    d = np.abs(a - b).reshape(a.shape[0], -1).max(axis=1)
    return np.where(np.isfinite(d), d, np.inf)


def path_difference(y_k: np.ndarray, y_next: np.ndarray) -> np.ndarray:
    """The embedded estimate max_i ‖y_{k+1}(t_i) − y_k(t_i)‖∞ per point."""
    return max_diff(y_k, y_next)


def full_estimate(plan: SweepPlan, y: np.ndarray, factor: float) -> np.ndarray:
    """FULL_GLOBAL_FACTOR × (atol + rtol·max|y|) of a full solve at `factor`·tol, per point."""
    rtol, atol = full_tolerances(plan, factor)
    scale = np.abs(y).reshape(y.shape[0], -1).max(axis=1, initial=0.0)
    return FULL_GLOBAL_FACTOR * (atol + rtol * np.where(np.isfinite(scale), scale, 0.0))


# --- one chunk ----------------------------------------------------------------------------------

def planned_orders(plan: SweepPlan, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order (b,) — k, or PATH_FULL —, reason (b,)) of points with these ε under the plan's routing."""
    b = eps.size
    order = np.full(b, PATH_FULL, dtype=np.int64)
    if plan.route == "full":
        return order, np.full(b, int(Reason.FULL_ASKED), dtype=np.int64)
    if plan.route == "reduced":
        return np.zeros(b, dtype=np.int64), np.full(b, int(Reason.FULL_ESTIMATE), dtype=np.int64)
    decision = plan.decision
    if decision is None:          # the first chunk: solved fully, it prices the full route
        return order, np.full(b, int(Reason.FULL_FIRST), dtype=np.int64)
    reason = np.full(b, int(decision.rest), dtype=np.int64)
    for k in sorted(decision.orders, reverse=True):       # the lowest predicted order wins
        fits = decision.orders[k] * eps ** (k + 1) <= plan.safety * plan.tol
        order[fits] = k
    return order, reason



@in_float64
def run_chunk(plan: SweepPlan, chunk: ChunkInput) -> dict[str, Any]:
    """Solve one chunk; returns per-point arrays (leading axis B), counted work and timing.

    Keys: points, y (B, K, d), path (B,) int (k, or -1 for full), estimate (B,), status (B,),
    reason (B,) int (`sp_ode.sweeps._reasons.Reason`), x0 (B, m) (the start used: the reference of
    validation starts there too), work (dict per stage: modelled seconds from counts), seconds and
    compile_seconds (dicts per stage, measured: reported, never used to decide).

    The chunk is solved group by group (points i with equal i // `plan.group`), each group on its own:
    a point's stacks hold only points of its group, so its numbers do not depend on the chunk size.
    """
    parts = []
    group = plan.group
    labels = chunk.points // group
    for g in np.unique(labels):
        sel = np.flatnonzero(labels == g)
        parts.append(_run_group(plan, ChunkInput(chunk.index, chunk.points[sel], chunk.eps[sel],
                                                 {n: v[sel] for n, v in chunk.values.items()},
                                                 None if chunk.x0 is None else chunk.x0[sel], chunk.y0[sel])))
    return merge_results(chunk.index, parts)


def merge_results(index: int, parts: list) -> dict[str, Any]:
    """One chunk's result from the results of its parts (in point order): arrays concatenated, the
    per-stage dicts summed."""
    out: dict[str, Any] = {"index": index}
    for key in ("points", "y", "path", "estimate", "status", "reason", "x0"):
        out[key] = np.concatenate([p[key] for p in parts])
    for key in ("seconds", "compile_seconds", "work"):
        total: dict = {}
        for p in parts:
            for stage, v in p.get(key, {}).items():
                total[stage] = total.get(stage, 0.0) + float(v)
        out[key] = total
    return out


def _run_group(plan: SweepPlan, chunk: ChunkInput) -> dict[str, Any]:
    """One group of points (`run_chunk`)."""
    B = chunk.points.size
    seconds: dict[str, float] = {}
    work: dict[str, float] = {}
    idx = np.arange(B)
    lanes = lanes_of(plan, chunk.eps, chunk.values, idx)
    compiled: dict[str, float] = {}
    start, clock = time.perf_counter(), stacked.compile_clock()
    x0 = manifold_start(plan, chunk.y0, lanes) if chunk.x0 is None else chunk.x0
    seconds["setup"] = time.perf_counter() - start
    compiled["setup"] = stacked.compile_clock() - clock

    d = plan.d
    y = np.full((B, plan.ts.size, d), np.inf)
    path = np.full(B, PATH_FULL, dtype=np.int64)
    estimate = np.full(B, np.inf)
    status = np.full(B, STATUS_OK, dtype=np.int64)
    order, reason = planned_orders(plan, chunk.eps)
    if plan.route == "auto":       # the points that priced the full route are solved fully, as they were then
        first = chunk.points < plan.first
        order[first], reason[first] = PATH_FULL, int(Reason.FULL_FIRST)
    cascade = plan.route == "reduced"
    for k in range(plan.max_order + 1):
        todo = np.flatnonzero(order == k)
        if todo.size == 0:
            continue
        start, clock = time.perf_counter(), stacked.compile_clock()
        sub = take(lanes, todo)
        # the initial layer: a start whose unprojected layer term is not negligible is moved to the base
        # point of its fast fibre (x0 = "manifold" starts on h^{(1)}(y0), and its O(ε³) layer is projected too)
        layer, gx, gamma = layer_term(plan, k, x0[todo], chunk.y0[todo], sub)
        ystart = chunk.y0[todo].copy()
        proj = np.flatnonzero(~(layer <= LAYER_SKIP * plan.safety * plan.tol))
        if proj.size:
            ys, res = project_starts(plan, k, x0[todo[proj]], chunk.y0[todo[proj]], take(sub, proj), gamma[proj],
                                     gx[proj])
            ystart[proj], layer[proj] = ys, res
        near = layer <= plan.safety * plan.tol
        # the layer reason only where x0 was given off the manifold (a failed projection from h^{(1)}(y0) is
        # the estimate's: it is counted below with the paths tried)
        reason[todo[~near]] = Reason.FULL_LAYER if chunk.x0 is not None else Reason.FULL_ESTIMATE
        order[todo[~near]] = PATH_FULL
        todo, layer, ystart = todo[near], layer[near], ystart[near]
        if todo.size:
            ya, yb, ok, counts = solve_pair(plan, k, ystart, take(lanes, todo))
            work[f"reduced_{k}"] = work.get(f"reduced_{k}", 0.0) + counts["work"]
            floor = plan.tol * REDUCED_TOL_FACTOR * (1.0 + np.abs(ya).reshape(todo.size, -1).max(axis=1))
            est = path_difference(ya, yb) + layer + floor
            good = ok & (est <= plan.safety * plan.tol)
            take_ = todo[good]
            y[take_], path[take_], estimate[take_] = ya[good], k, est[good]
            reason[take_] = Reason.REDUCED_OK
            miss = todo[~good]
            if cascade and k < plan.max_order:
                order[miss] = k + 1
            else:
                order[miss] = PATH_FULL
                reason[miss] = Reason.FULL_ESTIMATE
        seconds[f"reduced_{k}"] = seconds.get(f"reduced_{k}", 0.0) + time.perf_counter() - start
        compiled[f"reduced_{k}"] = compiled.get(f"reduced_{k}", 0.0) + stacked.compile_clock() - clock

    full = np.flatnonzero(path == PATH_FULL)
    if full.size:
        start, clock = time.perf_counter(), stacked.compile_clock()
        yf, okf, counts = solve_full(plan, x0[full], chunk.y0[full], take(lanes, full), FULL_TOL_FACTOR)
        work["full"] = counts["work"]
        work["full_points"] = float(full.size)
        y[full] = yf
        estimate[full] = np.where(okf, full_estimate(plan, yf, FULL_TOL_FACTOR), np.inf)
        status[full[~okf]] = STATUS_FAILED
        reason[full[~okf]] = Reason.FAILED
        y[full[~okf]] = np.inf
        seconds["full"] = time.perf_counter() - start
        compiled["full"] = stacked.compile_clock() - clock
    return {"index": chunk.index, "points": chunk.points, "y": y, "path": path, "estimate": estimate,
            "status": status, "reason": reason, "x0": np.asarray(x0, dtype=np.float64), "seconds": seconds,
            "compile_seconds": compiled, "work": work}


@in_float64
def reference(plan: SweepPlan, x0: np.ndarray, y0: np.ndarray, eps: np.ndarray, values: dict,
              B: int | None = None):
    """The tight full solve of the validated points, in one stack of size B (or as few as it takes).

    Returns (y_ref (b, K, d), ok (b,), seconds)."""
    start = time.perf_counter()
    idx = np.arange(x0.shape[0])
    lanes = lanes_of(plan, eps, values, idx)
    y, ok, _ = solve_full(plan, x0, y0, lanes, REFERENCE_TOL_FACTOR, B=B)
    return y, ok, time.perf_counter() - start
