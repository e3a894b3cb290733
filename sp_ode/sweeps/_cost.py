"""The cost model of `sp_ode.sweep`: which points try which reduced order, priced with compilation.

Every route costs its compilation plus its solves, and **every figure is counted, never timed**:
a solve's cost is `sp_ode.sweeps._stacked.work_seconds` of its LSODA steps, evaluations of F and of
its Jacobian blocks (with the flops XLA counts in each program) and banded factorisations — modelled
seconds on the reference machine, the same under any load; a compilation is predicted from the size
of the lowered program.  Nothing reads a clock, nor what this process happens to have compiled
before, nor the number of workers: the same call routes the same way, hence gives the same numbers
bit for bit, under load, in any process, on any number of Dask workers, and on resume (the Decision
is stored in the manifest and replayed).  With N points in groups of G (`stacked.stack_group`):

* **full**: C_F + N·t_F.  The first group (G points) is solved fully and prices it: t_F is its
  counted work per point, C_F = `COMPILE_BASE_S` + `COMPILE_S_PER_LINE` × the lines of the full
  route's lowered StableHLO.  Its answers are kept (pricing costs nothing extra), and a rerun or a
  resumed sweep solves those points fully again, in the same stack.
* **reduced k** (the pair [y_k, y_{k+1}] that is the path and its estimate): C_R(k) + |S_k|·t_R(k).
  C_R(k) = C_F·`COMPILE_RATIO[k]` (ratios measured on this machine, docs/bench/sweep.md:
  Michaelis–Menten, whose terms come from the series, 6×, 24× and 150× for k = 0, 1, 2; the
  20-state ring, closed form for k ≤ 1, 1.5–2× for k = 0; the larger, so a prediction errs towards
  not compiling), counted `COMPILES` times.  t_R(k) and S_k come from a **probe**: the pair solved at
  `PROBE` points of the remaining ones (at their ε quantiles), its counts priced in a stack of G.

The rule, order by order (k = 0, 1, …, max_order), R the points not yet assigned:

1. stop unless |R|·t_F > COMPILES·C_R(k) + PROBE·t_F: if even free reduced solves could not repay
   compiling and probing, every point of R is solved fully (`Reason.FULL_COMPILE`);
2. compile and probe: Ê_k at the probe points gives C_k = `MARGIN`·max Ê_k/ε^{k+1} (the
   leading-order scaling of docs/theory.md §7.5), and S_k = {i ∈ R : C_k ε_i^{k+1} ≤ safety·tol};
3. stop if t_R(k) ≥ t_F (`Reason.FULL_DEARER` for R);
4. otherwise S_k tries order k, and R ← R \\ S_k.

Points still in R are solved fully (`Reason.FULL_PREDICTED`: no order tried is predicted within
tol at their ε).  The prediction only routes: a point's own estimate decides, and one that misses
is solved fully (`Reason.FULL_ESTIMATE`).  `route="full"` skips all of this;
`route="reduced"` tries order 0, 1, … at every point, as before the cost model.  Measured seconds
are reported (`SweepResult.stage_seconds`, the sweep folder's `timings.json`), never used.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from sp_ode.sweeps import _paths as paths, _stacked as stacked
from sp_ode.sweeps._dense import make_plan, prepare, stack_width  # noqa: F401 - the engine's members
from sp_ode.sweeps._reasons import Reason
from sp_ode.sweeps.engine import ValidationInput

PROBE = 8
MARGIN = 2.0
# a reduced path is priced as compiled twice: for the probe, and where the chunks run (a Dask worker compiles
# for itself; in one process the second is free, so the price errs towards not compiling) — a constant, not
# the number of workers, so that the routing does not depend on where the sweep runs
COMPILES = 2
# the full route's compile time from the size of its program (module docstring), fitted on this machine:
# Michaelis–Menten 83 lines, 0.05 s; the 20-state ring 342 lines, 0.17–0.31 s (stacks of 8 and 64)
COMPILE_BASE_S = 0.01
COMPILE_S_PER_LINE = 5e-4
# compilation of the pair [y_k, y_{k+1}] relative to the full route's (f and its Jacobian): the larger of the
# ratios measured on Michaelis–Menten and the 20-state ring (module docstring); the order-2 terms nest derivatives
COMPILE_RATIO = {0: 6.0, 1: 24.0, 2: 150.0, 3: 600.0, 4: 2000.0}


# what a worker process of a local cluster costs before its first chunk besides the compile predicted from program
# size (starting Python, importing sp_ode and JAX, unpickling the plan, tracing), and each task's round trip —
# modelled seconds, constants like those of `stacked.work_seconds`.  Measured here: 200 Michaelis–Menten points,
# 0.9–1.0 s in one process against 8.7–10.7 s on a forced local cluster of 2 workers (load 2.6 on 2 cores; the
# report of issue 36: 12 s against 37–39 s on a busier machine); a Dask round trip 10–15 ms (docs/bench/sweep.md)
WORKER_START_S = 8.0
TASK_S = 0.015


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


MAX_ORDER = paths.MAX_ORDER
FIRST_CHUNK_PRICES = True     # sp_ode.sweep solves the first chunk fully before `decide`
planned_orders = paths.planned_orders
full_estimate = paths.full_estimate
REFERENCE_TOL_FACTOR = paths.REFERENCE_TOL_FACTOR


def sweep_nbytes(N: int, chunk_size: int, m: int, d: int, K: int) -> int:
    """Estimated peak bytes: one stacked chunk (LSODA's banded work arrays) plus the assembled table."""
    n = m + d
    return stacked.stack_nbytes(min(N, chunk_size), n) + int(N) * 8 * (2 * K * d + m + 10)


def run_chunk(plan: paths.SweepPlan, chunk: paths.ChunkInput) -> dict:
    """`sp_ode.sweeps._paths.run_chunk` (looked up at call time)."""
    return paths.run_chunk(plan, chunk)


def replay(plan: paths.SweepPlan, values: dict, y0: np.ndarray) -> None:
    """A resumed sweep: nothing to rebuild (the Decision read from the manifest is the whole routing)."""


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


def validate_points(plan: paths.SweepPlan, item: ValidationInput):
    """(y_ref (b, K, d), ok (b,)): the reference solve of the validated points, in the stack size that
    costs least (`choose_size`)."""
    t_point = plan.decision.t_full if plan.decision is not None and math.isfinite(plan.decision.t_full) else 0.0
    B = choose_size(plan, item.points.size, t_point)
    y, ok, _ = paths.reference(plan, item.x0, item.y0, item.eps, item.values, B=B)
    return y, ok


def decide(plan: paths.SweepPlan, first: dict, values: dict, x0, y0: np.ndarray, remaining: np.ndarray, *,
           processes: int = 1) -> Decision:
    """Route the points `remaining` (global indices) from the first group's result `first` (module docstring).

    Every figure is counted work (`sp_ode.sweeps._stacked.work_seconds`: steps, evaluations and XLA's
    flop counts) or a compile time predicted from a program's size — never a clock, and never whether
    this process happens to have compiled a route before, nor `processes` (kept for the engines'
    common signature): the same call routes the same way under any load, in any process, on any
    number of workers, and on resume."""
    start = time.perf_counter()
    eps = values["eps"]
    values = {n: v for n, v in values.items() if n != "eps"}
    dec = Decision()
    G = plan.group
    n_first = first["points"].size
    c_full = predicted_compile_seconds(plan)
    t_full = max(float(first.get("work", {}).get("full", 0.0)), 1e-9) / max(n_first, 1)
    dec.t_full = t_full
    dec.compile["full"] = c_full
    R = np.asarray(remaining)
    all_full = R.size * t_full
    c0 = c_full * COMPILE_RATIO[0]
    # the first group's points: would the bound of step 1 have let a reduced path be tried for them?
    dec.first = int(Reason.FULL_COMPILE if n_first * t_full <= COMPILES * c0 + G * t_full
                    else Reason.FULL_FIRST)

    chosen = 0.0
    rest = Reason.FULL_PREDICTED
    for k in range(plan.max_order + 1):
        if R.size == 0:
            break
        c_pair = c_full * COMPILE_RATIO.get(k, 3000.0)
        cost_in = COMPILES * c_pair + PROBE * t_full
        dec.compile[f"pair{k}"] = c_pair
        if R.size * t_full <= cost_in:
            dec.notes.append(f"order {k}: not tried — {R.size} full solves cost {R.size * t_full:.3g} s, less than "
                             f"compiling and probing its path ({cost_in:.3g} s, predicted)")
            rest = Reason.FULL_COMPILE
            break
        probe = R[np.argsort(eps[R], kind="stable")][
            np.unique(np.linspace(0, R.size - 1, min(PROBE, R.size)).round().astype(int))]
        lanes = paths.lanes_of(plan, eps, values, probe)
        B = plan.size_for(probe.size)
        ya, yb, ok, counts = paths.solve_pair(plan, k, y0[probe], lanes, B=B)
        # the probe's counts priced in a stack of G, as the chunks will run it (the flops scale with the lanes)
        t_pair = stacked.work_seconds(counts, G, 2 * plan.d, tuple(f * G / counts["B"] for f in counts["flops"])) / G
        dec.t_pair[k] = t_pair
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


def predicted_compile_seconds(plan: paths.SweepPlan) -> float:
    """The full route's compilation predicted from its size: `COMPILE_S_PER_LINE` × the lines of its
    lowered StableHLO (f and its Jacobian blocks for G points; lowered, not compiled, once per plan)."""
    if "full_lines" not in plan.__dict__:
        G = plan.group
        prog_lines = stacked.lowered_lines(paths.route_key(plan, "full"), paths.full_one(plan), G, plan.m + plan.d,
                                           _example(plan, G))
        plan.__dict__["full_lines"] = prog_lines
    return COMPILE_BASE_S + COMPILE_S_PER_LINE * plan.__dict__["full_lines"]


def _example(plan: paths.SweepPlan, B: int) -> dict:
    """A lanes example of B points (shapes only): the key of a compiled pair program."""
    eps = np.ones(1)
    values = {n: np.asarray(v)[None] for n, v in plan.base_args.items() if n in plan.names}
    lanes = paths.lanes_of(plan, eps, values, np.zeros(1, dtype=np.int64))
    return paths.pad_like(lanes, B)


def choose_size(plan: paths.SweepPlan, b: int, t_point: float, factor: float = 2.0) -> int:
    """The stack size for b points that costs least: compiling a size (the predicted compile time of the full
    route) against padding into a larger one (`factor`·t_point per padded point, the reference being tighter).
    Counted and predicted figures only, and no look at what this process has compiled: the validated points'
    stacks, hence their reference numbers, are the same wherever and whenever the sweep runs."""
    c = predicted_compile_seconds(plan)
    best, best_cost = None, math.inf
    for size in plan.sizes:
        if size < b and size != plan.sizes[-1]:
            continue
        stacks = math.ceil(b / size)
        cost = c + stacks * size * factor * t_point
        if cost < best_cost:
            best, best_cost = size, cost
    return best


def worker_compile_seconds(plan: paths.SweepPlan) -> float:
    """What one Dask worker compiles before its first chunk, predicted from program size (module docstring):
    the full route, and the pair of each reduced order the routing may try (`route="reduced"`: all of them)."""
    if plan.route == "full":
        return predicted_compile_seconds(plan)
    orders = range(plan.max_order + 1) if plan.route == "reduced" else (
        plan.decision.orders if plan.decision is not None else ())
    return predicted_compile_seconds(plan) * (1.0 + sum(COMPILE_RATIO.get(k, 3000.0) for k in orders))


def cluster_forecast(priced: dict, points_left: int, tasks: int, workers: int, compile_s: float) -> dict:
    """In this process, or on a local cluster of `workers` processes?  Both predicted from counted work only.

    w = the counted work per point of the chunk `priced` (solved here first); the P points left cost
    P·w here, and T_start + C + (P·w + tasks·`TASK_S`)/W on the cluster, whose W workers start
    (`WORKER_START_S`) and compile (C, `worker_compile_seconds`) side by side before their first chunk."""
    work = sum(float(v) for k, v in priced.get("work", {}).items() if k != "full_points")
    per_point = work / max(int(np.asarray(priced["points"]).size), 1)
    here = per_point * points_left
    there = WORKER_START_S + compile_s + (here + tasks * TASK_S) / max(workers, 1)
    return {"points_left": int(points_left), "tasks": int(tasks), "workers": int(workers), "work_per_point_s": per_point,
            "worker_start_s": WORKER_START_S, "worker_compile_s": float(compile_s), "in_process_s": here,
            "local_cluster_s": there}
