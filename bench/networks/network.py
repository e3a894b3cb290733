"""Reaction-network benchmarks of issue 15 (sp_ode.systems.network), on the `cascade` model.

The model (``sp_ode.networks.models.cascade``): 0 → A at N(0.1 + 0.2y), A → 0,
A → A + B, B → 0 on the N×N grid (n = N² fast states), slow y' = 1 − y − 2y·E[B]/N,
y(0) = 0.2, t ∈ [0, 2], x(0) = p_st(y0) (start on the critical manifold, docs/theory.md §7.5).

1. **eps** — at n = N² for each ε: a tight reference (full BDF, rtol 1e-11, sparse Jacobian),
   the reduced and first-order corrected paths (one Chebyshev table of m₀ = E_p[B],
   m₁ = E_{h₁}[B] serves every ε; its build time is reported separately and also charged in
   full to each ε), and full BDF solves at rtol 1e-6, 1e-8, 1e-10 (Radau too with ``--radau``).
   Errors are max over 21 times of |y − y_ref|.  C is fitted from the corrected errors at the
   two largest ε (C = err/ε²); "equal accuracy" = the fastest full solve whose error is at most
   the corrected path's (or 2Cε², whichever is larger).
2. **warm** — at n = N² (10⁵, 10⁶): 8 successive reduced-flow evaluations y = 0.2, 0.205, …
   (steps of a slow integrator): seconds per evaluation with the public cold solver
   (``sp_ode.stationary_distribution(Q, return_info=True)``), with our AMG-GMRES cold
   (hierarchy rebuilt, uniform start) and warm (hierarchy reused, start extrapolated from the last 3 solutions);
   every answer compared with the public solver's.
3. **stationary** — one stationary solve of the cascade CME at N = 3162 (10⁷ states): build
   (FSP generator from the network), solve through the public API, peak RSS, its report.
4. **memory** — bytes per state of Q, A = −Qᵀ, A_k and the AMG hierarchy (docs/cme_memory.md).
5. **pinned** — the pinned linear solve alone under several AMG/GMRES settings (GMRES steps vs n:
   why 10⁷ states did not fit 300 s with classical AMG, and what the AIR adjoint cycle the solver
   uses now needs, with its hitting-time solve; docs/bench/network.md §3).

    python -m bench.networks.network eps --N 32 100 --ref-method BDF --ref-rtol 1e-11 --json --out results/networks/eps_n1e3_n1e4.json   # sessions 3–6
    python -m bench.networks.network eps --N 32 --eps 1e-3 1e-4 1e-5 1e-6 --rtols 1e-8 1e-10 1e-12 --out results/networks/eps_rtol_ladder_n1e3.json
    python -m bench.networks.network eps --N 100 --eps 1e-4 1e-5 --rtols 1e-8 1e-10 1e-12 --out results/networks/eps_rtol_ladder_n1e4.json
    python -m bench.networks.network warm --N 317 --out results/networks/warm_n1e5.json
    python -m bench.networks.network warm --N 1000 --steps 3 --no-amg-cold --out results/networks/warm_n1e6.json
    python -m bench.networks.network warm --N 317 --out results/networks/warm_n1e5_rerun.json                  # session 7
    python -m bench.networks.network warm --N 1000 --steps 6 --no-amg-cold --out results/networks/warm_n1e6_rerun.json
    python -m bench.networks.network stationary --N 3162 --json --out results/networks/stationary_n1e7_amg.json      # session 6 (classical AMG)
    python -m bench.networks.network stationary --N 3162 --out results/networks/stationary_n1e7_air.json         # session 7 (AIR path)
    python -m bench.networks.network memory --N 500 --json --out results/networks/memory.json
    python -m bench.networks.network pinned --N 316 1000 --out results/networks/pinned.json
    python -m bench.networks.network pinned --N 2000 --settings rs_restart100 rs_restart50 air_restart20 --out results/networks/pinned_n4e6.json
    python -m bench.networks.network pinned --N 316 1000 2000 --settings air_adjoint_restart40 --out results/networks/pinned_air.json
    python -m bench.networks.network --smoke --json --out /tmp/x.json     # seconds; in the test suite
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

import numpy as np

import sp_ode
from bench._common import default_record
from sp_ode.core.files import dumps, write_json
from sp_ode.networks.models import cascade
from sp_ode.systems.network import NetworkSystem, padded_range

T_END = 2.0
T_EVAL = np.linspace(0.0, T_END, 21)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def peak_rss_gb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def system(N: int, eps: float = 1e-2) -> NetworkSystem:
    m = cascade(N)
    return NetworkSystem(m.network, m.space(), m.slow, eps=eps)


def err(path, ref) -> float:
    return float(np.max(np.abs(path.y[:, 0] - ref.y[:, 0])))


def bench_eps(N: int, eps_list, rtols, radau: bool, ref_rtol: float, checkpoint=None,
              ref_method: str = "Radau") -> dict:
    s = system(N)
    y0 = cascade(N).y0
    from scipy.integrate import solve_ivp

    t0 = time.perf_counter()   # the table: a coarse order-0 pass for the y range, then m₀, m₁ on it
    coarse = solve_ivp(s.reduced_rhs(order=0), (0.0, T_END), y0, method="RK23", rtol=1e-2, atol=1e-3)
    table = s.manifold_table(padded_range(coarse.y[0]), order=1)
    table_seconds = time.perf_counter() - t0
    log(f"N={N} n={s.n}: table {table_seconds:.2f}s, coarse pass {coarse.nfev} evaluations, {table.stats}")
    rows = []
    for eps in eps_list:
        se = NetworkSystem(s.network, s.space, s.slow_odes, eps=eps)
        se.gen = s.gen  # same pattern: share the assembled structure
        # The reference: Radau at rtol 1e-13 by default.  BDF at rtol 1e-11 (sessions 3–6) has a floor of
        # a few 1e-10 at ε ≤ 1e-5; Radau at 1e-13 and 1e-14 agree to 8e-13 at n = 1024, ε = 1e-5
        # (docs/bench/network.md §1).
        ref = se.simulate((0.0, T_END), y0, rtol=ref_rtol, atol=1e-15, t_eval=T_EVAL, method=ref_method)
        row = {"N": N, "n": s.n, "eps": eps, "ref_seconds": ref.stats["seconds"], "ref_status": ref.status,
               "ref_rtol": ref_rtol, "ref_method": ref_method,
               "ref_mass_drift": ref.stats["mass_drift"]}
        for order, key in ((0, "reduced"), (1, "corrected")):
            t0 = time.perf_counter()
            path = se.simulate_reduced((0.0, T_END), y0, order=order, table=table, t_eval=T_EVAL, rtol=1e-13,
                                       atol=1e-15)
            row[f"{key}_seconds_integrate"] = time.perf_counter() - t0
            row[f"{key}_seconds_with_table"] = row[f"{key}_seconds_integrate"] + table_seconds
            row[f"{key}_error"] = err(path, ref)
            row[f"{key}_status"] = path.status
        fulls = []
        for method in ("BDF", "Radau") if radau else ("BDF",):
            for rtol in rtols:
                f = se.simulate((0.0, T_END), y0, rtol=rtol, atol=1e-15, t_eval=T_EVAL, method=method)
                fulls.append({"method": method, "rtol": rtol, "seconds": f.stats["seconds"], "error": err(f, ref),
                              "nfev": f.stats["nfev"], "nlu": f.stats["nlu"], "status": f.status})
        row["full"] = fulls
        rows.append(row)
        if checkpoint is not None:   # a partial record after every ε: long runs can be stopped without loss
            checkpoint({"N": N, "n": s.n, "table_seconds": table_seconds, "table": table.stats, "rows": rows,
                        "partial": True})
        log(f"  eps={eps:g}: ref {row['ref_seconds']:.1f}s; corrected err {row['corrected_error']:.2e} "
            f"({row['corrected_seconds_integrate']:.2f}s + table {table_seconds:.2f}s); reduced err "
            f"{row['reduced_error']:.2e}; full " + ", ".join(f"{f['method']}@{f['rtol']:g}: {f['seconds']:.1f}s "
                                                            f"err {f['error']:.1e}" for f in fulls))
    big = sorted(rows, key=lambda r: -r["eps"])[:2]
    C = max(r["corrected_error"] / r["eps"] ** 2 for r in big)
    for r in rows:
        r["C_fit"] = C
        r["corrected_within_2Ceps2"] = bool(r["corrected_error"] <= 2 * C * r["eps"] ** 2)
        target = max(r["corrected_error"], 2 * C * r["eps"] ** 2)
        ok = [f for f in r["full"] if f["error"] <= target and f["status"] == 0]
        fastest = min(ok, key=lambda f: f["seconds"]) if ok else None
        r["fastest_full_at_equal_accuracy"] = fastest
        for key in ("integrate", "with_table"):
            r[f"speedup_{key}"] = (fastest["seconds"] / r[f"corrected_seconds_{key}"]) if fastest else None
    return {"N": N, "n": s.n, "table_seconds": table_seconds, "table": table.stats, "rows": rows}


def bench_warm(N: int, steps: int, dy: float, amg_cold: bool = True) -> dict:
    s = system(N)
    ys = [np.array([0.2 + dy * k]) for k in range(steps)]
    out = {"N": N, "n": s.n, "ys": [float(y[0]) for y in ys], "public_cold": [], "amg_cold": [], "amg_warm": []}
    cold = s.stationary_solver(warm=False, solver="amg")
    warm = s.stationary_solver(warm=True, solver="amg")
    for y in ys:
        a = s.gen.propensities(y)
        Q = s.gen.Q(y, a)
        Qc = Q.copy()
        Qc.eliminate_zeros()
        t0 = time.perf_counter()
        try:
            p_pub, info = sp_ode.stationary_distribution(Qc, return_info=True)
            out["public_cold"].append({"seconds": time.perf_counter() - t0, "residual": info.get("residual"),
                                       "iterations": info.get("iterations"), "converged": info.get("converged"),
                                       "bound": info.get("error_bound", info.get("bound"))})
        except Exception as exc:  # recorded, not hidden: the public solver's failure is a result
            p_pub = None
            out["public_cold"].append({"seconds": time.perf_counter() - t0, "error": f"{type(exc).__name__}: {exc}"})
        for key, ws in (("amg_cold", cold), ("amg_warm", warm)) if amg_cold else (("amg_warm", warm),):
            t0 = time.perf_counter()
            Q = s.gen.Q(y)               # assembly is part of an evaluation
            p, info = ws.solve(Q, y)
            rec = {"seconds": time.perf_counter() - t0, "steps": info["steps"], "residual": info["residual"],
                   "rebuilds": ws.rebuilds, "preconditioner": info["preconditioner"]}
            if p_pub is not None:
                rec["max_abs_diff_vs_public"] = float(np.max(np.abs(p - p_pub)))
            out[key].append(rec)
        log(f"N={N} y={y[0]:.3f}: public {out['public_cold'][-1]['seconds']:.2f}s, " + "".join(
            f"{k} {out[k][-1]['seconds']:.2f}s ({out[k][-1]['steps']} steps) " for k in ("amg_cold", "amg_warm")
            if out[k]))
    # the first warm evaluation builds the hierarchy: per-evaluation times exclude it
    mean = lambda rs: float(np.mean([r["seconds"] for r in rs[1:]]))
    keys = [k for k in ("public_cold", "amg_cold", "amg_warm") if out[k]]
    out["mean_seconds_after_first"] = {k: mean(out[k]) for k in keys}
    means = out["mean_seconds_after_first"]
    out["speedup_warm_vs_public_cold"] = means["public_cold"] / means["amg_warm"]
    out["speedup_warm_vs_amg_cold"] = means["amg_cold"] / means["amg_warm"] if "amg_cold" in means else None
    out["peak_rss_gb"] = peak_rss_gb()
    return out


def bench_stationary(N: int) -> dict:
    m = cascade(N)
    t0 = time.perf_counter()
    space = m.space()
    Q = m.network.generator(space, m.y0)
    build = time.perf_counter() - t0
    rss_build = peak_rss_gb()
    log(f"N={N}: n={space.n}, nnz={Q.nnz}, build {build:.1f}s, peak {rss_build:.2f} GB")
    t0 = time.perf_counter()
    try:
        p, info = sp_ode.stationary_distribution(Q, return_info=True)
    except sp_ode.ConvergenceError as exc:  # recorded, not lost: how far each method got
        solve = time.perf_counter() - t0
        rec = {"N": N, "n": space.n, "nnz": int(Q.nnz), "build_seconds": build, "solve_seconds": solve,
               "peak_rss_gb_after_build": rss_build, "peak_rss_gb": peak_rss_gb(), "failed": str(exc),
               "bound": exc.bound, "tol": exc.tol, "info": exc.info}
        log(f"  FAILED after {solve:.1f}s, peak {rec['peak_rss_gb']:.2f} GB: {exc}")
        return rec
    solve = time.perf_counter() - t0
    rec = {"N": N, "n": space.n, "nnz": int(Q.nnz), "build_seconds": build, "solve_seconds": solve,
           "peak_rss_gb_after_build": rss_build, "peak_rss_gb": peak_rss_gb(), "negatives": int((p < 0).sum()),
           "info": info, "fsp_outflow_rate": float(p @ m.network.outflow(space, m.y0)),
           "mean_A": float(space.marginal(p, "A") @ np.arange(N)), "mean_A_closed_form": m.closed_form["means"](m.y0)["A"]}
    log(f"  solve {solve:.1f}s, peak {rec['peak_rss_gb']:.2f} GB, info {info}")
    return rec


PINNED_SETTINGS = {  # name: (pyamg builder, GMRES restart)
    "rs_restart100": ("ruge_stuben_solver", 100),
    "rs_restart50": ("ruge_stuben_solver", 50),
    "rs_restart20": ("ruge_stuben_solver", 20),
    "air_restart20": ("air_solver", 20),
    # what the solver does since session 7: AIR (degree 1) on G = A_kᵀ, its adjoint cycle on A_k
    "air_adjoint_restart40": ("air_adjoint", 40),
}


def bench_pinned(N: int, settings: list[str]) -> dict:
    """The pinned linear solve of the sparse stationary solver alone (docs/bench/network.md §3): GMRES steps,
    seconds and AMG setup for each (hierarchy, restart) setting, relative tolerance 1e-13, one thread."""
    import pyamg
    import scipy.sparse.linalg as spla
    from threadpoolctl import threadpool_limits

    from sp_ode.markov.solvers import locate_mass, pinned_system, quiet_stdout

    m = cascade(N)
    space = m.space()
    A = (-m.network.generator(space, m.y0).T).tocsr()
    A.sort_indices()
    guess = locate_mass(A)
    k = int(np.argmax(guess))
    Ak, b, keep = pinned_system(A, k)
    x0 = np.maximum(guess[keep] / guess[k], 0.0)
    rec = {"N": N, "n": space.n, "rows": {}}
    with threadpool_limits(1):
        for name in settings:
            builder, restart = PINNED_SETTINGS[name]
            t = time.perf_counter()
            if builder == "air_adjoint":
                from sp_ode.markov.solvers import AIR_OPTIONS, AirCycles

                G = Ak.T.tocsr()
                with quiet_stdout():
                    cycles = AirCycles(pyamg.air_solver(G, **AIR_OPTIONS), finest_transpose=Ak)
                precond, levels, complexity = cycles.adjoint, cycles.levels, cycles.operator_complexity
            else:
                with quiet_stdout():
                    ml = getattr(pyamg, builder)(Ak)
                precond, levels, complexity = ml.aspreconditioner(cycle="V"), len(ml.levels), ml.operator_complexity()
            setup = time.perf_counter() - t
            steps = [0]

            def count(_):
                steps[0] += 1
            t = time.perf_counter()
            with quiet_stdout():
                x, status = spla.gmres(Ak, b, x0=x0, rtol=1e-13, atol=0.0, restart=restart, maxiter=600, M=precond,
                                       callback=count, callback_type="legacy")
            solve = time.perf_counter() - t
            row = {"setup_seconds": setup, "solve_seconds": solve, "gmres_steps": steps[0], "converged": status == 0,
                   "relative_residual": float(np.linalg.norm(b - Ak @ x) / np.linalg.norm(b)),
                   "levels": levels, "operator_complexity": float(complexity)}
            if builder == "air_adjoint":    # the hitting-time solve with the same hierarchy (the solver's probe)
                hsteps = [0]
                t = time.perf_counter()
                with quiet_stdout():
                    _, hstatus = spla.gmres(G, np.ones(G.shape[0]), rtol=0.1 / np.sqrt(G.shape[0]), atol=0.0,
                                            restart=restart, maxiter=600, M=cycles.forward,
                                            callback=lambda _: hsteps.__setitem__(0, hsteps[0] + 1),
                                            callback_type="legacy")
                row.update(hitting_steps=hsteps[0], hitting_seconds=time.perf_counter() - t,
                           hitting_converged=hstatus == 0)
                del cycles, G
            else:
                del ml
            rec["rows"][name] = row
            log(f"N={N} {name}: {row}")
    return rec


def _nbytes(M) -> int:
    return int(M.data.nbytes + M.indices.nbytes + M.indptr.nbytes)


def bench_memory(N: int) -> dict:
    """Bytes per state of Q, A = −Qᵀ, A_k, the classical-AMG hierarchy of A_k, and G = A_kᵀ with the AIR
    cycles the solver builds on it (docs/cme_memory.md)."""
    import pyamg

    from sp_ode.markov.solvers import AIR_OPTIONS, AirCycles, quiet_stdout

    m = cascade(N)
    space = m.space()
    Q = m.network.generator(space, m.y0)
    n = space.n
    A = (-Q.T).tocsr()
    keep = np.ones(n, dtype=bool)
    keep[n // 2] = False
    Ak = A[keep][:, keep].tocsr()
    t0 = time.perf_counter()
    ml = pyamg.ruge_stuben_solver(Ak)
    setup = time.perf_counter() - t0
    amg = sum(_nbytes(getattr(lvl, k)) for lvl in ml.levels for k in ("A", "P", "R") if hasattr(lvl, k))
    rec = {"N": N, "n": n, "nnz_per_row": Q.nnz / n, "index_dtype": str(Q.indices.dtype),
           "Q_bytes_per_state": _nbytes(Q) / n, "A_bytes_per_state": _nbytes(A) / n,
           "Ak_bytes_per_state": _nbytes(Ak) / n, "amg_bytes_per_state": amg / n, "amg_levels": len(ml.levels),
           "operator_complexity": float(ml.operator_complexity()), "amg_setup_seconds": setup}
    del ml
    G = Ak.T.tocsr()
    t0 = time.perf_counter()
    with quiet_stdout():
        cycles = AirCycles(pyamg.air_solver(G, **AIR_OPTIONS), finest_transpose=Ak)
    setup = time.perf_counter() - t0
    rec.update(G_bytes_per_state=_nbytes(G) / n, air_cycles_bytes_per_state=cycles.nbytes / n, air_levels=cycles.levels,
               air_operator_complexity=cycles.operator_complexity, air_setup_seconds=setup)
    log(rec)
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("part", nargs="?", choices=("eps", "warm", "stationary", "memory", "pinned"), default="eps")
    ap.add_argument("--settings", nargs="+", default=list(PINNED_SETTINGS), choices=list(PINNED_SETTINGS),
                    help="pinned: solver settings to time")
    ap.add_argument("--N", type=int, nargs="+", default=None)
    ap.add_argument("--eps", type=float, nargs="+", default=[1e-2, 1e-3, 1e-4, 1e-5, 1e-6])
    ap.add_argument("--rtols", type=float, nargs="+", default=[1e-6, 1e-8, 1e-10])
    ap.add_argument("--ref-rtol", type=float, default=1e-13, help="eps: reference rtol (sessions 3–6: 1e-11)")
    ap.add_argument("--ref-method", choices=("BDF", "Radau"), default="Radau",
                    help="eps: the reference solver (sessions 3–6: BDF)")
    ap.add_argument("--radau", action="store_true")
    ap.add_argument("--steps", type=int, default=8, help="warm: reduced-flow evaluations per size")
    ap.add_argument("--no-amg-cold", action="store_true", help="warm: skip our cold AMG baseline (large n)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, every part (seconds)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    rec: dict = {"python": sys.version.split()[0], "argv": sys.argv[1:]}
    if args.smoke:
        rec["eps"] = [bench_eps(8, [1e-2, 1e-3], [1e-6], False, 1e-12)]   # Radau reference
        rec["warm"] = [bench_warm(20, 3, 0.005)]
        rec["stationary"] = [bench_stationary(30)]
        rec["pinned"] = [bench_pinned(20, ["rs_restart20", "air_restart20", "air_adjoint_restart40"])]
        rec["memory"] = [bench_memory(20)]
    elif args.part == "eps":
        rec["eps"] = []

        def checkpoint(block):
            if args.out:
                write_json(args.out, {**rec, "eps": [*rec["eps"], block]})

        for N in args.N or [32, 100]:
            rec["eps"].append(bench_eps(N, args.eps, args.rtols, args.radau, args.ref_rtol, checkpoint,
                                        ref_method=args.ref_method))
    elif args.part == "warm":
        rec["warm"] = [bench_warm(N, args.steps, 0.005, not args.no_amg_cold) for N in (args.N or [317, 1000])]
    elif args.part == "pinned":
        rec["pinned"] = [bench_pinned(N, args.settings) for N in (args.N or [316, 1000])]
    elif args.part == "memory":
        rec["memory"] = [bench_memory(N) for N in (args.N or [500])]
    else:
        rec["stationary"] = [bench_stationary(N) for N in (args.N or [3162])]
    if args.out:
        write_json(args.out, rec)
    if args.json:
        print(dumps(rec))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
