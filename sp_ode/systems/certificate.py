"""A convergence certificate for a fast–slow system: the Tikhonov and Fenichel rates, measured.

For ε = 1/P over a list of P, the full system ε dx/dt = f(x, y), dy/dt = g(x, y)
is simulated from (x0, y0) and, past the initial layer (t ≥ t₀), three distances
are measured against the theory of docs/theory.md §3.2–§3.3:

=================  ====================================  =============
name               quantity                              expected rate
=================  ====================================  =============
``manifold``       max_{t≥t₀} ‖x(t) − φ(y(t))‖∞          O(ε)
``corrected``      max_{t≥t₀} ‖x(t) − h_ε(y(t))‖∞        O(ε^{k+1})
``slow``           max_{t≥t₀} ‖y(t) − y_red(t)‖∞          O(ε)
=================  ====================================  =============

h_ε = φ + ε h₁ + … + εᵏ h_k is `sp_ode.slow_manifold` of order k and y_red solves
the reduced flow y' = g(φ(y), y) from the same y0.  Each rate is a least-squares
slope of log(distance) against log(ε); the certificate passes when every slope is
within ``slope_tol`` of its expected value and every solve succeeded.

Why the defaults.
* t₀ = t_start + ε_max [(k + 1) ln(1/ε_max) + ln(10³ max(1, ‖x0 − φ(y0)‖∞))] / γ,
  with γ the rate of attraction of φ at y0 (−max Re λ of D_x f on the fast fibre).
  The initial layer decays like ‖x0 − φ(y0)‖ e^{−γ(t − t_start)/ε}, so at t₀ it is
  below 10⁻³ ε^{k+1} — a thousandth of the smallest distance measured, if its
  constant is 1 — for every ε ≤ ε_max, and t₀ ≫ ε ln(1/ε) for all ε in the list.
  It is capped at the middle of the time span (with a note).
* ``slope_tol`` = 0.15: each distance is C ε^p (1 + O(ε)); over P = 4 … 4096
  (ln(ε_max/ε_min) ≈ 6.9) a relative correction of size c·ε bends the fitted slope
  by about c·ε_max/6.9 ≈ 0.04 c, so 0.15 admits c up to ~4 while a wrong order
  (an error of 1 in the slope) is never admitted.
* Points where a distance falls below the solver's error floor,
  10 (atol + rtol ‖z‖∞) (ten local error tolerances), are left out of the fit (and
  flagged), since there the measured number may be integration error, not the
  asymptotic term.  Ten, because a tolerance-controlled solve's global error runs
  to several local tolerances: on me3 at rtol 1e-10 the distance to h_ε levels off
  at 5e-10 for P ≥ 2048, which bent the fitted slope from 2.03 to 1.93.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sp_ode.core.precision import in_float64
from sp_ode.core.validation import check_choice, check_finite, check_finite_array, check_positive, check_positive_int

__all__ = ["convergence_certificate", "ConvergenceCertificate", "DEFAULT_PS"]

DEFAULT_PS = tuple(2**k for k in range(2, 13))   # 4, 8, …, 4096
QUANTITIES = ("manifold", "corrected", "slow")


@dataclass
class ConvergenceCertificate:
    """The measured distances, fitted slopes and verdict of `convergence_certificate`.

    Attributes
    ----------
    system : str — the system's name.
    order : int — k of h_ε.
    Ps : ndarray (K,) int;  eps : ndarray (K,) — ε = 1/P.
    t_span : (t_start, t_end);  t0_layer : float — start of the measurement window.
    distances : dict name -> ndarray (K,) — max over t ≥ t₀ (see the module table).
    final : dict name -> ndarray (K,) — the same distances at t_end only.
    slopes, expected : dict name -> float — fitted and expected log–log slopes.
    constants : dict name -> float — C in distance ≈ C ε^p at the smallest ε (t ≥ t₀).
    final_constants : dict name -> float — the same at t_end.
    fitted : dict name -> ndarray (K,) bool — points used in each fit (above the floor).
    slope_tol : float;  floor : float — the error floor of the solves.
    passed : bool;  messages : list of str — why it failed, or notes.
    stats : list of dict — per P: solver status, steps, wall time.
    """

    system: str
    order: int
    Ps: np.ndarray
    eps: np.ndarray
    t_span: tuple
    t0_layer: float
    distances: dict
    final: dict
    slopes: dict
    expected: dict
    constants: dict
    final_constants: dict
    fitted: dict
    slope_tol: float
    floor: float
    passed: bool
    messages: list = field(default_factory=list)
    stats: list = field(default_factory=list, repr=False)

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
            "expected_slopes": self.expected, "constants": self.constants,
            "final_constants": self.final_constants, "fitted": self.fitted,
            "slope_tolerance": self.slope_tol, "error_floor": self.floor, "passed": self.passed,
            "messages": self.messages, "solver_stats": self.stats,
        }

    def format_table(self) -> str:
        """A short text table: distances per P, then slopes against the expected ones."""
        k1 = self.order + 1
        lines = [f"convergence certificate for {self.system} (order k = {self.order}, t ≥ t₀ = {self.t0_layer:.3g})",
                 f"{'P':>6} {'eps':>10} {'|x-phi|':>11} {'|x-h_eps|':>11} {'|y-y_red|':>11}"]
        for r in self.rows():
            lines.append(f"{r['P']:>6d} {r['eps']:>10.3e} {r['manifold']:>11.3e} {r['corrected']:>11.3e} "
                         f"{r['slow']:>11.3e}")
        labels = {"manifold": "|x - phi(y)|", "corrected": f"|x - h_eps(y)| (k={self.order})",
                  "slow": "|y - y_red|"}
        for q in QUANTITIES:
            ok = abs(self.slopes[q] - self.expected[q]) <= self.slope_tol
            lines.append(f"slope {labels[q]:<24} {self.slopes[q]:6.3f}  expected {self.expected[q]:g} ± "
                         f"{self.slope_tol:g}  C = {self.constants[q]:.4g}  {'ok' if ok else 'FAIL'}")
        lines.append(f"certificate {'PASSED' if self.passed else 'FAILED'}"
                     + (f" (O(ε), O(ε^{k1}), O(ε) rates)" if self.passed else ": " + "; ".join(self.messages)))
        return "\n".join(lines)

    def plot(self, path) -> Path:
        """Log–log plot of the three distances against ε with their fitted lines; returns the PNG path."""
        from sp_ode.core.reporting import figures

        plt = figures()
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        fig, ax = plt.subplots(figsize=(6, 4.2))
        labels = {"manifold": r"$\|x-\varphi(y)\|$", "corrected": rf"$\|x-h_\varepsilon(y)\|$, k={self.order}",
                  "slow": r"$\|y-y_{red}\|$"}
        for q, marker in zip(QUANTITIES, "osd"):
            d = self.distances[q]
            line, = ax.loglog(self.eps, d, marker, label=f"{labels[q]}: slope {self.slopes[q]:.2f}")
            use = self.fitted[q]
            if use.sum() >= 2:
                c = np.polyfit(np.log(self.eps[use]), np.log(d[use]), 1)
                ax.loglog(self.eps, np.exp(np.polyval(c, np.log(self.eps))), "-", color=line.get_color(), lw=0.8)
        ax.axhline(self.floor, color="0.6", ls=":", lw=0.8, label="solver error floor")
        ax.set_xlabel(r"$\varepsilon = 1/P$")
        ax.set_ylabel(r"max distance for $t \geq t_0$")
        ax.set_title(f"{self.system}: {'passed' if self.passed else 'FAILED'}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return path


def check_Ps(Ps) -> np.ndarray:
    """At least 3 distinct positive integers, sorted (each named ``Ps[i]`` in errors)."""
    if isinstance(Ps, (str, bytes)) or not hasattr(Ps, "__len__"):
        raise TypeError(f"`Ps` must be a sequence of positive integers; got {type(Ps).__name__}.")
    Ps = [check_positive_int(f"Ps[{i}]", P) for i, P in enumerate(Ps)]
    if len(Ps) < 3:
        raise ValueError(f"`Ps` must hold at least 3 values to fit a slope; got {len(Ps)}.")
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


def _fit(eps, d, use) -> float:
    if use.sum() < 2:
        return float("nan")
    return float(np.polyfit(np.log(eps[use]), np.log(d[use]), 1)[0])


@in_float64
def convergence_certificate(system, Ps=DEFAULT_PS, *, order: int = 1, t_span=None, x0=None, y0=None,
                            t0_layer=None, backend: str = "diffrax", method: str | None = None,
                            rtol: float = 1e-10, atol: float = 1e-12, num_times: int = 201,
                            slope_tol: float = 0.15, manifold=None, reduced_method: str | None = None,
                            show_progress: bool = False
                            ) -> ConvergenceCertificate:
    """Measure the O(ε), O(ε^{k+1}) and O(ε) convergence of a fast–slow system (module docstring).

    Parameters
    ----------
    system : FastSlowSystem or a catalogue entry (`sp_ode.systems.get_system`)
        A catalogue entry supplies the default `t_span`, `x0`, `y0`.
    Ps : sequence of int
        Block sizes, ε = 1/P; at least 3 distinct positive integers (default 4, 8, …, 4096).
    order : int
        k of the slow manifold h_ε (default 1).
    t_span : (t_start, t_end);  x0 : (m,);  y0 : (d,)
        Required when `system` is not a catalogue entry.
    t0_layer : float, optional
        Start of the measurement window; default as in the module docstring.
    backend, method, rtol, atol
        Passed to `sp_ode.simulate` (full system) and `sp_ode.simulate_reduced`.
    reduced_method : str, optional
        Method for the reduced flow (not stiff): default "Tsit5" (diffrax) or "LSODA" (scipy).
    num_times : int
        Save times on [t_start, t_end] (default 201).
    slope_tol : float
        Admitted |slope − expected| (default 0.15).
    manifold : SlowManifold, optional
        h_ε to use.  Default ``slow_manifold(system, order)``, with the entry's closed
        form of φ when it has one, or else Newton for φ started from `x0`.
    show_progress : bool
        A progress bar over P on stderr.

    Returns
    -------
    ConvergenceCertificate

    Raises
    ------
    TypeError, ValueError
        Bad arguments (each named), e.g. fewer than 3 `Ps`, `t0_layer` outside the span.
    Solver failures do not raise: they fail the certificate with a message.
    """
    from sp_ode.core.reporting import progress
    from sp_ode.systems._newton import is_master
    from sp_ode.systems.critical_manifold import normal_hyperbolicity
    from sp_ode.systems.reduced import simulate_reduced
    from sp_ode.systems.simulation import check_system, check_t_span, simulate
    from sp_ode.systems.slow_manifold import SlowManifold, check_order, slow_manifold

    entry = system
    system = check_system(system)
    Ps = check_Ps(Ps)
    order = check_order(order)
    backend = check_choice("backend", backend, ("diffrax", "scipy"))
    rtol, atol = check_positive("rtol", rtol), check_positive("atol", atol)
    num_times = check_positive_int("num_times", num_times)
    slope_tol = check_positive("slope_tol", slope_tol)
    t_span, x0, y0 = _defaults(entry, system, t_span, x0, y0)
    t_start, t_end = check_t_span(t_span)
    x0 = check_finite_array("x0", x0).reshape(-1)
    y0 = check_finite_array("y0", y0).reshape(-1)
    if manifold is None:
        if is_master(system):
            manifold = slow_manifold(system, order)
        else:
            # a catalogue closed form of φ when there is one; else Newton from the initial fast
            # state, which picks the branch the trajectory starts next to
            known = getattr(entry, "phi", None)
            manifold = slow_manifold(system, order, phi=known, x_guess=None if known is not None else x0)
    elif not isinstance(manifold, SlowManifold) or manifold.order != order:
        raise TypeError(f"`manifold` must be a SlowManifold of order {order}; got {manifold!r}.")
    phi0 = manifold if order == 0 else slow_manifold(system, 0, x_guess=manifold.x_guess, phi=manifold.phi_given)
    eps = 1.0 / Ps
    messages: list[str] = []

    if t0_layer is None:
        attraction = -normal_hyperbolicity(system, manifold.terms(y0)[0], y0).max_real
        if not attraction > 0:
            raise ValueError(f"φ is not attracting at y0 = {y0.tolist()} (max Re λ = {-attraction:.3g}); "
                             "pass `t0_layer` explicitly if you still want the certificate.")
        e = eps.max()
        amplitude = max(1.0, float(np.max(np.abs(x0 - manifold.terms(y0)[0]))))
        t0_layer = t_start + e * ((order + 1) * math.log(1.0 / e) + math.log(1e3 * amplitude)) / attraction
        middle = 0.5 * (t_start + t_end)
        if t0_layer > middle:
            messages.append(f"note: t₀ capped at the middle of the span ({middle:.3g}) from {t0_layer:.3g}; "
                            "the largest ε may still be inside its initial layer.")
            t0_layer = middle
    else:
        t0_layer = check_finite("t0_layer", t0_layer)
        if not t_start <= t0_layer < t_end:
            raise ValueError(f"`t0_layer` must lie in [t_start, t_end) = [{t_start}, {t_end}); got {t0_layer}.")

    ts = np.linspace(t_start, t_end, num_times)
    window = ts >= t0_layer
    if reduced_method is None:
        # no ε in the reduced flow: it is not stiff, so an explicit method (cheaper to compile and run)
        reduced_method = "Tsit5" if backend == "diffrax" else "LSODA"
    # for a master equation φ = p_st (T1; step 1 of `sp-ode verify` checks it): the reduced
    # module's own φ, a single bordered solve, cached per Q(y); otherwise φ of the order-0
    # manifold, whose compiled solve is cached per (f, g, φ) rather than per call
    red = simulate_reduced(system if is_master(system) else phi0.reduced_system(), (t_start, t_end), y0,
                           backend=backend, method=reduced_method, rtol=rtol, atol=atol, ts=ts, throw=False)
    if not red.success:
        messages.append(f"reduced solve failed: {red.message}")

    dist = {q: np.full(len(Ps), np.nan) for q in QUANTITIES}
    final = {q: np.full(len(Ps), np.nan) for q in QUANTITIES}
    stats = []
    scale = 0.0
    for i, P in enumerate(progress(Ps, desc=f"certificate {system.name}", disable=not show_progress or None)):
        traj = simulate(system.with_P(int(P)), (t_start, t_end), x0, y0, backend=backend, method=method,
                        rtol=rtol, atol=atol, ts=ts, throw=False)
        stats.append({"P": int(P), "status": int(traj.status), "message": traj.message,
                      "num_steps": int(np.asarray(traj.stats.get("num_steps", -1))),
                      "wall_time": float(traj.stats.get("wall_time", float("nan")))})
        if not traj.success:
            messages.append(f"full solve failed at P = {P}: {traj.message}")
            continue
        xw, yw = traj.x[window], traj.y[window]
        T = manifold.terms(yw)                               # (N, k + 1, m)
        h = np.einsum("j,njm->nm", eps[i] ** np.arange(order + 1), T)
        dx_phi = np.max(np.abs(xw - T[:, 0]), axis=-1)
        dx_h = np.max(np.abs(xw - h), axis=-1)
        dy = np.max(np.abs(yw - red.y[window]), axis=-1)
        for q, d in zip(QUANTITIES, (dx_phi, dx_h, dy)):
            dist[q][i], final[q][i] = d.max(), d[-1]
        scale = max(scale, float(np.max(np.abs(traj.x))), float(np.max(np.abs(traj.y))))

    floor = 10 * (atol + rtol * scale)
    expected = {"manifold": 1.0, "corrected": float(order + 1), "slow": 1.0}
    fitted, slopes, constants, final_constants = {}, {}, {}, {}
    for q in QUANTITIES:
        d = dist[q]
        use = np.isfinite(d) & (d > floor)
        fitted[q] = use
        slopes[q] = _fit(eps, d, use)
        p = expected[q]
        last = np.flatnonzero(use)
        constants[q] = float(d[last[-1]] / eps[last[-1]] ** p) if last.size else float("nan")
        fin = np.isfinite(final[q]) & (final[q] > floor)
        idx = np.flatnonzero(fin)
        final_constants[q] = float(final[q][idx[-1]] / eps[idx[-1]] ** p) if idx.size else float("nan")
        dropped = int(np.isfinite(d).sum() - use.sum())
        if dropped:
            messages.append(f"note: {dropped} {q} distance(s) below the solver error floor {floor:.1e} "
                            "left out of the fit.")
        if not abs(slopes[q] - p) <= slope_tol:
            messages.append(f"{q} slope {slopes[q]:.3f} is not within {slope_tol} of {p:g}.")
    failed = [m for m in messages if not m.startswith("note:")]
    return ConvergenceCertificate(
        system=system.name, order=order, Ps=Ps, eps=eps, t_span=(t_start, t_end), t0_layer=float(t0_layer),
        distances=dist, final=final, slopes=slopes, expected=expected, constants=constants,
        final_constants=final_constants, fitted=fitted, slope_tol=slope_tol, floor=floor,
        passed=not failed, messages=messages, stats=stats)
