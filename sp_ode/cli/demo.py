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

from dataclasses import replace
from pathlib import Path

import numpy as np

from sp_ode.cli.common import BUILTIN_HELP, UsageError, run_folder
from sp_ode.cli.verify import DEMO_SYSTEM
from sp_ode.core.files import dumps, load_object, write_json
from sp_ode.core.reporting import figures
from sp_ode.markov.families import DEFAULT_FAMILY, GeneratorFamily, get_family
from sp_ode.markov.spectral import spectral_gap
from sp_ode.markov.stationary import stationary_distribution, stationary_residual
from sp_ode.systems.catalogue import get_system
from sp_ode.systems.resolve import SYSTEM_TYPES, as_system
from sp_ode.systems.system import MasterEquationSystem
from sp_ode.verification.report import verify

HELP = BUILTIN_HELP["demo"]


def add_arguments(parser) -> None:
    parser.add_argument("--family", default=None,
                        help="generator family: a catalogue name (default cycle3) or path/to/file.py:OBJECT naming "
                             "a GeneratorFamily, a MasterEquationSystem or a function y -> Q(y)")
    parser.add_argument("--y-range", type=float, nargs=2, default=None, metavar=("LO", "HI"),
                        help="the range of y for the table and figure (needed for a user's Q(y) without a box)")
    parser.add_argument("--num", type=int, default=None, help="grid points in y, >= 2 (default 41; 9 with --smoke)")
    parser.add_argument("--out", default=None,
                        help="output folder (default: a fresh out/demo/DATE/TIME, linked as out/demo/latest)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--smoke", action="store_true", help="tiny, fast version")
    parser.add_argument("--skip-verify", action="store_true",
                        help="only the p_st(y) table (skip `sp-ode verify` on the default system me3)")


def user_family(spec: str | None, y_range=None) -> tuple[GeneratorFamily, bool]:
    """`--family` → (GeneratorFamily, whether it is the built-in catalogue's).

    A catalogue name, or `path/to/file.py:OBJECT` naming a `GeneratorFamily`, a
    `MasterEquationSystem` (or a catalogue entry holding one: its generator family, with its
    `states=` names), or a function y -> Q(y). `y_range` (LO, HI) sets the range of y; a
    function or a system not built on a family needs it.
    """
    if y_range is not None and not (np.all(np.isfinite(y_range)) and y_range[0] < y_range[1]):
        raise UsageError(f"`--y-range` must be two finite numbers LO < HI; got {list(y_range)}.")
    if spec is None or ":" not in spec:
        try:
            family = get_family(spec or DEFAULT_FAMILY)
        except ValueError as exc:
            raise UsageError(str(exc).replace("`name`", "`--family`", 1) + " Or give path/to/file.py:OBJECT.") from None
        return (family if y_range is None else replace(family, lower=(y_range[0],), upper=(y_range[1],))), True
    obj = load_object(spec, name="--family")
    system = as_system(obj) if isinstance(obj, SYSTEM_TYPES) else None
    if isinstance(obj, GeneratorFamily):
        family = obj
    elif isinstance(system, MasterEquationSystem):
        if system.d not in (None, 1):
            raise UsageError(f"`--family` {spec}: the demo table needs a scalar y; {system.name!r} has d = {system.d}.")
        if isinstance(system.Q_of_y, GeneratorFamily):
            family = replace(system.Q_of_y, name=system.name, states=system.states)
        else:
            family = _family_of(spec, system.name, lambda y, s=system: np.asarray(s.Q(y), dtype=np.float64),
                                y_range, system.states)
    elif callable(obj) and not isinstance(obj, type):
        family = _family_of(spec, spec.rpartition(":")[2], obj, y_range, None)
    else:
        raise UsageError(f"`--family` {spec} must name a GeneratorFamily, a MasterEquationSystem or a function "
                         f"y -> Q(y); got {type(obj).__name__}.")
    if y_range is not None:
        family = replace(family, lower=(y_range[0],), upper=(y_range[1],))
    return family, False


