"""The cost model of `sp_ode.sweep`: which points try which reduced order, priced with compilation.

Every route costs its compilation plus its solves.  With N points in chunks of B:

* **full**: C_F + N·t_F.  The first chunk is solved fully and prices it: C_F is the compilation it
  paid (0 when this process compiled the route before: `sp_ode.sweeps._stacked` keeps the
  registry), t_F its solve time per point.  Its answers are kept — pricing costs nothing extra.
* **reduced k** (the pair [y_k, y_{k+1}] that is the path and its estimate): C_R(k) + |S_k|·t_R(k).
  C_R(k) is known when compiled before in this process, else predicted as C_F·`COMPILE_RATIO[k]`
  (ratios measured on this machine, docs/bench/sweep.md: Michaelis–Menten, whose terms come from the
  series, 6×, 24× and 150× for k = 0, 1, 2; the 20-state ring, closed form for k ≤ 1, 1.5–2× for k = 0;
  the larger, so a prediction errs towards not compiling);
  each Dask worker compiles too, so it is multiplied by the number of processes that will.
  t_R(k) and S_k come from a **probe**: the pair solved at `PROBE` points of the remaining ones
  (at their ε quantiles), padded to the chunks' stack size.

The rule, order by order (k = 0, 1, …, max_order), R the points not yet assigned:

1. stop unless |R|·t_F > C_R(k) + B·t_F: if even free reduced solves could not repay compiling and
   probing, every point of R is solved fully (`Reason.FULL_COMPILE`);
2. compile and probe: Ê_k at the probe points gives C_k = `MARGIN`·max Ê_k/ε^{k+1} (the
   leading-order scaling of docs/theory.md §7.5), and S_k = {i ∈ R : C_k ε_i^{k+1} ≤ safety·tol};
3. stop if t_R(k) ≥ t_F (`Reason.FULL_DEARER` for R);
4. otherwise S_k tries order k, and R ← R \\ S_k.

Points still in R are solved fully (`Reason.FULL_PREDICTED`: no order tried is predicted within
tol at their ε).  The prediction only routes: a point's own estimate decides, and one that misses
is solved fully (`Reason.FULL_ESTIMATE`).  `route="full"` skips all of this;
`route="reduced"` tries order 0, 1, … at every point, as before the cost model.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from sp_ode.sweeps import _paths as paths, _stacked as stacked
from sp_ode.sweeps._reasons import Reason

PROBE = 8
MARGIN = 2.0
# compilation of the pair [y_k, y_{k+1}] relative to the full route's (f and its Jacobian): the larger of the
# ratios measured on Michaelis–Menten and the 20-state ring (module docstring); the order-2 terms nest derivatives
COMPILE_RATIO = {0: 6.0, 1: 24.0, 2: 150.0, 3: 600.0, 4: 2000.0}


@dataclass
class Decision:
    """The cost model's routing of a sweep (sent to every chunk with the plan)."""

    orders: dict = field(default_factory=dict)       # k -> C_k: order k tried where C_k ε^{k+1} ≤ safety·tol
    rest: int = int(Reason.FULL_PREDICTED)           # the reason of points no order takes
    first: int = int(Reason.FULL_FIRST)              # the reason of the first chunk's points (solved fully)
    t_full: float = math.nan                         # s per point, full route
    t_pair: dict = field(default_factory=dict)       # k -> s per point, pair k (probed)
    compile: dict = field(default_factory=dict)      # route -> seconds (measured or predicted)
    predicted: dict = field(default_factory=dict)    # totals, s: all full vs this routing
    notes: list = field(default_factory=list)        # the decisions, in words
    routed: int = 0                                  # points routed by this decision (after the first chunk)
    seconds: float = 0.0                             # the cost model's own time (probes included)

    def as_dict(self) -> dict:
        return {"orders": {int(k): float(v) for k, v in self.orders.items()}, "rest": Reason(self.rest).name,
                "first": Reason(self.first).name,
                "t_full_per_point_s": self.t_full, "t_pair_per_point_s": {int(k): v for k, v in self.t_pair.items()},
                "routed": self.routed, "compile_s": dict(self.compile), "predicted_s": dict(self.predicted), "notes": list(self.notes),
                "seconds": self.seconds}


