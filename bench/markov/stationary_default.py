"""The default route of `stationary_distribution` on sparse Q: GTH against the sparse solve, measured side by side.

For CME generators of the network catalogue (telegraph gene, birth–death, toggle switch and
cascade grids) and each method — banded GTH, dense GTH (n ≤ 3000), the sparse solve without
and with the componentwise certificate (docs/theory.md §7.9) — it measures the wall time
(best of `--repeat`, one process, one BLAS thread), fits the cost model of
``sp_ode.markov.stationary.predicted_seconds`` (c0·n + c1·Σ_k L_k² for banded GTH, c0·n + c1·n³
for dense GTH, c0 + c1·nnz + c2·n/b for the sparse solve; least squares on relative residuals) and
reports, per case, what the default route chose, the fastest method, and the tail error of
each answer against banded GTH's log p_st (entries above 1e-300).

    python -m bench.markov.stationary_default --out results/markov/stationary_default.json

``--smoke`` runs three small cases.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import sp_ode
from bench._common import default_record
from sp_ode.markov.solvers import band_plan
from sp_ode.markov.stationary import COST_CONSTANTS, predicted_seconds
from sp_ode.networks.models import birth_death, cascade, telegraph, toggle_switch

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None


def _cases(smoke: bool):
    def gen(model, y):
        return model.network.generator(model.space(), [y])

    if smoke:
        return [("telegraph N=120", lambda: gen(telegraph(120, k_on=0.7, k_off=1.9, k_m=23.0), 1.0)),
                ("toggle N=20", lambda: gen(toggle_switch(20), 1.0)),
                ("cascade N=20", lambda: gen(cascade(20), 0.2))]
    out = [("telegraph N=120", lambda: gen(telegraph(120, k_on=0.7, k_off=1.9, k_m=23.0), 1.0))]
    out += [(f"telegraph N={N}", lambda N=N: gen(telegraph(N, k_m=N / 4), 1.0)) for N in (400, 2000, 10000)]
    out += [(f"birth-death N={N}", lambda N=N: gen(birth_death(N, k=N / 2), 1.0)) for N in (1000, 30000)]
    out += [(f"toggle N={N}", lambda N=N: gen(toggle_switch(N, a=0.4 * N, K=0.12 * N), 1.0))
            for N in (20, 50, 100, 150)]
    out += [(f"cascade N={N}", lambda N=N: gen(cascade(N), 0.2)) for N in (32, 50, 100, 150, 200)]
    return out


def _time(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        try:
            out = fn()
        except Exception as exc:  # a method that cannot run is a row, not a crash
            return None, f"{type(exc).__name__}: {str(exc)[:160]}"
        best = min(best, time.perf_counter() - t0)
    return best, out


def _tail_error(p, ref_log):
    if ref_log is None:
        return None
    keep = ref_log > np.log(1e-300)
    with np.errstate(divide="ignore"):
        lp = np.log(np.maximum(p, 0.0))
    return float(np.max(np.abs(np.expm1(lp[keep] - ref_log[keep]))))


def _fit(rows, key, features):
    """c ≥ 0 minimising Σ((c·f − t)/t)² (scipy NNLS on rows scaled by 1/t)."""
    from scipy.optimize import nnls

    pts = [(features(r), r[key]) for r in rows if isinstance(r.get(key), float)]
    if len(pts) < 2:
        return None
    A = np.array([f for f, _ in pts]) / np.array([t for _, t in pts])[:, None]
    c, _ = nnls(A, np.ones(len(pts)))
    return [float(v) for v in c]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    limits = threadpool_limits(limits=1) if threadpool_limits else None
    rows = []
    for name, build in _cases(args.smoke):
        Q = build()
        n = Q.shape[0]
        perm, b, nbytes = band_plan(Q)
        L = np.minimum(b, n - 1 - np.arange(n - 1, dtype=np.float64))
        row = {"case": name, "n": n, "nnz": int(Q.nnz), "bandwidth": b, "band_updates": float(np.sum(L * L))}
        pred = predicted_seconds(Q)
        row["predicted"] = {k: pred[k] for k in ("banded", "gth", "sparse")}
        t, res = _time(lambda: sp_ode.stationary_distribution(Q, method="banded", log=True, return_info=True),
                       args.repeat)
        ref_log = res[0] if t is not None and np.isfinite(res[1]["bound"]) else None
        row["banded"] = t if t is not None else res
        t, res = _time(lambda: sp_ode.stationary_distribution(Q, method="banded"), args.repeat)
        row["banded"] = t if t is not None else res
        row["banded_tail_error"] = _tail_error(res, ref_log) if t is not None else None
        if n <= 3000:
            D = Q.toarray()
            t, res = _time(lambda: sp_ode.stationary_distribution(D, method="gth"), args.repeat)
            row["gth"] = t if t is not None else res
            row["gth_tail_error"] = _tail_error(res, ref_log) if t is not None else None
        t, res = _time(lambda: sp_ode.stationary_distribution(Q, method="sparse", componentwise=False,
                                                              return_info=True), args.repeat)
        row["sparse"] = t if t is not None else res
        if t is not None:
            row["sparse_bound"] = res[1]["bound"]
            row["sparse_tail_error"] = _tail_error(res[0], ref_log)
        t, res = _time(lambda: sp_ode.stationary_distribution(Q, method="sparse", componentwise=True,
                                                              return_info=True), 1)
        row["sparse_componentwise"] = t if t is not None else res
        if t is not None:
            ref = res[1].get("refinement", {})
            row["componentwise_bound"] = res[1]["componentwise_bound"]
            row["componentwise_tail_error"] = _tail_error(res[0], ref_log)
            row["refinement"] = {k: ref.get(k) for k in ("history", "newton_steps", "gmres_steps", "phi_max",
                                                         "delta", "failure", "seconds")}
        t, res = _time(lambda: sp_ode.stationary_distribution(Q, return_info=True), args.repeat)
        row["default"] = t if t is not None else res
        if t is not None:
            row["default_method"] = res[1]["method"]
            row["default_rule"] = res[1].get("selection", {}).get("rule")
            row["default_tail_error"] = _tail_error(res[0], ref_log)
            row["default_componentwise_bound"] = res[1]["componentwise_bound"]
        rows.append(row)
        fmt = lambda v: f"{v:8.3f}" if isinstance(v, float) else f"{'—':>8}"
        print(f"{name:<20} n={n:<7} b={b:<4} banded {fmt(row['banded'])} gth {fmt(row.get('gth'))} "
              f"sparse {fmt(row['sparse'])} +cw {fmt(row['sparse_componentwise'])}  default {row.get('default_method')}"
              f" {fmt(row['default'])}  tail err default {row.get('default_tail_error')} sparse "
              f"{row.get('sparse_tail_error')}", flush=True)
    fits = {
        "banded": _fit([r for r in rows if r["bandwidth"] < 32], "banded", lambda r: [r["n"], r["band_updates"]]),
        "banded_blocked": _fit([r for r in rows if r["bandwidth"] >= 32], "banded",
                               lambda r: [r["n"], r["band_updates"]]),
        "gth": _fit(rows, "gth", lambda r: [r["n"], float(r["n"]) ** 3]),
        "sparse": _fit(rows, "sparse", lambda r: [1.0, r["nnz"], r["n"] / max(r["bandwidth"], 1)]),
    }
    print("fitted cost constants:", json.dumps(fits), "\nin use:", json.dumps(COST_CONSTANTS))
    record = {"command": "python -m bench.markov.stationary_default" + (" --smoke" if args.smoke else "")
              + (f" --repeat {args.repeat}" if args.repeat != 2 else ""),
              "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
              "load_average": os.getloadavg(), "cost_in_use": COST_CONSTANTS, "fitted": fits, "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1, default=float))
    if limits is not None:
        limits.unregister()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
