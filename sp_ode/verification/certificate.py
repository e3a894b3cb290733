"""A convergence certificate for a fast–slow system: the Tikhonov and Fenichel rates, measured with statistics.

For ε = 1/P over a list of P, the full system ε dx/dt = f(x, y), dy/dt = g(x, y)
is simulated from (x0, y0) and, past the initial layer (t ≥ t₀), three distances
are measured against the theory of docs/theory.md §3.2–§3.3 and §3.5:

=================  ====================================  =============
name               quantity                              expected rate
=================  ====================================  =============
`manifold`       max_{t≥t₀} ‖x(t) − φ(y(t))‖∞          O(ε)
`corrected`      max_{t≥t₀} ‖x(t) − h_ε(y(t))‖∞        O(ε^{k+1})
`slow`           max_{t≥t₀} ‖y(t) − y_red(t)‖∞          O(ε)
=================  ====================================  =============

h_ε = φ + ε h₁ + … + εᵏ h_k is `sp_ode.slow_manifold` of order k (or a `GivenManifold`)
and y_red solves the reduced flow y' = g(φ(y), y) from the same y0, always with the
system's own φ.  Each rate is fitted by `fit_rate` (docs/theory.md §3.5):

* **Points left out, each with its reason.**  A distance at or below the solver's
  error floor 10 (atol + rtol ‖z‖∞) (ten local error tolerances: a tolerance-
  controlled global error runs to several; on me3 at rtol 1e-10 the distance to h_ε
  levels off at 5e-10 for P ≥ 2048, which bent the slope from 2.03 to 1.93) is
  integration error, not the asymptotic term.  At the large-ε end, a point is
  *before the asymptotic regime* while the local slope between it and its neighbour
  differs by more than `SETTLE` = 0.1 from the median local slope of the points
  after it (the leading term does not yet dominate); such points are dropped one at a
  time from the large-ε end.  Near the floor (within 10×), a point whose local slope
  departs the same way from the median is dropped from the small-ε end.  Neither
  rule looks at the expected slope, so a wrong manifold cannot be fitted into passing.
* **Statistics.**  Least squares of log d on log ε over the N points kept: slope b,
  standard error s_b = √(SSR/(N − 2) / Σ(log ε − mean)²), and the 95 % interval
  b ± t_{0.975, N−2} s_b (Student t, scipy.stats).
* **Verdict per rate.**  Passes when N ≥ `MIN_POINTS` = 4 (a two- or three-point fit
  never passes), the interval meets [expected − tol, expected + tol], and its
  half-width is ≤ tol (a fit too noisy to disagree with anything is *inconclusive*,
  which fails).  When fewer than 4 points survive, P values are added automatically
  (larger P when points were dropped at the large-ε end, smaller P when at the floor;
  at most `EXTEND_ROUNDS` = 2 rounds of two) and the message says which.
* `slope_tol` = 0.15: each distance is C ε^p (1 + O(ε)); over P = 4 … 4096
  (ln(ε_max/ε_min) ≈ 6.9) a relative correction c·ε bends the fitted slope by about
  c·ε_max/6.9 ≈ 0.04c, so 0.15 admits c up to ~4 while a wrong order (an error of 1
  in the slope) is never admitted.

t₀ = t_start + ε_max [(k + 1) ln(1/ε_max) + ln(10³ max(1, ‖x0 − φ(y0)‖∞))] / γ, with γ
the rate of attraction of φ at y0 (−max Re λ of D_x f on the fast fibre): the initial
layer decays like ‖x0 − φ(y0)‖ e^{−γ(t − t_start)/ε}, so at t₀ it is below 10⁻³ ε^{k+1}
for every ε ≤ ε_max.  It is capped at the middle of the time span (with a note).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from sp_ode.core.precision import in_float64
from sp_ode.core.reporting import progress
from sp_ode.core.validation import check_finite, check_finite_array, check_positive, check_positive_int
from sp_ode.manifolds.critical_manifold import normal_hyperbolicity
from sp_ode.manifolds.newton import is_master
from sp_ode.manifolds.reduced import reduced_system_checked, simulate_reduced_checked
from sp_ode.manifolds.slow_manifold import SlowManifold, check_order, slow_manifold_checked
from sp_ode.systems.options import SolveOptions, check_method
from sp_ode.systems.simulation import check_system, check_t_span, simulate_checked
from sp_ode.systems.system import slow_symbol
from sp_ode.verification.plotting import plot_certificate
from sp_ode.verification.rates import MIN_POINTS, fit_rate

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float, Int, TimeSpan
    from sp_ode.systems.catalogue import CatalogueEntry
    from sp_ode.systems.system import FastSlowSystem

__all__ = ["convergence_certificate", "ConvergenceCertificate", "DEFAULT_PS",
           "GivenManifold", "MIN_POINTS"]

DEFAULT_PS = tuple(2**k for k in range(2, 13))   # 4, 8, …, 4096
QUANTITIES = ("manifold", "corrected", "slow")
EXTEND_ROUNDS = 2
LABELS = {"manifold": "|x - phi(y)|", "corrected": "|x - h_eps(y)|", "slow": "|y - y_red|"}


# --- a manifold given term by term -----------------------------------------------------------

@dataclass(frozen=True)
class GivenManifold:
    """h_ε = Σ_j εʲ h_j given by its terms: closed forms, or a deliberately wrong manifold (a negative control).

    Attributes
    ----------
    order : int
        K.
    terms : callable ys (N, d) -> ndarray (N, k + 1, m)
        [φ, h₁, …, h_k] at each point.
    name : str
        For messages.
    """

    order: int
    terms: Callable
    name: str = "given manifold"


# --- the certificate -------------------------------------------------------------------------

@dataclass
class ConvergenceCertificate:
    """The measured distances, fitted rates and verdict of `convergence_certificate`.

    Attributes
    ----------
    system : str
        The system's name.
    order : int
        K of h_ε.
    Ps : ndarray (K,) int
        Ε = 1/P (the Ps actually run, with any added).
    eps : ndarray (K,)
        Ε = 1/P (the Ps actually run, with any added).
    t_span : (t_start, t_end)
        Start of the measurement window.
    t0_layer : float
        Start of the measurement window.
    distances : dict name -> ndarray (K,)
        Max over t ≥ t₀ (see the module table).
    final : dict name -> ndarray (K,)
        The same distances at t_end only.
    fits
        Dict name -> RateFit.
    slopes, expected : dict name -> float
        Fitted and expected log–log slopes.
    constants : dict name -> float
        C in distance ≈ C ε^p at the smallest fitted ε (t ≥ t₀).
    final_constants : dict name -> float
        The same at t_end.
    fitted : dict name -> ndarray (K,) bool
        Points used in each fit.
    slope_tol : float
        The error floor of the solves.
    floor : float
        The error floor of the solves.
    passed : bool
        Failures first (each naming its rate), then notes.
    messages : list of str
        Failures first (each naming its rate), then notes.
    stats : list of dict
        Per P: solver status, steps, wall time.
    slow_names : tuple of str or None
        The system's names of y (`FastSlowSystem.slow_names`): the table's slow column says
        `|w-w_red|` instead of `|y-y_red|`.
    """

    system: str
    order: int
    Ps: np.ndarray
    eps: np.ndarray
    t_span: tuple
    t0_layer: float
    distances: dict
    final: dict
    fits: dict
    constants: dict
    final_constants: dict
    slope_tol: float
    floor: float
    passed: bool
    messages: list = field(default_factory=list)
    stats: list = field(default_factory=list, repr=False)
    slow_names: tuple | None = None

    @property
    def slopes(self) -> dict:
        return {q: f.slope for q, f in self.fits.items()}

    @property
    def expected(self) -> dict:
        return {q: f.expected for q, f in self.fits.items()}

    @property
    def fitted(self) -> dict:
        return {q: f.used for q, f in self.fits.items()}

    def rows(self) -> list[dict]:
        """One dict per P: P, eps and the three distances (t ≥ t₀)."""
        return [{"P": int(P), "eps": float(e), **{q: float(self.distances[q][i]) for q in QUANTITIES}}
                for i, (P, e) in enumerate(zip(self.Ps, self.eps))]

    def to_dict(self) -> dict:
        """Every number, JSON-ready (with `sp_ode.core.files.dumps`)."""
        return {
            "system": self.system, "order": self.order, "Ps": self.Ps, "eps": self.eps,
            "t_span": list(self.t_span), "t0_layer": self.t0_layer, "table": self.rows(),
            "distances": self.distances, "final": self.final, "slopes": self.slopes,
            "expected_slopes": self.expected, "fits": {q: f.to_dict() for q, f in self.fits.items()},
            "constants": self.constants, "final_constants": self.final_constants, "fitted": self.fitted,
            "slope_tolerance": self.slope_tol, "error_floor": self.floor, "passed": self.passed,
            "messages": self.messages, "solver_stats": self.stats,
        }

    def _slow_label(self, sep: str = " - ") -> str:
        """`|y - y_red|`, with the system's name of y when it has one (a tuple of names for d > 1)."""
        y = slow_symbol(self.slow_names)
        return f"|{y}{sep}{y}_red|"

    def format_table(self) -> str:
        """A short text table: distances per P (points left out marked), then each rate with its interval."""
        lines = [f"convergence certificate for {self.system} (order k = {self.order}, t ≥ t₀ = {self.t0_layer:.3g}; "
                 f"* = left out of that fit)",
                 f"{'P':>6} {'eps':>10} {'|x-phi|':>12} {'|x-h_eps|':>12} {self._slow_label('-'):>12}"]
        for i, r in enumerate(self.rows()):
            cells = [f"{r[q]:>11.3e}{' ' if self.fits[q].used[i] else '*'}" for q in QUANTITIES]
            lines.append(f"{r['P']:>6d} {r['eps']:>10.3e} " + " ".join(cells))
        for q in QUANTITIES:
            f = self.fits[q]
            label = self._slow_label() if q == "slow" else LABELS[q] + (f" (k={self.order})" if q == "corrected" else "")
            lines.append(f"rate {label:<22} slope {f.slope:6.3f} ± {f.stderr:.3f} (95 % [{f.interval[0]:.3f}, "
                         f"{f.interval[1]:.3f}], {f.n_points} pts)  expected {f.expected:g} ± {f.tol:g}  "
                         f"{'ok' if f.passed else 'FAIL'}")
        for q in QUANTITIES:
            for r in self.fits[q].dropped:
                lines.append(f"    left out of {q}: P = {r['P']}: {r['reason']}")
        lines.append(f"certificate {'ok' if self.passed else 'FAIL'}"
                     + ("" if self.passed else ": " + self.messages[0]))
        return "\n".join(lines)

    def plot(self, path, *, title: str | None = None) -> Path:
        """Log–log distances against ε, fitted lines over the points used, left-out points hollow;
        the title carries the verdict (`sp_ode.verification.plotting.plot_certificate`).  Returns the path."""
        return plot_certificate(self, path, title=title)


