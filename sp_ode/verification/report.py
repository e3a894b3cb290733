"""`sp_ode.verify`: one verdict on a fast–slow reduction, for general, master-equation and network systems.

Steps (docs/theory.md §3, §3.5, §7.3, §7.7), each reported as `ok`, `FAIL` or `skipped`:

1. **Normal hyperbolicity on the visited region** (`sp_ode.verification.region.visited_region`):
   the reduced path (stopped at a loss of hyperbolicity) and the full trajectory at the
   system's ε give the y-range visited; φ must be attracting there (plus a 2 % margin).
   A fold or gap closing *outside* is a note.  When the visited range *reaches* one, the
   verdict stops at once — no identity check, no certificate — and says where and when.
2. **Identity** (`sp_ode.verification.identity.identity_check`): φ computed by methods
   that solve different problems — for a master equation p_st by GTH, φ by Newton on the
   bordered system (the same linear system: not counted as independent), the attractor of
   the frozen fast flow by uniformised powers with a certified bracket, and exact rational
   elimination at sampled y; for a general system Newton continuation, the frozen-flow
   attractor by RK4 and the catalogue's closed form.  Passes only when two methods that do
   not solve the same linear system agree within the stated tolerance.
3. **Certificate** (`sp_ode.convergence_certificate`): slopes with standard errors and 95 %
   intervals over ≥ 4 points in the asymptotic range (P = 4, 8, …, 4096).

A reaction-network system (a `NetworkSystem`, or a `NetworkModel` of the catalogue) is
verified by `sp_ode.verification.network.verify_network` instead (paths; the identity by
the sparse solver against the attractor of the frozen fast flow; the slopes of the reduced
and corrected paths against full sparse stiff solves) and reported the same way.

The result is a `VerifyReport`: every check with its status, numbers and reason, the
overall verdict, `to_dict()`/`to_json()` (the JSON record), `format()` (the text the
command line prints) and `write(out)` (figures and `report.json`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from sp_ode.core.files import dumps
from sp_ode.core.summary import Summarised, first_line, number
from sp_ode.core.validation import check_choice, check_positive_int
from sp_ode.manifolds.slow_manifold import check_order, slow_manifold_checked
from sp_ode.markov.families import GeneratorFamily
from sp_ode.networks.models import NetworkModel
from sp_ode.systems.model import check_model
from sp_ode.systems.network import NetworkSystem
from sp_ode.systems.options import SolveOptions
from sp_ode.systems.resolve import EntryLike, as_system
from sp_ode.systems.simulation import check_t_span
from sp_ode.systems.system import MasterEquationSystem
from sp_ode.verification.certificate import DEFAULT_PS, check_Ps, convergence_certificate_checked
from sp_ode.verification.identity import check_identity_size, identity_check_checked
from sp_ode.verification.network import check_network_num, check_network_start, verify_network_checked
from sp_ode.verification.plotting import plot_manifold
from sp_ode.verification.rates import MIN_POINTS
from sp_ode.verification.region import MARGIN, visited_region_checked
from sp_ode.verification.steps import STATUSES, Steps, StepsView, refuse_earlier_report

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from sp_ode.core.typing import ArrayLike, Float, PathLike, TimeSpan
    from sp_ode.systems.resolve import SystemLike

__all__ = ["verify", "VerifyReport", "STATUSES", "SMOKE_PS"]

SMOKE_PS = (16, 32, 64, 128, 256, 512)
DEFAULT_NUM = 41              # grid points in y for the identity check of a general / master system
SMOKE_NUM = 9
CHECKS = ("hyperbolicity", "identity", "certificate")
BACKENDS = ("auto", "diffrax", "scipy")


# --- the report -----------------------------------------------------------------------------------------

@dataclass(repr=False)
class VerifyReport(StepsView, Summarised):
    """What `verify` found.

    Attributes
    ----------
    system : str
        The system's name
    kind : {"general", "master", "network"}
    description : str
    steps : Steps
        The checks in order (`sp_ode.verification.steps`): `hyperbolicity`, `identity`,
        `certificate` (networks: `paths`, `identity`, `rate_reduced`, `rate_corrected`), each a
        `VerdictStep` with its status, message, skip reason and seconds.
    checks : dict name -> "ok" | "FAIL" | "skipped"
        Read off `steps`.
    messages : dict name -> str
        One line per check: its numbers, or why it failed or was skipped (read off `steps`).
    passed : bool
        Every check `ok`.
    failure : str or None
        The message of the first failed check.
    record : dict
        Every number, JSON-ready (`to_dict`).
    figures : list of str
        Files written by `write`.
    """

    system: str
    kind: str
    description: str
    steps: Steps
    record: dict
    figures: list = field(default_factory=list)
    _parts: dict = field(default_factory=dict, repr=False)   # region, identity, certificate or network verdict





    def _summary_title(self) -> str:
        return f"VerifyReport: {self.system}, verify {'PASSED' if self.passed else 'FAILED'}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        rows = [("kind", self.kind), ("checks", ", ".join(f"{k} {v}" for k, v in self.checks.items()))]
        rows += [(f"slope {q}", number(self.record[f"slope_{q}"], 4)) for q in ("manifold", "corrected", "slow",
                                                                                 "reduced")
                 if self.record.get(f"slope_{q}") is not None]
        if self.record.get("identity_max_error") is not None:
            rows.append(("identity", f"max difference {number(self.record['identity_max_error'])}"))
        if self.failure:
            rows.append(("failure", first_line(self.failure)))
        if self.figures:
            rows.append(("files", f"{len(self.figures)} written"))
        return rows

    def __getitem__(self, key: str) -> Any:
        """`report["checks"]` etc.: the fields of the JSON record (`to_dict()`)."""
        return self.to_dict()[key]

    def to_dict(self) -> dict:
        """The JSON record: every number printed, and more."""
        return {**self.record, "system": self.system, "kind": self.kind, "description": self.description,
                "checks": self.checks, "messages": self.messages, "passed": self.passed, "failure": self.failure,
                "figures": list(self.figures)}

    def to_json(self) -> str:
        return dumps(self.to_dict())

    def format(self) -> str:
        """The human-readable summary: every check line ends in `ok`, `FAIL` or `skipped`."""
        if self.kind == "network":
            return self._parts["network"].format()
        return format_report(self.to_dict())

    __str__ = format

    def figure_makers(self) -> list:
        """The figures `write` (StepsView, the one save loop of both verdicts) saves beside `report.json`: a
        network verdict's own; else `manifold.png`, and `convergence.png` when the certificate ran."""
        if self.kind == "network":
            return self._parts["network"].figure_makers()
        region, ident, cert = (self._parts.get(k) for k in ("region", "identity", "certificate"))
        verdict = "verify passed" if self.passed else "verify FAILED"
        return [("manifold.png", lambda path: plot_manifold(self._parts["case"], region, ident, self.to_dict(), path)),
                ("convergence.png", None if cert is None else
                 lambda path: cert.plot(path, title=f"{self.system}: {verdict} "
                                                    f"(certificate {'ok' if cert.passed else 'FAIL'})"))]


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


