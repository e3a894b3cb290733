"""Normal hyperbolicity on the region a trajectory visits (docs/theory.md §3.5).

Tikhonov's and Fenichel's theorems hold on a compact region of y where the critical
manifold φ is normally hyperbolic and attracting; nothing is claimed elsewhere.  So
the verdict is judged where the system actually goes: the union of the y-values of

* the reduced trajectory y' = g(φ(y), y) from y0 (RK45 with φ continued by Newton,
  stopped by an event where the largest Re λ of D_x f on the fast fibre comes within
  10⁻³ of its size at y0 from 0, or where the branch is lost) — computed first: when it
  reaches a loss of hyperbolicity, nothing else is run;
* the full trajectory at the system's own ε (the initial layer affects only x),

widened by a stated margin `MARGIN` = 2 % of the visited range on each side (for
d = 1; for d > 1 the paths themselves are checked).  On that region the branch of φ
through φ(y0) is followed by continuation (`locate_loss_of_hyperbolicity`), which
refines a fold (det D_x f = 0, the branch ends) or an eigenvalue crossing / gap
closing to 1e-10.  Three outcomes:

* **ok** — attracting on the region (largest restricted Re λ < 0 throughout);
* **FAIL, reached** — hyperbolicity is lost at y* inside the visited range; the time
  the (reduced, else full) trajectory first reaches y* is interpolated; the
  reduction does not hold past it, and no certificate should be run;
* **FAIL, margin** — lost within the margin: the trajectory comes closer to y* than
  the margin, where the attraction rate tends to 0 and the rates cannot be uniform;
  also FAIL when the branch is hyperbolic but not attracting (a repelling branch).

A loss of hyperbolicity further out (searched up to half the visited range beyond it,
inside a generator family's domain) is reported as a *note*, not a failure.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from sp_ode.core.errors import Error
from sp_ode.core.precision import in_float64
from sp_ode.manifolds.critical_manifold import (
    continue_manifold,
    critical_manifold,
    locate_loss_of_hyperbolicity,
    max_real_part,
    normal_hyperbolicity,
)
from sp_ode.manifolds.newton import is_master, system_kernels
from sp_ode.markov.families import GeneratorFamily
from sp_ode.markov.stationary import stationary_distribution
from sp_ode.systems.options import SolveOptions
from sp_ode.systems.simulation import simulate_checked
from sp_ode.systems.system import MasterEquationSystem, slow_symbol

if TYPE_CHECKING:
    from collections.abc import Callable

    from sp_ode.core.typing import ArrayLike, Float, TimeSpan
    from sp_ode.systems.system import FastSlowSystem

__all__ = ["visited_region", "VisitedRegion", "MARGIN"]

MARGIN = 0.02          # fraction of the visited range added on each side (d = 1)
_BEYOND = 0.5          # how far past the margin a fold is still worth a note


@dataclass
class VisitedRegion:
    """Where the trajectories go and whether φ is normally hyperbolic and attracting there.

    Attributes
    ----------
    status
        "ok" or "FAIL".
    reached : bool
        Hyperbolicity is lost inside the visited range (verify stops).
    message : str
        The verdict in one line (the first line of a failure names the check).
    notes : list of str
        E.g. a fold outside the region.
    lower, upper : ndarray (d,)
        The visited range (componentwise)
    margin
        Float.
    y_star : ndarray (d,) or None
        Fold, crossing, gap closing.
    t_star : float or None
        Fold, crossing, gap closing.
    kind : str or None
        Fold, crossing, gap closing.
    weakest_attraction : float
        Min over the region of −max Re λ (NaN when not computed).
    reduced, full : Trajectory
        The two trajectories (full at the system's ε).
    max_real : ndarray, ys : ndarray (K, d)
        The hyperbolicity profile along the branch checked.
    """

    status: str
    reached: bool
    message: str
    notes: list
    lower: np.ndarray
    upper: np.ndarray
    margin: float
    y_star: np.ndarray | None
    t_star: float | None
    kind: str | None
    weakest_attraction: float
    reduced: object = field(repr=False)
    full: object = field(repr=False)
    ys: np.ndarray = field(repr=False, default=None)
    max_real: np.ndarray = field(repr=False, default=None)

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return {"status": self.status, "reached": self.reached, "message": self.message, "notes": self.notes,
                "visited_lower": self.lower, "visited_upper": self.upper, "margin": self.margin,
                "y_star": self.y_star, "t_star": self.t_star, "kind": self.kind,
                "weakest_attraction": self.weakest_attraction}


def _first_crossing(t: np.ndarray, y: np.ndarray, y_star: float) -> float | None:
    """Time at which the scalar path y(t) first reaches y_star (linear interpolation)."""
    ok = np.isfinite(y)
    t, y = t[ok], y[ok]
    if y.size == 0:
        return None
    side = np.sign(y - y_star)
    if side[0] == 0:
        return float(t[0])
    hit = np.flatnonzero(side != side[0])
    if hit.size == 0:
        return None
    i = hit[0]
    a, b = y[i - 1] - y_star, y[i] - y_star
    return float(t[i - 1] + (t[i] - t[i - 1]) * (a / (a - b) if a != b else 0.0))


def _loss_text(kind: str, y_star, t_star, system=None) -> str:
    ys = np.ravel(np.asarray(y_star, dtype=float))
    where = f"{ys[0]:.6g}" if ys.size == 1 else str(np.round(ys, 6).tolist())
    when = f", reached at t ≈ {t_star:.4g}" if t_star is not None else ""
    return (f"normal hyperbolicity: the critical manifold loses normal hyperbolicity ({kind}) at "
            f"{slow_symbol(system, star=True)} = {where}{when}; "
            "the reduction does not hold past it")


def _y0(system) -> str:
    """The initial slow state as messages name it: `y0`, or `w₀` for a system's `slow_names`."""
    return "y0" if slow_symbol(system) == "y" else f"{slow_symbol(system)}₀"


def _domain(system):
    """The box of a generator family, or None."""
    fam = system.Q_of_y if isinstance(system, MasterEquationSystem) else None
    if not isinstance(fam, GeneratorFamily):
        return None
    return np.asarray(fam.lower, float), np.asarray(fam.upper, float)


@functools.lru_cache(maxsize=32)
def _jit_g(g):
    import jax

    return jax.jit(g)


class _BranchLost(Error):
    pass


def _reduced_path(system, t_span, y0, x_start, ts, phi=None):
    """The reduced flow y' = g(φ(y), y) by RK45 (scipy), φ by Newton continued from the last point (or the
    closed form `phi`), stopped by an event where the largest Re λ on the fast fibre comes within 10⁻³ of
    its initial size from 0, or where Newton loses the branch.  Returns (t, y, stop) with stop None,
    "hyperbolicity" or "branch lost"."""
    import jax.numpy as jnp
    from scipy.integrate import solve_ivp


    master = is_master(system)
    k = None if master else system_kernels(system)
    g, args = _jit_g(system.g), system.args
    state = {"x": np.asarray(x_start, dtype=np.float64)}

    def manifold(y):
        if phi is not None:
            return np.asarray(phi(jnp.asarray(y)), dtype=np.float64).reshape(-1)
        if master:   # φ = p_st(Q(y)) by GTH (T1): no Newton program to compile for a master equation
            return stationary_distribution(system.check_generator_at(y))
        x, ok, _ = k["newton"](jnp.asarray(state["x"]), jnp.asarray(y), args)
        x = np.asarray(x)
        if not bool(ok) or np.max(np.abs(x - state["x"])) > 0.5 * (1.0 + np.max(np.abs(state["x"]))):
            raise _BranchLost
        state["x"] = x
        return x

    def rhs(t, y):
        return np.asarray(g(t, jnp.asarray(manifold(y)), jnp.asarray(y), args), dtype=np.float64)

    y = np.asarray(y0, dtype=np.float64)
    threshold = 1e-3 * abs(max_real_part(system, manifold(y), y))

    def event(t, y):
        return max_real_part(system, manifold(y), y) + threshold
    event.terminal = True

    out_t, out_y = [ts[0]], [y]
    if master:
        # φ = p_st is unique on the simplex (T1): no branch to follow between save times, one solve does
        sol = solve_ivp(rhs, (ts[0], ts[-1]), y, method="RK45", rtol=1e-8, atol=1e-10, events=event, t_eval=ts)
        t_out, y_out = list(sol.t), list(sol.y.T)
        if sol.status == 1:
            return (np.array(t_out + [float(sol.t_events[0][0])]), np.array(y_out + [sol.y_events[0][0]]),
                    "hyperbolicity")
        return np.array(t_out), np.array(y_out), None if sol.success else "branch lost"
    for a, b in zip(ts[:-1], ts[1:]):
        try:
            sol = solve_ivp(rhs, (a, b), y, method="RK45", rtol=1e-8, atol=1e-10, events=event)
        except _BranchLost:
            return np.array(out_t), np.array(out_y), "branch lost"
        if sol.status == 1:
            out_t.append(float(sol.t_events[0][0]))
            out_y.append(sol.y_events[0][0])
            return np.array(out_t), np.array(out_y), "hyperbolicity"
        if not sol.success:
            return np.array(out_t), np.array(out_y), "branch lost"
        y = sol.y[:, -1]
        out_t.append(b)
        out_y.append(y)
    return np.array(out_t), np.array(out_y), None


@in_float64
def visited_region(system: FastSlowSystem, t_span: TimeSpan, x0: Float[ArrayLike, " m"], y0: Float[ArrayLike, " d"],
                   *, phi: Callable | None = None, x_guess: Float[ArrayLike, " m"] | None = None,
                   num_times: int = 201,
                   backend: str = "auto", rtol: float = 1e-10, atol: float = 1e-12,
                   margin: float = MARGIN) -> VisitedRegion:
    """Judge normal hyperbolicity of φ on the region the full and reduced trajectories visit (module docstring).

    Parameters
    ----------
    system : FastSlowSystem (at its own ε)
    t_span : (t0, t1)
    x0 : (m,)
    y0 : (d,)
    phi : callable y (d,) -> (m,), optional
        A closed form of φ (else p_st for a master
        equation, or Newton from `x_guess`, default `x0`, which selects the branch).
    num_times : int
        Save times of the two trajectories.
    backend, rtol, atol — for the full solve `sp_ode.simulate` (pass the certificate's, so its
        compiled solve is shared).
    margin : float
        Fraction of the visited range added on each side.

    Returns
    -------
    VisitedRegion
    """
    options = SolveOptions.checked(backend, None, rtol, atol)
    return visited_region_checked(system, t_span, x0, y0, phi=phi, x_guess=x_guess, num_times=num_times,
                                  options=options, margin=margin)


@in_float64
def visited_region_checked(system: FastSlowSystem, t_span: TimeSpan, x0: Float[ArrayLike, " m"],
                           y0: Float[ArrayLike, " d"], *, phi: Callable | None = None,
                           x_guess: Float[ArrayLike, " m"] | None = None, num_times: int = 201,
                           options: SolveOptions, margin: float = MARGIN) -> VisitedRegion:
    """`visited_region` on input already checked: the full solve's `SolveOptions` made once by the caller
    (`sp_ode.verify` shares its own with the certificate), so nothing is validated twice."""
    master = is_master(system)
    x0 = np.asarray(x0, dtype=np.float64).reshape(-1)
    y0 = np.asarray(y0, dtype=np.float64).reshape(-1)
    guess = None if master else (x0 if x_guess is None else np.asarray(x_guess, dtype=np.float64).reshape(-1))
    ts = np.linspace(*t_span, num_times)
    notes: list[str] = []
    x_start = _start_point(system, y0, phi, guess, master)
    mr0 = max_real_part(system, x_start, y0)
    if not mr0 < 0:
        # not attracting where it starts (a repelling or saddle branch): nothing to measure
        return VisitedRegion("FAIL", True, f"normal hyperbolicity: the branch of φ through {_y0(system)} = "
                             f"{y0.tolist()} is not attracting (largest Re λ of D_x f on the fast fibre {mr0:.3g} ≥ 0); the reduction "
                             "does not hold", notes, y0.copy(), y0.copy(), 0.0, None, float(t_span[0]), "not attracting",
                             -mr0, None, None, y0[None], np.array([mr0]))
    # the reduced path first (cheap): if it reaches a loss of hyperbolicity, stop there
    path_t, path_y, stop = _reduced_path(system, t_span, y0, x_start, ts, phi=None if master else phi)
    red = SimpleNamespace(t=path_t, y=path_y, stop=stop)
    if stop is not None:
        return _reached_on_the_reduced_path(system, y0, x_start, red, notes)
    full = simulate_checked(system, (float(t_span[0]), float(t_span[1])), x0, y0, ts=ts, options=options)
    paths = [(path_t, path_y), (full.t, full.y)]
    pts = np.concatenate([y[np.all(np.isfinite(y), axis=1)] for _, y in paths] + [y0[None]])
    lower, upper = pts.min(axis=0), pts.max(axis=0)
    if not full.success:
        notes.append(f"the full solve at ε = {system.eps:g} failed: {full.message.splitlines()[0]}")

    def result(status, reached, message, y_star=None, t_star=None, kind=None, weakest=float("nan"), ys=None,
               mr=None, width=0.0):
        return VisitedRegion(status, reached, message, notes, lower, upper, width, y_star, t_star, kind, weakest,
                             red, full, ys, mr)

    if y0.size == 1:
        return _judge_interval(system, y0, x_start, lower, upper, margin, red, full, notes, master, result)
    return _judge_paths(system, paths, x_start, result)


# --- the stages of visited_region -------------------------------------------------------------

def _start_point(system, y0, phi, guess, master: bool) -> np.ndarray:
    """φ(y0): the closed form when given (general system), else p_st or Newton from `guess`."""
    if phi is not None and not master:
        import jax.numpy as jnp

        return np.asarray(phi(jnp.asarray(y0)), dtype=np.float64).reshape(-1)
    if master:   # p_st(Q(y0)) by GTH: no program to compile for one point
        return stationary_distribution(system.check_generator_at(y0))
    return critical_manifold(system, y0, x_guess=guess)


def _reached_on_the_reduced_path(system, y0, x_start, red, notes) -> VisitedRegion:
    """The reduced path stopped at a loss of hyperbolicity: locate it (y*, and t* by quadrature along the
    branch for d = 1) and fail at once."""
    path_t, path_y, stop = red.t, red.y, red.stop
    d = y0.size
    end = path_y[-1] + 0.05 * (path_y[-1] - y0) if np.any(path_y[-1] != y0) else path_y[-1] + 1e-3
    loss = locate_loss_of_hyperbolicity(system, y0, end, x0=x_start)
    y_star = np.asarray(loss.y if loss.found else path_y[-1], dtype=np.float64).reshape(-1)
    kind = loss.kind if loss.found else stop
    t_star = float(path_t[-1])
    if d == 1 and loss.found:
        # the last stretch by quadrature along the branch: t* − t_last = ∫ dy / g(φ(y), y), finite at a fold
        import jax.numpy as jnp

        gfun = _jit_g(system.g)
        lo_, hi_ = sorted((float(path_y[-1, 0]), float(y_star[0])))
        br = loss.branch
        inside = np.flatnonzero(br.converged & (br.y[:, 0] >= lo_) & (br.y[:, 0] <= hi_))
        nodes = [(float(path_y[-1, 0]), critical_manifold(system, path_y[-1], x_guess=x_start))]
        nodes += [(float(br.y[i, 0]), br.x[i]) for i in inside]
        if np.all(np.isfinite(loss.x)):
            nodes.append((float(y_star[0]), np.asarray(loss.x)))
        nodes.sort(key=lambda nd: nd[0])
        yy = np.array([nd[0] for nd in nodes])
        rate = np.array([float(np.ravel(gfun(0.0, jnp.asarray(xx), jnp.asarray([yv]), system.args))[0])
                         for yv, xx in nodes])
        if len(yy) >= 2 and np.all(np.isfinite(rate)) and np.all(rate != 0):
            t_star += abs(float(np.trapezoid(1.0 / np.abs(rate), yy)))
    mr = loss.max_real[np.isfinite(loss.max_real)]
    return VisitedRegion("FAIL", True, _loss_text(kind, y_star, t_star, system), notes, path_y.min(axis=0),
                         path_y.max(axis=0), 0.0, y_star, t_star, kind,
                         float(-mr.max()) if mr.size else float("nan"), red, None,
                         loss.branch.y[np.isfinite(loss.max_real)], mr)


def _judge_interval(system, y0, x_start, lower, upper, margin, red, full, notes, master, result) -> VisitedRegion:
    """d = 1: continue the branch from y0 to both ends of the visited range plus the margin; a fold or gap
    closing inside fails, within the margin fails, beyond it is a note."""
    L = float(upper[0] - lower[0])
    width = margin * L
    weakest, profile_y, profile_mr = np.inf, [], []
    box = _domain(system)
    for end in (lower[0] - width, upper[0] + width):
        if abs(end - y0[0]) <= 1e-12 * max(1.0, abs(y0[0])):
            continue
        if box is not None:
            end = float(np.clip(end, box[0][0], box[1][0]))
            if end == y0[0]:
                continue
        loss = locate_loss_of_hyperbolicity(system, y0[0], end, x0=x_start)
        ok = np.isfinite(loss.max_real)
        profile_y.append(loss.branch.y[ok])
        profile_mr.append(loss.max_real[ok])
        if loss.found:
            y_star = np.asarray(loss.y).reshape(-1)
            inside = lower[0] <= y_star[0] <= upper[0]
            t_star = _first_crossing(red.t, red.y[:, 0], y_star[0])
            if t_star is None:
                t_star = _first_crossing(full.t, full.y[:, 0], y_star[0])
            ys_all = np.concatenate(profile_y)[:, None]
            mr_all = np.concatenate(profile_mr)
            if inside:
                return result("FAIL", True, _loss_text(loss.kind, y_star, t_star, system), y_star, t_star,
                              loss.kind,
                              float(-np.nanmax(mr_all)), ys_all, mr_all, width)
            gap = min(abs(y_star[0] - lower[0]), abs(y_star[0] - upper[0]))
            return result("FAIL", False,
                          f"normal hyperbolicity: the critical manifold loses normal hyperbolicity "
                          f"({loss.kind}) at {slow_symbol(system, star=True)} = {y_star[0]:.6g}, within the "
                          f"{margin:.0%} margin of the visited range [{lower[0]:.4g}, {upper[0]:.4g}] (distance {gap:.3g}); the "
                          "rates cannot be uniform so close to it",
                          y_star, None, loss.kind, float(-np.nanmax(mr_all)), ys_all, mr_all, width)
        if not loss.found and loss.bracket is not None:
            notes.append(f"continuation toward {slow_symbol(system)} = {end:.4g}: {loss.message}")
        if ok.any():
            weakest = min(weakest, float(-np.max(loss.max_real[ok])))
        # a note on what lies beyond the margin
        far = end + _BEYOND * (end - y0[0]) if L > 0 else end
        if box is not None:
            far = float(np.clip(far, box[0][0], box[1][0]))
        if far != end and loss.branch.status == 0:
            beyond = locate_loss_of_hyperbolicity(system, end, far, x0=loss.branch.x[-1])
            if beyond.found:
                ystar = float(np.ravel(beyond.y)[0])
                notes.append(f"{beyond.kind} at {slow_symbol(system)} = {ystar:.6g}, outside the visited range "
                             f"[{lower[0]:.4g}, {upper[0]:.4g}] plus margin: not reached (a note, not a failure)")
    ys_all = np.concatenate(profile_y)[:, None] if profile_y else y0[None]
    mr_all = np.concatenate(profile_mr) if profile_mr else np.array([normal_hyperbolicity(
        system, None if master else critical_manifold(system, y0, x_guess=x_start), y0).max_real])
    if not np.isfinite(weakest):
        weakest = float(-np.nanmax(mr_all))
    if not weakest > 0:
        return result("FAIL", False, f"normal hyperbolicity: the branch through φ(y0) is not attracting on the "
                      f"visited range (largest Re λ of D_x f on the fast fibre {-weakest:.3g} ≥ 0)",
                      weakest=weakest, ys=ys_all, mr=mr_all, width=width)
    return result("ok", False, f"attracting on the visited range [{lower[0]:.4g}, {upper[0]:.4g}] ± "
                  f"{width:.2g} (weakest rate of attraction −max Re λ = {weakest:.4g})",
                  weakest=weakest, ys=ys_all, mr=mr_all, width=width)



def _judge_paths(system, paths, x_start, result) -> VisitedRegion:
    """d > 1: follow the branch along each path in time order; the first point where it is lost or stops
    attracting fails, located between the last good save time and that one."""
    d = paths[0][1].shape[1]
    weakest = np.inf
    all_y, all_mr = [], []
    for t, y in paths:
        good = np.all(np.isfinite(y), axis=1)
        t, y = t[good], y[good]
        if len(y) < 2:
            continue
        start = critical_manifold(system, y[0], x_guess=x_start)
        branch = continue_manifold(system, y, start, predictor="constant")
        n_ok = branch.n_followed
        mr = np.array([normal_hyperbolicity(system, branch.x[i], y[i]).max_real for i in range(n_ok)])
        all_y.append(y[:n_ok])
        all_mr.append(mr)
        bad = np.flatnonzero(mr >= 0)
        if n_ok < len(y) or bad.size:
            i = bad[0] if bad.size else n_ok
            i = max(i, 1)
            loss = locate_loss_of_hyperbolicity(system, y[i - 1], y[i], x0=branch.x[i - 1], num=11)
            y_star = np.asarray(loss.y if loss.found else y[i]).reshape(-1)
            kind = loss.kind if loss.found else "branch lost"
            return result("FAIL", True, _loss_text(kind, y_star, float(t[i]), system), y_star, float(t[i]), kind,
                          float(-np.max(mr)) if mr.size else float("nan"), np.concatenate(all_y),
                          np.concatenate(all_mr))
        weakest = min(weakest, float(-mr.max()))
    return result("ok", False, f"attracting along both trajectories (d = {d}; weakest rate of attraction "
                  f"−max Re λ = {weakest:.4g})", weakest=weakest,
                  ys=np.concatenate(all_y) if all_y else None, mr=np.concatenate(all_mr) if all_mr else None)