def check_Ps(Ps, min_points: int = MIN_POINTS) -> np.ndarray:
    """At least `min_points` distinct positive integers, sorted (each named `Ps[i]` in errors)."""
    if isinstance(Ps, (str, bytes)) or not hasattr(Ps, "__len__"):
        raise TypeError(f"`Ps` must be a sequence of positive integers; got {type(Ps).__name__}.")
    Ps = [check_positive_int(f"Ps[{i}]", P) for i, P in enumerate(Ps)]
    if len(Ps) < min_points:
        raise ValueError(f"`Ps` must hold at least {min_points} values to fit a slope with a standard error; "
                         f"got {len(Ps)}.")
    if len(set(Ps)) != len(Ps):
        raise ValueError(f"`Ps` must not repeat values; got {Ps}.")
    return np.array(sorted(Ps))


def _defaults(entry, system, t_span, x0, y0):
    """Fill t_span, x0, y0 from a catalogue entry where not given."""
    t_span = t_span if t_span is not None else getattr(entry, "t_span", None)
    x0 = x0 if x0 is not None else getattr(entry, "x0", None)
    y0 = y0 if y0 is not None else getattr(entry, "y0", None)
    for name, value in (("t_span", t_span), ("x0", x0), ("y0", y0)):
        if value is None:
            raise ValueError(f"`{name}` is required for system {system.name!r} (it has no catalogue default).")
    return t_span, x0, y0


