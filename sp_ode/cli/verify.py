"""`sp-ode verify`: normal hyperbolicity where the system goes, the manifold identity, the ε-certificate.

Steps (docs/theory.md §3, §3.5, §7.3), each reported as ``ok``, ``FAIL`` or ``skipped``:

1. **Normal hyperbolicity on the visited region** (`sp_ode.verification.region.visited_region`):
   the reduced path (stopped at a loss of hyperbolicity) and the full trajectory at the
   system's ε give the y-range visited; φ must be attracting there (plus a 2 % margin).
   A fold or gap closing *outside* is a note.  When the visited range *reaches* one,
   verify stops at once — no identity check, no certificate — and says where and when:
   "the critical manifold loses normal hyperbolicity at y* = …, reached at t ≈ …; the
   reduction does not hold past it" (exit 1).
2. **Identity** (`sp_ode.verification.identity.identity_check`): φ computed by methods that
   solve different problems — for a master equation p_st by GTH, φ by Newton on the
   bordered system (the same linear system: not counted as independent), the attractor
   of the frozen fast flow by uniformised powers with a certified bracket, and exact
   rational elimination at sampled y; for a general system Newton continuation, the
   frozen-flow attractor by RK4 and the catalogue's closed form.  Passes only when two
   methods that do not solve the same linear system agree within the stated tolerance.
3. **Certificate** (`sp_ode.convergence_certificate`): slopes with standard errors and
   95 % intervals over ≥ 4 points in the asymptotic range (P = 4, 8, …, 4096).
4. A summary on stdout (``--json``: one JSON object), ``report.json`` and the figures
   ``manifold.png`` and (when the certificate ran) ``convergence.png`` under ``--out``;
   exit 0 when every check passed, 1 when one failed (the first line of the message
   names it).

A reaction-network model — ``--system network:NAME`` (``sp_ode.networks.models``) or
``file.py:OBJECT`` with OBJECT a NetworkSystem or NetworkModel (or a factory of one) — is
dispatched to ``sp_ode.verification.network.verify_network`` (docs/theory.md §7.7): paths,
the identity by the sparse solver against the attractor of the frozen fast flow, the slopes of
the reduced and corrected paths against full sparse stiff solves; figures ``marginals.png`` and
``convergence.png``, the same exit codes.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from sp_ode.cli.common import UsageError

DEMO_SYSTEM = "me3"   # what `sp-ode demo` (make demo) verifies
SMOKE_PS = (16, 32, 64, 128, 256, 512)
STATUSES = ("ok", "FAIL", "skipped")

HELP = "verify the manifold identity and the O(eps) convergence of a fast-slow system"


def add_arguments(parser) -> None:
    parser.add_argument("--system", default="me3",
                        help="catalogue name (toy, linear, averaging2, michaelis_menten, vanderpol, fitzhugh_nagumo, "
                             "me3, me10, me50), a reaction network (network:telegraph, network:birth_death, "
                             "network:michaelis_menten, network:toggle_switch, network:cascade) or "
                             "path/to/file.py:OBJECT, OBJECT a system, a catalogue entry, a NetworkSystem or a "
                             "NetworkModel (default: me3)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="catalogue parameter, e.g. --set I=0.5 for fitzhugh_nagumo (repeatable)")
    parser.add_argument("--Ps", type=int, nargs="+", default=None, metavar="P",
                        help="block sizes P (ε = 1/P) for the certificate, at least 4 (default 4 8 ... 4096; "
                             "network models: at least 5, default ε = 10^-1.5 ... 10^-3.5)")
    parser.add_argument("--order", type=int, default=1, help="order k of the slow manifold h_ε (default 1)")
    parser.add_argument("--backend", default="diffrax", help="diffrax (default) or scipy")
    parser.add_argument("--num", type=int, default=None,
                        help="grid points in y for the identity check (default 41; network models: 5)")
    parser.add_argument("--t-span", type=float, nargs=2, default=None, metavar=("T0", "T1"),
                        help="time span (default: the system's)")
    parser.add_argument("--x0", type=float, nargs="+", default=None, help="initial fast state (default: the system's)")
    parser.add_argument("--y0", type=float, nargs="+", default=None, help="initial slow state (default: the system's)")
    parser.add_argument("--out", default="out/verify", help="output folder (default out/verify)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--smoke", action="store_true", help=f"tiny, fast version (P = {SMOKE_PS}, 9 grid points)")


def parse_overrides(items) -> dict:
    """``["I=0.5", ...]`` → ``{"I": 0.5}`` (numbers as float)."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"`--set` must be KEY=VALUE; got {item!r}.")
        try:
            out[key] = float(value)
        except ValueError:
            raise UsageError(f"`--set {key}` must be a number; got {value!r}.") from None
    return out


