"""Benchmark: checking a claimed p_st written as fractions of fractions.

A kinetic-proofreading chain E → C1 → … → C_L, every C_i returning to E, has
p_C_k / p_E = Π_{i<k} r_i with r_i = k_{2i} / (k_{2i+1} + k_{2i+2}), and the claim a person
derives by hand is Horner-nested, p_E = 1 / (1 + r_0 (1 + r_1 (1 + …))).  Measured side by
side in one run, on the same claims:

  nested   the claim converted to the exact field as written (what `verify_stationary` did
           before: sympy expands every nested quotient), in a subprocess with a time limit;
  flat     `sp_ode.verify_stationary` (each entry brought over one denominator with
           `sympy.together` first, then the same exact check).

Both must find the claim TRUE.  Target: the nested form costs what the flat form costs.

    python -m bench.markov.nested_claims [--smoke] [--out FILE.json] [--limit SECONDS]
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import sympy

from bench._common import child_env, default_record
from sp_ode.symbolic.generator import balanced_sum, parse_generator, symbolic_generator
from sp_ode.symbolic.stationary import verify_stationary


def proofreading(L: int):
    k = sympy.symbols(f"k0:{2 * L + 2}", positive=True)
    rates = {}
    for i in range(L):
        rates[(i, i + 1)] = k[2 * i]
        rates[(i + 1, 0)] = k[2 * i + 1]
    Q = symbolic_generator(rates, L + 1)
    r = [k[2 * i] / (k[2 * i + 1] + (k[2 * i + 2] if i + 1 < L else 0)) for i in range(L)]

    def nest(i):
        return sympy.Integer(1) if i == L else 1 + r[i] * nest(i + 1)

    prods = [sympy.Integer(1)]
    for i in range(L):
        prods.append(prods[-1] * r[i])
    return Q, [sympy.Mul(p, 1 / nest(0), evaluate=False) for p in prods]


def check_as_written(L: int) -> dict:
    """The check before normalisation: the claim converted to the exact field unchanged."""
    Q, claim = proofreading(L)
    t = time.perf_counter()
    G, pe = parse_generator(Q, "Q", extra=claim)
    K, n = G.domain, G.n
    ok = all(balanced_sum([G.entry[(i, j)] * pe[i] for i in range(n)], K.zero) == 0 for j in range(n))
    ok = ok and balanced_sum(list(pe), K.zero) == K.one
    return {"seconds": time.perf_counter() - t, "true": bool(ok)}


def run_nested(L: int, limit: float) -> dict:
    code = f"import json; import bench.markov.nested_claims as b; print(json.dumps(b.check_as_written({L})))"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit, env=child_env())
    except subprocess.TimeoutExpired:
        return {"seconds": None, "true": None, "timed_out": f"> {limit:g} s"}
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_flat(L: int) -> dict:
    Q, claim = proofreading(L)
    t = time.perf_counter()
    cert = verify_stationary(Q, claim)
    return {"seconds": time.perf_counter() - t, "true": bool(cert.passed)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="L = 3, 4 only (seconds)")
    parser.add_argument("--out", default=None, help="write the record here (JSON)")
    parser.add_argument("--limit", type=float, default=300.0, help="time limit of one nested check (s)")
    args = parser.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    Ls = [3, 4] if args.smoke else [4, 5, 6, 7, 8]
    rows = []
    print(f"{'L':>3} {'states':>6} {'nested as written (s)':>22} {'together first (s)':>19}")
    for L in Ls:
        nested = run_nested(L, args.limit) if not args.smoke else check_as_written(L)
        flat = run_flat(L)
        rows.append({"L": L, "states": L + 1, "nested_as_written": nested, "together_first": flat})
        ns = nested["seconds"]
        shown = f"{ns:.3f}" if ns is not None else nested["timed_out"]
        print(f"{L:3d} {L + 1:6d} {shown:>22} {flat['seconds']:19.3f}")
    passed = all(r["together_first"]["true"] and r["nested_as_written"]["true"] in (True, None) for r in rows)
    print(f"passed: {passed} (every check that finished found the claim TRUE)")
    record = {"benchmark": "nested claims", "rows": rows, "passed": passed,
              "command": "python -m bench.markov.nested_claims" + (" --smoke" if args.smoke else "")}
    if args.out:
        with open(args.out, "x" if not args.smoke else "w") as fh:   # a full record is never overwritten
            json.dump(record, fh, indent=1)
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
