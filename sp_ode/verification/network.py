"""`sp-ode verify` for a reaction-network fast–slow system (docs/theory.md §7.7).

For a [`NetworkSystem`][sp_ode.systems.network.NetworkSystem] — ε dx/dt = Q(y)ᵀx on a
finite state projection, dy/dt = G(E_x[·], y) — [`verify_network`][sp_ode.verification.network.verify_network] checks, on the
region the user's trajectory actually visits:

1. **Paths.**  The reduced (order 0) and first-order corrected (order 1) slow flows over
   `t_span` from y0; the visited y-range is the hull of both.
2. **The identity p_st(y) = attractor of the fast flow, by independent routes**
   ([`network_identity`][sp_ode.verification.network_steps.network_identity]), at a few y on the visited range:

   * the sparse stationary solver `stationary_distribution(Q, method="sparse")`
     (AMG-GMRES on the bordered system, escalating to banded/dense GTH — all of them
     *linear solves* of Qᵀp = 0, 1ᵀp = 1) with its error bound;
   * the **attractor of the frozen fast flow** x' = Q(y)ᵀx (`sp_ode.markov.attractor.attractor_distribution` from a few starts):
     the uniformised chain P = I + Q/Λ applied to several starting laws (the uniform law
     and extreme states), sparse mat-vecs with a nonnegative matrix, **no linear system
     solved**, run for 16, 32, 64, … steps until the starts agree with each other and
     with the previous checkpoint.

   Two methods of different kinds (the rule of `sp_ode.verification.identity`) are
   independent; the check passes when they agree within the solver's bound + the
   attractor's radius + 10⁻¹² at every point.  A reducible Q(y) (more than one
   communicating class), a failed solve or an attractor that does not settle is a FAIL
   with its reason — never a pass.
3. **Certificate slopes.**  The full sparse stiff system (BDF, sparse Jacobian, tight
   rtol) at ≥ 5 ε from x0 = p_st(y0) (on the critical manifold, so the initial layer
   moves y only by O(ε²), §7.5); max over the save times of |y − y_reduced| (expected
   slope 1 in ε) and |y − y_corrected| (expected slope 2), each fitted by
   [`sp_ode.verification.certificate.fit_rate`][sp_ode.verification.rates.fit_rate] (≥ 4 points, slope ± standard error,
   95 % interval, dropped points with reasons).
4. **Figures** ([`NetworkVerdict.plot_marginals`][sp_ode.verification.network.NetworkVerdict.plot_marginals], [`NetworkVerdict.plot_convergence`][sp_ode.verification.network.NetworkVerdict.plot_convergence]):
   the marginals of p_st(y(t)) of each fast species at four times along the reduced path,
   with the full solve's x(t) marginals at the largest ε as markers; error against ε,
   log-log, with the fitted slopes.

Every summary line ends in `ok`, `FAIL` or `skipped`.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sp_ode.core.summary import Summarised, first_line, number
from sp_ode.core.validation import check_positive, check_positive_int
from sp_ode.systems.network import NetworkSystem, padded_range
from sp_ode.systems.system import slow_symbol
from sp_ode.verification.network_steps import NetworkIdentity, network_identity
from sp_ode.verification.plotting import plot_network_convergence, plot_network_marginals
from sp_ode.verification.rates import MIN_POINTS, RateFit, fit_rate
from sp_ode.verification.steps import Steps, StepsView, refuse_earlier_report

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float, PathLike, TimeSpan

__all__ = ["verify_network", "NetworkVerdict", "DEFAULT_EPS", "SMOKE_EPS"]

DEFAULT_EPS = tuple(10.0 ** np.linspace(-1.5, -3.5, 6))   # ε ≈ 3.2e-2 … 3.2e-4
SMOKE_EPS = tuple(10.0 ** np.linspace(-1.5, -3.0, 5))     # ε ≈ 3.2e-2 … 1e-3
FULL_RTOL, FULL_ATOL = 1e-11, 1e-14       # the full stiff solves
PATH_RTOL, PATH_ATOL = 1e-12, 1e-14       # the reduced and corrected paths
_RATES = {"reduced": 1.0, "corrected": 2.0}


# --- the verdict --------------------------------------------------------------------------------------------

@dataclass(repr=False)
class NetworkVerdict(StepsView, Summarised):
    """What [`verify_network`][sp_ode.verification.network.verify_network] found (module docstring).

    Attributes
    ----------
    name : str
        The system's name.
    n, d : int
        Fast states of the truncated space, slow variables.
    eps : float
        The system's ε (the corrected path of step 1).
    t_span : tuple
    y0 : ndarray (d,)
    steps : Steps
        `paths`, `identity`, `rate_reduced`, `rate_corrected` in order (`sp_ode.verification.steps`);
        `checks` (name → "ok"/"FAIL"/"skipped"), `messages` (one line per check) and `seconds` (per
        stage, and each full solve's) are read off it.
    visited : (lower (d,), upper (d,)) or None
    identity : NetworkIdentity or None
    fits : dict name -> RateFit ("reduced", "corrected")
    eps_values : ndarray (K,)
        Max over the save times.
    errors : dict name -> ndarray (K,)
        Max over the save times.
    notes : list of str
    species, slow_names : tuple of str
        The fast species; the slow variables (the network's `slow`), named in messages and figures.
    """

    name: str
    n: int
    d: int
    eps: float
    t_span: tuple
    y0: np.ndarray
    steps: Steps
    visited: tuple | None = None
    identity: NetworkIdentity | None = None
    fits: dict = field(default_factory=dict)
    eps_values: np.ndarray | None = None
    errors: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    species: tuple = ()
    slow_names: tuple = ()
    marginal_times: np.ndarray | None = field(default=None, repr=False)
    marginal_ys: np.ndarray | None = field(default=None, repr=False)
    marginals: dict = field(default_factory=dict, repr=False)        # species -> (T, K+1) of p_st(y(t))
    full_marginals: dict = field(default_factory=dict, repr=False)   # species -> (T, K+1) of x(t), largest ε
    full_eps: float | None = None
    marginal_uncertified: list = field(default_factory=list, repr=False)  # per time: level or None
    figures: list = field(default_factory=list)





    @property
    def seconds(self) -> dict:
        return self.steps.seconds

    def _summary_title(self) -> str:
        return f"NetworkVerdict: {self.name}, verify {'passed' if self.passed else 'FAILED'}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        rows = [("checks", ", ".join(f"{k} {v}" for k, v in self.checks.items())),
                ("sizes", f"n = {self.n} fast states, d = {self.d} slow ({', '.join(self.slow_names)}), "
                          f"ε = {number(self.eps)}")]
        rows += [(f"slope {k}", f"{number(f.slope, 3)} ± {number(f.stderr, 2)} (expected {number(f.expected)})")
                 for k, f in self.fits.items()]
        if self.identity is not None:
            rows.append(("identity", f"max difference {number(self.identity.max_error)}"))
        if self.failure:
            rows.append(("failure", first_line(self.failure)))
        return rows

    def headline(self) -> dict:
        """The numbers a reader cites: identity methods and difference, each slope ± its standard error."""
        ident = self.identity
        out = {
            "identity_checked": ident is not None and ident.status != "skipped",
            "identity_methods": [] if ident is None else ident.to_dict()["methods"],
            "identity_independent": None if ident is None else ident.independent,
            "identity_max_error": None if ident is None else ident.max_error,
            "identity_tolerance": None if ident is None else ident.tolerance,
            "slope_tolerance": None,
        }
        for key in ("reduced", "corrected"):
            fit = self.fits.get(key)
            out[f"slope_{key}"] = None if fit is None else fit.slope
            out[f"slope_{key}_stderr"] = None if fit is None else fit.stderr
            if fit is not None:
                out["slope_tolerance"] = fit.tol
        return out

    def to_dict(self) -> dict:
        return {
            "system": self.name, "kind": "network", "n": self.n, "d": self.d, "eps": self.eps,
            "slow_names": list(self.slow_names),
            "t_span": list(self.t_span), "y0": self.y0, "checks": self.checks, "messages": self.messages,
            "passed": self.passed, "failure": self.failure, **self.headline(),
            "visited": None if self.visited is None else {"lower": self.visited[0], "upper": self.visited[1]},
            "identity": None if self.identity is None else self.identity.to_dict(),
            "eps_values": self.eps_values, "errors": self.errors,
            "fits": {k: f.to_dict() for k, f in self.fits.items()}, "notes": self.notes, "seconds": self.seconds,
            "marginal_uncertified_below": self.marginal_uncertified,
            "figures": self.figures,
        }

    def summary(self) -> list[str]:
        """The human-readable lines: every check line ends in `ok`, `FAIL` or `skipped`."""
        c, m = self.checks, self.messages
        lines = []
        if self.failure:
            lines.append(self.failure.strip().splitlines()[0])
        lines.append(f"sp-ode verify: {self.name} — reaction network, n = {self.n} fast states, d = {self.d} "
                     f"slow, ε = {self.eps:g}, t ∈ [{self.t_span[0]:g}, {self.t_span[1]:g}]")
        lines.append(f"(1) reduced and corrected paths: {m['paths'].removeprefix('paths: ')}  {c['paths']}")
        for note in self.notes:
            lines.append(f"      note: {note}")
        ident = self.identity
        if ident is not None:
            lines.append("(2) identity p_st(y) by independent routes, methods:")
            for meth in ident.methods:
                lines.append(f"      {meth.name} [{meth.kind}] — {meth.note}")
            for r in ident.points:
                y = ", ".join(f"{v:.4g}" for v in r["y"])
                parts = []
                if math.isfinite(r.get("elimination_difference", float("nan"))):
                    parts.append(f"vs elimination {r['elimination_difference']:.1e} ≤ {r['elimination_tolerance']:.1e} "
                                 f"({'relative, every entry' if r['elimination_kind'] == 'componentwise' else 'ℓ1'})")
                if math.isfinite(r["difference"]):
                    parts.append(f"vs attractor {r['difference']:.1e} (tolerance {r['tolerance']:.1e}; τ = "
                                 f"{r['tau']:.3g})")
                elif r.get("attractor_status") == "inconclusive":
                    parts.append(f"attractor inconclusive (γ ≈ {r['spectral_gap']:.2g}: ≈ "
                                 f"{r['attractor_predicted_steps']:.2g} steps to settle"
                                 + (f"; stopped after {r['attractor_steps']}" if r["attractor_steps"] else "; not run")
                                 + ")")
                if r["status"] != "ok" and r["reason"]:
                    parts.append(r["reason"])
                lines.append(f"      {slow_symbol(self.slow_names)} = {y}: {r['solver']}, bound "
                             f"{r['solver_bound']:.1e}; " + "; ".join(parts) + f"  {r['status']}")
        lines.append(f"(2) identity: {m['identity'].removeprefix('identity: ')}  {c['identity']}")
        for key in ("reduced", "corrected"):
            fit = self.fits.get(key)
            if fit is not None and self.eps_values is not None:
                errs = ", ".join(f"{e:.2e}" for e in self.errors[key])
                lines.append(f"      |y − y_{key}| at ε = {', '.join(f'{e:.2g}' for e in self.eps_values)}: {errs}")
                for dr in fit.dropped:
                    lines.append(f"      dropped ε = {dr['eps']:.2g}: {dr['reason']}")
            body = m["rate_" + key].removeprefix(f"rate |y − y_{key}|: ")
            lines.append(f"(3) rate |y − y_{key}|: {body}  {c['rate_' + key]}")
        lines.append(f"verify {'PASSED' if self.passed else 'FAILED'}: "
                     + ", ".join(f"{k} {v}" for k, v in c.items()))
        return lines

    def format(self) -> str:
        return "\n".join(self.summary())

    # --- figures (drawn in sp_ode.verification.plotting) --------------------------------------------------
    def plot_marginals(self, path) -> Path:
        """Marginals of p_st(y(t)) per fast species at four times (lines), the full solve's x(t) (markers)."""
        return plot_network_marginals(self, path)

    def plot_convergence(self, path) -> Path:
        """The error |y − y_path| against ε (log-log) for both paths, fitted lines, slopes ± SE in the legend."""
        return plot_network_convergence(self, path)

    def figure_makers(self) -> list:
        """`marginals.png` and `convergence.png`, each when drawn; `write` (StepsView) saves them with report.json."""
        return [("marginals.png", self.plot_marginals if self.marginals else None),
                ("convergence.png", self.plot_convergence if self.fits else None)]


def _rate_message(fit: RateFit) -> str:
    body = (f"slope {fit.slope:.3f} ± {fit.stderr:.3f} (95 % interval [{fit.interval[0]:.3f}, "
            f"{fit.interval[1]:.3f}]), expected {fit.expected:g} ± {fit.tol:g}, {fit.n_points} points")
    return body if fit.passed else f"{fit.reason}"


_ERRORS = (ArithmeticError, ValueError, RuntimeError, np.linalg.LinAlgError)


def verify_network(system: NetworkSystem, t_span: TimeSpan, y0: Float[ArrayLike, " d"], *,
                   eps_values: Float[ArrayLike, " K"] | None = None, num: int | None = None,
                   smoke: bool = False, out: PathLike | None = None, overwrite: bool = False,
                   slope_tol: float = 0.15) -> NetworkVerdict:
    """Verify a network fast–slow system on the region its trajectory visits (module docstring).

    Parameters
    ----------
    system : NetworkSystem
    t_span : (t0, t1)
    y0 : array_like (d,)
    eps_values : sequence of float, optional
        ε for the certificate, at least `MIN_POINTS` + 1 = 5 (default `DEFAULT_EPS`, 10^-1.5 … 10^-3.5;
        `SMOKE_EPS` with `smoke`); sorted decreasing.
    num : int, optional
        y points for the identity check (default 5; 3 with `smoke`).
    out : path, optional
        Write the figures and `report.json` there (`StepsView.write`).
    overwrite : bool
        Allow `out` to hold an earlier report.
    slope_tol : float
        Admitted deviation of each slope (`fit_rate`).

    Returns
    -------
    NetworkVerdict

    Raises
    ------
    TypeError, ValueError
        Not a NetworkSystem; bad `t_span`, `y0`, `eps_values` or `num`.
    FileExistsError
        `out` holds an earlier report and `overwrite` is False (checked before any work).
    """
    if not isinstance(system, NetworkSystem):
        raise TypeError(f"`system` must be a NetworkSystem; got {type(system).__name__}.")
    t_span, y0 = check_network_start(system, t_span, y0)
    if eps_values is not None:
        eps_values = np.array(sorted([check_positive("eps", e) for e in eps_values], reverse=True))
        if len(eps_values) < MIN_POINTS + 1:
            raise ValueError(f"`eps_values` needs at least {MIN_POINTS + 1} values (a fit keeps ≥ {MIN_POINTS}); "
                             f"got {len(eps_values)}.")
    num = check_network_num(num, smoke)
    if out is not None:
        refuse_earlier_report(out, overwrite)
    return verify_network_checked(system, t_span, y0, eps_values=eps_values, num=num, smoke=smoke, out=out,
                                  slope_tol=slope_tol)


def check_network_start(system: NetworkSystem, t_span, y0) -> tuple[tuple[float, float], np.ndarray]:
    """((t0, t1), y0): `t_span` finite with t0 < t1, `y0` the system's d finite numbers (named in errors)."""
    t0, t1 = (float(v) for v in t_span)
    if not (math.isfinite(t0) and math.isfinite(t1) and t1 > t0):
        raise ValueError(f"`t_span` must be finite with t0 < t1; got {t_span!r}.")
    y0 = np.asarray(y0, dtype=np.float64).reshape(-1)
    if y0.shape != (system.d,) or not np.all(np.isfinite(y0)):
        raise ValueError(f"`y0` must be {system.d} finite number(s); got {y0.tolist()}.")
    return (t0, t1), y0


def check_network_num(num, smoke: bool) -> int:
    """y points of the network identity check: default 5 (3 with `smoke`), else a positive int."""
    return (3 if smoke else 5) if num is None else check_positive_int("num", num)


def verify_network_checked(system: NetworkSystem, t_span: tuple[float, float], y0: np.ndarray, *,
                           eps_values: np.ndarray | None, num: int, smoke: bool = False, out: PathLike | None = None,
                           slope_tol: float = 0.15) -> NetworkVerdict:
    """`verify_network` on input already checked (`check_network_start`, `check_network_num`; `eps_values`
    positive, at least `MIN_POINTS` + 1, sorted decreasing, or None for the defaults).  `sp_ode.verify`
    calls it, so each input is validated once, at its own door."""
    t0, t1 = t_span
    if eps_values is None:
        eps_values = np.array(sorted(SMOKE_EPS if smoke else DEFAULT_EPS, reverse=True))
    steps = Steps.start(("paths", "identity", "rate_reduced", "rate_corrected"), "skipped: the paths did not run")
    verdict = NetworkVerdict(system.name, system.n, system.d, system.eps, (t0, t1), y0, steps,
                             eps_values=eps_values, species=tuple(system.space.species),
                             slow_names=system.slow_names)
    # one grid: 31 dense times for the range, every 5th (7 times) for the errors, 4 of those for the figure
    t_dense = np.linspace(t0, t1, 31)
    t_save = t_dense[::5]
    fig_idx = [0, 2, 4, 6]

    # --- (1) reduced and corrected paths -------------------------------------------------------------------
    start = time.perf_counter()
    paths_msg = steps["paths"].message
    try:
        red = system.simulate_reduced((t0, t1), y0, order=0, t_eval=t_dense, rtol=PATH_RTOL, atol=PATH_ATOL)
    except _ERRORS as exc:
        red = None
        paths_msg = f"paths: the reduced flow failed: {type(exc).__name__}: {exc}"
    table = None
    cor = None
    if red is not None and red.status == 0:
        if system.d == 1:
            try:
                table = system.manifold_table(padded_range(red.y[:, 0]), order=1)
            except _ERRORS as exc:
                verdict.notes.append(f"no slow-manifold table ({type(exc).__name__}: {exc}); direct solves used")
        try:
            cor = system.simulate_reduced((t0, t1), y0, order=1, t_eval=t_dense, rtol=PATH_RTOL, atol=PATH_ATOL,
                                          table=table if table is not None else False)
            if cor.status == -1 and table is not None:     # left the table: fall back to direct solves
                table = None
                cor = system.simulate_reduced((t0, t1), y0, order=1, t_eval=t_dense, rtol=PATH_RTOL, atol=PATH_ATOL)
        except _ERRORS as exc:
            paths_msg = f"paths: the corrected flow failed: {type(exc).__name__}: {exc}"
    elif red is not None:
        paths_msg = f"paths: the reduced flow failed (status {red.status}): {red.message}"
    steps.record("paths", time.perf_counter() - start)
    if red is None or red.status != 0 or cor is None or cor.status != 0:
        if cor is not None and cor.status != 0:
            paths_msg = f"paths: the corrected flow failed (status {cor.status}): {cor.message}"
        steps.set("paths", "FAIL", paths_msg)
        for k in ("rate_reduced", "rate_corrected"):
            steps.skip(k, "skipped: no reduced/corrected path (step 1)")
        # the identity at y0 alone still says why (e.g. a reducible Q(y0))
        ident = network_identity(system, y0[None])
        verdict.identity = ident
        steps.set("identity", ident.status, "identity (at y0 only; no visited range): "
                  + ident.message.removeprefix("identity: "))
        _finish(verdict, out)
        return verdict
    ys_all = np.concatenate([red.y, cor.y])
    lower, upper = ys_all.min(axis=0), ys_all.max(axis=0)
    verdict.visited = (lower, upper)
    rng = "; ".join(f"{v} ∈ [{lo:.6g}, {hi:.6g}]" for v, lo, hi in zip(system.network.slow, lower, upper))
    steps.set("paths", "ok", f"visited {rng} (reduced: {red.stats.get('solves', 0)} stationary solves; corrected "
              + ("from a Chebyshev table" if table is not None else "by direct solves") + ")")
    outflow = red.stats.get("max_fsp_outflow_rate")
    if outflow is not None:
        verdict.notes.append(f"largest FSP outflow rate along the reduced path {outflow:.1e} (flux the projection "
                             "suppresses: an indicator of truncation error, not a bound; docs/theory.md §7.6)")

    # the marginals of p_st(y(t)) along the reduced path (the solver's answers)
    verdict.marginal_times = t_save[fig_idx]
    verdict.marginal_ys = red.y[::5][fig_idx]
    for s in system.space.species:
        verdict.marginals[s] = []
    verdict.marginal_uncertified = []
    for y in verdict.marginal_ys:
        p_y, info_y = system.stationary(y)
        for s in system.space.species:
            cm = system.space.certified_marginal(p_y, s, info_y)
            verdict.marginals[s].append(cm.values)
        # a normwise answer: its marginals carry no relative accuracy below 2β (docs/theory.md §7.9)
        verdict.marginal_uncertified.append(cm.uncertified_below if cm.kind == "normwise" else None)
    verdict.marginals = {s: np.array(v) for s, v in verdict.marginals.items()}

    # --- (2) the identity at scale ------------------------------------------------------------------------------
    start = time.perf_counter()
    if system.d == 1:
        ys_id = np.linspace(lower[0], upper[0], num)[:, None]
    else:
        ys_id = red.y[np.linspace(0, len(red.y) - 1, num).round().astype(int)]
    ident = network_identity(system, ys_id)
    verdict.identity = ident
    steps.set("identity", ident.status, ident.message)
    steps.record("identity", time.perf_counter() - start)
    gaps = [r["spectral_gap"] for r in ident.points if math.isfinite(r.get("spectral_gap", float("nan")))]
    gap_min = min(gaps) if gaps else None
    if gap_min is not None:
        verdict.notes.append(f"spectral gap of the fast chain on the visited range: min γ ≈ {gap_min:.3g} (computed "
                             "eigenvalue, an estimate; relaxation time ≈ 1/γ on the fast clock)")

    # --- (3) certificate slopes ------------------------------------------------------------------------------
    start = time.perf_counter()
    y_red = red.y[::5]
    errs = {"reduced": [], "corrected": []}
    fulls = []
    for k, eps in enumerate(eps_values):
        se = copy.copy(system)
        se.eps = float(eps)
        try:
            full = system.simulate((t0, t1), y0, eps=float(eps), rtol=FULL_RTOL, atol=FULL_ATOL, t_eval=t_save)
            ok = full.status == 0 and full.y.shape[0] == len(t_save)
        except _ERRORS as exc:
            full, ok = None, False
            verdict.notes.append(f"full solve at ε = {eps:.3g} failed: {type(exc).__name__}: {exc}")
        try:
            cpath = se.simulate_reduced((t0, t1), y0, order=1, t_eval=t_save, rtol=PATH_RTOL, atol=PATH_ATOL,
                                        table=table if table is not None else False)
            cok = cpath.status == 0
        except _ERRORS as exc:
            cpath, cok = None, False
            verdict.notes.append(f"corrected path at ε = {eps:.3g} failed: {type(exc).__name__}: {exc}")
        if full is not None and not ok:
            verdict.notes.append(f"full solve at ε = {eps:.3g}: status {full.status}: {full.message}")
        fulls.append(full.stats.get("seconds") if full is not None else None)
        errs["reduced"].append(float(np.max(np.abs(full.y[1:] - y_red[1:]))) if ok else np.nan)
        errs["corrected"].append(float(np.max(np.abs(full.y[1:] - cpath.y[1:]))) if ok and cok else np.nan)
        if k == 0 and ok and full.x is not None:
            verdict.full_eps = float(eps)
            verdict.full_marginals = {s: np.array([system.space.marginal(full.x[i], s) for i in fig_idx])
                                      for s in system.space.species}
    ymax = max(1.0, float(np.max(np.abs(ys_all))))
    floor = 10 * (FULL_ATOL + FULL_RTOL * ymax) + 10 * (PATH_ATOL + PATH_RTOL * ymax)
    for key, expected in _RATES.items():
        d = np.array(errs[key])
        verdict.errors[key] = d
        fit = fit_rate(eps_values, d, floor, expected=expected, tol=slope_tol)
        verdict.fits[key] = fit
        finite = d[np.isfinite(d)]
        if finite.size == d.size and np.all(finite <= floor):
            # nothing above the solver's floor: the paths agree to solver precision, no rate to measure
            steps.skip("rate_" + key, f"skipped: every |y − y_{key}| is at or below the solver's error floor "
                                      f"{floor:.1e} (largest {finite.max():.1e}): the paths agree to solver "
                                      "precision and no rate can be measured (is y0 an equilibrium of the slow "
                                      "flow? start elsewhere)")
            continue
        message = _rate_message(fit) if fit.passed else f"rate |y − y_{key}|: {fit.reason}"
        if not fit.passed and gap_min is not None and gap_min > 0 and eps_values.min() > 0.05 * gap_min:
            # the reason is the model's: the fast chain is too slow for the ε tested (docs/theory.md §7.7)
            message += (
                f"; the fast chain's spectral gap is only γ ≈ {gap_min:.2g} on the visited range, so ε/γ ≥ "
                f"{eps_values.min() / gap_min:.2g} at the smallest ε tested: the expansion in ε needs ε ≪ γ "
                f"(a slowly mixing, metastable fast chain) — test ε below ≈ {0.05 * gap_min:.1g}")
        steps.set("rate_" + key, "ok" if fit.passed else "FAIL", message)
    steps.record("certificate", time.perf_counter() - start, "rate_reduced", "rate_corrected")
    steps.seconds["full_solves"] = [s for s in fulls if s is not None]
    _finish(verdict, out)
    return verdict


def _finish(verdict: NetworkVerdict, out) -> None:
    if out is not None:     # an earlier report was refused at the door (`verify_network`), before any work
        verdict.write(out, overwrite=True)