# --- the system -------------------------------------------------------------------------

def resolve_system(spec, *, t_span=None, x0=None, y0=None, overrides=None, smoke: bool = False) -> SimpleNamespace:
    """A catalogue name or ``file.py:OBJECT`` → system, t_span, x0, y0, closed-form φ, name.

    OBJECT may be a catalogue entry (anything with ``.system``, ``.t_span``,
    ``.x0``, ``.y0``), a zero-argument factory returning one, or a bare
    FastSlowSystem (then `t_span`, `x0`, `y0` must be given).  `overrides` (a dict, from
    ``--set KEY=VALUE``) go to a catalogue factory, e.g. ``{"I": 0.5}`` for fitzhugh_nagumo.
    ``network:NAME`` (a model of ``sp_ode.networks.models``), or OBJECT a NetworkSystem or
    NetworkModel (or a factory of one), gives a network case (``case.network`` True, see
    `resolve_network`); `smoke` shrinks a catalogue network's projection.

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
    if overrides and not spec.startswith(NETWORK_PREFIX) and (":" in spec or spec.endswith(".py")):
        raise UsageError("`--set` applies to catalogue systems; pass parameters inside your file instead.")
    if spec.startswith(NETWORK_PREFIX):
        return resolve_network(spec, t_span=t_span, x0=x0, y0=y0, overrides=overrides, smoke=smoke)
    if ":" in spec or spec.endswith(".py"):
        obj = load_object(spec, name="--system")
        if callable(obj) and not isinstance(obj, FastSlowSystem) and not hasattr(obj, "system"):
            obj = obj()
        if _is_network(obj):
            return resolve_network(obj, t_span=t_span, x0=x0, y0=y0)
    elif spec in SYSTEMS:
        obj = get_system(spec, **(overrides or {}))
    else:
        raise UsageError(f"`--system` must be one of {tuple(SYSTEMS)}, network:NAME (NAME one of "
                         f"{tuple(_network_models())}) or path/to/file.py:OBJECT; got {spec!r}.")
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
    from sp_ode.systems.model import check_model  # f, g, Q traced once; m, d recorded (README "Your own model")

    system = check_model(system, x0, y0).system
    return SimpleNamespace(system=system, name=system.name, t_span=tuple(t_span), x0=np.asarray(x0, float),
                           y0=np.asarray(y0, float), phi=getattr(entry, "phi", None),
                           description=getattr(entry, "description", ""), network=False)


# --- reaction-network models (sp_ode.verification.network) ---------------------------------

NETWORK_PREFIX = "network:"
NETWORK_T_SPAN = (0.0, 2.0)   # a catalogue network's default time span (slow clock)
NETWORK_EPS = 1e-2            # a catalogue network's ε (the corrected path of step 1)
# --smoke: smaller projections of the catalogue networks (n ≈ 60–150)
NETWORK_SMOKE = {"telegraph": {"N": 30}, "birth_death": {"N": 40}, "toggle_switch": {"N": 10}, "cascade": {"N": 14}}


def _network_models() -> dict:
    from sp_ode.networks.models import NETWORK_MODELS

    return NETWORK_MODELS


def _is_network(obj) -> bool:
    from sp_ode.networks.models import NetworkModel
    from sp_ode.networks.system import NetworkSystem

    return isinstance(obj, (NetworkSystem, NetworkModel))


def _network_kwargs(builder, overrides: dict) -> dict:
    """`--set` values for a network builder: known keyword names only, ints where the default is an int."""
    import inspect

    params = {k: p for k, p in inspect.signature(builder).parameters.items() if p.default is not inspect.Parameter.empty}
    out = {}
    for key, value in overrides.items():
        if key not in params:
            raise UsageError(f"`--set {key}`: not a parameter of this network model; it takes {tuple(params)}.")
        if isinstance(params[key].default, int) and not isinstance(params[key].default, bool):
            if not float(value).is_integer():
                raise UsageError(f"`--set {key}` must be an integer; got {value!r}.")
            value = int(value)
        out[key] = value
    return out


def resolve_network(spec, *, t_span=None, x0=None, y0=None, overrides=None, smoke: bool = False,
                    name: str | None = None) -> SimpleNamespace:
    """``network:NAME`` or a loaded NetworkSystem / NetworkModel → the network case.

    A catalogue model (or a NetworkModel) becomes a NetworkSystem on its projection with ε =
    ``NETWORK_EPS``, y0 its own and t_span ``NETWORK_T_SPAN`` unless given; a NetworkSystem needs
    ``--y0`` and ``--t-span`` unless it carries ``y0`` / ``t_span`` attributes.  Network verify starts
    on the critical manifold x0 = p_st(y0), so ``--x0`` is refused.
    """
    from sp_ode.networks.models import NetworkModel
    from sp_ode.networks.system import NetworkSystem

    if x0 is not None:
        raise UsageError("`--x0` does not apply to a network model: verify starts on the critical manifold "
                         "x0 = p_st(y0).")
    description = ""
    if isinstance(spec, str):
        key = spec[len(NETWORK_PREFIX):]
        models = _network_models()
        if key not in models:
            raise UsageError(f"`--system` {spec!r}: unknown network model; use one of "
                             f"{tuple(NETWORK_PREFIX + k for k in models)}.")
        kwargs = {**(NETWORK_SMOKE.get(key, {}) if smoke else {}),
                  **_network_kwargs(models[key], overrides or {})}
        obj = models[key](**kwargs)
        description = f"catalogue network {key}" + (f" ({', '.join(f'{k}={v}' for k, v in kwargs.items())})"
                                                    if kwargs else "")
    else:
        obj = spec
    if isinstance(obj, NetworkModel):
        system = NetworkSystem(obj.network, obj.space(), obj.slow, eps=NETWORK_EPS, name=obj.name)
        y0 = obj.y0 if y0 is None else y0
        t_span = NETWORK_T_SPAN if t_span is None else t_span
        description = description or f"network model {obj.name}"
    else:
        system = obj
        y0 = getattr(obj, "y0", None) if y0 is None else y0
        t_span = getattr(obj, "t_span", None) if t_span is None else t_span
        description = f"NetworkSystem {system.name}"
    missing = [n for n, v in (("--t-span", t_span), ("--y0", y0)) if v is None]
    if missing:
        raise UsageError(f"network system {system.name!r} has no default {', '.join(missing)}: pass them.")
    y0 = np.asarray(y0, float).reshape(-1)
    if y0.shape != (system.d,):
        raise UsageError(f"`--y0` must give {system.d} value(s) for {system.name!r}; got {y0.tolist()}.")
    return SimpleNamespace(system=system, name=name or system.name, t_span=tuple(float(t) for t in t_span), x0=None,
                           y0=y0, phi=None, description=description, network=True)


def network_verify_report(case, *, Ps=None, num=None, smoke: bool = False, out: Path | None = None):
    """`sp_ode.verification.network.verify_network` on a network case; figures and report.json under `out`."""
    from sp_ode.verification.network import verify_network

    eps_values = None
    if Ps is not None:
        from sp_ode.verification.certificate import MIN_POINTS, check_Ps

        Ps = check_Ps(Ps, min_points=MIN_POINTS + 1)
        eps_values = [1.0 / P for P in Ps]
    return verify_network(case.system, case.t_span, case.y0, eps_values=eps_values, num=num, smoke=smoke, out=out)


NETWORK_JSON_KEYS = ("system", "kind", "n", "checks", "passed", "failure", "identity_checked", "identity_methods",
                     "identity_independent", "identity_max_error", "identity_tolerance", "slope_reduced",
                     "slope_reduced_stderr", "slope_corrected", "slope_corrected_stderr", "slope_tolerance",
                     "eps_values", "seconds", "figures")


def run_network(case, args) -> int:
    """The network branch of `run`: same output conventions and exit codes."""
    from sp_ode.core.files import dumps

    verdict = network_verify_report(case, Ps=args.Ps, num=args.num, smoke=args.smoke, out=Path(args.out))
    report = verdict.to_dict()
    if args.json:
        print(dumps({k: report[k] for k in NETWORK_JSON_KEYS}))
    else:
        print(verdict.format())
        print(f"wrote {', '.join(verdict.figures)}")
    if not verdict.passed:
        print(f"sp-ode verify: {_first_line(verdict.failure or 'a check was skipped: ' + str(verdict.checks))}",
              file=sys.stderr)
    return 0 if verdict.passed else 1


def _identity_grid(case, region, num: int) -> np.ndarray:
    """The family's domain for a master equation over a GeneratorFamily (T1 is claimed there); else the
    visited range (d = 1) or points along the reduced path (d > 1)."""
    from sp_ode.markov.families import GeneratorFamily

    Q_of_y = getattr(case.system, "Q_of_y", None)
    if isinstance(Q_of_y, GeneratorFamily):
        return Q_of_y.grid(num if Q_of_y.d == 1 else max(3, int(round(num ** (1 / Q_of_y.d)))))
    if case.system.d == 1 or region.reduced.y.shape[1] == 1:
        return np.linspace(region.lower[0], region.upper[0], num)[:, None]
    ys = region.reduced.y
    return ys[np.linspace(0, len(ys) - 1, num).astype(int)]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


def verify_report(case, *, Ps=None, order: int = 1, backend: str = "diffrax", num: int = 41, smoke: bool = False,
                  out: Path | None = None, show_progress: bool = True) -> dict:
    """Run steps 1–3 on `case` (from `resolve_system`); write figures under `out`; return the report."""
    from sp_ode.core.validation import check_positive_int
    from sp_ode.manifolds.slow_manifold import check_order, slow_manifold
    from sp_ode.verification.certificate import DEFAULT_PS, check_Ps, convergence_certificate
    from sp_ode.verification.identity import check_identity_size, identity_check
    from sp_ode.verification.region import MARGIN, visited_region

    order = check_order(order)
    num = 9 if smoke else check_positive_int("--num", num)
    if num < 2:
        raise UsageError(f"`--num` must be >= 2; got {num}.")
    check_identity_size(num, int(np.size(case.x0)), int(np.size(case.y0)))   # before any work or grid
    Ps = tuple(check_Ps(Ps)) if Ps is not None else (SMOKE_PS if smoke else DEFAULT_PS)  # before any work
    master = hasattr(case.system, "Q_of_y")
    num_times = 101 if smoke else 201
    seconds = {}
    start = time.perf_counter()
    region = visited_region(case.system, case.t_span, case.x0, case.y0, phi=None if master else case.phi,
                            num_times=num_times, backend=backend)
    seconds["hyperbolicity"] = time.perf_counter() - start
    checks = {"hyperbolicity": region.status, "identity": "skipped", "certificate": "skipped"}
    messages = {"hyperbolicity": region.message}
    ident = cert = None
    if region.reached:
        messages["identity"] = messages["certificate"] = "skipped: the reduction does not hold on the path (step 1)"
    else:
        start = time.perf_counter()
        ident = identity_check(case.system, _identity_grid(case, region, num), x0=case.x0, phi=case.phi,
                               phi_name="the catalogue's φ" if case.phi is not None else "φ",
                               phi_kind="linear solve" if master else "closed form")
        checks["identity"], messages["identity"] = ident.status, ident.message
        seconds["identity"] = time.perf_counter() - start
        if region.passed:
            start = time.perf_counter()
            guess = None if case.phi is not None else case.x0
            manifold = slow_manifold(case.system, order, x_guess=None if master else guess,
                                     phi=None if master else case.phi)
            cert = convergence_certificate(case.system, Ps, order=order, t_span=case.t_span, x0=case.x0,
                                           y0=case.y0, backend=backend, manifold=manifold,
                                           show_progress=show_progress, num_times=num_times)
            checks["certificate"] = "ok" if cert.passed else "FAIL"
            messages["certificate"] = "rates O(ε), O(ε^{k+1}), O(ε) measured" if cert.passed else \
                "certificate: " + cert.messages[0]
            seconds["certificate"] = time.perf_counter() - start
        else:
            messages["certificate"] = "skipped: φ is not normally hyperbolic and attracting on the visited region"
    passed = "FAIL" not in checks.values() and checks["certificate"] == "ok" and checks["hyperbolicity"] == "ok"
    failure = next((messages[k] for k in ("hyperbolicity", "identity", "certificate") if checks[k] == "FAIL"), None)
    head = ident.independent_comparison() if ident is not None else None
    report = {
        "system": case.name, "description": case.description, "order": order, "backend": backend,
        "checks": checks, "messages": messages, "passed": passed, "failure": failure,
        "region": region.to_dict(), "hyperbolicity_margin": MARGIN,
        "loss_of_hyperbolicity": ({"y": region.y_star, "t": region.t_star, "kind": region.kind,
                                   "reached": region.reached} if region.y_star is not None else None),
        "weakest_attraction": region.weakest_attraction,
        "identity_checked": ident is not None and ident.status != "skipped",
        "identity_methods": ([{"name": m.name, "kind": m.kind, "points": int(len(m.points)), "note": m.note}
                              for m in ident.methods.values()] if ident is not None else []),
        "identity_comparisons": ident.comparisons if ident is not None else [],
        "identity_reference": head["b"] if head else None,
        "identity_max_error": max((c["max_error"] for c in ident.comparisons if c["independent"]), default=None)
        if ident is not None else None,
        "identity_tolerance": head["tolerance"] if head else None,
        "identity_grid": ident.ys if ident is not None else None,
        "seconds": seconds,
    }
    if cert is not None:
        report.update({"slope_manifold": cert.slopes["manifold"], "slope_corrected": cert.slopes["corrected"],
                       "slope_slow": cert.slopes["slow"], "slope_tolerance": cert.slope_tol,
                       "constants": cert.constants, "final_constants": cert.final_constants,
                       "certificate": cert.to_dict(), "table_text": cert.format_table()})
    else:
        report.update({k: None for k in ("slope_manifold", "slope_corrected", "slope_slow", "slope_tolerance",
                                         "constants", "final_constants", "certificate", "table_text")})
    report["figures"] = []
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        report["figures"].append(str(plot_manifold(case, region, ident, report, out / "manifold.png")))
        stale = out / "convergence.png"
        if cert is not None:
            verdict = "verify passed" if passed else "verify FAILED"
            report["figures"].append(str(cert.plot(stale, title=f"{case.name}: {verdict} "
                                                   f"(certificate {'ok' if cert.passed else 'FAIL'})")))
        elif stale.exists():
            stale.unlink()   # a figure from an earlier run must not stand beside this verdict
    return report


def plot_manifold(case, region, ident, report: dict, path: Path) -> Path:
    """φ against its independent reference over y (line = reference, markers = computed φ), folds marked,
    the visited range shaded; below, the difference per point.  When verify stopped at a fold: the
    largest Re λ along the branch, with y* marked.  The title carries the verdict."""
    from matplotlib.lines import Line2D

    from sp_ode.core.reporting import figures

    plt = figures()
    verdict = "verify passed" if report["passed"] else "verify FAILED"
    first = r"y_1" if case.system.d > 1 else "y"
    folds = []
    if region.y_star is not None:
        folds.append(float(np.ravel(region.y_star)[0]))
    if ident is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        ys, mr = np.asarray(region.ys)[:, 0], np.asarray(region.max_real)
        order = np.argsort(ys)
        ax.plot(ys[order], mr[order], "k.-", ms=3, lw=0.8, label=r"largest Re $\lambda$ of $D_x f$ on the branch")
        ax.axhline(0.0, color="0.5", lw=0.8)
        for y in folds:
            ax.axvline(y, color="r", ls="--", lw=1, label=f"{region.kind} at $y^*$ = {y:.4g}")
        ax.set_xlabel(f"${first}$ (slow variable)")
        ax.set_ylabel(r"max Re $\lambda$")
        what = (f"normal hyperbolicity lost at y* = {folds[0]:.4g}"
                + (f", t ≈ {region.t_star:.3g}" if region.t_star is not None else "")) if folds \
            else "the branch through y0 is not attracting"
        ax.set_title(f"{case.name}: {verdict} — {what}", fontsize=9)
        ax.legend(fontsize=8)
    else:
        fig, axes = plt.subplots(2, 1, figsize=(6.4, 5.6), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
        ys_grid = ident.ys
        phi, ref, err_pp = ident.phi, ident.reference, ident.error_per_point
        slice_note = ""
        if ys_grid.shape[1] > 1:
            # d > 1: the slice of the grid through its centre along y₁ (other coordinates fixed), so each
            # line is one function of y₁; the difference panel still covers the whole grid
            centre = ys_grid[np.argmin(np.linalg.norm(ys_grid - ys_grid.mean(axis=0), axis=1)), 1:]
            cut = np.all(np.isclose(ys_grid[:, 1:], centre), axis=1)
            if cut.sum() >= 3:
                sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
                slice_note = ", slice " + ", ".join(f"y{str(j + 2).translate(sub)} = {v:.3g}"
                                                    for j, v in enumerate(centre))
                order_ = np.argsort(ys_grid[cut, 0])
                phi, ref = phi[cut][order_], (ref[cut][order_] if ref is not None else None)
                s = ys_grid[cut, 0][order_]
            else:
                order_ = np.argsort(ys_grid[:, 0])
                phi, ref, s = phi[order_], (ref[order_] if ref is not None else None), ys_grid[order_, 0]
        else:
            s = ys_grid[:, 0]
        s_all = ys_grid[:, 0]
        ref_name = "attractor of the frozen fast flow"
        for i in range(phi.shape[1]):
            color = f"C{i % 10}"
            if ref is not None:
                axes[0].plot(s, ref[:, i], "-", color=color, lw=1)
            axes[0].plot(s, phi[:, i], "o", color=color, ms=3.5, mfc="none")
        handles = [Line2D([], [], color="k", lw=1, label=f"line: {ref_name}"
                          + (" (no linear solve)" if hasattr(case.system, "Q_of_y") else "")),
                   Line2D([], [], color="k", marker="o", ls="none", mfc="none", ms=4,
                          label="markers: φ by Newton" + (" (bordered system)" if hasattr(case.system, "Q_of_y")
                                                          else ""))]
        axes[0].legend(handles=handles, fontsize=7, loc="best")
        axes[0].set_ylabel(r"$x = \varphi(y)$" + (" (one colour per state)" if phi.shape[1] > 1 else "")
                           + slice_note, fontsize=9)
        lo, hi = float(region.lower[0]), float(region.upper[0])
        for ax in axes:
            if hi > lo:
                ax.axvspan(lo, hi, color="0.92", zorder=0)
            for y in folds:
                ax.axvline(y, color="r", ls="--", lw=1)
        fold_notes = [n for n in region.notes if n.startswith(("fold", "gap", "eigenvalue"))]
        for n in fold_notes:
            try:
                y = float(n.split("at y = ")[1].split(",")[0])
            except (IndexError, ValueError):
                continue
            for ax in axes:
                ax.axvline(y, color="r", ls=":", lw=1)
        err = np.maximum(err_pp, 1e-18)
        axes[1].semilogy(s_all, err, "k.", label=r"$\max_i |\varphi_i - \mathrm{ref}_i|$ (0 drawn at $10^{-18}$)")
        tol = report["identity_tolerance"]
        if tol is not None and np.isfinite(tol):
            axes[1].axhline(tol, color="r", ls="--", lw=0.8, label="tolerance")
        axes[1].set_ylim(1e-19, max(1.0, 10 * float(np.nanmax(err))))
        axes[1].legend(fontsize=7, loc="upper right")
        axes[1].set_xlabel(f"${first}$ (slow variable; grey: range the trajectories visit"
                           + ("; red: fold" if folds or fold_notes else "") + ")")
        axes[1].set_ylabel("difference")
        axes[0].set_title(f"{case.name}: {verdict} (identity {report['checks']['identity']}, normal hyperbolicity "
                          f"{report['checks']['hyperbolicity']}, certificate {report['checks']['certificate']})",
                          fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def format_report(report: dict) -> str:
    """The human-readable summary of a `verify_report` (or its report.json): every check line ends in
    ``ok``, ``FAIL`` or ``skipped``."""
    checks, msgs = report["checks"], report["messages"]
    lines = [f"sp-ode verify: {report['system']} — {report['description']}"]
    if report["failure"]:
        lines.insert(0, _first_line(report["failure"]))
    body = msgs["hyperbolicity"].removeprefix("normal hyperbolicity: ")
    lines.append(f"(1) normal hyperbolicity on the visited region: {body}  {checks['hyperbolicity']}")
    for note in report["region"]["notes"]:
        lines.append(f"      note: {note}")
    if report["identity_methods"]:
        lines.append("(2) identity φ(y) = p_st(y), methods:" if report["identity_reference"] and
                     "p_st" in str(report["identity_comparisons"]) else "(2) identity, methods:")
        for m in report["identity_methods"]:
            lines.append(f"      {m['name']} [{m['kind']}]" + (f" — {m['note']}" if m["note"] else ""))
        for c in report["identity_comparisons"]:
            lines.append(f"      {c['a']} vs {c['b']}: {c['max_error']:.1e} (tolerance {c['tolerance']:.1e}"
                         f"{'' if c['independent'] else '; same linear system, not counted'})  "
                         f"{'ok' if c['passed'] else 'FAIL'}")
    lines.append(f"(2) identity: {msgs['identity']}  {checks['identity']}")
    if report["table_text"]:
        lines.append("(3) " + report["table_text"])
    lines.append(f"(3) certificate: {msgs['certificate']}  {checks['certificate']}")
    lines.append(f"verify {'PASSED' if report['passed'] else 'FAILED'}: "
                 + ", ".join(f"{k} {v}" for k, v in checks.items()))
    return "\n".join(lines)


def run(args) -> int:
    from sp_ode.core.files import dumps, write_json

    if args.backend not in ("diffrax", "scipy"):
        raise UsageError(f"`--backend` must be one of ('diffrax', 'scipy'); got {args.backend!r}.")
    if args.order < 0:
        raise UsageError(f"`--order` must be >= 0; got {args.order}.")
    case = resolve_system(args.system, t_span=args.t_span, x0=args.x0, y0=args.y0,
                          overrides=parse_overrides(args.overrides), smoke=args.smoke)
    if case.network:
        return run_network(case, args)
    out = Path(args.out)
    report = verify_report(case, Ps=args.Ps, order=args.order, backend=args.backend,
                           num=41 if args.num is None else args.num,
                           smoke=args.smoke, out=out, show_progress=not args.json)
    report["figures"].append(str(write_json(out / "report.json", report)))
    if args.json:
        keys = ("system", "checks", "passed", "failure", "identity_checked", "identity_methods",
                "identity_max_error", "identity_tolerance", "loss_of_hyperbolicity", "slope_manifold",
                "slope_corrected", "slope_slow", "slope_tolerance", "constants", "figures")
        print(dumps({k: report[k] for k in keys}))
    else:
        print(format_report(report))
        print(f"wrote {', '.join(report['figures'])}")
    if not report["passed"]:
        print(f"sp-ode verify: {_first_line(report['failure'] or 'a check was skipped: ' + str(report['checks']))}",
              file=sys.stderr)
    return 0 if report["passed"] else 1
