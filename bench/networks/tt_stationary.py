"""The stationary CME in tensor-train form against the sparse route and the closed form; the record.

The network is monomolecular with immigration (Jahnke & Huisinga 2007: its p_st on the infinite
lattice is a product of Poissons with the means of the linear steady state),

    0 → A (k),  A → B (1),  A → 0 (0.5),  B → 0 (0.8),  B → C (0.4),  C → 0 (1),
    E[A] = k/1.5,  E[B] = E[A]/1.2,  E[C] = 0.4·E[B],

solved by `sp_ode.networks.cme.stationary.cme_stationary` at the same tol = 1e-8 on ‖p − p_st‖₁ over the
infinite lattice (linear algebra + truncation), by `method="tt"` and by the sparse route
(`method="sparse"`): equal certified accuracy (the 10⁸ case, TT only, asks 1e-6: `CASE_TOL`). Each route takes the box the Foster–Lyapunov certificate
gives (the TT route raises every side to 2^L − 1, as the quantised TT needs, so its box is larger).
Each case runs in a fresh process (cold: imports included) and records the seconds, the peak RSS, the
certified bound and its two parts, the ℓ1 and largest errors of the three marginals against the closed
form, and the TT ranks. Cases (k, and the sparse route's box):

* ``1e6``: k = 20, about 1.0·10⁶ states — TT and sparse;
* ``1e7``: k = 75, about 1·10⁷ states, at tol 1e-6 (`CASE_TOL`) — TT; the sparse case is recorded as not run, with its reason: its
  measured peak at 1.2·10⁶ states (7.6 GiB, 6.4 kB per state for this 3-species, 6-reaction network)
  predicts ~60 GiB, above this machine's 24 GB;
* ``1e8``: k = 100 — TT only, on the box 512³ = 1.3·10⁸ states (given: `CASE_BOUNDS`) at tol 1e-6 (the
  sparse solve would need ~1 kB per state);
* ``cascade``: the 2-D cascade of `bench.networks.network stationary` (`sp_ode.networks.models.cascade`,
  N = 3162, y = y0) whose sparse solve at 10⁷ states is recorded in `results/networks/stationary_n1e7_air.json`
  (262 s, 9.74 GB, its own linear-algebra bound 1.04e-8): TT only, on the QTT box 4096² = 1.7·10⁷, at
  tol 1e-6 on the linear algebra (`tt_stationary`, no truncation part, as that record has none), E[A] and
  E[B] against the closed form N(0.1 + 0.2y);
* ``toggle``: where TT loses — the bistable toggle switch (`sp_ode.networks.models.toggle_switch`,
  N = 64, a = 25.6, y = 1) on its 64 × 64 box at tol 1e-6, both routes: a nearly decoupled chain,
  whose bordered system AMEn does not solve (the certificate says so) while the sparse route does.

    python -m bench.networks.tt_stationary --out results/networks/tt_stationary.json
    python -m bench.networks.tt_stationary --smoke          # k = 2 (about 2·10⁴ states), both routes, in-process
    python -m bench.networks.tt_stationary --case tt:1e6     # one case, its JSON on stdout
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import poisson

from bench._common import child_env, default_record, module_command
from sp_ode.core.files import dumps, write_json

CASES = {"smoke": 2.0, "1e6": 20.0, "1e7": 75.0, "1e8": 100.0, "cascade": None, "toggle": None}
# Cases the sparse route does not run, and why (the record says so in their place).
SPARSE_NOT_RUN = {("sparse", "1e8"): "the sparse solve needs ~1 kB per state or more: over 100 GB",
                  ("sparse", "1e7"): "its peak at 1.2·10⁶ states of this network (7.6 GiB, 6.4 kB per state) "
                                     "predicts ~60 GiB at 10⁷, above this machine's 24 GB",
                  ("sparse", "cascade"): "recorded by bench.networks.network stationary --N 3162 "
                                         "(results/networks/stationary_n1e7_air.json)"}
TT_ONLY = set(SPARSE_NOT_RUN)
TOL = 1e-8
# At 1.3·10⁸ states AMEn's first rung leaves ‖Qᵀq‖₁ = 2.6e-9 (certified 1.5e-7 with H = 29); its second
# rung (tolerance 1e-11, local GMRES 200 × 8) ran over 15 minutes without finishing, so that case asks 1e-6.
# The 10⁷ case too: at tol 1e-8 its second rung took 496 s on the first box (1.7·10⁷ states, certified 2.9e-9),
# whose truncation part then asked for a larger box (3.4·10⁷), where the second rung ran over 14 minutes.
CASE_TOL = {"1e8": 1e-6, "1e7": 1e-6}
# ... and its box is given (at tol 1e-6 the certificate's own box would be 256 × 512 × 256 = 3.4·10⁷ states).
CASE_BOUNDS = {"1e8": {"A": 511, "B": 511, "C": 511}}


def network(k: float):
    from sp_ode.networks.network import ReactionNetwork

    return ReactionNetwork("0 -> A, k; A -> B, 1; A -> 0, 0.5; B -> 0, 0.8; B -> C, 0.4; C -> 0, 1",
                           parameters={"k": k}, name="monomolecular_immigration")


def means(k: float) -> dict[str, float]:
    a = k / 1.5
    return {"A": a, "B": a / 1.2, "C": 0.4 * a / 1.2}


def _toggle(route: str) -> dict:
    from sp_ode.networks.cme.stationary import cme_stationary
    from sp_ode.networks.models import toggle_switch

    model = toggle_switch(N=64, a=25.6)
    t = time.perf_counter()
    res = cme_stationary(model.network, y=[1.0], tol=1e-6, bounds={"A": 63, "B": 63}, method=route)
    seconds = time.perf_counter() - t
    la, tr = res.info["linear_algebra"], res.info["truncation"]
    out = {"route": route, "size": "toggle", "box": [63, 63], "n": 4096, "seconds": seconds,
           "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "status": res.status,
           "bound": res.bound, "linear_algebra": la["l1_bound"], "truncation": tr["bound"], "tol": 1e-6,
           "worst_marginal_l1": None, "worst_marginal_max": None}
    if route == "tt":
        out.update(ranks_max=int(max(la["ranks"])), hitting_time_ranks_max=int(max(la["hitting_time_ranks"])),
                   attempts=la.get("attempts"))
    return out


def _cascade(route: str) -> dict:
    from sp_ode.networks.cme.tensor_train import SeparableGenerator, qtt_box, tt_stationary
    from sp_ode.networks.models import cascade

    N = 3162
    model = cascade(N)
    y = float(model.y0[0])
    t = time.perf_counter()
    gen = SeparableGenerator(model.network, qtt_box([N - 1, N - 1]), model.y0)
    dist, info = tt_stationary(gen, target=1e-6)
    seconds = time.perf_counter() - t
    mean = N * (0.1 + 0.2 * y)
    err = max(abs(dist.mean(s) - mean) for s in ("A", "B"))
    return {"route": route, "size": "cascade", "tol": 1e-6, "box": [int(b) for b in gen.bounds], "n": gen.n,
            "seconds": seconds, "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
            "status": "certified" if info["bound"] <= 1e-6 else "above_tol", "bound": info["bound"],
            "linear_algebra": info["bound"], "truncation": None, "hitting_time": info["hitting_time"],
            "mean_error": err, "worst_marginal_l1": None, "worst_marginal_max": None,
            "ranks_max": int(max(info["ranks"])), "hitting_time_ranks_max": int(max(info["hitting_time_ranks"])),
            "sparse_record": {"file": "results/networks/stationary_n1e7_air.json", "n": 9998244, "seconds": 261.96,
                              "build_seconds": 12.6, "peak_rss_gb": 9.74, "bound": 1.036e-08}}


def run_case(route: str, size: str) -> dict:
    """One solve in this process (call it in a fresh one): seconds, peak RSS, bound, errors against the closed form."""
    from sp_ode.networks.cme.stationary import cme_stationary

    if size == "toggle":
        return _toggle(route)
    if size == "cascade":
        return _cascade(route)
    k = CASES[size]
    net = network(k)
    t = time.perf_counter()
    tol = CASE_TOL.get(size, TOL)
    res = cme_stationary(net, tol=tol, method="tt" if route == "tt" else "sparse", bounds=CASE_BOUNDS.get(size))
    box = [int(v) for v in res.info["expansions"][-1]["bounds"].values()]
    seconds = time.perf_counter() - t
    errors = {}
    for s, mu in means(k).items():
        m = res.marginal(s)
        ref = poisson.pmf(np.arange(m.size), mu)
        errors[s] = {"l1": float(np.abs(m - ref).sum() + poisson.sf(m.size - 1, mu)), "max": float(np.abs(m - ref).max())}
    la, tr = res.info["linear_algebra"], res.info["truncation"]
    out = {"route": route, "size": size, "tol": tol, "box": box, "n": int(np.prod([b + 1 for b in box])),
           "boxes_tried": len(res.info["expansions"]), "k": k, "seconds": seconds,
           "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "status": res.status,
           "bound": res.bound, "linear_algebra": la["l1_bound"], "truncation": tr["bound"],
           "hitting_time": tr["hitting_time"], "marginal_errors": errors,
           "worst_marginal_l1": max(e["l1"] for e in errors.values()),
           "worst_marginal_max": max(e["max"] for e in errors.values())}
    out["bound_holds"] = bool(out["worst_marginal_l1"] <= (res.bound or np.inf)
                              + (res.p.negative_mass if route == "tt" else 0.0))
    if route == "tt":
        out.update(ranks_max=int(max(la["ranks"])), hitting_time_ranks_max=int(max(la["hitting_time_ranks"])),
                   operator_ranks_max=int(max(la["operator_ranks"])), negative_mass=la["negative_mass"],
                   attempts=la.get("attempts"))
    return out


def _child(route: str, size: str) -> dict:
    # the child's progress (its log on stderr) passes through; its JSON comes back on stdout
    run = subprocess.run(module_command(__spec__.name, "--case", f"{route}:{size}"), stdout=subprocess.PIPE,
                         text=True, env=child_env(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1"))
    if run.returncode != 0:
        return {"route": route, "size": size, "error": [f"exit status {run.returncode} (its stderr is above)"]}
    return json.loads(run.stdout)


def _num(x) -> str:
    """A record's number (JSON writes inf as "inf", a missing bound as null)."""
    return "none" if x is None else (f"{x:.2g}" if isinstance(x, (int, float)) else str(x))


