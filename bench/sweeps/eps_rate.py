"""A network sweep of ε together with a rate constant, checked against independent full solves, and reproduced.

Model: the telegraph gene of `sp_ode.networks.models` with a slow activator (G_off → G_on at k_on·y,
G_on → G_off at k_off, G_on → G_on + M at k_m, M → 0 at g_m; y' = k_p E[M] − g_p y, y(0) = 1), mRNA bound
``--mrna`` (n = 2(bound + 1) fast states; default 299: n = 600, the case that crashed: ``ValueError: `y`
must be finite`` at 40 points, "the slow-manifold table did not converge … 257 nodes" at 4).  ε log-uniform
in [1e-5, 1e-3] and k_m uniform in [15, 25] (four values, each with ``points/4`` values of ε), y at
t = 0.5, 1, 2, tol = 1e-6, for each ``--points`` (default 4, 40, 200) and each route (auto, reduced).

For every sweep: its status counts and paths, its worst estimate, and the max error against an
independent scipy Radau solve of the full sparse system (rtol 1e-10, from p_st(y0) + εh₁(y0)) at one
point per value of k_m (its largest ε) — the provenance of "correct".  Then reproducibility: the same
call again at chunk size 8 must give bit-identical y, paths and estimates (`identical_at_chunk_size_8`).

    python -m bench.sweeps.eps_rate --out results/sweeps/eps_rate.json
    python -m bench.sweeps.eps_rate --smoke
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

from bench._common import default_record

TS = np.array([0.5, 1.0, 2.0])
TOL = 1e-6


def system(mrna: int):
    from sp_ode.networks.models import telegraph
    from sp_ode.systems.network import NetworkSystem

    obj = telegraph(mrna)
    return NetworkSystem(obj.network, obj.space(), obj.slow, eps=1e-3, name="telegraph")


def params(points: int, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    k_m = rng.uniform(15, 25, 4)
    return {"eps": 10 ** rng.uniform(-5, -3, points), "k_m": np.repeat(k_m, max(1, points // 4))[:points]}


def radau(s, eps: float, k_m: float) -> np.ndarray:
    from sp_ode.sweeps._network import manifold_start

    s_i = s.with_parameters(k_m=k_m)
    x0 = manifold_start(s_i, np.array([1.0]), eps)
    return s_i.simulate((0.0, 2.0), [1.0], x0, eps=eps, method="Radau", rtol=1e-10, atol=1e-14, t_eval=TS).y


def run(s, points: int, route: str) -> dict:
    import sp_ode

    p = params(points)
    kw = dict(ts=TS, tol=TOL, route=route, validate_fraction=0.05, progress_bar=False)
    start = time.perf_counter()
    r = sp_ode.sweep(s, p, (0.0, 2.0), "manifold", [1.0], **kw)
    seconds = time.perf_counter() - start
    worst = 0.0
    for k in np.unique(p["k_m"]):
        idx = np.flatnonzero(p["k_m"] == k)
        i = int(idx[np.argmax(p["eps"][idx])])
        worst = max(worst, float(np.max(np.abs(radau(s, float(p["eps"][i]), float(k)) - r.y[i]))))
    again = sp_ode.sweep(s, p, (0.0, 2.0), "manifold", [1.0], chunk_size=8, **kw)
    same = all(np.array_equal(getattr(r, a), getattr(again, a)) for a in ("y", "path", "estimate", "status"))
    row = {"points": points, "route": route, "n": s.n, "seconds": seconds, "paths": r.summary()["paths"],
           "failed": int(np.sum(r.status == 2)), "resolved": int(np.sum(r.status == 1)),
           "worst_estimate": float(np.max(r.estimate)), "max_error_vs_radau": worst,
           "within_tol": bool(worst <= TOL), "identical_at_chunk_size_8": bool(same)}
    print(f"n = {s.n}, N = {points:4d}, {route:8s}: {seconds:7.2f} s, paths {row['paths']}, "
          f"max |y − Radau| {worst:.2e} (tol {TOL:g}), identical at chunk size 8: {same}", flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mrna", type=int, default=299)
    ap.add_argument("--points", type=int, nargs="+", default=[4, 40, 200])
    ap.add_argument("--routes", nargs="+", default=["auto", "reduced"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--smoke", action="store_true", help="n = 80, N = 4, route reduced")
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.smoke:
        args.mrna, args.points, args.routes = 39, [4], ["reduced"]
    s = system(args.mrna)
    rows = [run(s, n, route) for n in args.points for route in args.routes]
    record = {"bench": "sweep_eps_rate", "tol": TOL, "mrna_bound": args.mrna, "rows": rows,
              "machine": platform.platform(), "python": platform.python_version()}
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n")
    ok = all(r["within_tol"] and r["failed"] == 0 and r["identical_at_chunk_size_8"] for r in rows)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