def format_report(report: dict) -> str:
    """The summary of a general or master-equation report (its `to_dict()` or report.json)."""
    checks, msgs = report["checks"], report["messages"]
    desc = (report.get("description") or "").strip()
    lines = [f"sp-ode verify: {report['system']}" + (f" — {desc}" if desc else "")]
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


# --- what is verified -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Case:
    """A system with the initial data and horizon of its verdict (`resolve_case`); `verify` accepts one."""

    system: Any
    name: str
    t_span: tuple
    x0: np.ndarray | None
    y0: np.ndarray
    phi: Any = None
    description: str = ""
    network: bool = False


def resolve_case(system, *, t_span=None, x0=None, y0=None, description: str | None = None) -> Case:
    """`system` (a FastSlowSystem, a catalogue entry, a NetworkSystem or a NetworkModel) with its data.

    A catalogue entry supplies the defaults and its closed-form φ.  A NetworkModel becomes a
    NetworkSystem on its projection with the model's own ε, y0 and t_span unless given
    (`sp_ode.systems.resolve.as_system`, the door every entry point shares); a network
    verdict starts on the critical manifold x0 = p_st(y0), so `x0` is refused there.

    Raises
    ------
    TypeError
        `system` is none of the above.
    ValueError
        Missing `t_span`, `x0` or `y0`; a `y0` of the wrong length for a network.
    """
    if isinstance(system, Case):
        return system
    if isinstance(system, (NetworkSystem, NetworkModel)):
        return _network_case(system, t_span=t_span, x0=x0, y0=y0, description=description)
    entry = system if isinstance(system, EntryLike) else None
    system = as_system(system)
    t_span = t_span if t_span is not None else getattr(entry, "t_span", None)
    x0 = x0 if x0 is not None else getattr(entry, "x0", None)
    y0 = y0 if y0 is not None else getattr(entry, "y0", None)
    missing = [n for n, v in (("t_span", t_span), ("x0", x0), ("y0", y0)) if v is None]
    if missing:
        raise ValueError(f"system {system.name!r} has no default {', '.join(missing)}: pass "
                         + ", ".join(f"`{n}`" for n in missing) + ".")
    t_span = check_t_span(t_span)
    system = check_model(system, x0, y0).system   # f, g, Q traced once; m, d recorded
    return Case(system, system.name, t_span, np.asarray(x0, float), np.asarray(y0, float),
                getattr(entry, "phi", None), description if description is not None else getattr(entry, "description", ""))


