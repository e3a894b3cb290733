"""Network sweeps: `sp_ode.sweep` on a NetworkSystem against a loop of the fastest full sparse solve.

Model: the cascade of `sp_ode.networks.models` (0 → A at N(0.1 + 0.2y)·kA, A → 0, A → A + B, B → 0, all
at 1) on the N×N grid (n = N² fast states), slow y' = r(1 − y) − 2y·E[B]/N, y(0) = 0.2; ``kA`` scales a
rate (it changes Q(y)), ``r`` only the slow ODE reads.  Sweeps of ``--points`` points (default 100),
ε log-uniform in [1e-6, 1e-4], and

* ``slow``: r uniform in [0.5, 2] — one Chebyshev table serves every point;
* ``rate``: kA uniform in [0.8, 1.2] — every point has its own Q(y): one table over (y, kA) serves them all
  (a tensor Chebyshev table, `sp_ode.sweeps._network.build_k_table`; the record's ``plan`` says which
  table the cost model built and why).

y at t = 0.5, 1, 1.5, 2, tol = 1e-6.  **Equal accuracy**: a tight reference (BDF, rtol 1e-11, atol 1e-15,
the sparse Jacobian) from h⁽¹⁾(y0) = p_st + εh₁ on ``--ref-count`` points; the full-solve baseline (BDF or
Radau with the sparse Jacobian, atol = 1e-4·rtol) runs at the loosest rtol of 1e-5 … 1e-10 whose max error
there is ≤ tol, and its loop is timed on ``--subset`` points and extrapolated ×points/subset (said so).
The sweep runs first, cold, in this process: tables, probes, paths and its 1 % validation included.
Wall and CPU seconds (`time.process_time`, one thread) are both recorded: on a shared machine the wall ratio
moves with the load, the CPU ratio much less.

    python -m bench.sweeps.network --N 32 --out results/sweeps/network_1e3.json
    python -m bench.sweeps.network --N 100 --out results/sweeps/network_1e4.json
    python -m bench.sweeps.network --N 32 --kinds rate --points 1000 --out results/sweeps/network_rate_1e3_1000pts.json
    python -m bench.sweeps.network --N 32 --reference-ladder --out results/sweeps/network_reference.json
    python -m bench.sweeps.network --smoke
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

from sp_ode.core.cpu_pool import pin_to_one_core

PINNED_CORE = pin_to_one_core(0)

import numpy as np  # noqa: E402

import sp_ode  # noqa: E402
from bench._common import default_record, loosest_rtol  # noqa: E402
from sp_ode.core.files import dumps, write_json  # noqa: E402
from sp_ode.networks.network import ReactionNetwork  # noqa: E402
from sp_ode.sweeps.stages import network as sweep_network  # noqa: E402
from sp_ode.systems.network import NetworkSystem  # noqa: E402

TS = np.array([0.5, 1.0, 1.5, 2.0])
TOL = 1e-6
LADDER = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def build(N: int) -> NetworkSystem:
    net = ReactionNetwork("0 -> A, N*(0.1 + 0.2*y)*kA; A -> 0, 1; A -> A + B, 1; B -> 0, 1",
                          parameters={"N": float(N), "kA": 1.0, "r": 1.0}, slow=["y"], name="cascade_r")
    space = net.state_space(bounds={"A": N - 1, "B": N - 1})
    return NetworkSystem(net, space, {"y": "r*(1 - y) - 2*y*E[B]/N"}, eps=1e-4, name=f"cascade_r{N}")


def full(system, eps, y0, method, rtol, atol, x0):
    t = time.perf_counter()
    path = system.simulate((0.0, 2.0), y0, x0, eps=eps, method=method, rtol=rtol, atol=atol, t_eval=TS)
    return path.y, path.status == 0 and path.y.shape[0] == TS.size, time.perf_counter() - t


def run_case(N: int, kind: str, args) -> dict:
    system = build(N)
    rng = np.random.default_rng(args.seed)
    P = args.points
    eps = np.exp(rng.uniform(np.log(1e-6), np.log(1e-4), P))
    params = {"eps": eps}
    name = "r" if kind == "slow" else "kA"
    params[name] = rng.uniform(0.5, 2.0, P) if kind == "slow" else rng.uniform(0.8, 1.2, P)
    y0 = np.array([0.2])
    log(f"bench.sweeps.network: n = {system.n}, {kind} sweep of {P} points, load {os.getloadavg()[0]:.1f}")

    t, c = time.perf_counter(), time.process_time()
    res = sp_ode.sweep(system, params, (0.0, 2.0), "manifold", y0, ts=TS, tol=TOL, progress_bar=False)
    sweep_s, sweep_cpu = time.perf_counter() - t, time.process_time() - c
    summ = res.summary()
    log(f"  sweep: {sweep_s:.2f} s, paths {summ['paths']}, stages {summ['stage_seconds']}")
    log("  " + res.report().replace("\n", "\n  "))

    def at(i):
        return system.with_parameters(**{name: float(params[name][i])})

    ref_idx = np.sort(rng.choice(P, size=min(args.ref_count, P), replace=False))
    t = time.perf_counter()
    starts = {int(i): sweep_network.manifold_start(at(i), y0, float(eps[i])) for i in ref_idx}
    ref = np.array([full(at(i), float(eps[i]), y0, "BDF", 1e-11, 1e-15, starts[int(i)])[0] for i in ref_idx])
    log(f"  reference ({ref_idx.size} points, BDF rtol 1e-11): {time.perf_counter() - t:.1f} s")
    sweep_err = float(np.abs(res.y[ref_idx] - ref).max())

    class Stack:
        def __init__(self, y, ok):
            self.y, self.success = y, ok

    baselines = {}
    for method in ("BDF", "Radau"):
        def loop(rtol, method=method):
            ys, ok = [], True
            for i in ref_idx[:args.ladder_points]:
                y, good, _ = full(at(i), float(eps[i]), y0, method, rtol, 1e-4 * rtol, starts[int(i)])
                ok &= good
                ys.append(y)
            return Stack(np.array(ys), ok)
        pick = loosest_rtol(loop, lambda s: float(np.abs(s.y - ref[:args.ladder_points]).max()), TOL, LADDER)
        if not pick["reached"]:
            baselines[method] = {"reached": False, "tried": pick["tried"]}
            continue
        sub = rng.choice(P, size=min(args.subset, P), replace=False)
        t, c = time.perf_counter(), time.process_time()
        for i in sub:
            x0 = sweep_network.manifold_start(at(i), y0, float(eps[i]))
            full(at(i), float(eps[i]), y0, method, pick["rtol"], 1e-4 * pick["rtol"], x0)
        per, per_cpu = (time.perf_counter() - t) / sub.size, (time.process_time() - c) / sub.size
        baselines[method] = {"reached": True, "rtol": pick["rtol"], "error": pick["error"], "tried": pick["tried"],
                             "seconds_per_point": per, "loop_seconds": per * P,
                             "cpu_seconds_per_point": per_cpu, "loop_cpu_seconds": per_cpu * P,
                             "extrapolated": f"×{P / sub.size:.4g}: {sub.size} of {P} points timed"}
        log(f"  full {method} rtol {pick['rtol']:g}: {per:.3f} s per point (x0 included) → {per * P:.1f} s for "
            f"{P}; error {pick['error']:.2e}")
    reached = {k: v for k, v in baselines.items() if v.get("reached")}
    fastest = min(reached, key=lambda k: reached[k]["loop_seconds"]) if reached else None
    speedup = reached[fastest]["loop_seconds"] / sweep_s if fastest else None
    fastest_cpu = min(reached, key=lambda k: reached[k]["loop_cpu_seconds"]) if reached else None
    speedup_cpu = reached[fastest_cpu]["loop_cpu_seconds"] / sweep_cpu if fastest_cpu else None
    log(f"  → loop of {fastest} / sweep = {speedup:.3g} wall, {speedup_cpu:.3g} CPU (target ≥ 10), sweep error "
        f"{sweep_err:.2e}")
    return {"n": int(system.n), "kind": kind, "swept": ["eps", name], "points": P, "tol": TOL,
            "sweep": {"seconds": sweep_s, "cpu_seconds": sweep_cpu, "summary": summ, "max_error_on_reference": sweep_err,
                      "within_tol_on_reference": sweep_err <= TOL,
                      "plan": {"notes": list(res.plan.get("notes", [])), "k_table": res.plan.get("k_table", "")}},
            "baselines": baselines, "fastest_full": fastest, "speedup_vs_fastest_full_loop": speedup,
            "fastest_full_cpu": fastest_cpu, "speedup_cpu_vs_fastest_full_loop": speedup_cpu,
            "target_met": bool(speedup is not None and speedup >= 10 and sweep_err <= TOL),
            "reference": {"points": int(ref_idx.size), "method": "BDF rtol 1e-11 atol 1e-15, sparse Jacobian"}}


def reference_ladder(N: int, eps_values=(1e-6, 1e-5, 1e-4)) -> dict:
    """What a validation reference costs and how accurate it is, by rtol: sparse BDF at 1e-8 … 1e-9 against
    Radau at 1e-9 (CPU seconds, one thread) from h⁽¹⁾(y0), y0 = 0.2 — the choice of the sweep's
    `REFERENCE_TOL_FACTOR`."""
    system = build(N)
    y0 = np.array([0.2])
    rows = []
    for eps in eps_values:
        x0 = sweep_network.manifold_start(system, y0, eps)
        ref = system.simulate((0.0, 2.0), y0, x0, eps=eps, method="Radau", rtol=1e-9, atol=1e-13, t_eval=TS).y
        for rtol in (1e-8, 3e-9, 1e-9):
            c = time.process_time()
            path = system.simulate((0.0, 2.0), y0, x0, eps=eps, method="BDF", rtol=rtol, atol=1e-4 * rtol, t_eval=TS)
            rows.append({"eps": eps, "rtol": rtol, "cpu_seconds": time.process_time() - c,
                         "error_vs_radau_1e-9": float(np.abs(path.y - ref).max())})
            log(f"  ε = {eps:g}, BDF rtol {rtol:g}: {rows[-1]['cpu_seconds']:.2f} CPU-s, "
                f"error {rows[-1]['error_vs_radau_1e-9']:.2e}")
    return {"n": int(system.n), "tol": TOL, "rows": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--N", type=int, default=32, help="grid side: n = N² fast states")
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--kinds", default="slow,rate")
    ap.add_argument("--ref-count", type=int, default=5)
    ap.add_argument("--ladder-points", type=int, default=3)
    ap.add_argument("--subset", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--reference-ladder", action="store_true",
                    help="only the cost and accuracy of the validation reference by rtol (reference_ladder)")
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.smoke:
        args.N, args.points, args.kinds, args.ref_count, args.ladder_points, args.subset = 6, 6, "slow", 2, 2, 2
    if args.reference_ladder:
        record = {"command": " ".join(sys.argv), "reference_ladder": reference_ladder(args.N)}
        if args.out:
            write_json(args.out, record)
        print(dumps(record, indent=2))
        return 0
    record = {"command": " ".join(sys.argv), "cases": []}
    for kind in args.kinds.split(","):
        record["cases"].append(run_case(args.N, kind, args))
        if args.out:
            write_json(args.out, record)
    record["environment"] = {"python": platform.python_version(), "cpus": os.cpu_count(),
                             "load_avg_end": os.getloadavg(), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                             "pinned_core": PINNED_CORE}
    if args.out:
        write_json(args.out, record)
    print(dumps(record, indent=2) if args.json else "\n".join(
        f"n={c['n']} {c['kind']}: sweep {c['sweep']['seconds']:.2f} s, speedup {c['speedup_vs_fastest_full_loop']}"
        for c in record["cases"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