def _errors(c: dict) -> str:
    if c.get("mean_error") is not None:
        return f"E[A], E[B]: {c['mean_error']:.1e} absolute"
    if c["worst_marginal_l1"] is None:
        return "no closed form"
    return f"{c['worst_marginal_l1']:.1e} / {c['worst_marginal_max']:.1e}"


def markdown(rec: dict) -> str:
    """The records page's table (docs/bench/tt_stationary.md, regenerated by `bench.render`)."""
    rows = ["| case | route | states | box | seconds (cold) | peak RSS | certified ‖p − p_st‖₁ (linear algebra + "
            "truncation) | worst marginal vs closed form (ℓ1 / max) | QTT ranks (p, ĥ) |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in rec["cases"]:
        if "not_run" in c:
            rows.append(f"| {c['size']} | {c['route']} | — | — | — | — | not run: {c['not_run']} | — | — |")
            continue
        if "error" in c:
            rows.append(f"| {c['size']} | {c['route']} | — | — | — | — | failed: {' '.join(c['error'])} | — | — |")
            continue
        ranks = f"{c['ranks_max']}, {c['hitting_time_ranks_max']}" if c["route"] == "tt" else "—"
        if "sparse_record" in c:   # the sparse figure of the same solve, from its own record
            r = c["sparse_record"]
            rows.append(f"| {c['size']} | sparse (`{r['file']}`) | {r['n']:.3g} | — | {r['seconds']:.1f} + build "
                        f"{r['build_seconds']:.1f} | {r['peak_rss_gb']:.2f} GiB | linear algebra {r['bound']:.2g} | — | — |")
        rows.append(f"| {c['size']} | {c['route']} | {c['n']:.3g} | {'×'.join(str(b + 1) for b in c['box'])} | "
                    f"{c['seconds']:.1f} | {c['peak_rss_gb']:.2f} GiB | {c['status']} at tol {_num(c.get('tol', rec['tol']))}: "
                    f"{_num(c['bound'])} "
                    f"({_num(c['linear_algebra'])} + {_num(c['truncation'])}) | {_errors(c)} | {ranks} |")
    ratios = ", ".join(f"{s}: {r:.3g}×" for s, r in rec["sparse_over_tt_seconds"].items())
    done = "" if rec.get("complete", True) else " (the run was interrupted: the cases above are what it measured)"
    return "\n".join(rows) + f"\n\nSparse seconds over TT seconds: {ratios or '—'}{done}.\n"


def _record(cases: list[dict], commands: list[str], complete: bool, in_process: bool = False) -> dict:
    by = {(c["route"], c["size"]): c for c in cases if "error" not in c and "not_run" not in c}
    ratios = {s: by[("sparse", s)]["seconds"] / by[("tt", s)]["seconds"] for (r, s) in by
              if r == "sparse" and ("tt", s) in by}
    return {"command": commands[0], "commands": commands,
            "python": platform.python_version(), "argv": sys.argv[1:], "cpus": os.cpu_count(), "tol": TOL,
            "complete": complete, "cases": cases, "sparse_over_tt_seconds": ratios,
            "note": ("all cases in one process (--smoke: not cold figures)" if in_process else
                     "each case in a fresh process (cold); both routes at the same tol on the infinite lattice")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the smoke boxes only")
    ap.add_argument("--case", default=None, help="route:size, one case in this process (JSON on stdout)")
    ap.add_argument("--sizes", default="1e6,1e7,1e8,toggle", help="comma-separated cases (default: all)")
    ap.add_argument("--append", action="store_true", help="add the cases to the record at --out (an earlier run)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.case:
        import logging

        logging.basicConfig(level=logging.INFO, stream=sys.stderr, format=f"[{args.case}] %(asctime)s %(message)s")
        route, size = args.case.split(":")
        print(dumps(run_case(route, size)))
        return 0
    args.out = default_record(args.out, __spec__.name, args.smoke)
    sizes = ["smoke"] if args.smoke else args.sizes.split(",")
    plan = [(route, size) for size in sizes for route in ("tt", "sparse") if (route, size) not in TT_ONLY]
    cases: list[dict] = []
    commands = [" ".join(["python -m bench.networks.tt_stationary", *(argv if argv is not None else sys.argv[1:])])]
    if args.append and args.out and Path(args.out).is_file():   # add cases to an earlier (interrupted) run
        old = json.loads(Path(args.out).read_text())
        first = old.get("command") or " ".join(["python -m bench.networks.tt_stationary", *old.get("argv", [])])
        cases, commands = old["cases"], [*old.get("commands", [first]), *commands]
    for size in sizes:
        if ("sparse", size) in SPARSE_NOT_RUN:
            cases.append({"route": "sparse", "size": size, "not_run": SPARSE_NOT_RUN[("sparse", size)]})
    for route, size in plan:
        # --smoke runs in this process (the suite's check of the script; its seconds and peak RSS are not
        # cold figures): the real cases each get a fresh one
        cases.append(run_case(route, size) if args.smoke else _child(route, size))
        c = cases[-1]
        if not args.json:
            print(f"{size:>6} {route:>6}: " + (f"n = {c['n']}, {c['seconds']:.1f} s, peak {c['peak_rss_gb']:.2f} GiB, "
                                               f"{c['status']}, bound {c['bound']}, worst marginal errors {_errors(c)}"
                                               if "error" not in c else f"failed: {c['error']}"), flush=True)
        rec = _record(cases, commands, route == plan[-1][0] and size == plan[-1][1], in_process=args.smoke)
        if args.out:   # after every case: an interrupted run keeps what it measured ("complete": false)
            write_json(args.out, rec)
    if args.json:
        print(dumps(rec))
    return 0 if all("error" not in c for c in cases) else 1


if __name__ == "__main__":
    raise SystemExit(main())