def _network_case(obj, *, t_span, x0, y0, description) -> Case:
    if x0 is not None:
        raise ValueError("`x0` does not apply to a network model: its verdict starts on the critical manifold "
                         "x0 = p_st(y0).")
    if isinstance(obj, NetworkModel):
        system = as_system(obj)
        y0 = obj.y0 if y0 is None else y0
        t_span = obj.t_span if t_span is None else t_span
        description = description or f"network model {obj.name}"
    else:
        system = obj
        y0 = getattr(obj, "y0", None) if y0 is None else y0
        t_span = getattr(obj, "t_span", None) if t_span is None else t_span
        description = description or f"NetworkSystem {system.name}"
    missing = [n for n, v in (("t_span", t_span), ("y0", y0)) if v is None]
    if missing:
        raise ValueError(f"network system {system.name!r} has no default {', '.join(missing)}: pass "
                         + ", ".join(f"`{n}`" for n in missing) + ".")
    y0 = np.asarray(y0, float).reshape(-1)
    if y0.shape != (system.d,):
        raise ValueError(f"`y0` must give {system.d} value(s) for {system.name!r}; got {y0.tolist()}.")
    t_span, y0 = check_network_start(system, t_span, y0)
    return Case(system, system.name, t_span, None, y0, None, description, network=True)


def identity_grid(case: Case, region, num: int) -> np.ndarray:
    """The family's domain for a master equation over a GeneratorFamily (T1 is claimed there); else the
    visited range (d = 1) or points along the reduced path (d > 1)."""
    Q_of_y = case.system.Q_of_y if isinstance(case.system, MasterEquationSystem) else None
    if isinstance(Q_of_y, GeneratorFamily):
        return Q_of_y.grid(num if Q_of_y.d == 1 else max(3, int(round(num ** (1 / Q_of_y.d)))))
    if case.system.d == 1 or region.reduced.y.shape[1] == 1:
        return np.linspace(region.lower[0], region.upper[0], num)[:, None]
    ys = region.reduced.y
    return ys[np.linspace(0, len(ys) - 1, num).astype(int)]


# --- the verdict ----------------------------------------------------------------------------------------

def verify(system: SystemLike, *, t_span: TimeSpan | None = None, x0: Float[ArrayLike, " m"] | None = None,
           y0: Float[ArrayLike, " d"] | None = None, phi: Callable | None = None, Ps: Sequence[int] | None = None,
           order: int = 1, backend: str = "auto", num: int | None = None, smoke: bool = False,
           out: PathLike | None = None, overwrite: bool = False,
           show_progress: bool = False, description: str | None = None) -> VerifyReport:
    """Verify the reduction of `system` where it actually goes (module docstring).

    Parameters
    ----------
    system : FastSlowSystem, catalogue entry (`sp_ode.get_system`), NetworkSystem or NetworkModel
    t_span : (t0, t1), optional
        Default: the entry's (required for a bare system).
    x0 : array (m,), optional
        The initial state (a network starts at
    y0 : array (d,), optional
        The initial state (a network starts at
        x0 = p_st(y0) and takes only `y0`).
    phi : callable y (d,) -> (m,), optional
        A closed-form critical manifold of a general system,
        compared with Newton's (default: the catalogue entry's, if any).
    Ps : sequence of int, optional
        Block sizes P (ε = 1/P) of the certificate, at least 4
        (networks: at least 5); default 4, 8, …, 4096 (networks: ε = 10^-1.5 … 10^-3.5).
    order : int
        K of the slow manifold h_ε (default 1).
    backend : {"auto", "diffrax", "scipy"}
        The integrator of the full solves (`sp_ode.simulate`).
    num : int, optional
        Grid points in y of the identity check (default 41; networks 5).
    smoke : bool
        A small, fast version (6 values of P, 9 grid points, smaller network projections
        are the caller's choice).
    out : path, optional
        Write the figures and `report.json` there (`write`, the save loop both verdicts share).
    overwrite : bool
        Allow `out` to hold an earlier report.
    show_progress : bool
        A progress bar over the certificate's solves.

    Returns
    -------
    VerifyReport

    Raises
    ------
    TypeError, ValueError
        A bad `system`, missing initial data, bad `Ps`/`order`/`num`/`backend` (each named).
    FileExistsError
        `out` holds an earlier report and `overwrite` is False (checked before any work).
    """
    # every input is validated here, once; the steps below are the checked cores of the public functions
    backend = check_choice("backend", backend, BACKENDS)
    case = resolve_case(system, t_span=t_span, x0=x0, y0=y0, description=description)
    if phi is not None:
        if not callable(phi):
            raise TypeError(f"`phi` must be callable as phi(y) -> (m,); got {type(phi).__name__}.")
        case = replace(case, phi=phi)
    if out is not None:
        refuse_earlier_report(out, overwrite)
    report = _verify_network(case, Ps=Ps, num=num, smoke=smoke) if case.network else \
        _verify_general(case, Ps=Ps, order=order, backend=backend, num=num, smoke=smoke, show_progress=show_progress)
    if out is not None:
        report.write(out, overwrite=True)
    return report


