"""Parameter sweep (issue 16): `sp_ode.sweep` against vmap of full Kvaerno5 and a scipy loop.

N parameter points with ε log-uniform in [1e-6, 1e-2] and a second parameter uniform
over a range where the manifold attracts (κ ∈ [0.5, 2] for Michaelis–Menten, the
coupling c ∈ [0.5, 2] for `me20`, the 20-state ring master equation), x0 on the
first-order slow manifold h⁽¹⁾(y0) (T3, docs/theory.md §3.3), y at 4 save times in
[0, 2], tol = 1e-6 on y.

**Equal accuracy.**  A tight reference (scipy Radau, rtol 1e-12, atol 1e-14, one
point at a time) on ``--ref-count`` random points.  The sweep's max error there is
measured; the full vmapped Kvaerno5 solve and each scipy method (LSODA, BDF, Radau) run at
the loosest rtol on the ladder 1e-6 … 1e-10 (atol = 1e-2·rtol) whose max error on the
same points is ≤ tol.  Per-point ε in one vmapped full solve needs ε as data per lane:
f(x, y, p)/ε with ε in ``args`` (a system built here, as a user would).

Times: the sweep (best of ``--repeat``, compiled before), the vmapped full solve on all
N, the scipy loop on ``--scipy-subset`` points extrapolated ×N/k (said so).  With
``--dask``: the same sweep on a `LocalCluster` of 1 and of 2 single-threaded worker
processes (workers warmed by one sweep first), and the Dask overhead per task,
(t_dask(1 worker) − t_in_process)/tasks, for several chunk sizes.

    python bench/bench_sweep.py --system mm --n 1000 --dask --json --out docs/bench/sweep_mm.json
    python bench/bench_sweep.py --smoke          # tiny, run by the tests
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sp_ode.core.cpu_pool import cores_before_pinning, pin_to_one_core  # noqa: E402
from sp_ode.sweeps._dask import pin_workers  # noqa: E402

# one core, before the first JAX computation: jaxlib 0.10.2's batched LAPACK kernels can deadlock
# a multi-threaded XLA pool (sp_ode/core/cpu_pool.py); the Dask workers below get a core each
PINNED_CORE = pin_to_one_core(0)

import jax  # noqa: E402
import numpy as np  # noqa: E402
from _equal_accuracy import loosest_rtol  # noqa: E402

import sp_ode  # noqa: E402
from sp_ode.core.files import dumps, write_json  # noqa: E402
from sp_ode.systems.catalogue import master_equation_entry  # noqa: E402

TS = np.array([0.5, 1.0, 1.5, 2.0])
TOL = 1e-6
LADDER = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def build(name: str):
    """(system, swept name, y0) for "mm" or "me20"."""
    if name == "mm":
        e = sp_ode.get_system("michaelis_menten")
        return e.system, "kappa", np.array([1.0])
    e = master_equation_entry("ring20", "me20")
    return e.system, "c", np.array([0.5])


def first_order_x0(system, eps, values, name, y0):
    """h⁽¹⁾(y0) = φ + εh₁ per point (closed form T3 for a master equation, else the series)."""
    method = "closed_form" if isinstance(system, sp_ode.MasterEquationSystem) else "series"
    out = []
    for e, v in zip(eps, values):
        s = system.with_eps(float(e)).with_args({**system.args, name: np.asarray(v)})
        out.append(sp_ode.slow_manifold(s, order=1, method=method)(y0))
    return np.array(out)


_LIFT = {}


def lifted(system):
    """ε moved into args, so one vmapped Kvaerno5 solve carries a different ε per lane."""
    if system not in _LIFT:
        f, g = system.f, system.g
        _LIFT[system] = sp_ode.FastSlowSystem(lambda t, x, y, a: f(t, x, y, a["p"]) / a["eps"],
                                              lambda t, x, y, a: g(t, x, y, a["p"]), eps=1.0,
                                              m=system.m, d=system.d, name=f"{system.name}/eps-in-args")
    return _LIFT[system]


def lane_args(system, eps, values, name):
    n = eps.size
    p = {k: np.broadcast_to(np.asarray(v), (n,) + np.shape(v)).copy() for k, v in system.args.items()}
    p[name] = np.asarray(values, dtype=np.float64)
    return {"eps": np.asarray(eps, dtype=np.float64), "p": p}


def one_system(system, e, v, name):
    return system.with_eps(float(e)).with_args({**system.args, name: np.asarray(v)})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", choices=("mm", "me20"), default="mm")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--ref-count", type=int, default=100)
    ap.add_argument("--scipy-subset", type=int, default=20)
    ap.add_argument("--chunk-size", type=int, default=256)
    ap.add_argument("--max-order", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--dask", action="store_true", help="also time Dask with 1 and 2 workers")
    ap.add_argument("--dask-only", action="store_true",
                    help="only the in-process sweep (with and without validation) and the Dask timings")
    ap.add_argument("--overhead-chunks", default="16,64",
                    help="chunk sizes of the Dask overhead measurement (besides --chunk-size)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.overhead_chunks = sorted({int(c) for c in args.overhead_chunks.split(",") if c} | {args.chunk_size})
    if args.smoke:
        args.n, args.ref_count, args.scipy_subset, args.chunk_size, args.repeat = 8, 3, 2, 8, 1
        args.max_order = 0

    with jax.enable_x64(True):
        record = run(args)
    text = dumps(record, indent=2)
    if args.out:
        write_json(args.out, record)
    print(text if args.json else "\n".join(f"{k}: {v}" for k, v in record.items() if k != "environment"))
    return 0


def run(args) -> dict:
    system, name, y0 = build(args.system)
    rng = np.random.default_rng(args.seed)
    N = args.n
    eps = np.exp(rng.uniform(np.log(1e-6), np.log(1e-2), N))
    vals = rng.uniform(0.5, 2.0, N)
    log(f"bench_sweep: {system.name}, N = {N}, tol = {TOL:g}, threads OMP={os.environ.get('OMP_NUM_THREADS')}, "
        f"load {os.getloadavg()[0]:.1f}")
    t = time.perf_counter()
    x0 = first_order_x0(system, eps, vals, name, y0)
    log(f"  x0 = h1(y0) per point: {time.perf_counter() - t:.1f} s")
    params = {"eps": eps, name: vals}
    kw = dict(ts=TS, tol=TOL, chunk_size=args.chunk_size, max_order=args.max_order, progress_bar=False)

    # compile first (a sweep over one chunk's worth), then time
    t = time.perf_counter()
    sp_ode.sweep(system, {k: v[:args.chunk_size] for k, v in params.items()}, (0.0, 2.0), x0[:args.chunk_size],
                 y0, validate_fraction=1.0, **kw)
    compile_s = time.perf_counter() - t
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        res = sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=0.01, seed=args.seed, **kw)
        times.append(time.perf_counter() - t)
    sweep_s = min(times)
    summ = res.summary()
    log(f"  sweep: {sweep_s:.2f} s (compile+first chunk {compile_s:.1f} s); {summ}")
    if args.dask_only:
        t = time.perf_counter()
        sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=0.0, **kw)
        no_validation = time.perf_counter() - t
        log(f"  sweep without validation: {no_validation:.2f} s")
        return {"issue": 16, "system": system.name, "points": N, "tol": TOL, "max_order": args.max_order,
                "chunk_size": args.chunk_size,
                "sweep": {"seconds": sweep_s, "seconds_all_repeats": times, "compile_and_first_chunk_seconds":
                          compile_s, "seconds_without_validation": no_validation, "summary": summ},
                "dask": dask_scaling(system, params, x0, y0, kw, args),
                "environment": {"python": platform.python_version(), "jax": jax.__version__, "cpus": os.cpu_count(),
                                "load_avg_end": os.getloadavg(), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                                "XLA_FLAGS": os.environ.get("XLA_FLAGS"), "pinned_core": PINNED_CORE}}

    # reference on random points
    ref_idx = np.sort(rng.choice(N, size=min(args.ref_count, N), replace=False))
    t = time.perf_counter()
    ref = np.array([sp_ode.simulate(one_system(system, eps[i], vals[i], name), (0.0, 2.0), x0[i], y0,
                                    backend="scipy", method="Radau", rtol=1e-12, atol=1e-14, ts=TS).y
                    for i in ref_idx])
    log(f"  reference ({ref_idx.size} points, Radau 1e-12): {time.perf_counter() - t:.1f} s")
    sweep_err = np.abs(res.y[ref_idx] - ref).reshape(ref_idx.size, -1).max(axis=1)

    # full vmap Kvaerno5 at equal accuracy
    L = lifted(system)

    def vmap_solve(idx, rtol):
        return sp_ode.simulate(L, (0.0, 2.0), x0[idx], np.broadcast_to(y0, (idx.size, y0.size)), ts=TS,
                               rtol=rtol, atol=1e-2 * rtol, throw=False,
                               args=lane_args(system, eps[idx], vals[idx], name), batch_args=True)

    def err_of(traj):
        return float(np.abs(traj.y - ref).max())

    choice = loosest_rtol(lambda r: vmap_solve(ref_idx, r), err_of, TOL, LADDER)
    all_idx = np.arange(N)
    vmap_s = None
    if choice["reached"]:
        vmap_solve(all_idx, choice["rtol"])   # compile at shape N
        ts_ = []
        for _ in range(args.repeat):
            t = time.perf_counter()
            tr = vmap_solve(all_idx, choice["rtol"])
            ts_.append(time.perf_counter() - t)
        vmap_s = min(ts_)
        log(f"  vmap Kvaerno5 rtol {choice['rtol']:g}: {vmap_s:.2f} s, error {choice['error']:.2e}, "
            f"failed {int(np.sum(np.asarray(tr.status) != 0))}")

    # cost against ε at the same rtol: does the baseline's cost grow as ε → 0?
    by_eps = eps_cost(system, eps, x0, y0, params, kw, vmap_solve, choice["rtol"], args) if choice["reached"] else None

    # scipy loop at equal accuracy, on a subset, extrapolated
    sub = ref_idx[:args.scipy_subset]
    scipy = {}
    for method in ("LSODA", "BDF", "Radau"):
        def solve_sub(rtol, method=method):
            ys, ok = [], True
            for i in sub:
                tr = sp_ode.simulate(one_system(system, eps[i], vals[i], name), (0.0, 2.0), x0[i], y0,
                                     backend="scipy", method=method, rtol=rtol, atol=1e-2 * rtol, ts=TS,
                                     throw=False)
                ok &= tr.success
                ys.append(tr.y)
            return _Stack(np.array(ys), ok)
        pick = loosest_rtol(solve_sub, lambda s: float(np.abs(s.y - ref[:sub.size]).max()), TOL, LADDER)
        if not pick["reached"]:
            scipy[method] = {"reached": False, "tried": pick["tried"]}
            continue
        t = time.perf_counter()
        solve_sub(pick["rtol"])
        per_point = (time.perf_counter() - t) / sub.size
        scipy[method] = {"reached": True, "rtol": pick["rtol"], "error": pick["error"],
                         "seconds_per_point": per_point, "extrapolated_seconds": per_point * N}
        log(f"  scipy {method} rtol {pick['rtol']:g}: {per_point * 1e3:.1f} ms/point, error {pick['error']:.2e}")
    fastest = min((v["extrapolated_seconds"], k) for k, v in scipy.items() if v["reached"]) if any(
        v["reached"] for v in scipy.values()) else (None, None)

    record = {
        "issue": 16, "system": system.name, "points": N, "tol": TOL, "ts": TS, "max_order": args.max_order,
        "chunk_size": args.chunk_size, "seed": args.seed,
        "sweep": {"seconds": sweep_s, "seconds_all_repeats": times, "compile_and_first_chunk_seconds": compile_s,
                  "summary": summ, "max_error_on_reference_points": float(sweep_err.max()),
                  "fraction_within_tol_on_reference_points": float(np.mean(sweep_err <= TOL))},
        "vmap_kvaerno5": {"rtol": choice["rtol"], "error": choice["error"], "tried": choice["tried"],
                          "seconds": vmap_s, "speedup_of_sweep": None if vmap_s is None else vmap_s / sweep_s},
        "scipy_loop": scipy, "scipy_subset": int(sub.size),
        "fastest_scipy": fastest[1],
        "speedup_vs_fastest_scipy": None if fastest[0] is None else fastest[0] / sweep_s,
        "reference": {"points": int(ref_idx.size), "method": "scipy Radau rtol 1e-12 atol 1e-14"},
        "cost_by_eps_decade": by_eps,
    }
    if args.dask:
        record["dask"] = dask_scaling(system, params, x0, y0, kw, args)
    record["environment"] = {"python": platform.python_version(), "jax": jax.__version__,
                             "cpus": os.cpu_count(), "load_avg_end": os.getloadavg(),
                             "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                             "XLA_FLAGS": os.environ.get("XLA_FLAGS"), "pinned_core": PINNED_CORE}
    return record


def eps_cost(system, eps, x0, y0, params, kw, vmap_solve, rtol, args) -> list:
    """Per ε decade (the same number of points in each): vmapped full Kvaerno5 at the equal-accuracy
    rtol, and the sweep without validation, in ms per point.  The theory's lever (docs/theory.md §7.5)
    is a full-solve cost that grows as ε → 0 while the reduced path's does not."""
    edges = np.arange(-6, -1)
    decade = np.floor(np.log10(eps)).astype(int)
    m = min(int(np.sum(decade == e)) for e in edges[:-1])
    m = min(m, 4 * args.chunk_size)
    rows = []
    for lo in edges[:-1]:
        idx = np.flatnonzero(decade == lo)[:m]
        if idx.size == 0:
            continue
        vmap_solve(idx, rtol)                                           # compile at this shape
        sub = {k: v[idx] for k, v in params.items()}
        sp_ode.sweep(system, sub, (0.0, 2.0), x0[idx], y0, validate_fraction=0.0, **kw)
        tv, tsw = [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            vmap_solve(idx, rtol)
            tv.append(time.perf_counter() - t)
            t = time.perf_counter()
            r = sp_ode.sweep(system, sub, (0.0, 2.0), x0[idx], y0, validate_fraction=0.0, **kw)
            tsw.append(time.perf_counter() - t)
        row = {"eps_decade": [10.0 ** lo, 10.0 ** (lo + 1)], "points": int(idx.size),
               "vmap_ms_per_point": 1e3 * min(tv) / idx.size, "sweep_ms_per_point": 1e3 * min(tsw) / idx.size,
               "paths": r.summary()["paths"]}
        rows.append(row)
        log(f"  eps in [1e{lo}, 1e{lo + 1}): vmap {row['vmap_ms_per_point']:.3f} ms/pt, "
            f"sweep {row['sweep_ms_per_point']:.3f} ms/pt, paths {row['paths']}")
    return rows


class _Stack:
    def __init__(self, y, ok):
        self.y, self.success = y, ok


def dask_scaling(system, params, x0, y0, kw, args) -> dict:
    """1 vs 2 worker processes (side by side, repeated), and overhead per task vs chunk size."""
    from dask.distributed import Client, LocalCluster

    out = {}
    for workers in (1, 2):
        with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                          dashboard_address=None) as cluster, Client(cluster) as client:
            pin_workers(client, cores_before_pinning())
            sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=0.01, client=client, **kw)  # warm
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=0.01, client=client, **kw)
                times.append(time.perf_counter() - t)
            out[f"workers_{workers}"] = {"seconds": min(times), "all": times}
            log(f"  dask {workers} worker(s): {min(times):.2f} s {times}")
            if workers == 1:
                overhead = {}
                for cs in args.overhead_chunks:
                    kwc = {**kw, "chunk_size": cs}
                    sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=0.0, client=client, **kwc)
                    sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=0.0, **kwc)
                    t = time.perf_counter()
                    rd = sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=0.0, client=client, **kwc)
                    td = time.perf_counter() - t
                    t = time.perf_counter()
                    rl = sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=0.0, **kwc)
                    tl = time.perf_counter() - t
                    tasks = -(-params["eps"].size // cs)
                    # time inside the chunks (on the worker / in this process): tells compute from transport
                    inside_d, inside_l = sum(rd.stage_seconds.values()), sum(rl.stage_seconds.values())
                    overhead[cs] = {"dask_seconds": td, "in_process_seconds": tl, "tasks": tasks,
                                    "overhead_per_task_s": (td - tl) / tasks, "overhead_fraction": (td - tl) / tl,
                                    "inside_chunks_dask_s": inside_d, "inside_chunks_in_process_s": inside_l,
                                    "stage_seconds_dask": rd.stage_seconds, "stage_seconds_in_process": rl.stage_seconds}
                    log(f"  chunk {cs}: dask {td:.2f} s (inside chunks {inside_d:.2f}), in-process {tl:.2f} s "
                        f"(inside {inside_l:.2f}), {tasks} tasks")
                out["overhead_vs_chunk_size"] = overhead
    out["speedup_2_vs_1"] = out["workers_1"]["seconds"] / out["workers_2"]["seconds"]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