def _extension(fits: dict, Ps: np.ndarray) -> list[int]:
    """P values to add where a rate has fewer than MIN_POINTS in its asymptotic range."""
    add: set[int] = set()
    for f in fits.values():
        if f.n_points >= MIN_POINTS:
            continue
        reasons = " ".join(r["reason"] for r in f.dropped)
        if "asymptotic" in reasons or not f.dropped:
            add.update({int(Ps.max()) * 2, int(Ps.max()) * 4})
        if "floor" in reasons and Ps.min() >= 4:
            add.update({int(Ps.min()) // 2, int(Ps.min()) // 4})
    return sorted(add - set(Ps.tolist()))


@in_float64
def convergence_certificate(system: FastSlowSystem | CatalogueEntry, Ps: Int[ArrayLike, " K"] = DEFAULT_PS, *,
                            order: int = 1, t_span: TimeSpan | None = None, x0: Float[ArrayLike, " m"] | None = None,
                            y0: Float[ArrayLike, " d"] | None = None, t0_layer: float | None = None,
                            backend: str = "auto", method: str | None = None,
                            rtol: float = 1e-10, atol: float = 1e-12, num_times: int = 201,
                            slope_tol: float = 0.15,
                            manifold: SlowManifold | GivenManifold | None = None, reduced_method: str | None = None,
                            extend: bool = True, show_progress: bool = False
                            ) -> ConvergenceCertificate:
    """Measure the O(ε), O(ε^{k+1}) and O(ε) convergence of a fast–slow system (module docstring).

    Parameters
    ----------
    system : FastSlowSystem or a catalogue entry (`sp_ode.systems.get_system`)
        A catalogue entry supplies the default `t_span`, `x0`, `y0` and its closed-form φ.
    Ps : sequence of int
        Block sizes, ε = 1/P; at least 4 distinct positive integers (default 4, 8, …, 4096).
    order : int
        k of the slow manifold h_ε (default 1).
    t_span : (t_start, t_end)
    x0 : (m,)
    y0 : (d,)
        Required when `system` is not a catalogue entry.
    t0_layer : float, optional
        Start of the measurement window; default as in the module docstring.
    backend, method, rtol, atol
        The full solves' `SolveOptions` (backend "auto" by default: scipy LSODA for these single
        solves, escalating on a budget or step-size failure) and the reduced solve's.
    reduced_method : str, optional
        Method for the reduced flow (not stiff): default "Tsit5" (diffrax) or "LSODA" (scipy).
    num_times : int
        Save times on [t_start, t_end] (default 201).
    slope_tol : float
        Admitted deviation of a slope from its expected value (default 0.15).
    manifold : SlowManifold or GivenManifold, optional
        h_ε to measure against.  Default `slow_manifold(system, order)`, with the entry's
        closed form of φ when it has one, or else Newton for φ started from `x0`.
    extend : bool
        Add P values when a rate has fewer than 4 points in its asymptotic range (default True).
    show_progress : bool
        A progress bar over P on stderr.

    Returns
    -------
    ConvergenceCertificate

    Raises
    ------
    TypeError, ValueError
        Bad arguments (each named), e.g. fewer than 4 `Ps`, `t0_layer` outside the span,
        φ not attracting at y0 (pass `t0_layer` to measure anyway).
    Solver failures do not raise.  A full solve that fails (after its escalations) is left out of the
    fits with its reason, and the fits use the points that remain when at least 4 do (the messages say
    which P were left out and why); a failed reduced solve, the reference of every distance, fails
    the certificate.
    """
    entry = system
    system = check_system(system)
    Ps = check_Ps(Ps)
    order = check_order(order)
    options = SolveOptions.checked(backend, method, rtol, atol)
    if reduced_method is not None:
        check_method(options.backend, reduced_method)
    num_times = check_positive_int("num_times", num_times)
    slope_tol = check_positive("slope_tol", slope_tol)
    t_span, x0, y0 = _defaults(entry, system, t_span, x0, y0)
    t_span = check_t_span(t_span)
    x0 = check_finite_array("x0", x0).reshape(-1)
    y0 = check_finite_array("y0", y0).reshape(-1)
    known = None if is_master(system) else getattr(entry, "phi", None)
    return convergence_certificate_checked(system, Ps, order=order, t_span=t_span, x0=x0, y0=y0, t0_layer=t0_layer,
                                           options=options, num_times=num_times, slope_tol=slope_tol,
                                           manifold=manifold, reduced_method=reduced_method, extend=extend,
                                           show_progress=show_progress, known_phi=known)


@in_float64
def convergence_certificate_checked(system: FastSlowSystem, Ps: np.ndarray, *, order: int,
                                    t_span: tuple[float, float], x0: np.ndarray, y0: np.ndarray,
                                    options: SolveOptions, t0_layer: float | None = None, num_times: int = 201,
                                    slope_tol: float = 0.15, manifold: SlowManifold | GivenManifold | None = None,
                                    reduced_method: str | None = None, extend: bool = True,
                                    show_progress: bool = False,
                                    known_phi: Callable | None = None) -> ConvergenceCertificate:
    """`convergence_certificate` on input already checked: `system` a FastSlowSystem, `Ps` from `check_Ps`,
    `order` from `check_order`, `t_span` (t0, t1) with t1 > t0, `x0`, `y0` finite float64 vectors, one
    `SolveOptions` (its backend also runs the reduced solve), `reduced_method` valid for it or None,
    `known_phi` a closed form of φ (a catalogue entry's) or None.  `sp_ode.verify` calls it, so its inputs
    are validated once, at its own door."""
    t_start, t_end = t_span
    rtol, atol = options.rtol, options.atol
    master = is_master(system)
    phi0, manifold = _manifolds(system, known_phi, manifold, order, master, x0)
    messages: list[str] = []
    t0_layer = _layer_start(system, manifold, order, x0, y0, 1.0 / Ps, (t_start, t_end), t0_layer, messages)
    ts = np.linspace(t_start, t_end, num_times)
    window = ts >= t0_layer
    if reduced_method is None:
        # no ε in the reduced flow: it is not stiff, so an explicit method (cheaper to compile and run) or LSODA
        reduced_method = "Tsit5" if options.backend == "diffrax" else "LSODA"
    # the system's own φ for y_red: p_st for a master equation (a single bordered solve, cached per
    # Q(y)); otherwise the order-0 manifold, whose compiled solve is cached per (f, g, φ)
    red = simulate_reduced_checked(reduced_system_checked(system) if master else phi0.reduced_system(),
                                   (t_start, t_end), y0, ts=ts, throw=False,
                                   options=SolveOptions(options.backend, reduced_method, rtol, atol))
    failures = [] if red.success else [f"reduced solve failed: {red.message}"]

    runs: dict[int, dict] = {}
    scale = [0.0]
    expected = {"manifold": 1.0, "corrected": float(order + 1), "slow": 1.0}

    def measure(P_list):
        for P in progress(P_list, desc=f"certificate {system.name}", disable=not show_progress or None):
            runs[int(P)] = _distances(system, int(P), (t_start, t_end), x0, y0, ts, window, options, manifold,
                                      order, red, scale)

    def fit_all():
        P_arr = np.array(sorted(runs))
        eps = 1.0 / P_arr
        floor = 10 * (atol + rtol * scale[0])
        dist = {q: np.array([runs[P]["dist"][q] for P in P_arr]) for q in QUANTITIES}
        fits = {q: fit_rate(eps, dist[q], floor, expected=expected[q], tol=slope_tol, Ps=P_arr)
                for q in QUANTITIES}
        return P_arr, eps, floor, dist, fits

    measure(Ps)
    P_arr, eps, floor, dist, fits = fit_all()
    for _ in range(EXTEND_ROUNDS if extend else 0):
        more = _extension(fits, P_arr)
        if not more:
            break
        messages.append(f"note: added P = {more} to reach {MIN_POINTS} points in the asymptotic range.")
        measure(more)
        P_arr, eps, floor, dist, fits = fit_all()
    for P in P_arr:
        if runs[P]["stats"]["status"] != 0:
            messages.append(f"note: P = {P} left out of the fits: its full solve failed ({runs[P]['stats']['message']})")
    final = {q: np.array([runs[P]["final"][q] for P in P_arr]) for q in QUANTITIES}
    constants, final_constants, rate_failures = _verdict(fits, dist, final, eps, floor, expected, order, messages)
    failures = rate_failures + failures
    messages = failures + [m for m in messages if m.startswith("note:")]
    return ConvergenceCertificate(
        system=system.name, order=order, Ps=P_arr, eps=eps, t_span=(t_start, t_end), t0_layer=float(t0_layer),
        distances=dist, final=final, fits=fits, constants=constants, final_constants=final_constants,
        slope_tol=slope_tol, floor=floor, passed=not failures, messages=messages,
        stats=[runs[P]["stats"] for P in P_arr], slow_names=getattr(system, "slow_names", None))


# --- the stages of the certificate -------------------------------------------------------------

def _manifolds(system, known, manifold, order: int, master: bool, x0):
    """(φ as an order-0 SlowManifold, h_ε to measure against): `known` (the entry's closed form of φ) when
    given, else p_st (master equation) or Newton from x0."""
    if isinstance(manifold, SlowManifold) and manifold.order == order:
        phi0 = manifold if order == 0 else slow_manifold_checked(system, 0, x_guess=manifold.x_guess,
                                                                 phi=manifold.phi_given)
    elif manifold is None or (isinstance(manifold, GivenManifold) and manifold.order == order):
        phi0 = slow_manifold_checked(system, 0, phi=known, x_guess=None if (master or known is not None) else x0)
        if manifold is None:
            manifold = phi0 if order == 0 else slow_manifold_checked(system, order, phi=known,
                                                                     x_guess=phi0.x_guess)
    else:
        raise TypeError(f"`manifold` must be a SlowManifold or GivenManifold of order {order}; got {manifold!r}.")
    return phi0, manifold


def _layer_start(system, manifold, order: int, x0, y0, eps_all, span, t0_layer, messages: list) -> float:
    """t₀, the start of the measurement window (module docstring), checked or derived from the rate of
    attraction at y0 and capped at the middle of the span (with a note)."""
    t_start, t_end = span
    if t0_layer is not None:
        t0_layer = check_finite("t0_layer", t0_layer)
        if not t_start <= t0_layer < t_end:
            raise ValueError(f"`t0_layer` must lie in [t_start, t_end) = [{t_start}, {t_end}); got {t0_layer}.")
        return t0_layer
    # φ(y0), the first term of h_ε: the program that measures the distances, compiled once for both
    phi_y0 = np.asarray(manifold.terms(y0[None]))[0, 0]
    attraction = -normal_hyperbolicity(system, phi_y0, y0).max_real
    if not attraction > 0:
        raise ValueError(f"φ is not attracting at y0 = {y0.tolist()} (max Re λ = {-attraction:.3g}); "
                         "pass `t0_layer` explicitly if you still want the certificate.")
    e = eps_all.max()
    amplitude = max(1.0, float(np.max(np.abs(x0 - phi_y0))))
    t0_layer = t_start + e * ((order + 1) * math.log(1.0 / e) + math.log(1e3 * amplitude)) / attraction
    middle = 0.5 * (t_start + t_end)
    if t0_layer > middle:
        messages.append(f"note: t₀ capped at the middle of the span ({middle:.3g}) from {t0_layer:.3g}; "
                        "the largest ε may still be inside its initial layer.")
        t0_layer = middle
    return t0_layer


def _distances(system, P: int, span, x0, y0, ts, window, options, manifold, order: int, red, scale) -> dict:
    """One full solve at ε = 1/P and its three distances over the window (NaN when the solve failed)."""
    e = 1.0 / P
    traj = simulate_checked(system.with_P(P), span, x0, y0, ts=ts, options=options)
    run = {"stats": {"P": P, "status": int(traj.status), "message": traj.message,
                     "num_steps": int(np.asarray(traj.stats.get("num_steps", -1))),
                     "wall_time": float(traj.stats.get("wall_time", float("nan"))),
                     "route": f"{traj.stats.get('backend')}/{traj.stats.get('method')}",
                     "escalations": traj.stats.get("escalations", [])},
           "dist": dict.fromkeys(QUANTITIES, float("nan")), "final": dict.fromkeys(QUANTITIES, float("nan"))}
    if not traj.success:
        return run
    xw, yw = traj.x[window], traj.y[window]
    T = np.asarray(manifold.terms(yw))                    # (N, k + 1, m)
    h = np.einsum("j,njm->nm", e ** np.arange(order + 1), T)
    dx_phi = np.max(np.abs(xw - T[:, 0]), axis=-1)
    dx_h = np.max(np.abs(xw - h), axis=-1)
    dy = np.max(np.abs(yw - red.y[window]), axis=-1)
    for q, dist in zip(QUANTITIES, (dx_phi, dx_h, dy)):
        run["dist"][q], run["final"][q] = float(dist.max()), float(dist[-1])
    scale[0] = max(scale[0], float(np.max(np.abs(traj.x))), float(np.max(np.abs(traj.y))))
    return run


def _verdict(fits, dist, final, eps, floor, expected, order: int, messages: list):
    """The constants C of d ≈ C ε^p (over the window and at t_end), and each failed rate's message."""
    constants, final_constants, failures = {}, {}, []
    for q in QUANTITIES:
        f, p = fits[q], expected[q]
        last = np.flatnonzero(f.used)
        constants[q] = float(dist[q][last[-1]] / eps[last[-1]] ** p) if last.size else float("nan")
        fin = np.isfinite(final[q]) & (final[q] > floor)
        idx = np.flatnonzero(fin)
        final_constants[q] = float(final[q][idx[-1]] / eps[idx[-1]] ** p) if idx.size else float("nan")
        if not f.passed:
            label = LABELS[q] + (f" (k={order})" if q == "corrected" else "")
            failures.append(f"{q} rate ({label} = O(ε^{p:g})) failed: {f.reason}")
        if f.dropped:
            messages.append(f"note: {q}: left out P = {[r['P'] for r in f.dropped]} "
                            f"({'; '.join(sorted({r['reason'].split(':')[0] for r in f.dropped}))}).")
    return constants, final_constants, failures
