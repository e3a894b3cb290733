"""Banded GTH against dense GTH and the sparse AMG solve on nearly decoupled sparse chains.

Cases with exact references (reversible grids: p ∝ exp(−V); birth–death: exact rationals):
two k×k grids joined by one pair of rates δ, and the KMR valley chain.  Prints a table and
writes a JSON record (``--out``).  ``--smoke`` uses small sizes.

    python -m bench.markov.banded_gth --out results/markov/banded_gth.json
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

import sp_ode
from bench._common import default_record
from sp_ode.markov.reference import exact_birth_death, kmr_chain, reversible_grids


def _run(Q, exact, method):
    t0 = time.perf_counter()
    try:
        p, info = sp_ode.stationary_distribution(Q, method=method, return_info=True, tol=1.0)
    except Exception as exc:  # a method that cannot run (size) is a row, not a crash
        return {"method": method, "error": f"{type(exc).__name__}: {exc}"[:160]}
    seconds = time.perf_counter() - t0
    big = exact > 1e-290
    rel = float(np.max(np.abs(p[big] - exact[big]) / exact[big]))
    return {"requested": method, "method": info["method"], "seconds": seconds, "max_rel_error": rel,
            "l1_error": float(np.abs(p - exact).sum()), "bound": info["bound"]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    ks = [10] if args.smoke else [50, 150]
    cases = []
    for k in ks:
        Q, exact = reversible_grids(k, 1e-15)
        cases.append((f"two {k}x{k} grids, delta=1e-15 (n={2 * k * k})", Q, exact))
    up, down = kmr_chain(50 if args.smoke else 200, 1e-15)
    ref = exact_birth_death(up, down)
    cases.append((f"KMR N={len(up)}, eps=1e-15", sp_ode.birth_death(up, down, sparse=True),
                  np.array([float(x) for x in ref])))
    rows = []
    for name, Q, exact in cases:
        n = Q.shape[0]
        for method in ("banded", "sparse") + (("gth",) if n <= 6000 else ()):
            Qm = Q.toarray() if method == "gth" else Q
            r = _run(Qm, exact, method)
            r["case"] = name
            rows.append(r)
            if "error" in r:
                print(f"{name:<40} {method:<7} {r['error']}")
            else:
                print(f"{name:<40} {method:>7} -> {r['method']:<7} {r['seconds']:8.2f} s  max rel err {r['max_rel_error']:.2e}  "
                      f"l1 err {r['l1_error']:.2e}  bound {r['bound']:.2e}")
    record = {"command": "python -m bench.markov.banded_gth" + (" --smoke" if args.smoke else ""),
              "threads": {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
              "load_average": os.getloadavg(), "rows": rows}
    if args.out:
        Path(args.out).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