def _verify_network(case: Case, *, Ps, num, smoke) -> VerifyReport:
    Ps = check_Ps(Ps, min_points=MIN_POINTS + 1) if Ps is not None else None
    eps_values = np.array(sorted((1.0 / Ps).tolist(), reverse=True)) if Ps is not None else None
    verdict = verify_network_checked(case.system, case.t_span, case.y0, eps_values=eps_values,
                                     num=check_network_num(num, smoke), smoke=smoke)
    record = verdict.to_dict()
    record["description"] = case.description
    return VerifyReport(case.name, "network", case.description, verdict.steps, record,
                        _parts={"network": verdict, "case": case})


def _check_num(num, smoke: bool) -> int:
    if num is None:
        return SMOKE_NUM if smoke else DEFAULT_NUM
    num = check_positive_int("num", num)
    if num < 2:
        raise ValueError(f"`num` must be >= 2 (grid points of the identity check); got {num}.")
    return num


def _verify_general(case: Case, *, Ps, order, backend, num, smoke, show_progress) -> VerifyReport:
    order = check_order(order)
    num = _check_num(num, smoke)
    check_identity_size(num, int(np.size(case.x0)), int(np.size(case.y0)))   # before any work or grid
    Ps = check_Ps(Ps) if Ps is not None else np.array(SMOKE_PS if smoke else DEFAULT_PS)  # before any work
    options = SolveOptions(backend, None, 1e-10, 1e-12)   # the region's full solve and the certificate's
    master = isinstance(case.system, MasterEquationSystem)
    num_times = 101 if smoke else 201
    steps = Steps.start(CHECKS)

    with steps.timed("hyperbolicity"):
        region = visited_region_checked(case.system, case.t_span, case.x0, case.y0,
                                        phi=None if master else case.phi, num_times=num_times, options=options)
    steps.set("hyperbolicity", region.status, region.message)
    ident = cert = None
    if region.reached:
        for name in ("identity", "certificate"):
            steps.skip(name, "skipped: the reduction does not hold on the path (step 1)")
    else:
        with steps.timed("identity"):
            grid = np.asarray(identity_grid(case, region, num), dtype=np.float64).reshape(-1, case.y0.size)
            ident = identity_check_checked(case.system, grid, x0=case.x0, phi=case.phi,
                                           phi_name="the catalogue's φ" if case.phi is not None else "φ",
                                           phi_kind="linear solve" if master else "closed form")
        steps.set("identity", ident.status, ident.message)
        if region.passed:
            with steps.timed("certificate"):
                cert = _certificate(case, Ps, order, options, master, show_progress, num_times)
            steps.set("certificate", "ok" if cert.passed else "FAIL",
                      "rates O(ε), O(ε^{k+1}), O(ε) measured" if cert.passed else "certificate: " + cert.messages[0])
        else:
            steps.skip("certificate", "skipped: φ is not normally hyperbolic and attracting on the visited region")
    record = _record(case, order, backend, region, ident, cert, steps.seconds)
    return VerifyReport(case.name, "master" if master else "general", case.description, steps, record,
                        _parts={"case": case, "region": region, "identity": ident, "certificate": cert})


def _certificate(case: Case, Ps, order, options, master, show_progress, num_times):
    guess = None if case.phi is not None else case.x0
    manifold = slow_manifold_checked(case.system, order, x_guess=None if master else guess,
                                     phi=None if master else case.phi)
    return convergence_certificate_checked(case.system, Ps, order=order, t_span=case.t_span, x0=case.x0,
                                           y0=case.y0, options=options, manifold=manifold,
                                           show_progress=show_progress, num_times=num_times)


def _record(case: Case, order, backend, region, ident, cert, seconds) -> dict:
    """The numbers of each step, JSON-ready (the keys of report.json)."""
    head = ident.independent_comparison() if ident is not None else None
    record = {
        "order": order, "backend": backend,
        "slow_names": list(case.system.slow_names) if getattr(case.system, "slow_names", None) else None,
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
        record.update({"slope_manifold": cert.slopes["manifold"], "slope_corrected": cert.slopes["corrected"],
                       "slope_slow": cert.slopes["slow"], "slope_tolerance": cert.slope_tol,
                       "constants": cert.constants, "final_constants": cert.final_constants,
                       "certificate": cert.to_dict(), "table_text": cert.format_table()})
    else:
        record.update(dict.fromkeys(("slope_manifold", "slope_corrected", "slope_slow", "slope_tolerance",
                                     "constants", "final_constants", "certificate", "table_text")))
    return record