FIRST_CHUNK_PRICES = True     # sp_ode.sweep solves the first chunk fully before `decide`
planned_orders = paths.planned_orders
full_estimate = paths.full_estimate
REFERENCE_TOL_FACTOR = paths.REFERENCE_TOL_FACTOR


def run_chunk(plan: paths.SweepPlan, chunk: paths.ChunkInput) -> dict:
    """`sp_ode.sweeps._paths.run_chunk` (looked up at call time)."""
    return paths.run_chunk(plan, chunk)


def decision_from_dict(d: dict) -> Decision:
    """The Decision stored in a sweep's manifest (a resumed sweep routes as the first run did)."""
    return Decision(orders={int(k): float(v) for k, v in d.get("orders", {}).items()}, rest=int(Reason[d["rest"]]),
                    first=int(Reason[d.get("first", "FULL_FIRST")]), t_full=float(d.get("t_full_per_point_s", math.nan)),
                    t_pair={int(k): float(v) for k, v in d.get("t_pair_per_point_s", {}).items()},
                    compile=dict(d.get("compile_s", {})), predicted=dict(d.get("predicted_s", {})),
                    notes=list(d.get("notes", [])), seconds=float(d.get("seconds", 0.0)),
                    routed=int(d.get("routed", 0)))


def first_chunk_reasons(plan: paths.SweepPlan, eps: np.ndarray) -> np.ndarray:
    """The reasons of the first chunk's points, solved fully to price the full route: what the final
    routing says of them, FULL_FIRST where it would have tried a reduced path."""
    dec = plan.decision
    if dec.first == int(Reason.FULL_COMPILE) or dec.routed == 0:
        return np.full(eps.size, dec.first, dtype=np.int64)
    order, reason = planned_orders(plan, eps)
    return np.where(order >= 0, int(Reason.FULL_FIRST), reason)


@dataclass
class ValidationInput:
    """The validated points: global indices and their data (leading axis b)."""

    points: np.ndarray
    x0: np.ndarray
    y0: np.ndarray
    eps: np.ndarray
    values: dict


def validate_points(plan: paths.SweepPlan, item: ValidationInput):
    """(y_ref (b, K, d), ok (b,)): the reference solve of the validated points, in the stack size that
    costs least (`choose_size`)."""
    t_point = plan.decision.t_full if plan.decision is not None and math.isfinite(plan.decision.t_full) else 0.0
    B = choose_size(plan, item.points.size, t_point)
    y, ok, _ = paths.reference(plan, item.x0, item.y0, item.eps, item.values, B=B)
    return y, ok