def _family_of(spec: str, name: str, Q, y_range, states) -> GeneratorFamily:
    """A family over a user's Q(y) (y of shape (1,)), sized at the range's centre."""
    if y_range is None:
        raise UsageError(f"`--family` {spec}: a Q(y) without a box of its own needs `--y-range LO HI`.")
    centre = np.array([(y_range[0] + y_range[1]) / 2])
    n = int(np.shape(np.asarray(Q(centre)))[0])
    return GeneratorFamily(name, n, 1, lambda y: np.asarray(Q(np.asarray(y, dtype=np.float64)), dtype=np.float64),
                           (float(y_range[0]),), (float(y_range[1]),), f"the generator family of {spec}",
                           states=None if states is None else tuple(states))


def _state_names(family) -> list[str]:
    return [str(s) for s in family.states] if family.states is not None else [str(i) for i in range(family.n)]


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
    names = table.get("states")
    for i in range(table["n"]):
        ax.plot(y, table["p_st"][:, i], label=f"$p_{{st}}$({names[i]})" if names else f"$p_{{st,{i}}}(y)$")
    ax.set_xlabel("y")
    ax.set_ylabel("probability")
    ax.set_title(f"stationary distribution of {table['family']}")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def run(args) -> int:
    family, builtin = user_family(args.family, args.y_range)
    if family.d != 1:
        raise ValueError(f"`--family` must have a scalar y for the demo table; {family.name!r} has d = {family.d}.")
    if args.num is not None and args.num < 2:  # checked under --smoke too: a given value is never ignored
        raise UsageError(f"`--num` must be >= 2 (grid points in y); got {args.num}.")
    num = args.num if args.num is not None else (9 if args.smoke else 41)
    out = run_folder("demo") if args.out is None else Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = stationary_table(family, family.grid(num))
    if family.states is not None:
        table["states"] = list(family.states)
    figure = plot_stationary(table, out / "p_st.png")
    # rounding alone explains a residual of c·n·eps·max|Q|
    tol = 64 * family.n * np.finfo(float).eps * float(np.max(np.abs(family.batch(table["y"]))))
    stationary_ok = table["residual_max"] <= tol
    report = {**table, "residual_tolerance": tol, "passed": stationary_ok, "figures": [str(figure)],
              "checks": {"stationary": "ok" if stationary_ok else "FAIL"}}
    verify_record = None
    verify_default = not args.skip_verify and builtin   # the verify part concerns the built-in me3
    if not verify_default and not args.skip_verify:
        report["verify_note"] = (f"verify skipped for a user's family: run `sp-ode verify --system "
                                 f"{args.family}` for the manifold identity of a fast–slow system")
    if verify_default:
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
        if "states" in table:
            summary["states"] = table["states"]
        if verify_record is not None:
            summary["verify"] = {k: verify_record[k] for k in ("system", "checks", "identity_methods", "identity_max_error",
                                                         "slope_manifold", "slope_corrected", "slope_slow",
                                                         "failure", "passed")}
        print(dumps(summary))
    else:
        print(f"p_st(y) for {family.name}: {family.description}")
        names = _state_names(family)
        width = max(9, *(len(s) + 2 for s in names))
        header = "      y  " + "  ".join(f"p_{s}".ljust(width) for s in names) + "  gap γ"
        print(header)
        step = max(1, num // 8)
        for k in range(0, num, step):
            row = "  ".join(f"{v:.7f}".ljust(width) for v in table["p_st"][k])
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
        if "verify_note" in report:
            print(report["verify_note"])
        print(f"demo {'PASSED' if report['passed'] else 'FAILED'}")
        print(f"wrote {out / 'report.json'}, " + ", ".join(report["figures"]))
    return 0 if report["passed"] else 1
