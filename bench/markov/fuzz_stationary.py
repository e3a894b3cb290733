"""Fuzz the error bounds of ``sp_ode.stationary_distribution`` against exact rational answers (issue 11).

Two families, each checked against ``sp_ode.markov.reference.exact_stationary``
(Gaussian elimination over the rationals on the float rates):

1. **wild** — the issue's fuzz: n = 1 … 30, a ring plus up to 2n random edges, rates
   10^U(−12, 12), as dense / csr / csc / coo; every method through the public call.
   Pass: each answer is within its reported bound (ℓ1, and componentwise for GTH on
   entries ≥ 1e-300) or the call raises ``ConvergenceError``.
2. **blocks** — nearly decoupled chains (2–3 blocks of 2–7 states, rates 10^U(−3, 3)
   inside, one pair of rates δ = 10^U(−14, −1) between neighbouring blocks), the raw
   normwise methods (solve, sparse, jax) *without* escalation: the bound must cover the
   error even when the answer is poor.  Reports how tight the finite bounds are.

    python -m bench.markov.fuzz_stationary --cases 300 --seed 7 --out results/markov/stationary_fuzz.json
    python -m bench.markov.fuzz_stationary --smoke      # seconds; run by the test suite
"""
from __future__ import annotations

import argparse
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import sp_ode
from bench._common import default_record
from sp_ode.core.files import dumps, write_json
from sp_ode.markov.reference import exact_stationary
from sp_ode.markov.stationary import METHODS as RAW


def l1(p, exact) -> float:
    return float(sum(abs(Fraction(float(x)) - e) for x, e in zip(p, exact)))


def wild(rng, cases: int) -> dict:
    calls = violations = raised = 0
    for case in range(cases):
        n = int(rng.integers(1, 31))
        R = np.zeros((n, n))
        R[np.arange(n), (np.arange(n) + 1) % n] += 10.0 ** rng.uniform(-12, 12, n)
        for _ in range(int(rng.integers(0, 2 * n + 1))):
            i, j = rng.integers(0, n, 2)
            if i != j:
                R[i, j] = 10.0 ** rng.uniform(-12, 12)
        np.fill_diagonal(R, 0.0)
        Q = R - np.diag(R.sum(axis=1))
        exact = exact_stationary(Q)
        fmt = ("dense", "csr", "csc", "coo")[case % 4]
        Qf = Q if fmt == "dense" else sp.csr_array(Q).asformat(fmt)
        for m in ("gth", "solve", "sparse", "jax"):
            calls += 1
            try:
                p, info = sp_ode.stationary_distribution(Qf, method=m, return_info=True)
            except sp_ode.ConvergenceError:
                raised += 1
                continue
            ok = l1(p, exact) <= info["bound"]
            if info["componentwise_bound"] is not None:
                rel = max(abs(Fraction(float(x)) - e) / e for x, e in zip(p, exact) if e >= 1e-300)
                ok = ok and rel <= info["componentwise_bound"]
            violations += not ok
    return {"cases": cases, "calls": calls, "violations": violations, "convergence_errors": raised}


def blocks(rng, cases: int) -> dict:
    calls = violations = 0
    ratios = []
    for _ in range(cases):
        nb, bs = int(rng.integers(2, 4)), int(rng.integers(2, 8))
        n = nb * bs
        R = np.zeros((n, n))
        for b in range(nb):
            blk = slice(b * bs, (b + 1) * bs)
            R[blk, blk] = 10.0 ** rng.uniform(-3, 3, (bs, bs)) * (rng.random((bs, bs)) < 0.7)
            for i in range(bs):  # a ring inside each block keeps it strongly connected
                R[b * bs + i, b * bs + (i + 1) % bs] = max(R[b * bs + i, b * bs + (i + 1) % bs],
                                                         10.0 ** rng.uniform(-3, 3))
        delta = 10.0 ** rng.uniform(-14, -1)
        for b in range(nb):
            i, j = b * bs + int(rng.integers(bs)), ((b + 1) % nb) * bs + int(rng.integers(bs))
            R[i, j], R[j, i] = delta * rng.uniform(0.5, 2), delta * rng.uniform(0.5, 2)
        np.fill_diagonal(R, 0.0)
        Q = R - np.diag(R.sum(axis=1))
        exact = exact_stationary(Q)
        for m in ("solve", "sparse", "jax"):
            Qm = sp.csr_array(Q) if m == "sparse" else Q
            p, info = RAW[m](Qm, tol=1e-6, maxiter=None)
            calls += 1
            if not np.all(np.isfinite(p)):
                continue  # a failed solve: its bound is ∞ (checked by the escalation tests)
            err = l1(p, exact)
            violations += not err <= info["bound"]
            if np.isfinite(info["bound"]):
                ratios.append(info["bound"] / max(err, 1e-300))
    r = np.array(ratios) if ratios else np.array([np.nan])
    return {"cases": cases, "calls": calls, "violations": violations, "finite_bounds": len(ratios),
            "bound_over_error_min": float(r.min()), "bound_over_error_median": float(np.median(r))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=300, help="generators per family")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--smoke", action="store_true", help="8 cases per family (for the test suite)")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--out", default=None, help="also write the JSON record here")
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    cases = 8 if args.smoke else args.cases
    rng = np.random.default_rng(args.seed)
    rec = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "seed": args.seed,
           "wild": wild(rng, cases), "blocks": blocks(rng, cases)}
    rec["passed"] = rec["wild"]["violations"] == 0 and rec["blocks"]["violations"] == 0
    if args.out:
        write_json(args.out, rec)
    if args.json:
        print(dumps(rec))
    else:
        w, b = rec["wild"], rec["blocks"]
        print(f"wild:   {w['cases']} generators, {w['calls']} calls, {w['violations']} outside their bound, "
              f"{w['convergence_errors']} ConvergenceError")
        print(f"blocks: {b['cases']} generators, {b['calls']} raw calls, {b['violations']} outside their bound; "
              f"{b['finite_bounds']} finite bounds, bound/error min {b['bound_over_error_min']:.3g}, "
              f"median {b['bound_over_error_median']:.3g}")
    return 0 if rec["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
