"""`sp_ode.sweep` on one GPU (issue 16, item 3): the prepared script for a lent device.

Runs the Michaelis–Menten and `me20` sweeps of ``bench/sweeps/sweep.py`` (ε log-uniform in
[1e-6, 1e-2], a second parameter uniform in [0.5, 2], x0 = h⁽¹⁾(y0), y at 4 save times,
tol = 1e-6) with every JAX computation on the GPU, and beside each the vmapped full
Kvaerno5 solve of the same points at rtol 1e-6 (the equal-accuracy rtol measured on the
CPU, ``docs/bench/sweep.md``; its error against scipy Radau on ``--ref-count`` points is
measured again here).  Prints, per system: compile time, sweep time with and without the
1 % validation, the paths taken, vmap time, and the ratio.  Every part is timed against
``--budget`` seconds of wall clock: a part that would start past it is recorded as
skipped, so the script fits a 5-minute device slot.

    python -m bench.sweeps.gpu --out results/sweeps/gpu.json      # on a machine with a CUDA GPU
    python -m bench.sweeps.gpu --device cpu --smoke                   # the code path on a CPU (tests)

Without a GPU (and without ``--device cpu``) it prints that it was skipped and exits 0.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import jax
import numpy as np

import sp_ode
from bench._common import default_record
from bench.sweeps.sweep import TOL, TS, build, lane_args, lifted, one_system
from sp_ode.core.files import dumps, write_json


def first_order_x0(system, eps, values, name, y0):
    """h⁽¹⁾(y0) = φ + εh₁ per point (closed form T3 for a master equation, else the series)."""
    method = "closed_form" if isinstance(system, sp_ode.MasterEquationSystem) else "series"
    out = []
    for e, v in zip(eps, values):
        s = system.with_eps(float(e)).with_args({**system.args, name: np.asarray(v)})
        out.append(sp_ode.slow_manifold(s, order=1, method=method)(y0))
    return np.array(out)


def _device(kind: str):
    try:
        found = jax.devices(kind)
    except RuntimeError:
        return None
    return found[0] if found else None


def run_system(name: str, args, deadline: float) -> dict:
    system, pname, y0 = build(name)
    rng = np.random.default_rng(args.seed)
    N = args.n if name == "mm" else args.n_me20
    eps = np.exp(rng.uniform(np.log(1e-6), np.log(1e-2), N))
    vals = rng.uniform(0.5, 2.0, N)
    x0 = first_order_x0(system, eps, vals, pname, y0)
    params = {"eps": eps, pname: vals}
    kw = dict(ts=TS, tol=TOL, chunk_size=args.chunk_size, max_order=args.max_order, progress_bar=False)
    out = {"points": N, "chunk_size": args.chunk_size, "max_order": args.max_order}

    def timed(key, fn):
        t = time.perf_counter()
        value = fn()
        out[key] = time.perf_counter() - t
        return value

    def run_sweep(fraction):
        return sp_ode.sweep(system, params, (0.0, 2.0), x0, y0, validate_fraction=fraction, **kw)

    timed("first_sweep_with_compile_s", lambda: run_sweep(0.01))
    if time.perf_counter() > deadline:
        out["skipped"] = "budget spent after the first sweep"
        return out
    res = timed("sweep_s", lambda: run_sweep(0.01))
    out["summary"] = res.summary()
    timed("sweep_without_validation_s", lambda: run_sweep(0.0))
    if time.perf_counter() > deadline:
        out["skipped"] = "budget spent before the vmap baseline"
        return out

    L = lifted(system)

    def vmap_solve(idx):
        return sp_ode.simulate(L, (0.0, 2.0), x0[idx], np.broadcast_to(y0, (idx.size, y0.size)), ts=TS,
                               rtol=args.vmap_rtol, atol=1e-2 * args.vmap_rtol, throw=False,
                               args=lane_args(system, eps[idx], vals[idx], pname), batch_args=True)

    idx = np.arange(N)
    timed("vmap_first_with_compile_s", lambda: vmap_solve(idx))
    traj = timed("vmap_s", lambda: vmap_solve(idx))
    out["vmap_rtol"] = args.vmap_rtol
    out["vmap_failed_lanes"] = int(np.sum(np.asarray(traj.status) != 0))
    out["sweep_speedup_vs_vmap"] = out["vmap_s"] / out["sweep_s"]
    # equal accuracy, checked here too: both against scipy Radau (CPU) on a few points
    ref_idx = np.sort(rng.choice(N, size=min(args.ref_count, N), replace=False))
    ref = np.array([sp_ode.simulate(one_system(system, eps[i], vals[i], pname), (0.0, 2.0), x0[i], y0,
                                    backend="scipy", method="Radau", rtol=1e-12, atol=1e-14, ts=TS).y
                    for i in ref_idx])
    out["reference_points"] = int(ref_idx.size)
    out["sweep_max_error"] = float(np.abs(res.y[ref_idx] - ref).max())
    out["vmap_max_error"] = float(np.abs(np.asarray(traj.y)[ref_idx] - ref).max())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu")
    ap.add_argument("--systems", default="mm,me20")
    ap.add_argument("--n", type=int, default=10_000, help="points (Michaelis–Menten)")
    ap.add_argument("--n-me20", type=int, default=2_000, help="points (me20)")
    ap.add_argument("--chunk-size", type=int, default=4096)
    ap.add_argument("--max-order", type=int, default=1)
    ap.add_argument("--vmap-rtol", type=float, default=1e-6)
    ap.add_argument("--ref-count", type=int, default=20)
    ap.add_argument("--budget", type=float, default=270.0, help="seconds of wall clock for all parts")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.smoke:
        args.n, args.n_me20, args.chunk_size, args.ref_count, args.max_order = 8, 4, 8, 2, 0
        args.systems = "mm"
    device = _device(args.device)
    if device is None:
        print(f"gpu_sweep: skipped, no {args.device} device visible to JAX ({jax.default_backend()} only)")
        return 0
    start = time.perf_counter()
    deadline = start + args.budget
    record = {"issue": 16, "device": str(device), "platform": device.platform, "tol": TOL, "systems": {}}
    with jax.default_device(device), jax.enable_x64(True):
        for name in [s for s in args.systems.split(",") if s]:
            if time.perf_counter() > deadline:
                record["systems"][name] = {"skipped": "budget spent"}
                continue
            record["systems"][name] = run_system(name, args, deadline)
            print(f"gpu_sweep {name}: {record['systems'][name]}", file=sys.stderr, flush=True)
    record["wall_s"] = time.perf_counter() - start
    record["environment"] = {"python": platform.python_version(), "jax": jax.__version__,
                             "cpus": os.cpu_count(), "load_avg_end": os.getloadavg()}
    if args.out:
        write_json(args.out, record)
    print(dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
