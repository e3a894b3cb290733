"""Work–precision on the stiff Test Set problems (issue 12): VDPOL, ROBER, OREGO, HIRES.

Each problem is split as ε x' = f, y' = g (`sp_ode.systems.stiff_testset`, which also
holds the published reference values of the Test Set for IVP Solvers, Mazzia &
Magherini, Bari).  For rtol on a ladder (atol = the problem's factor · rtol) and for
each backend — diffrax Kvaerno5 (compiled; the solve timed after compilation) and
scipy Radau, BDF, LSODA (with the JAX Jacobian) — it records the significant correct
digits at t1, scd = −log10 max_i |z_i − ref_i|/|ref_i|, the error in tolerance units
(max_i |z_i − ref_i| / (rtol |ref_i| + atol), the target is ≤ 10), the solve time (best of
``--repeat``), the steps and any escalation.  The rows: the default route (``auto``: scipy LSODA
with its controller at rtol/100), Kvaerno5, Radau and BDF at their controller factors
(`sp_ode.systems.options.CONTROLLER_FACTOR`), and LSODA and BDF at the requested tolerance
itself (factor 1, dashed in the figure), the ablation behind those factors.  A second table measures the Kvaerno5 controller
configurations — (tolerance factor, chord κ in the controller's units): (1, 1e-2) diffrax's
defaults; (1, 1) the master-equation default; (1e-2, 1e-2); (1e-2, 1) the general-system
default, i.e. the controller at rtol/100 with the chord iteration stopping at 1e-2 of the
requested tolerance — on the four problems and on the me10 master equation: steps,
rejected steps and error.

    python -m bench.systems.stiff                     # rtol 1e-4 … 1e-10, best of 3
    python -m bench.systems.stiff --smoke             # HIRES at one rtol; run by the tests
    python -m bench.systems.stiff --out results/systems/stiff.json --png docs/bench/stiff.png

Prints a table; ``--out`` writes the JSON record, ``--png`` the work–precision figure
(scd against solve time, one panel per problem, one line per solver).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

from bench._common import default_record
from sp_ode.core.files import write_json
from sp_ode.core.precision import float64
from sp_ode.systems import integration, options
from sp_ode.systems.catalogue import get_system
from sp_ode.systems.simulation import fast_slow_problem, simulate
from sp_ode.systems.stiff_testset import STIFF_PROBLEMS, get_stiff_problem, significant_digits

# (backend, method, controller factor): the default route (auto: scipy LSODA, controller at rtol/100, see
# sp_ode.systems.options.CONTROLLER_FACTOR), the other engines at their factors, and LSODA/BDF at the
# requested tolerance itself (factor 1), which left up to 226/328 tolerance units before the factor
SOLVERS = (("auto", None, None), ("diffrax", "Kvaerno5", None), ("scipy", "Radau", None), ("scipy", "BDF", None),
           ("scipy", "LSODA", 1.0), ("scipy", "BDF", 1.0))
LADDER = (1e-4, 1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def run_one(p, backend: str, method: str | None, rtol: float, repeat: int, factor: float | None = None) -> dict:
    best, traj = np.inf, None
    saved = dict(options.CONTROLLER_FACTOR)
    if factor is not None:    # the bench's own ablation of the controller factor (restored below)
        options.CONTROLLER_FACTOR[method] = factor
    try:
        for _ in range(repeat):
            traj = simulate(p.system, p.t_span, p.x0, p.y0, rtol=rtol, atol=p.atol(rtol), backend=backend,
                            method=method, ts=np.array(p.t_span), max_steps=500_000, throw=False)
            best = min(best, float(traj.stats["wall_time"]))
    finally:
        options.CONTROLLER_FACTOR.update(saved)
    z = np.concatenate([traj.x[-1], traj.y[-1]])
    ok = traj.success and np.all(np.isfinite(z))
    units = np.abs(z - p.reference) / (rtol * np.abs(p.reference) + p.atol(rtol))
    label = "auto (LSODA)" if backend == "auto" else method + (f" ×{factor:g}" if factor is not None else "")
    return {"problem": p.name, "backend": traj.stats["backend"], "method": label, "rtol": rtol, "atol": p.atol(rtol),
            "controller_factor": options.CONTROLLER_FACTOR[traj.stats["method"]] if factor is None else factor,
            "escalations": traj.stats.get("escalations", []),
            "success": bool(ok), "scd": significant_digits(z, p.reference) if ok else None,
            "max_tolerance_units": float(np.max(units)) if ok else None,
            "time": best, "steps": int(traj.stats["num_steps"]), "message": traj.message}


# (tolerance factor, κ): see `integration.TOL_FACTOR_GENERAL`
CONFIGS = ((1.0, integration.CHORD_KAPPA), (1.0, integration.CHORD_KAPPA_MASTER),
           (integration.TOL_FACTOR_GENERAL, integration.CHORD_KAPPA),
           (integration.TOL_FACTOR_GENERAL, integration.CHORD_KAPPA_GENERAL))


def kappa_rows(rtol: float, names, master: bool = True) -> list[dict]:
    """Kvaerno5 under each controller configuration of CONFIGS on each problem (and me10)."""
    rows = []
    cases = [(n, get_stiff_problem(n)) for n in names]
    if master:
        cases.append(("me10 (eps=1e-3)", get_system("me10", eps=1e-3)))
    for label, case in cases:
        system = case.system
        m = len(case.x0)
        z0 = np.concatenate([np.asarray(case.x0, float), np.atleast_1d(np.asarray(case.y0, float))])
        ts = np.array(case.t_span)
        if label.startswith("me10"):
            atol = 1e-2 * rtol
            ref = simulate(system, case.t_span, case.x0, case.y0, backend="scipy", rtol=1e-13, atol=1e-15, ts=ts)
            reference = np.concatenate([ref.x[-1], ref.y[-1]])
        else:
            atol, reference = case.atol(rtol), case.reference
        for factor, kappa in CONFIGS:
            problem = dataclasses.replace(fast_slow_problem(system, m), chord_kappa=kappa, tol_factor=factor)
            with float64():
                out = integration.solve_diffrax(problem, z0, ts[0], ts[1], ts, eps=system.eps, args=system.args,
                                               rtol=rtol, atol=atol, method="Kvaerno5", max_steps=500_000)
            z = out["z"][-1]
            rows.append({"case": label, "tol_factor": factor, "kappa": kappa, "rtol": rtol,
                         "status": int(out["status"]), "steps": int(out["num_steps"]),
                         "rejected": int(out["num_rejected_steps"]), "wall_time": float(out["wall_time"]),
                         "max_abs_error": float(np.max(np.abs(z - reference))),
                         "scd": significant_digits(z, reference)})
    return rows


def figure(rows, names):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(4.0 * len(names), 3.6), layout="constrained")
    axes = fig.subplots(1, len(names), squeeze=False)[0]
    for ax, name in zip(axes, names):
        for label in dict.fromkeys(r["method"] for r in rows):
            pts = [(r["rtol"], r["time"], r["scd"]) for r in rows
                   if r["problem"] == name and r["method"] == label and r["success"]]
            if pts:  # joined in rtol order (timings are noisy; the ladder is not)
                _, t, s = zip(*sorted(pts, reverse=True))
                ax.plot(t, s, marker="o", ls="--" if "×1" in label else "-", label=label)
        ax.set_xscale("log")
        ax.set_xlabel("solve time [s] (after compilation)")
        ax.set_ylabel("significant correct digits (scd)")
        ax.set_title(name.upper())
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=8)
    return fig


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--problems", nargs="+", default=list(STIFF_PROBLEMS), choices=STIFF_PROBLEMS)
    parser.add_argument("--rtols", type=float, nargs="+", default=list(LADDER))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--kappa-rtol", type=float, default=1e-7, help="rtol of the κ comparison")
    parser.add_argument("--smoke", action="store_true",
                        help="HIRES at rtol 1e-7, repeat 1, every solver row; κ on HIRES only")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON record here")
    parser.add_argument("--png", type=Path, default=None, help="write the work–precision figure here")
    args = parser.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    names, rtols, repeat = args.problems, args.rtols, args.repeat
    if args.smoke:
        names, rtols, repeat = ["hires"], [1e-7], 1
    rows = []
    for name in names:
        p = get_stiff_problem(name)
        for backend, method, factor in SOLVERS:
            for rtol in rtols:
                r = run_one(p, backend, method, rtol, repeat, factor)
                rows.append(r)
                log(f"{name:6s} {r['method']:13s} rtol {rtol:7.0e}  scd {r['scd'] if r['scd'] is None else round(r['scd'], 2)}"
                    f"  tol units {r['max_tolerance_units'] if r['max_tolerance_units'] is None else round(r['max_tolerance_units'], 2)}"
                    f"  time {r['time']:.4f} s  steps {r['steps']}")
    # smoke: κ on HIRES only (the case), no master equation: fewer compilations
    kappa = kappa_rows(args.kappa_rtol, ["hires"] if args.smoke else names, master=not args.smoke)
    print(f"{'problem':8s} {'solver':13s} {'rtol':>7s} {'scd':>6s} {'tol-units':>9s} {'time [s]':>9s} {'steps':>7s}")
    for r in rows:
        scd = "fail" if r["scd"] is None else f"{r['scd']:.2f}"
        tu = "-" if r["max_tolerance_units"] is None else f"{r['max_tolerance_units']:.2f}"
        esc = f"  escalated to {r['escalations'][-1]['to']}" if r["escalations"] else ""
        print(f"{r['problem']:8s} {r['method']:13s} {r['rtol']:7.0e} {scd:>6s} {tu:>9s} {r['time']:9.4f} "
              f"{r['steps']:7d}{esc}")
    print(f"\nKvaerno5 controller configurations (tolerance factor, chord κ) at rtol {args.kappa_rtol:g}:")
    for r in kappa:
        print(f"  {r['case']:16s} factor {r['tol_factor']:<5g} κ = {r['kappa']:<5g} steps {r['steps']:6d} "
              f"rejected {r['rejected']:5d} "
              f"max|err| {r['max_abs_error']:.2e} scd {r['scd']:.2f}")
    record = {"benchmark": "stiff", "problems": names, "rtols": rtols, "repeat": repeat, "smoke": args.smoke,
              "rows": rows, "kappa": kappa,
              "reference": "Test Set for IVP Solvers (Mazzia & Magherini, Bari, release 2.4), subroutine solut",
              "machine": {"platform": platform.platform(), "python": platform.python_version(),
                          "threads": os.environ.get("OMP_NUM_THREADS")},
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.out is not None:
        write_json(args.out, record)
    if args.png is not None:
        args.png.parent.mkdir(parents=True, exist_ok=True)
        figure(rows, names).savefig(args.png, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
