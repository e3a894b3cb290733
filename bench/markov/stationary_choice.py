"""Method choice by predicted cost for CME stationary laws: every available method against the chosen one.

Issue 35: the toggle switch's p_st (3721 states) took 20.5 s by dense GTH — the default route predicted
banded GTH cheap, banded GTH's range guard refused the answer, and the escalation went to dense GTH
(predicted 30× the sparse solve) instead of the sparse solve.  For four catalogue networks of 10³–10⁵
states this measures, one process and one BLAS thread, best of `--repeat`:

* each method as a user calls it, `stationary_distribution(Q, method=m)` for m in banded, gth (n ≤
  `DENSE_GTH_MAX`), sparse — with its own escalations, so a method that fails pays for its fallback;
* the default route, `stationary_distribution(Q)`, its choice (from `predicted_seconds`, counts ×
  fitted constants, never the clock) and the method that answered;

and reports default / fastest (the target: ≤ 2).  It also runs `sp_ode.cme_stationary` on the toggle
switch and on a product of two immigration–death species: the bound on the infinite CME with its
linear-algebra and truncation parts, certified whichever method the route takes.

    python -m bench.markov.stationary_choice --out results/markov/stationary_choice.json

``--smoke`` runs two small cases.
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np

import sp_ode
from bench._common import default_record
from sp_ode.markov.stationary import DENSE_GTH_MAX, predicted_seconds
from sp_ode.networks.models import birth_death, cascade, telegraph, toggle_switch


def _cases(smoke: bool):
    def gen(model, y):
        return model.network.generator(model.space(), [y])

    if smoke:
        return [("toggle N=20", lambda: gen(toggle_switch(20), 1.0)), ("cascade N=20", lambda: gen(cascade(20), 0.2))]
    return [("toggle N=61 (issue 35)", lambda: gen(toggle_switch(61), 1.0)),
            ("cascade N=100", lambda: gen(cascade(100), 0.2)),
            ("telegraph N=5000", lambda: gen(telegraph(5000, k_m=1250.0), 1.0)),
            ("birth-death N=30000", lambda: gen(birth_death(30000, k=15000.0), 1.0))]


def _timed(fn, repeat: int):
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _run_case(name, build, repeat: int) -> dict:
    Q = build()
    n = Q.shape[0]
    pred = predicted_seconds(Q)
    pred.pop("plan")
    row = {"case": name, "n": n, "nnz": int(Q.nnz), "bandwidth": pred["bandwidth"],
           "predicted_seconds": {k: pred[k] for k in ("banded", "gth", "sparse")}, "methods": {}}
    for m in ("banded", "gth", "sparse"):
        if m == "gth" and n > DENSE_GTH_MAX:
            row["methods"][m] = {"available": False, "why": f"n = {n} > DENSE_GTH_MAX = {DENSE_GTH_MAX}"}
            continue
        t, (p, info) = _timed(lambda m=m: sp_ode.stationary_distribution(Q, method=m, return_info=True), repeat)
        row["methods"][m] = {"available": True, "seconds": t, "answered_by": info["method"],
                             "bound": info["bound"], "componentwise_bound": info["componentwise_bound"]}
    t, (p, info) = _timed(lambda: sp_ode.stationary_distribution(Q, return_info=True), repeat)
    fastest = min((v["seconds"], k) for k, v in row["methods"].items() if v["available"])
    row["route_predicted_seconds"] = info["selection"]["predicted_seconds"]     # the sparse route with its certificate
    row["default"] = {"seconds": t, "chosen": info["selection"]["chosen"], "answered_by": info["method"],
                      "rule": info["selection"]["rule"], "escalations": [e["method"] for e in info["escalations"]],
                      "bound": info["bound"], "componentwise_bound": info["componentwise_bound"]}
    row["fastest"] = {"method": fastest[1], "seconds": fastest[0]}
    row["ratio_default_to_fastest"] = t / fastest[0]
    print(f"{name:24s} n={n:6d}  " + "  ".join(
        f"{k} {v['seconds']:.3g}s" if v["available"] else f"{k} —" for k, v in row["methods"].items())
        + f"  default {t:.3g}s ({row['default']['chosen']}→{info['method']})  ratio {row['ratio_default_to_fastest']:.2f}",
        flush=True)
    return row


def _certified(smoke: bool) -> list[dict]:
    from scipy.stats import poisson

    out = []
    product = sp_ode.ReactionNetwork("0 -> A, 4; A -> 0, 2; 0 -> B, 1.5; B -> 0, 1")
    nets = [("product of Poissons (2, 1.5)", product, None)]
    if not smoke:
        nets.append(("toggle switch a=20, K=6, h=3", toggle_switch(61).network, [1.0]))
    for name, net, y in nets:
        t0 = time.perf_counter()
        res = sp_ode.cme_stationary(net, y=y, tol=1e-6)
        t = time.perf_counter() - t0
        row = {"case": name, "n": res.space.n, "bounds": res.info["expansions"][-1]["bounds"], "seconds": t,
               "status": res.status, "bound": res.bound, "linear_algebra": res.info["linear_algebra"]["l1_bound"],
               "linear_algebra_method": res.info["linear_algebra"]["method"],
               "truncation": res.info["truncation"]["bound"], "mass_outside": res.info["truncation"]["mass_outside"],
               "boxes_tried": len(res.info["expansions"])}
        if net is product:
            pi = poisson.pmf(res.space.states[:, 0], 2.0) * poisson.pmf(res.space.states[:, 1], 1.5)
            row["exact_l1_error"] = float(np.abs(res.p - pi).sum() + 1.0 - pi.sum())
        print(f"cme_stationary {name}: n={row['n']} {row['status']} bound {row['bound']:.3g} = LA "
              f"{row['linear_algebra']:.3g} ({row['linear_algebra_method']}) + truncation {row['truncation']:.3g}; "
              f"{t:.3g} s" + (f"; exact error {row['exact_l1_error']:.3g}" if "exact_l1_error" in row else ""),
              flush=True)
        out.append(row)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    rows = [_run_case(name, build, 1 if args.smoke else args.repeat) for name, build in _cases(args.smoke)]
    record = {"cases": rows, "certified": _certified(args.smoke),
              "worst_ratio": max(r["ratio_default_to_fastest"] for r in rows),
              "command": "python -m bench.markov.stationary_choice" + (" --smoke" if args.smoke else "")}
    print(f"worst default / fastest: {record['worst_ratio']:.2f}")
    if args.out:
        args.out.write_text(json.dumps(record, indent=1, default=float) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
