"""`sp-ode verify`: the manifold identity and the ε-convergence certificate of a fast–slow system.

Steps (docs/theory.md §3):

1. **Identity.**  For a master-equation system, φ(y) found by Newton on
   Q(y)ᵀx = 0, 1ᵀx = 1 is compared with p_st(y) from `stationary_distribution`
   (GTH) over a grid of y: max |φ − p_st| ≤ 1e-12 (T1).  For another system the
   root-found φ is compared with the catalogue's closed form when it has one
   (tolerance 1e-12·max(1, |φ|)); otherwise the step is skipped and says so.
   Along the same grid, normal hyperbolicity: the largest real part of D_x f on
   the fast fibre must be < 0 (for generators, the spectral gap γ(y) > 0, T2); for a
   scalar y, `locate_loss_of_hyperbolicity` also searches the branch through φ(y0) a
   quarter of the grid's length beyond it (where the reduced flow stopped, e.g. at
   the fold of van der Pol).
2. **Certificate.**  `sp_ode.convergence_certificate` for P = 4, 8, …, 4096 (order 1):
   slopes 1, 2, 1 within ±0.15.
3. A table on stdout (one JSON object with ``--json``), ``report.json`` and the
   figures ``manifold.png`` and ``convergence.png`` under ``--out``; exit 1 when
   a check fails.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from sp_ode.cli.common import UsageError

IDENTITY_TOL = 1e-12
DEMO_SYSTEM = "me3"   # what `sp-ode demo` (make demo) verifies
SMOKE_PS = (16, 64, 256, 1024)


HELP = "verify the manifold identity and the O(eps) convergence of a fast-slow system"


def add_arguments(parser) -> None:
    parser.add_argument("--system", default="me3",
                        help="catalogue name (toy, linear, averaging2, michaelis_menten, vanderpol, me3, me10, "
                             "me50) or path/to/file.py:OBJECT (default: me3)")
    parser.add_argument("--Ps", type=int, nargs="+", default=None, metavar="P",
                        help="block sizes P (ε = 1/P) for the certificate (default 4 8 ... 4096)")
    parser.add_argument("--order", type=int, default=1, help="order k of the slow manifold h_ε (default 1)")
    parser.add_argument("--backend", default="diffrax", help="diffrax (default) or scipy")
    parser.add_argument("--num", type=int, default=41, help="grid points in y for the identity check")
    parser.add_argument("--t-span", type=float, nargs=2, default=None, metavar=("T0", "T1"),
                        help="time span (default: the system's)")
    parser.add_argument("--x0", type=float, nargs="+", default=None, help="initial fast state (default: the system's)")
    parser.add_argument("--y0", type=float, nargs="+", default=None, help="initial slow state (default: the system's)")
    parser.add_argument("--out", default="out/verify", help="output folder (default out/verify)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--smoke", action="store_true", help=f"tiny, fast version (P = {SMOKE_PS}, 9 grid points)")


# --- the system -------------------------------------------------------------------------

def resolve_system(spec, *, t_span=None, x0=None, y0=None) -> SimpleNamespace:
    """A catalogue name or ``file.py:OBJECT`` → system, t_span, x0, y0, closed-form φ, name.

    OBJECT may be a catalogue entry (anything with ``.system``, ``.t_span``,
    ``.x0``, ``.y0``), a zero-argument factory returning one, or a bare
    FastSlowSystem (then `t_span`, `x0`, `y0` must be given).

    Raises
    ------
    ValueError
        Unknown name, bad ``file.py:OBJECT`` spec, missing initial data.
    TypeError
        OBJECT is not a system or an entry.
    """
    from sp_ode.core.files import load_object
    from sp_ode.systems.catalogue import SYSTEMS, get_system
    from sp_ode.systems.system import FastSlowSystem

    if not isinstance(spec, str) or not spec:
        raise UsageError(f"`--system` must be a catalogue name or path/to/file.py:OBJECT; got {spec!r}.")
    if ":" in spec or spec.endswith(".py"):
        obj = load_object(spec, name="--system")
        if callable(obj) and not isinstance(obj, FastSlowSystem) and not hasattr(obj, "system"):
            obj = obj()
    elif spec in SYSTEMS:
        obj = get_system(spec)
    else:
        raise UsageError(f"`--system` must be one of {tuple(SYSTEMS)} or path/to/file.py:OBJECT; got {spec!r}.")
    if isinstance(obj, FastSlowSystem):
        system, entry = obj, None
    elif isinstance(getattr(obj, "system", None), FastSlowSystem):
        system, entry = obj.system, obj
    else:
        raise TypeError(f"`--system` {spec!r} must name a FastSlowSystem or a catalogue entry; "
                        f"got {type(obj).__name__}.")
    t_span = t_span if t_span is not None else getattr(entry, "t_span", None)
    x0 = x0 if x0 is not None else getattr(entry, "x0", None)
    y0 = y0 if y0 is not None else getattr(entry, "y0", None)
    missing = [n for n, v in (("--t-span", t_span), ("--x0", x0), ("--y0", y0)) if v is None]
    if missing:
        raise UsageError(f"system {system.name!r} has no default {', '.join(missing)}: pass them.")
    return SimpleNamespace(system=system, name=system.name, t_span=tuple(t_span), x0=np.asarray(x0, float),
                           y0=np.asarray(y0, float), phi=getattr(entry, "phi", None),
                           description=getattr(entry, "description", ""))


def _identity_grid(case, num: int) -> np.ndarray:
    """Grid of y: the family's domain for a master equation over a GeneratorFamily; else the
    range the reduced solution covers (so every point is one the certificate visits)."""
    from sp_ode.markov.families import GeneratorFamily
    from sp_ode.systems.reduced import simulate_reduced
    from sp_ode.systems.slow_manifold import slow_manifold

    Q_of_y = getattr(case.system, "Q_of_y", None)
    if isinstance(Q_of_y, GeneratorFamily):
        return Q_of_y.grid(num if Q_of_y.d == 1 else max(3, int(round(num ** (1 / Q_of_y.d)))))
    phi = slow_manifold(case.system, 0, x_guess=case.x0 if case.phi is None else None, phi=case.phi)
    red = simulate_reduced(case.system, case.t_span, case.y0, phi=phi.jax_fn(), ts=np.linspace(*case.t_span, 201),
                           throw=False)
    ys = red.y[np.all(np.isfinite(red.y), axis=1)]
    if ys.shape[1] == 1:
        return np.linspace(ys.min(), ys.max(), num)[:, None]
    return ys[np.linspace(0, len(ys) - 1, num).astype(int)]


def identity_check(case, num: int) -> dict:
    """Step 1: φ by root-finding against p_st (or the closed form), and normal hyperbolicity."""
    from sp_ode.systems.critical_manifold import continue_manifold, critical_manifold, normal_hyperbolicity
    from sp_ode.systems.system import MasterEquationSystem

    ys = _identity_grid(case, num)
    master = isinstance(case.system, MasterEquationSystem)
    out = {"grid": ys, "checked": False, "reference": None, "max_error": None, "tolerance": None}
    if master:
        from sp_ode.markov.stationary import stationary_distribution

        phi = critical_manifold(case.system, ys, throw=False)
        Qs = np.stack([np.asarray(case.system.Q(y), dtype=np.float64) for y in ys])
        ref = stationary_distribution(Qs)
        out.update(reference="p_st(y) by stationary_distribution (GTH)", tolerance=IDENTITY_TOL)
    else:
        phi = continue_manifold(case.system, ys, np.asarray(case.x0, float).reshape(-1)).x
        if case.phi is not None:
            import jax.numpy as jnp

            ref = np.stack([np.asarray(case.phi(jnp.asarray(y))) for y in ys]).reshape(phi.shape)
            out.update(reference="the catalogue's closed form of φ",
                       tolerance=IDENTITY_TOL * max(1.0, float(np.max(np.abs(ref)))))
        else:
            ref = None
            out["reference"] = "none: no closed form of φ is known for this system (step skipped)"
    if ref is not None:
        err = np.abs(phi - ref)
        out.update(checked=True, phi=phi, ref=ref,
                   max_error=float(np.max(err)) if np.all(np.isfinite(err)) else float("inf"),
                   error_per_point=np.max(err, axis=-1))
        out["passed"] = out["max_error"] <= out["tolerance"]
    else:
        out.update(phi=phi, passed=True)
    max_real = []
    for x, y in zip(phi, ys):
        max_real.append(normal_hyperbolicity(case.system, x, y).max_real if np.all(np.isfinite(x)) else np.nan)
    max_real = np.array(max_real)
    out["max_real"] = max_real
    out["attracting"] = bool(np.all(max_real < 0))
    out["weakest_attraction"] = float(-np.nanmax(max_real)) if np.isfinite(max_real).any() else float("nan")
    out["loss_of_hyperbolicity"] = None
    if not master and ys.shape[1] == 1:
        # the grid covers the reduced solution only up to where it stopped; look a quarter of its
        # length beyond, along the branch through φ(y0), for a fold or an eigenvalue crossing
        from sp_ode.systems.critical_manifold import locate_loss_of_hyperbolicity

        y_start = float(np.asarray(case.y0).reshape(-1)[0])
        far = ys[np.argmax(np.abs(ys[:, 0] - y_start)), 0]
        if far != y_start:
            loss = locate_loss_of_hyperbolicity(case.system, y_start, far + 0.25 * (far - y_start),
                                                x0=np.asarray(case.x0, float).reshape(-1))
            out["loss_of_hyperbolicity"] = {"found": loss.found, "kind": loss.kind, "message": loss.message,
                                            "y": loss.y, "x": loss.x}
            if loss.found:
                out["attracting"] = False
    return out


def plot_identity(case, ident: dict, path: Path) -> Path:
    from sp_ode.core.reporting import figures

    plt = figures()
    ys = ident["grid"]
    s = ys[:, 0] if ys.shape[1] == 1 else np.arange(len(ys))
    fig, axes = plt.subplots(2, 1, figsize=(6, 5.5), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    phi, ref = ident["phi"], ident.get("ref")
    for i in range(phi.shape[1]):
        color = f"C{i % 10}"
        if ref is not None:
            axes[0].plot(s, ref[:, i], "-", color=color, lw=1, label=f"reference, component {i}" if i < 6 else None)
        axes[0].plot(s, phi[:, i], "o", color=color, ms=3, mfc="none",
                     label=f"root-found φ, component {i}" if i < 6 else None)
    axes[0].set_ylabel("x")
    axes[0].set_title(f"{case.name}: φ(y) vs {ident['reference'].split(' by ')[0]}", fontsize=9)
    axes[0].legend(fontsize=7, ncol=2)
    if ident["checked"]:
        # exact agreement (error 0) is drawn at 1e-18 so that the log axis stays readable
        err = np.maximum(ident["error_per_point"], 1e-18)
        axes[1].semilogy(s, err, "k.", label=r"$\max_i |\varphi_i - \mathrm{ref}_i|$ (0 drawn at $10^{-18}$)")
        axes[1].set_ylim(1e-19, max(1.0, 10 * float(err.max())))
        axes[1].axhline(ident["tolerance"], color="r", ls="--", lw=0.8, label="tolerance")
        axes[1].legend(fontsize=7)
    axes[1].set_xlabel("y" if ys.shape[1] == 1 else "grid index")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --- the job -----------------------------------------------------------------------------

def verify_report(case, *, Ps=None, order: int = 1, backend: str = "diffrax", num: int = 41, smoke: bool = False,
                  out: Path | None = None, show_progress: bool = True) -> dict:
    """Run steps 1–2 on `case` (from `resolve_system`); write figures under `out`; return the report."""
    from sp_ode.core.validation import check_positive_int
    from sp_ode.systems.certificate import DEFAULT_PS, check_Ps, convergence_certificate
    from sp_ode.systems.slow_manifold import check_order, slow_manifold

    order = check_order(order)
    num = 9 if smoke else check_positive_int("--num", num)
    if num < 2:
        raise UsageError(f"`--num` must be >= 2; got {num}.")
    Ps = tuple(check_Ps(Ps)) if Ps is not None else (SMOKE_PS if smoke else DEFAULT_PS)  # before any work
    start = time.perf_counter()
    ident = identity_check(case, num)
    t_identity = time.perf_counter() - start
    start = time.perf_counter()
    guess = None if case.phi is not None else case.x0
    manifold = slow_manifold(case.system, order, x_guess=guess if not hasattr(case.system, "Q_of_y") else None,
                             phi=case.phi if not hasattr(case.system, "Q_of_y") else None)
    cert = convergence_certificate(case.system, Ps, order=order, t_span=case.t_span, x0=case.x0, y0=case.y0,
                                   backend=backend, manifold=manifold, show_progress=show_progress,
                                   num_times=101 if smoke else 201)
    t_cert = time.perf_counter() - start
    checks = {"identity": bool(ident["passed"]), "attracting": ident["attracting"], "certificate": cert.passed}
    report = {
        "system": case.name, "description": case.description, "order": order, "backend": backend,
        "identity_checked": ident["checked"], "identity_reference": ident["reference"],
        "identity_max_error": ident["max_error"], "identity_tolerance": ident["tolerance"],
        "identity_grid": ident["grid"], "max_real_eigenvalue": ident["max_real"],
        "weakest_attraction": ident["weakest_attraction"],
        "loss_of_hyperbolicity": ident["loss_of_hyperbolicity"],
        "slope_manifold": cert.slopes["manifold"], "slope_corrected": cert.slopes["corrected"],
        "slope_slow": cert.slopes["slow"], "slope_tolerance": cert.slope_tol,
        "constants": cert.constants, "final_constants": cert.final_constants,
        "certificate": cert.to_dict(), "checks": checks, "passed": all(checks.values()),
        "seconds": {"identity": t_identity, "certificate": t_cert},
    }
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        figs = [str(plot_identity(case, ident, out / "manifold.png")), str(cert.plot(out / "convergence.png"))]
        report["figures"] = figs
    report["table_text"] = cert.format_table()
    return report


def format_report(report: dict) -> str:
    """The human-readable summary of a `verify_report` (or its report.json) for stdout."""
    lines = [f"sp-ode verify: {report['system']} — {report['description']}"]
    if report["identity_checked"]:
        ok = report["identity_max_error"] <= report["identity_tolerance"]
        lines.append(f"(1) identity φ(y) vs {report['identity_reference']} on {len(report['identity_grid'])} points "
                     f"of y: max error {report['identity_max_error']:.2e} (tolerance "
                     f"{report['identity_tolerance']:.0e})  {'ok' if ok else 'FAIL'}")
    else:
        lines.append(f"(1) identity: skipped — {report['identity_reference']}")
    att = report["weakest_attraction"]
    lines.append(f"    normal hyperbolicity on the grid: {'attracting' if report['checks']['attracting'] else 'FAILS'}"
                 f" (weakest rate of attraction −max Re λ = {att:.4g})")
    loss = report.get("loss_of_hyperbolicity")
    if loss is not None:
        lines.append(f"    along the branch through φ(y0): {loss['message']}")
    lines.append("(2) " + report["table_text"])
    lines.append(f"verify {'PASSED' if report['passed'] else 'FAILED'} "
                 f"({', '.join(k + (' ok' if v else ' FAIL') for k, v in report['checks'].items())})")
    return "\n".join(lines)


def run(args) -> int:
    from sp_ode.core.files import dumps, write_json

    if args.backend not in ("diffrax", "scipy"):
        raise UsageError(f"`--backend` must be one of ('diffrax', 'scipy'); got {args.backend!r}.")
    if args.order < 0:
        raise UsageError(f"`--order` must be >= 0; got {args.order}.")
    case = resolve_system(args.system, t_span=args.t_span, x0=args.x0, y0=args.y0)
    out = Path(args.out)
    report = verify_report(case, Ps=args.Ps, order=args.order, backend=args.backend, num=args.num,
                           smoke=args.smoke, out=out, show_progress=not args.json)
    report["figures"].append(str(write_json(out / "report.json", report)))
    if args.json:
        keys = ("system", "identity_checked", "identity_max_error", "identity_tolerance", "slope_manifold",
                "slope_corrected", "slope_slow", "slope_tolerance", "constants", "checks", "passed", "figures")
        print(dumps({k: report[k] for k in keys}))
    else:
        print(format_report(report))
        print(f"wrote {', '.join(report['figures'])}")
    if not report["passed"]:
        print(f"sp-ode verify: a check failed: {report['certificate']['messages'] or report['checks']}",
              file=sys.stderr)
    return 0 if report["passed"] else 1
