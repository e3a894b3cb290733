"""Batched parameter sweep (issue 3): diffrax `vmap` against a loop of scipy solves.

The system: the master equation over the 20-state driven ring (family ring20),
ε = 1e-3,

    ε x' = Q(y)ᵀx,   y' = c(⟨w, x⟩ − y),   x(0) = e₀, y(0) = y0,   t ∈ [0, 2],

with B parameter sets (c log-uniform in [0.5, 2], the phase θ of
w_i = 0.9 cos(2πi/20 + θ) uniform, y0 uniform in [−0.5, 0.5]; seed ``--seed``), saved
at 11 times.

**Equal accuracy, not equal rtol.**  A tight reference (scipy Radau, rtol 1e-12,
atol 1e-14) is computed on the first ``--ref-count`` sets.  Every path — diffrax
Kvaerno5 and each of scipy's stiff methods Radau, BDF and LSODA — runs at the loosest
rtol on the ladder 1e-6, 3e-7, 1e-7, …, 1e-11 (atol = 1e-2·rtol) whose max error on
those sets is ≤ ``--target-error`` (default 1e-9).  Then:

* **diffrax vmap** — ``sp_ode.simulate(..., args=..., batch_args=True)``: one compiled
  Kvaerno5 solve vmapped over the B sets.  Compilation (ahead of time) is timed apart
  from the solve (best of ``--repeat`` runs).
* **scipy loop** — ``sp_ode.simulate(..., backend="scipy", method=M)`` with the exact
  Jacobian from `jax.jacfwd` (jitted), one parameter set after another, for each M.
  ``--scipy-subset`` solves (the first k sets) are timed and the loop time is
  extrapolated linearly (×B/k), said so in the output.
* for context, a loop of compiled single diffrax solves on the same subset.

The headline ratio is the **fastest** scipy loop / diffrax vmap, measured side by side in
one run (each method's own ratio is recorded too); target ≥ 20×.

    python -m bench.systems.batched                   # B = 1000, scipy subset 50
    python -m bench.systems.batched --smoke           # B = 4, subset 2, t1 = 0.5: run by the tests
    python -m bench.systems.batched --json --out out/batched.json
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from bench._common import default_record, loosest_rtol
from sp_ode.core.files import dumps, write_json
from sp_ode.systems.catalogue import master_equation_entry
from sp_ode.systems.simulation import simulate

TARGET_RATIO = 20.0


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def parameter_sets(B: int, n: int, seed: int):
    """B parameter sets: args {"c": (B,), "w": (B, n)} and y0 (B, 1)."""
    rng = np.random.default_rng(seed)
    c = np.exp(rng.uniform(np.log(0.5), np.log(2.0), B))
    theta = rng.uniform(0, 2 * np.pi, B)
    w = 0.9 * np.cos(2 * np.pi * np.arange(n)[None, :] / n + theta[:, None])
    y0 = rng.uniform(-0.5, 0.5, (B, 1))
    return {"c": jnp.asarray(c), "w": jnp.asarray(w)}, y0


def threads() -> dict:
    info = {"cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "XLA_FLAGS": os.environ.get("XLA_FLAGS", ""), "jax_devices": [str(d) for d in jax.devices()]}
    try:
        from threadpoolctl import threadpool_info

        info["blas"] = ", ".join(f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info())
    except ImportError:
        info["blas"] = "threadpoolctl not installed"
    return info


LADDER = (1e-6, 3e-7, 1e-7, 3e-8, 1e-8, 3e-9, 1e-9, 3e-10, 1e-10, 3e-11, 1e-11)
SCIPY_METHODS = ("Radau", "BDF", "LSODA")


def max_error(traj, ref, r: int) -> float:
    return float(max(np.max(np.abs(traj.x[:r] - ref.x)), np.max(np.abs(traj.y[:r] - ref.y))))


def main(argv=None) -> int:
    """The benchmark, in float64 (`jax.enable_x64` for this call only: no process-wide JAX setting)."""
    with jax.enable_x64(True):
        return _main(argv)


def _main(argv) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch", type=int, default=1000, help="number of parameter sets B")
    parser.add_argument("--scipy-subset", type=int, default=50, help="scipy solves timed per method (then extrapolated)")
    parser.add_argument("--repeat", type=int, default=1, help="timed runs of the vmapped solve (best is kept)")
    parser.add_argument("--eps", type=float, default=1e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target-error", type=float, default=1e-9,
                        help="max abs error on the reference sets every path must reach (default 1e-9)")
    parser.add_argument("--ref-count", type=int, default=10,
                        help="sets solved by a tight Radau reference (rtol 1e-12) to choose each path's rtol")
    parser.add_argument("--methods", default=",".join(SCIPY_METHODS), help="scipy methods compared (comma-separated)")
    parser.add_argument("--smoke", action="store_true", help="B = 4, subset 2, t1 = 0.5, 1 repeat, short ladder")
    parser.add_argument("--saves", type=int, default=11, help="save times on [0, t1] (201: dense output)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON record here")
    args = parser.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    ladder = LADDER
    if args.smoke:  # the same code paths, small: B = 4, t ∈ [0, 0.5], no single-solve loop
        args.batch, args.scipy_subset, args.repeat, args.ref_count = 4, 2, 1, 2
        args.target_error = max(args.target_error, 1e-7)
        ladder = (1e-6, 1e-7, 1e-8)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    B, k = args.batch, min(args.scipy_subset, args.batch)
    r = min(args.ref_count, k)

    entry = master_equation_entry("ring20", "me20", eps=args.eps)
    n = entry.system.n
    params, y0 = parameter_sets(B, n, args.seed)
    x0 = np.tile(entry.x0, (B, 1))
    t1 = 0.5 if args.smoke else 2.0
    ts = np.linspace(0.0, t1, args.saves)
    span = (0.0, t1)
    sub = {key: v[:k] for key, v in params.items()}
    ref_args = {key: v[:r] for key, v in params.items()}
    log(f"bench.systems.batched: ring20 master equation, n = {n}, eps = {args.eps:g}, B = {B}, scipy subset {k}, "
        f"target error {args.target_error:g} on {r} reference sets")
    ref = simulate(entry.system, span, x0[:r], y0[:r], args=ref_args, batch_args=True, backend="scipy",
                   ts=ts, rtol=1e-12, atol=1e-14)

    # 1. each path's rtol at equal accuracy, chosen on the reference sets
    def diffrax_on_refs(rtol):
        return simulate(entry.system, span, x0[:r], y0[:r], args=ref_args, batch_args=True, ts=ts,
                        rtol=rtol, atol=1e-2 * rtol, throw=False)
    def error_of(traj):
        return max_error(traj, ref, r)
    choice = {"diffrax": loosest_rtol(diffrax_on_refs, error_of, args.target_error, ladder)}
    for method in methods:
        def scipy_on_refs(rtol, method=method):
            return simulate(entry.system, span, x0[:r], y0[:r], args=ref_args, batch_args=True, backend="scipy",
                            method=method, ts=ts, rtol=rtol, atol=1e-2 * rtol, throw=False)
        choice[method] = loosest_rtol(scipy_on_refs, error_of, args.target_error, ladder)
    for name, c in choice.items():
        log(f"  {name}: " + (f"rtol {c['rtol']:g}, error {c['error']:.2e}" if c["reached"]
                             else f"did not reach {args.target_error:g} by rtol {ladder[-1]:g}"))
    if not choice["diffrax"]["reached"]:
        log("bench.systems.batched: diffrax did not reach the target error; nothing to compare")
        return 1
    rtol_d = choice["diffrax"]["rtol"]
    opts = dict(ts=ts, rtol=rtol_d, atol=1e-2 * rtol_d)

    # 2. diffrax vmap: the first call compiles (timed apart), the rest reuse the cached executable
    traj = simulate(entry.system, span, x0, y0, args=params, batch_args=True, **opts)
    compile_time = traj.stats["compile_time"]
    vmap_times = [traj.stats["wall_time"]]
    for _ in range(args.repeat - 1):
        traj = simulate(entry.system, span, x0, y0, args=params, batch_args=True, **opts)
        vmap_times.append(traj.stats["wall_time"])
    vmap_time = min(vmap_times)
    log(f"  diffrax vmap: compile {compile_time:.2f} s, solve {vmap_time:.3f} s (best of {args.repeat})")

    # 3. scipy loops over the first k sets (JAX Jacobian), each at its own equal-accuracy rtol
    scipy = {}
    diff = 0.0
    for method in methods:
        if not choice[method]["reached"]:
            scipy[method] = {"reached": False}
            continue
        rt = choice[method]["rtol"]
        start = time.perf_counter()
        st = simulate(entry.system, span, x0[:k], y0[:k], args=sub, batch_args=True, backend="scipy",
                      method=method, ts=ts, rtol=rt, atol=1e-2 * rt)
        subset_time = time.perf_counter() - start - st.stats["compile_time"]
        diff = max(diff, float(max(np.max(np.abs(traj.x[:k] - st.x)), np.max(np.abs(traj.y[:k] - st.y)))))
        scipy[method] = {"reached": True, "rtol": rt, "error": choice[method]["error"], "subset_s": subset_time,
                         "loop_s": subset_time * B / k, "extrapolated": k < B, "all_succeeded": bool(st.success),
                         "mean_steps": float(np.mean(st.stats["num_steps"])),
                         "ratio_over_vmap": subset_time * B / k / vmap_time}
        log(f"  scipy {method} loop: {subset_time:.2f} s for {k} solves -> {subset_time * B / k:.1f} s for {B}")
    timed_methods = [m for m in methods if scipy[m].get("reached")]
    fastest = min(timed_methods, key=lambda m: scipy[m]["loop_s"]) if timed_methods else None

    # context: compiled single diffrax solves one after another (not in --smoke: a second compilation)
    diffrax_loop_time = None
    if not args.smoke:
        simulate(entry.system, span, x0[0], y0[0], args={"c": sub["c"][0], "w": sub["w"][0]}, **opts)
        start = time.perf_counter()
        for b in range(k):
            simulate(entry.system, span, x0[b], y0[b], args={"c": sub["c"][b], "w": sub["w"][b]}, **opts)
        diffrax_loop_time = (time.perf_counter() - start) * B / k
        log(f"  diffrax single-solve loop: {diffrax_loop_time:.1f} s for {B} (extrapolated from {k})")

    ratio = scipy[fastest]["loop_s"] / vmap_time if fastest else None
    record = {
        "system": "ring20 master equation, y' = c(<w, x> - y)", "n": n, "eps": args.eps, "batch": B,
        "t_span": [0.0, t1], "saves": len(ts), "seed": args.seed, "smoke": args.smoke,
        "target_error": args.target_error, "ladder": list(ladder),
        "reference": {"method": "scipy Radau", "rtol": 1e-12, "atol": 1e-14, "sets": r},
        "rtol_choice": choice,
        "diffrax_vmap": {"method": "Kvaerno5", "rtol": rtol_d, "error": choice["diffrax"]["error"],
                         "compile_s": compile_time, "solve_s": vmap_time, "solve_repeats_s": vmap_times,
                         "all_succeeded": bool(traj.success),
                         "mean_accepted_steps": float(np.mean(traj.stats["num_steps"])),
                         "max_accepted_steps": int(np.max(traj.stats["num_steps"])),
                         # under vmap every lane iterates until the slowest lane is done
                         "max_steps_incl_rejected": int(np.max(traj.stats["num_steps"]
                                                               + traj.stats["num_rejected_steps"]))},
        "scipy_loops": scipy, "scipy_subset": k, "jacobian": "jax.jacfwd (jitted)",
        "fastest_scipy": fastest,
        "diffrax_loop_s": diffrax_loop_time,
        "max_abs_diff_vmap_vs_scipy": diff,
        "ratio_fastest_scipy_loop_over_vmap": ratio,
        "ratio_diffrax_loop_over_vmap": None if diffrax_loop_time is None else diffrax_loop_time / vmap_time,
        "target": {"ratio": TARGET_RATIO, "met": bool(ratio is not None and ratio >= TARGET_RATIO)},
        "threads": threads(), "python": platform.python_version(), "jax": jax.__version__,
        "command": " ".join(["python", "-m", "bench.systems.batched", *(sys.argv[1:] if argv is None else argv)]),
    }
    if args.out is not None:
        write_json(args.out, record)
    if args.json:
        print(dumps(record))
    else:
        print(f"batched sweep: {B} parameter sets, ring20 (n = {n}), eps = {args.eps:g}, "
              f"every path at max error <= {args.target_error:g} on {r} reference sets")
        print(f"{'path':<40}{'rtol':>8}{'error':>10}{'seconds':>11}{'ratio':>8}")
        print(f"{'diffrax vmap (compile)':<40}{'':>8}{'':>10}{compile_time:>11.2f}")
        print(f"{'diffrax vmap (solve)':<40}{rtol_d:>8.0e}{choice['diffrax']['error']:>10.1e}{vmap_time:>11.3f}")
        for m in methods:
            v = scipy[m]
            if not v["reached"]:
                print(f"{'scipy ' + m + ' loop':<40}{'not reached':>18}")
                continue
            label = f"scipy {m} loop ({'extrap. from ' + str(k) if k < B else 'measured'})"
            print(f"{label:<40}{v['rtol']:>8.0e}{v['error']:>10.1e}{v['loop_s']:>11.2f}{v['ratio_over_vmap']:>7.1f}x")
        if diffrax_loop_time is not None:
            print(f"{'diffrax single-solve loop (extrap.)':<40}{rtol_d:>8.0e}{'':>10}{diffrax_loop_time:>11.2f}")
        if ratio is not None:
            print(f"ratio fastest scipy loop ({fastest}) / diffrax vmap: {ratio:.1f}x (target >= {TARGET_RATIO:g}x: "
                  f"{'met' if ratio >= TARGET_RATIO else 'MISSED'}); max |diff| {diff:.1e}")
    ok = traj.success and all(scipy[m]["all_succeeded"] for m in timed_methods) and diff <= 1e-6
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
