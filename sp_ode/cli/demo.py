"""`sp-ode demo`: the main job on its built-in default.

Computes p_st(y) over a grid of y for the default generator family (cycle3,
three states, y ∈ [−2, 2]), checks Qᵀp = 0 at every point, prints a short
table and writes `report.json` and `p_st.png` under `--out` (default: a fresh run folder
`out/demo/DATE/TIME`, linked as `out/demo/latest`).  Then it runs
`sp-ode verify` on the default fast–slow system (me3: a master equation over the
same family): normal hyperbolicity on the visited region, the identity φ = p_st by
independent methods (docs/theory.md §7.3) and the convergence certificate (§3.5), with
its figures and report under `--out/verify` and its numbers in the demo's
`report.json` (skip with `--skip-verify`).  It ends with one `check NAME … STATUS`
line per check (`ok`, `FAIL` or `skipped`) and exits 1 when one failed.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sp_ode.cli.common import BUILTIN_HELP, UsageError, run_folder
from sp_ode.cli.verify import DEMO_SYSTEM
from sp_ode.core.files import dumps, write_json
from sp_ode.core.reporting import figures
from sp_ode.markov.families import DEFAULT_FAMILY, get_family
from sp_ode.markov.spectral import spectral_gap
from sp_ode.markov.stationary import stationary_distribution, stationary_residual
from sp_ode.systems.catalogue import get_system
from sp_ode.verification.report import verify

HELP = BUILTIN_HELP["demo"]


def add_arguments(parser) -> None:
    parser.add_argument("--family", default=None, help="generator family (default: cycle3)")
    parser.add_argument("--num", type=int, default=None, help="grid points in y, >= 2 (default 41; 9 with --smoke)")
    parser.add_argument("--out", default=None,
                        help="output folder (default: a fresh out/demo/DATE/TIME, linked as out/demo/latest)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--smoke", action="store_true", help="tiny, fast version")
    parser.add_argument("--skip-verify", action="store_true",
                        help="only the p_st(y) table (skip `sp-ode verify` on the default system me3)")


def stationary_table(family, ys: np.ndarray) -> dict:
    """p_st(y), the residuals and the spectral gaps of `family` over the grid `ys` (N, d)."""
    Qs = family.batch(ys)
    P = stationary_distribution(Qs)
    residuals = np.array([stationary_residual(Q, p) for Q, p in zip(Qs, P)])
    gaps = np.array([spectral_gap(Q) for Q in Qs])
    return {"family": family.name, "n": family.n, "d": family.d, "y": ys, "p_st": P,
            "residual_max": float(residuals.max()), "spectral_gap_min": float(gaps.min()), "spectral_gap": gaps}


def plot_stationary(table: dict, path: Path) -> Path:
    plt = figures()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    y = np.asarray(table["y"])[:, 0]
    for i in range(table["n"]):
        ax.plot(y, table["p_st"][:, i], label=f"$p_{{st,{i}}}(y)$")
    ax.set_xlabel("y")
    ax.set_ylabel("probability")
    ax.set_title(f"stationary distribution of {table['family']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(args) -> int:
    family = get_family(args.family or DEFAULT_FAMILY)
    if family.d != 1:
        raise ValueError(f"`--family` must have a scalar y for the demo table; {family.name!r} has d = {family.d}.")
    if args.num is not None and args.num < 2:  # checked under --smoke too: a given value is never ignored
        raise UsageError(f"`--num` must be >= 2 (grid points in y); got {args.num}.")
    num = args.num if args.num is not None else (9 if args.smoke else 41)
    out = run_folder("demo") if args.out is None else Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = stationary_table(family, family.grid(num))
    figure = plot_stationary(table, out / "p_st.png")
    # rounding alone explains a residual of c·n·eps·max|Q|
    tol = 64 * family.n * np.finfo(float).eps * float(np.max(np.abs(family.batch(table["y"]))))
    stationary_ok = table["residual_max"] <= tol
    report = {**table, "residual_tolerance": tol, "passed": stationary_ok, "figures": [str(figure)],
              "checks": {"stationary": "ok" if stationary_ok else "FAIL"}}
    verify_record = None
    if not args.skip_verify:
        # the manifold verification of issue 3 on the default fast–slow system (me3, a master
        # equation over cycle3): φ = p_st by root-finding, and the O(ε)/O(ε²) certificate
        # (the demo owns out/demo: a re-run replaces its own earlier result)
        verdict = verify(get_system(DEMO_SYSTEM), smoke=args.smoke, out=out / "verify", overwrite=True,
                         show_progress=not args.json)
        verify_text = verdict.format()
        verify_record = verdict.to_dict()
        report["verify"] = verify_record
        report["figures"] += verify_record["figures"]
        report["checks"].update(verify_record["checks"])
        report["passed"] = bool(report["passed"] and verify_record["passed"])
    write_json(out / "report.json", report)
    if args.json:
        summary = {k: report[k] for k in ("family", "n", "residual_max", "residual_tolerance",
                                          "spectral_gap_min", "checks", "passed")}
        if verify_record is not None:
            summary["verify"] = {k: verify_record[k] for k in ("system", "checks", "identity_methods", "identity_max_error",
                                                         "slope_manifold", "slope_corrected", "slope_slow",
                                                         "failure", "passed")}
        print(dumps(summary))
    else:
        print(f"p_st(y) for {family.name}: {family.description}")
        header = "      y  " + "  ".join(f"p_{i:<8d}" for i in range(family.n)) + "  gap γ"
        print(header)
        step = max(1, num // 8)
        for k in range(0, num, step):
            row = "  ".join(f"{v:.7f}" for v in table["p_st"][k])
            print(f"{table['y'][k, 0]:7.3f}  {row}  {table['spectral_gap'][k]:.4f}")
        print(f"max residual ‖Qᵀp‖∞ = {table['residual_max']:.2e} (tolerance {tol:.1e}); "
              f"min spectral gap {table['spectral_gap_min']:.4f}")
        if verify_record is not None:
            print()
            print(verify_text)
        print()
        print(f"check stationary  max residual {table['residual_max']:.1e} ≤ {tol:.1e}  "
              f"{report['checks']['stationary']}")
        if verify_record is not None:
            for name in ("hyperbolicity", "identity", "certificate"):
                print(f"check {name}  {verify_record['messages'][name]}  {verify_record['checks'][name]}")
        print(f"demo {'PASSED' if report['passed'] else 'FAILED'}")
        print(f"wrote {out / 'report.json'}, " + ", ".join(report["figures"]))
    return 0 if report["passed"] else 1