def decide(plan: paths.SweepPlan, first: dict, values: dict, x0, y0: np.ndarray, remaining: np.ndarray, *,
           processes: int = 1) -> Decision:
    """Route the points `remaining` (global indices) from the first chunk's result `first` (module docstring)."""
    start = time.perf_counter()
    eps = values["eps"]
    values = {n: v for n, v in values.items() if n != "eps"}
    dec = Decision()
    B = plan.size_for(first["points"].size)
    n_first = first["points"].size
    c_full = float(first.get("compile_seconds", {}).get("full", 0.0))
    known = stacked.known_compile_seconds(paths.route_key(plan, "full"))
    c_full_ref = c_full if c_full > 0 else (known or 0.0)
    t_full = max(float(first["seconds"].get("full", 0.0)) - c_full, 1e-9) / max(n_first, 1)
    dec.t_full = t_full
    dec.compile["full"] = c_full_ref
    R = np.asarray(remaining)
    all_full = R.size * t_full
    c0 = stacked.known_compile_seconds(paths.route_key(plan, ("pair", 0)))
    c0 = c_full_ref * COMPILE_RATIO[0] if c0 is None else c0
    # the first chunk's points: would the bound of step 1 have let a reduced path be tried for them?
    dec.first = int(Reason.FULL_COMPILE if n_first * t_full <= (processes + 1) * c0 + B * t_full
                    else Reason.FULL_FIRST)

    chosen = 0.0
    rest = Reason.FULL_PREDICTED
    for k in range(plan.max_order + 1):
        if R.size == 0:
            break
        key = paths.route_key(plan, ("pair", k))
        c_pair = stacked.known_compile_seconds(key)
        predicted = c_pair is None
        c_pair = c_full_ref * COMPILE_RATIO.get(k, 300.0) if predicted else c_pair
        compiles = processes if stacked.is_compiled(key, B, 2 * plan.d, _example(plan, B)) else processes + 1
        cost_in = compiles * c_pair + B * t_full
        dec.compile[f"pair{k}"] = c_pair
        if R.size * t_full <= cost_in:
            dec.notes.append(f"order {k}: not tried — {R.size} full solves cost {R.size * t_full:.3g} s, less than "
                             f"compiling and probing its path ({cost_in:.3g} s{', predicted' if predicted else ''})")
            rest = Reason.FULL_COMPILE
            break
        probe = R[np.argsort(eps[R])][np.unique(np.linspace(0, R.size - 1, min(PROBE, R.size)).round().astype(int))]
        lanes = paths.lanes_of(plan, eps, values, probe)
        t0 = time.perf_counter()
        clock = stacked.compile_clock()
        ya, yb, ok, _ = paths.solve_pair(plan, k, y0[probe], lanes, B=B)
        spent = time.perf_counter() - t0
        compiled_now = stacked.compile_clock() - clock
        t_pair = max(spent - compiled_now, 1e-9) / B
        dec.t_pair[k] = t_pair
        if compiled_now > 0:
            dec.compile[f"pair{k}"] = compiled_now
        floor = plan.tol * paths.REDUCED_TOL_FACTOR * (1.0 + np.abs(ya).reshape(probe.size, -1).max(axis=1))
        est = np.where(ok, paths.path_difference(ya, yb) + floor, np.inf)
        C_k = MARGIN * float(np.max(est / eps[probe] ** (k + 1)))
        if t_pair >= t_full:
            dec.notes.append(f"order {k}: probed at {probe.size} points, {t_pair:.3g} s per point against "
                             f"{t_full:.3g} s for the full solve — not cheaper")
            rest = Reason.FULL_DEARER
            break
        fits = R[np.isfinite(C_k) & (C_k * eps[R] ** (k + 1) <= plan.safety * plan.tol)]
        dec.notes.append(f"order {k}: estimate ≈ {C_k:.3g}·ε^{k + 1} (probe, ×{MARGIN:g}); predicted within "
                         f"safety·tol at {fits.size} of {R.size} points; {t_pair:.3g} s per point against "
                         f"{t_full:.3g} s full")
        if fits.size:
            dec.orders[k] = C_k
            chosen += fits.size * t_pair
            R = np.setdiff1d(R, fits)
        rest = Reason.FULL_PREDICTED
    dec.rest = int(rest)
    dec.routed = int(np.asarray(remaining).size)
    dec.predicted = {"all_full_s": all_full, "this_routing_s": chosen + R.size * t_full}
    dec.seconds = time.perf_counter() - start
    return dec


def _example(plan: paths.SweepPlan, B: int) -> dict:
    """A lanes example of B points (shapes only): the key of a compiled pair program."""
    eps = np.ones(1)
    values = {n: np.asarray(v)[None] for n, v in plan.base_args.items() if n in plan.names}
    lanes = paths.lanes_of(plan, eps, values, np.zeros(1, dtype=np.int64))
    return paths.pad_like(lanes, B)


def choose_size(plan: paths.SweepPlan, b: int, t_point: float, factor: float = 2.0) -> int:
    """The stack size for b points that costs least: compiling a new size (its known compile time)
    against padding into a compiled one (`factor`·t_point per padded point, the reference being tighter)."""
    key = paths.route_key(plan, "full")
    c = stacked.known_compile_seconds(key) or 0.0
    best, best_cost = None, math.inf
    for size in plan.sizes:
        if size < b and size != plan.sizes[-1]:
            continue
        compiled = stacked.is_compiled(key, size, plan.m + plan.d, _full_example(plan, size))
        stacks = math.ceil(b / size)
        cost = (0.0 if compiled else c) + stacks * size * factor * t_point
        if cost < best_cost:
            best, best_cost = size, cost
    return best


def _full_example(plan: paths.SweepPlan, B: int) -> dict:
    return _example(plan, B)
