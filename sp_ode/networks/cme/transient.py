"""The transient distribution p(t) of a chemical master equation, with its finite-state-projection bound.

On a projection J (docs/theory.md §7.6) every reaction that would leave J is routed to an
absorbing *sink* — one sink per species whose bound the move crosses (and one for a
total-count bound), so the leak is attributed.  Started from a law supported on J, the
solution p_J(t) on J is exactly P(X_t = i, τ > t) with τ the exit time from J, hence
(Munsky–Khammash 2006)

    0 ≤ p_J(t) ≤ p(t)  on J,     ‖p(t) − p_J(t)‖₁ = (mass in the sinks at t) =: ε(t),

and `transient_distribution` grows the bounds of the species that leak until
ε(t_max) ≤ `tol` (the adaptive projection).

**Time integration** (§7.10).  p_J(t) = exp(t G_Jᵀ) p_J(0) is computed by *uniformization*:
with Λ ≥ max exit rate and P = I + G/Λ ≥ 0 (sinks included),
exp(tGᵀ)v = Σ_k Pois(k; Λt) (Pᵀ)^k v, truncated where the Poisson tail is below 2⁻¹⁶⁰
per output interval.  Every term is a nonnegative vector, so the truncation only removes
mass (a rigorous ℓ1 error, reported as `integration_error`) and rounding is relative per
entry — no cancellation, tails stay accurate on log plots.  Past `UNIFORMIZATION_MAX_STEPS`
mat-vecs (a stiff projection: one fast propensity makes Λt large) the chain is stepped by Radau IIA
collocation instead, certified a posteriori by the integral of its defect (`sp_ode.networks.cme._collocation`):
an ℓ1 bound of either sign, aimed at `integration_tol`, so the FSP bound reads ‖p(t) − p̃(t)‖₁ ≤ leaked +
2·integration_error there (`marginal` adds it; the moment intervals lower their lower ends by it).

**Moments with a certified interval** (§7.10, `sp_ode.networks.cme._intervals`).  Two enclosures,
intersected where both exist:

* when every propensity is affine in the counts, the moment equations close and the exact mean and
  covariance of the infinite chain solve a linear ODE (`sp_ode.networks.cme._closed_moments`), enclosed
  to ~1e-12 relative at any horizon by nonnegative interval scaling and squaring — independent of J;
* from the projection: the leaked mass bounds probabilities, not moments, so its moments are bounded
  by the strong Markov property at the exit time and a weighted Lyapunov function V_w
  (`sp_ode.networks.cme._moments`):

      E_J[a·x] ≤ E[a·x] ≤ E_J[a·x] + ε(t)·(A·M₁(t) + B),   E[(a·x)²] ≤ E_J[(a·x)²] + ε(t)·(A²M₂ + 2ABM₁ + B²),

  with M₁, M₂ the suprema over the elapsed time s ∈ [0, t] of the bounds on E_z[V_w], E_z[V_w²] from the
  largest exit target z.  It needs every propensity that raises V_w to be affine or bounded by a
  constant (Hill and Michaelis–Menten terms, found by interval evaluation).

`intervals` returns a `MomentIntervals` whose `status` says when an end is infinite, or wider than the
requested `moment_tol`, and why; None only when neither enclosure exists (`moment_bound_reason`).
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from sp_ode.core.memory import check_memory
from sp_ode.core.reporting import progress as _progress
from sp_ode.core.summary import Summarised, first_line, number
from sp_ode.core.validation import check_positive, check_positive_int
from sp_ode.networks.cme._closed_moments import ClosedMoments, closed_moment_system
from sp_ode.networks.cme._collocation import COLLOCATION_STEP_COST, collocation
from sp_ode.networks.cme._intervals import MomentIntervals, combine, fsp_interval
from sp_ode.networks.cme._moments import affine_observable, caps_of, growth_constants, moment_sup
from sp_ode.networks.events import Event, EventMaps, check_events, event_sink_generator, integrate_with_events
from sp_ode.networks.network import NetworkError, ReactionNetwork, TruncationError
from sp_ode.networks.state_space import StateSpace

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float

__all__ = ["TransientDistribution", "transient_distribution", "fsp_transient", "MomentIntervals",
           "UNIFORMIZATION_MAX_STEPS", "TRANSIENT_MAX_WORK"]

#: Mat-vecs allowed for uniformization over the whole time span; beyond, Radau collocation (`_collocation`).
UNIFORMIZATION_MAX_STEPS = 200_000
_LOG_TAIL = -160 * math.log(2.0)    # Poisson tail dropped per output interval: ≤ 2⁻¹⁶⁰ ≈ 7e-49 (so the truncation
                                    # cannot move an entry above ~1e-40 by more than 1e-8 of itself)
_GROWTH = 1.5               # adaptive projection: a leaking species' bound grows by this factor (2 while the
                            # leak is above 10⁶·tol) …
_GROWTH_MIN = 10            # … and by at least this many molecules
_LOOSE_INTEGRATION = 1e-4   # the collocation target of a projection not yet known to meet tol
#: Work budget of the adaptive projection: Σ over projections of (states × uniformization steps).
TRANSIENT_MAX_WORK = 4 * 10**9


@dataclass(repr=False)
class TransientDistribution(Summarised):
    """p(t) of a CME on a finite state projection, with what the projection costs.

    Attributes
    ----------
    times : ndarray (T,)
    p : ndarray (T, n)
        P_J(t) on the states of `space` (a sub-probability: Σ = 1 − leaked)
    space : StateSpace
    leaked : ndarray (T,)
        Ε(t) = ‖p(t) − p_J(t)‖₁, the FSP bound (mass in the sinks)
    leaked_by : dict name -> ndarray (T,)
        The sink of each species bound (and "total")
    integration_error : ndarray (T,)
        ℓ1 error bound of the time integration, on p_J and the sinks together
        (uniformization: the dropped Poisson tails and the rounding, accumulated — one-sided, the computed
        p_J is below the exact one; collocation: the integrated defect, two-sided, `_collocation`)
    relative_rounding : ndarray (T,) or None
        Componentwise relative rounding bound of p_J
        (uniformization adds nonnegative terms only: (m + 3)·u per step and entry); None for collocation,
        whose error is bounded in ℓ1 only
    method : str
        "uniformization", or "collocation" (Radau IIA, where uniformization would need more than `max_steps`
        mat-vecs: a stiff projection)
    integration_tol : float
        The target of the collocation bound (uniformization's is far below it); `integration_status` says
        when the bound is above it
    growth : dict or None
        The Lyapunov constants of the escaped mass (`sp_ode.networks.cme._moments`), or None
    growth_reason : str
        Why there is no moment bound (empty when there is one)
    mass_defect : float
        Max_t |Σp_J + leaked − 1| (a check of the integration)
    expansions : list of dict
        The projections tried (bounds, n, leaked at the last time)
    tol : float or None
    exit_total : float
        The largest V_w(z) over the exit targets z (the start of the Lyapunov bound)
    closed : ClosedMoments or None
        The closed moment system (affine networks; `closed.reason` says why not otherwise)
    z0 : pair of ndarray or None
        The enclosure of the moments at t = 0
    work : int
        States × uniformization steps spent (summed over the projections by `transient_distribution`)
    moment_status : str
        Why `moment_tol` was not met ('' when it was, or not asked)
    seconds : float
    network : ReactionNetwork
        For `intervals` of its observables
    """

    times: np.ndarray
    p: np.ndarray
    space: StateSpace
    leaked: np.ndarray
    leaked_by: dict
    integration_error: np.ndarray
    relative_rounding: np.ndarray | None
    method: str
    growth: dict | None
    growth_reason: str
    mass_defect: float
    exit_total: float
    expansions: list = field(default_factory=list)
    tol: float | None = None
    seconds: float = 0.0
    network: ReactionNetwork | None = field(default=None, repr=False)
    closed: ClosedMoments | None = field(default=None, repr=False)
    z0: tuple | None = field(default=None, repr=False)
    work: int = 0
    moment_status: str = ""
    integration_tol: float = 1e-8
    _exact_cache: tuple | None = field(default=None, repr=False)

    @property
    def species(self) -> tuple[str, ...]:
        return self.space.species

    def _summary_title(self) -> str:
        return f"TransientDistribution: {self.method}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        t = np.asarray(self.times)
        rows = [("times", f"{t.size} in [{number(t[0])}, {number(t[-1])}]" if t.size else "none"),
                ("states", f"{self.space.n} ({', '.join(self.space.species)})"),
                ("leaked", f"‖p(t) − p_J(t)‖₁ ≤ {number(float(np.max(self.leaked)))} (FSP, max over t)"),
                ("integration", f"ℓ1 ≤ {number(float(np.max(self.integration_error)))} ({self.method}"
                 + (", two-sided" if self.two_sided else "") + ")"),
                ("mass defect", number(self.mass_defect)), ("tol", number(self.tol)),
                ("projections", str(max(len(self.expansions), 1))), ("seconds", number(self.seconds, 3))]
        if self.moment_status:
            rows.append(("moments", first_line(self.moment_status)))
        if self.integration_status:
            rows.append(("integration status", self.integration_status))
        return rows

    @property
    def two_sided(self) -> bool:
        """Whether the integration error can have either sign (collocation), not only remove mass (uniformization)."""
        return self.relative_rounding is None

    @property
    def integration_status(self) -> str:
        """Why the integration bound is above `integration_tol` ('' when it is not)."""
        worst = float(np.max(self.integration_error))
        if self.two_sided and worst > self.integration_tol:
            return (f"the collocation bound {worst:.2e} is above integration_tol {self.integration_tol:.1e} at the "
                    "tightest Radau tolerance tried (1e-13): the bounds below use it as it is")
        return ""

    def _index(self, species: str) -> int:
        if species not in self.space.species:
            raise ValueError(f"`species` must be one of {self.space.species}; got {species!r}.")
        return self.space.species.index(species)

    def _err(self) -> np.ndarray:
        """ℓ1 distance of p to p_J beyond `leaked`: the integration error, twice when two-sided (the computed
        leak can then be low by it as well)."""
        return 2.0 * self.integration_error if self.two_sided else self.integration_error

    def mean(self, name: str) -> np.ndarray:
        """`E_J[f](t)` of a species or observable f (Σ_J p_J f; the lower end of `intervals` for f ≥ 0)."""
        if name in self.space.species:
            return self.p @ self.space.states[:, self.space.species.index(name)].astype(np.float64)
        if self.network is None:
            raise ValueError(f"`name` must be a species {self.space.species}; got {name!r}.")
        return self.p @ self.network.observable(name, self.space.states)

    def means(self) -> dict[str, np.ndarray]:
        """`E_J[X_s](t) = Σ_J p_J x_s` for every species (the lower end of `mean_bounds`)."""
        return {s: self.p @ self.space.states[:, k].astype(np.float64) for k, s in enumerate(self.species)}

    def sds(self) -> dict[str, np.ndarray]:
        """Standard deviations of the law on J renormalised by its mass (the point estimate)."""
        out = {}
        mass = self.p.sum(axis=1)
        for k, s in enumerate(self.species):
            x = self.space.states[:, k].astype(np.float64)
            m1 = (self.p @ x) / mass
            out[s] = np.sqrt(np.maximum((self.p @ x**2) / mass - m1**2, 0.0))
        return out

    @property
    def exact_moments(self) -> bool:
        """Whether the moment equations close (every propensity affine and valid on the orthant)."""
        return self.closed is not None and self.closed.available and self.z0 is not None

    @property
    def fsp_bound_reason(self) -> str:
        """Why the projection gives no moment enclosure ('' when it does)."""
        if self.growth is None and np.any(self.leaked > 0):   # no mass left J: no leaked moments to bound
            return self.growth_reason
        return ""

    @property
    def moment_bound_reason(self) -> str:
        """Why `intervals` is None ('' when it is not): neither the moment equations close nor the projection bounds."""
        if self.exact_moments or not self.fsp_bound_reason:
            return ""
        closed = "" if self.closed is None else f"; the moment equations do not close: {self.closed.reason}"
        return self.fsp_bound_reason + closed

    def _exact(self):
        if self._exact_cache is None:
            self._exact_cache = self.closed.propagate(self.z0, self.times)
        return self._exact_cache

    def intervals(self, name: str, *, source: str = "auto", escaped: str = "lyapunov") -> MomentIntervals | None:
        """Certified ((mean lower, upper), (SD lower, upper)) at every time of a species or observable.

        For f = a·x + b with a ≥ 0 (a species, or an observable affine in the counts) — module docstring:
        the exact moments when the moment equations close, the projection's enclosure (E_J from p_J with
        its rounding and the dropped Poisson tails, the escaped part through a weighted Lyapunov bound),
        and their intersection when both exist.

        Parameters
        ----------
        name : str
        source : {"auto", "moments", "projection"}
            Which enclosures to use ("auto": all that exist)
        escaped : {"lyapunov", "zero"}
            "zero" drops the escaped moments — the defective old bound, for negative controls only

        Returns
        -------
        MomentIntervals or None
            With `status` "certified", "wide" (above `moment_tol`, the reason says why), "unbounded"
            (an end is inf, with the reason) or "inconsistent"; None when neither enclosure exists
            (`moment_bound_reason`) or `name` is not affine with a ≥ 0.

        Raises
        ------
        ValueError
            `name` is neither a species nor an observable of the network; a bad `source` or `escaped`.
        """
        if source not in ("auto", "moments", "projection"):
            raise ValueError(f"`source` must be one of ('auto', 'moments', 'projection'); got {source!r}.")
        if escaped not in ("lyapunov", "zero"):
            raise ValueError(f"`escaped` must be one of ('lyapunov', 'zero'); got {escaped!r}.")
        ab = affine_observable(self.network, self.space, name)
        if ab is None:
            return None
        a, b = ab
        exact = fsp = None
        if source != "projection" and self.exact_moments:
            z_lo, z_hi = self._exact()
            exact = self.closed.observable(z_lo, z_hi, a, b)
        if source != "moments" and not self.fsp_bound_reason:
            fsp = fsp_interval(self, a, b, escaped=escaped)
        why = ""
        if self.growth is not None and self.growth["beta"] > 0:
            why = (f"the Lyapunov bound of the escaped mass grows like e^(βt), β = {self.growth['beta']:.3g} > 0 "
                   "(no weighting of the species makes the drift negative), and overflows")
        return combine(exact, fsp, unbounded_reason=why or "an end of the interval overflows",
                       wide_reason=self.moment_status)

    def affine_form(self, name: str) -> tuple[np.ndarray, float] | None:
        """(a (S,), b) with the species or observable `name` = a·x + b, a ≥ 0; None when it is not of that form."""
        return affine_observable(self.network, self.space, name)

    def mean_bounds(self) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
        """Certified `[lower, upper]` of `E[X_s](t)` for every species, or None (see `moment_bound_reason`)."""
        out = {s: self.intervals(s) for s in self.species}
        return None if any(v is None for v in out.values()) else {s: v[0] for s, v in out.items()}

    def sd_bounds(self) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
        """Certified [lower, upper] of the SD of X_s(t) for every species, or None (see `moment_bound_reason`)."""
        out = {s: self.intervals(s) for s in self.species}
        return None if any(v is None for v in out.values()) else {s: v[1] for s, v in out.items()}

    def marginal(self, species: str, i: int = -1) -> tuple[np.ndarray, float]:
        """(marginal law of `species` on {0 … bound} at `times[i]`, its ℓ1 error bound: ε + the integration error,
        counted twice when it is two-sided)."""
        k = self._index(species)
        pm = np.bincount(self.space.states[:, k], weights=self.p[i], minlength=int(self.space.bounds[k]) + 1)
        return pm, float(self.leaked[i] + self._err()[i])

    def to_dict(self, *, marginals: bool = True) -> dict:
        """A JSON-ready record: times, means, SDs (with certified intervals where available), the bounds."""
        mb, sb = self.mean_bounds(), self.sd_bounds()
        obs = {} if self.network is None else {o: self.intervals(o) for o in self.network.observables}
        out = {"times": self.times, "species": list(self.species), "n": self.space.n,
               "bounds": dict(zip(self.species, self.space.bounds.tolist())), "method": self.method,
               "leaked": self.leaked, "leaked_by": self.leaked_by,
               "integration_error": self.integration_error, "mass_defect": self.mass_defect,
               "means": self.means(), "sds": self.sds(),
               "mean_bounds": None if mb is None else {s: {"lower": lo, "upper": hi} for s, (lo, hi) in mb.items()},
               "sd_bounds": None if sb is None else {s: {"lower": lo, "upper": hi} for s, (lo, hi) in sb.items()},
               "observables": {o: None if iv is None else {"mean": self.mean(o), **iv.to_dict()}
                               for o, iv in obs.items()},
               "interval_status": {s: None if (iv := self.intervals(s)) is None else
                                   {"status": iv.status, "reason": iv.reason, "source": iv.source}
                                   for s in self.species},
               "moment_bound_reason": self.moment_bound_reason, "moment_status": self.moment_status,
               "work": self.work, "expansions": self.expansions, "tol": self.tol,
               "seconds": self.seconds,
               "two_sided": self.two_sided, "integration_tol": self.integration_tol,
               "integration_status": self.integration_status,
               "kind": "p_J(t) on the projection; ‖p(t) − p_J(t)‖₁ ≤ leaked + integration_error (FSP bound; "
                       "leaked + 2·integration_error when two_sided)"}
        if marginals:
            out["marginals"] = {}
            for s in self.species:
                rows = [self.marginal(s, i) for i in range(len(self.times))]
                out["marginals"][s] = {"values": np.array([r[0] for r in rows]),
                                       "l1_error_bound": np.array([r[1] for r in rows])}
        return out


# --- the sink generator and its solution --------------------------------------------------------------

def _sink_generator(network: ReactionNetwork, space: StateSpace, y: np.ndarray, weights: np.ndarray):
    """(Q_J: CSR of the moves inside J, exits (m, n): exit rate of each state into each sink, sink names, V_exit).

    V_exit is the largest V_w = Σ_s w_s x_s (`weights` (S,), 0 on capped species) of a state that a move
    out of J reaches."""
    Q = network.generator(space, y)
    a = network.propensities(space.states, y)
    names = list(space.species) + (["total"] if space.total is not None else [])
    exits = np.zeros((len(names), space.n))
    v_exit = 0.0
    for r, (_, _, ex) in enumerate(network.transitions(space)):
        if ex.size == 0:
            continue
        target = space.states[ex] + network.stoichiometry[r]
        over = target > space.bounds
        which = np.where(over.any(axis=1), np.argmax(over, axis=1), len(space.species))  # species, else "total"
        np.add.at(exits, (which, ex), a[r, ex])
        moving = a[r, ex] > 0
        if moving.any():
            v_exit = max(v_exit, float((target[moving] @ weights).max(initial=0.0)) * (1 + 1e-15))
    return Q, exits, names, v_exit


def _poisson_cut(a: float) -> tuple[int, float]:
    """(K, bound on Σ_{k>K} Pois(k; a)): smallest K ≥ a whose tail bound pmf(K+1)/(1 − a/(K+2)) ≤ 2⁻¹⁶⁰."""
    from scipy.special import gammaln

    def log_tail(K: int) -> float:
        k = K + 1
        return k * math.log(a) - a - float(gammaln(k + 1)) - math.log1p(-a / (K + 2))

    lo = int(math.ceil(a))
    hi = lo + 1
    while log_tail(hi) > _LOG_TAIL:
        hi = 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if log_tail(mid) > _LOG_TAIL:
            lo = mid
        else:
            hi = mid
    return hi, math.exp(log_tail(hi))


def _uniformized(Q, exits, p0, times, max_steps: int):
    """Uniformization (module docstring): (P, L, err, rel, steps), or the steps it would need when more than `max_steps`."""
    from scipy.special import gammaln

    out_rate = -Q.diagonal() + exits.sum(axis=0)
    lam = 1.125 * float(out_rate.max()) if out_rate.max() > 0 else 1.0
    steps = [float(times[0])] + list(map(float, times))
    spans = np.diff(np.array(steps))
    plan = []
    for dt in spans:
        a = lam * dt
        plan.append((a, *_poisson_cut(a)) if a > 0 else (0.0, 0, 0.0))
    total_steps = sum(K for _, K, _ in plan)
    if total_steps > max_steps:
        return total_steps
    # Rounding: each step is one sparse mat-vec of nonnegative terms (≤ m per entry) and the diagonal
    # 1 − out/Λ rounds once, so every entry of every term carries a relative error ≤ (m + 3)·u per step.
    m = int(max(np.diff(PT_indptr := sp.csr_array(Q.T).indptr).max(initial=0), exits.shape[0])) + 1
    del PT_indptr
    rel_per_step = (m + 3) * 2.0**-53
    # Pᵀ on J: off-diagonal rates/Λ, diagonal 1 − out/Λ ≥ 1/9 (Λ = 1.125·max out)
    R = sp.csr_array(Q - sp.diags_array(Q.diagonal()))
    PT = (R.T / lam + sp.diags_array(1.0 - out_rate / lam)).tocsr()
    E = exits / lam                                     # (m, n): one step's flow into each sink
    v, sinks = p0.astype(np.float64).copy(), np.zeros(exits.shape[0])
    P_out, L_out, err_out = [], [], []
    err = 0.0
    steps_done = 0
    rel_out = []
    for a, K, tail in plan:
        if K > 0:
            # Poisson weights in log space (e^{−a} alone underflows for a > 745)
            k = np.arange(K + 1)
            w = np.exp(k * math.log(a) - a - gammaln(k + 1))
            acc_v, acc_s = w[0] * v, w[0] * sinks
            cur_v, cur_s = v, sinks
            for j in range(1, K + 1):
                cur_s = cur_s + E @ cur_v          # the sinks absorb; they never flow back
                cur_v = PT @ cur_v
                if w[j] > 0:
                    acc_v += w[j] * cur_v
                    acc_s += w[j] * cur_s
            err += tail                             # the mass of the dropped terms (each term has mass ≤ 1)
            steps_done += K
            v, sinks = acc_v, acc_s
        P_out.append(v.copy())
        L_out.append(sinks.copy())
        rel = steps_done * rel_per_step * (1 + steps_done * rel_per_step)
        rel_out.append(rel)
        err_out.append(err + rel)                   # ℓ1: dropped tails + relative rounding of a unit mass
    return np.array(P_out), np.array(L_out), np.array(err_out), np.array(rel_out), total_steps


def _extended_generator(Q, exits):
    """G (n + m, n + m) with z' = G z on J and its m sinks: z = (p_J, sinks), columns summing to 0."""
    n, m = Q.shape[0], exits.shape[0]
    return sp.block_array([[Q - sp.diags_array(exits.sum(axis=0)), sp.csr_array(exits.T)],
                           [sp.csr_array((m, n)), sp.csr_array((m, m))]], format="csr").T.tocsr()


def _integrate(Q, exits, p0, grid, max_steps: int, counter: list | None = None, target: float = 1e-8):
    """(P, L, err, rel, method) on `grid`: uniformization, or Radau collocation with its a posteriori ℓ1 bound
    (`sp_ode.networks.cme._collocation`, aimed at `target`) past `max_steps` mat-vecs.

    The work (uniformization steps, or Radau steps × `COLLOCATION_STEP_COST`) is added to `counter[0]`."""
    res = _uniformized(Q, exits, p0, grid, max_steps)
    if not isinstance(res, int):
        P, L, err, rel, steps = res
        out = (P, L, err, rel, "uniformization")
    else:
        n = Q.shape[0]
        z0 = np.concatenate([p0, np.zeros(exits.shape[0])])
        Z, err, radau_steps, _ = collocation(_extended_generator(Q, exits), z0, grid, target)
        steps = radau_steps * COLLOCATION_STEP_COST
        out = (Z[:, :n], Z[:, n:], err, np.zeros(len(grid)), "collocation")
    if counter is not None:
        counter[0] += int(steps)
    return out


def _check_times(times) -> np.ndarray:
    t = np.atleast_1d(np.asarray(times, dtype=np.float64))
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"`times` must be a non-empty 1-D sequence; got shape {t.shape}.")
    if not np.all(np.isfinite(t)) or t.min() < 0 or np.any(np.diff(t) < 0):
        raise ValueError(f"`times` must be finite, ≥ 0 and nondecreasing; got {t.tolist()[:6]}.")
    return t


def fsp_transient(network: ReactionNetwork, space: StateSpace, p0: Float[ArrayLike, " n"],
                  times: Float[ArrayLike, " T"], *, y: Float[ArrayLike, " d"] | None = None,
                  max_steps: int = UNIFORMIZATION_MAX_STEPS, events: Sequence[Event] = (),
                  integration_tol: float = 1e-8) -> TransientDistribution:
    """p_J(t) on a fixed projection J from p0 at time 0 (module docstring).

    Parameters
    ----------
    network : ReactionNetwork
    space : StateSpace
        From `network.state_space`
    p0 : array (n,)
        A distribution on J at time 0
    times : array (T,)
        Output times, ≥ 0, nondecreasing
    y
        Slow variables (held fixed), when the network has them
    max_steps : int
        Uniformization mat-vecs over the time span before Radau collocation is used
    integration_tol : float
        Target of the collocation's ℓ1 bound (split evenly between the spans of time events)
    events : sequence of Event
        Time- and state-triggered assignments, represented exactly (`sp_ode.networks.events`); the
        closed moment equations do not hold across a jump, so with events only the projection's
        intervals are given

    Returns
    -------
    TransientDistribution

    Raises
    ------
    TypeError, ValueError
        Not a network / projection; `p0` not a distribution on J; bad `times`.
    PropensityError, NegativeCountError, MemoryBudgetError
        From the generator's construction.
    EventError
        An event the FSP cannot represent exactly (names it; `sp_ode.networks.events`).
    ConvergenceError
        Radau collocation (a stiff projection) failed to step (`sp_ode.networks.cme._collocation`).
    """
    t0 = time.perf_counter()
    if not isinstance(network, ReactionNetwork):
        raise TypeError(f"`network` must be a ReactionNetwork; got {type(network).__name__}.")
    if not isinstance(space, StateSpace) or space.species != network.species:
        raise TypeError("`space` must be a StateSpace built by `network.state_space(...)`.")
    times = _check_times(times)
    y = network._y(y)
    p0 = np.asarray(p0, dtype=np.float64)
    if p0.shape != (space.n,) or not np.all(np.isfinite(p0)) or p0.min() < 0 or abs(p0.sum() - 1.0) > 1e-12:
        raise ValueError(f"`p0` must be a distribution on the {space.n} states of `space` (≥ 0, summing to 1).")
    max_steps = check_positive_int("max_steps", max_steps)
    integration_tol = check_positive("integration_tol", integration_tol)
    # the output, p at every time (and the leaks), grows with T·n: estimated before any work (issue 35)
    check_memory(8 * (times.size + 1) * (space.n + len(network.species) + 2),
                 what=f"p(t) of {network.name!r} at {times.size} output times on {space.n} states",
                 remedy="Ask for fewer output times, or a smaller projection.")
    caps = caps_of(network, space)
    growth, why = growth_constants(network, y, caps)
    weights = np.zeros(len(network.species))
    if growth is not None:
        weights[growth["free"]] = growth["weights"]
    else:
        weights[[s not in caps for s in network.species]] = 1.0
    events = check_events(events)
    maps = EventMaps(network, events, y) if events else None
    if maps is not None and maps.stated:      # moves into a trigger set go to its image (events.py)
        Q, exits, names, v_exit = event_sink_generator(network, space, y, weights, maps)
    else:
        Q, exits, names, v_exit = _sink_generator(network, space, y, weights)
    # integrate from t = 0: prepend 0 when the first output time is later
    grid = times if times[0] == 0 else np.concatenate([[0.0], times])
    counter = [0]
    if maps is None:
        P, L, err, rel, method = _integrate(Q, exits, p0, grid, max_steps, counter, integration_tol)
    else:                                     # the time events' jump maps between spans (events.py)
        P, L, err, rel, method, v_far, why_events = integrate_with_events(
            lambda v, g: _integrate(Q, exits, v, g, max_steps, counter, integration_tol / (len(maps.timed) + 1)),
            maps, space, p0, grid, weights, len(names))
        v_exit = max(v_exit, v_far)
        if maps.stated:
            why_events = why_events or (f"the jumps of the state-triggered events {[maps.events[k].name for k in maps.stated]}"
                                        " are not in the moment-growth bound of the leaked mass")
        if why_events:
            growth, why = None, why_events
    steps = counter[0]
    if times[0] != 0:
        P, L, err, rel = P[1:], L[1:], err[1:], rel[1:]
    if method == "collocation":           # an ℓ1 bound only: no componentwise relative one
        rel = None
    leaked = L.sum(axis=1)
    defect = float(np.max(np.abs(P.sum(axis=1) + leaked - 1.0)))
    # the closed moment equations describe the chain without jumps: with events they are not used
    closed = closed_moment_system(network, y) if maps is None else None
    z0 = closed.initial(space.states, p0) if closed is not None and closed.available else None
    return TransientDistribution(times, P, space, leaked, dict(zip(names, L.T)), err, rel, method, growth, why,
                                 defect, v_exit, seconds=time.perf_counter() - t0, network=network, closed=closed,
                                 z0=z0, work=int(space.n) * int(steps), integration_tol=integration_tol)


def transient_distribution(network: ReactionNetwork, initial: Mapping[str, int], times: Float[ArrayLike, " T"], *,
                           bounds: Mapping[str, int] | None = None, total: int | None = None, tol: float = 1e-8,
                           moment_tol: float | None = None,
                           y: Float[ArrayLike, " d"] | None = None, max_expansions: int = 20,
                           max_steps: int = UNIFORMIZATION_MAX_STEPS, max_work: int = TRANSIENT_MAX_WORK,
                           progress: bool | None = None, events: Sequence[Event] = (),
                           integration_tol: float | None = None) -> TransientDistribution:
    """p(t) of the CME from a given state, on a projection grown until the leaked mass is below `tol`.

    Parameters
    ----------
    network : ReactionNetwork
    initial : mapping species -> int
        The state at t = 0 (missing species count 0)
    times : array (T,)
        Output times
    bounds : mapping species -> int, optional
        Starting per-species bounds (default: max(2·initial, initial + 20)); species bounded by a
        conservation law keep the bound it implies.
    total : int, optional
        A total-count bound (not grown)
    tol : float
        Largest accepted leaked mass ε(t_max)
    moment_tol : float, optional
        Also grow the projection until the leaked part of the second moments, max_t ε(t)·M₂(t)
        (module docstring), is below this — so that the projection's mean and SD intervals are narrow.
        Not needed (nothing is grown for it) when the moment equations close: the intervals are then
        exact whatever the projection.  When the work budget runs out first, the result is returned
        with `moment_status` saying so, and its intervals carry status "wide".
    y
        Slow variables, held fixed
    max_expansions : int
        Projections tried at most
    max_steps : int
        Uniformization mat-vecs per projection before Radau collocation (with its a posteriori ℓ1 bound,
        `sp_ode.networks.cme._collocation`) is used
    max_work : int
        Work budget of the adaptive projection: Σ (states × uniformization steps) over the projections
        (a count, not wall clock, so the result does not depend on the load).  A projection predicted
        to exceed it is not solved.
    progress : bool, optional
        A progress bar of the projections on stderr (default: when stderr is a terminal)
    events : sequence of Event
        Time- and state-triggered assignments (`sp_ode.networks.events`; from SBML:
        `from_sbml(..., with_events=True)`); the leaked mass after a jump is bounded as before.
    integration_tol : float, optional
        Target of the collocation's ℓ1 bound on a stiff projection (default `tol`); `integration_status`
        says when it is not met.

    Returns
    -------
    TransientDistribution
        `expansions` lists every projection tried.

    Raises
    ------
    TruncationError
        The leak stays above `tol` after `max_expansions` projections or within `max_work`, or only
        a total-count bound leaks (names the species hit most and the leaked mass).
    NetworkError, MemoryBudgetError
        From `network.state_space` (a projection that would not fit is refused before it is built).

    Examples
    --------
    Immigration and death from M = 0: M(t) is Poisson with mean (k/g)(1 − e^{−gt}), which is 5 at
    t = ln 2 for k = 10, g = 1, so P(M = 0) = e^{−5} = 0.006738 (closed form).

    >>> import math
    >>> import numpy as np
    >>> import sp_ode
    >>> net = sp_ode.ReactionNetwork("make: 0 -> M, k; decay: M -> 0, g", parameters={"k": 10.0, "g": 1.0})
    >>> res = sp_ode.transient_distribution(net, {"M": 0}, [0.0, math.log(2)], tol=1e-10)
    >>> pm, err = res.marginal("M")               # the law of M at t = ln 2 and its ℓ1 error bound
    >>> round(float(pm @ np.arange(pm.size)), 8)  # E[M] = 5
    5.0
    >>> print(f"{pm[0]:.6f}")                     # e^{-5}
    0.006738
    >>> bool(err <= 1e-10)                        # leaked mass + integration error, certified
    True
    """
    t_start = time.perf_counter()
    if not isinstance(network, ReactionNetwork):
        raise TypeError(f"`network` must be a ReactionNetwork; got {type(network).__name__}.")
    tol = check_positive("tol", tol)
    moment_tol = None if moment_tol is None else check_positive("moment_tol", moment_tol)
    max_expansions = check_positive_int("max_expansions", max_expansions)
    max_work = check_positive_int("max_work", max_work)
    integration_tol = tol if integration_tol is None else check_positive("integration_tol", integration_tol)
    events = check_events(events)
    initial = {s: int(v) for s, v in dict(initial).items()}
    for s in initial:
        if s not in network.species:
            raise NetworkError(f"`initial` names {s!r}, which is not a species of {network.species}.", species=s)
    x0 = np.array([initial.get(s, 0) for s in network.species], dtype=np.int64)
    if np.any(x0 < 0):
        raise ValueError(f"`initial` counts must be ≥ 0; got {initial}.")
    cur = {s: max(2 * int(v), int(v) + 20) for s, v in zip(network.species, x0)}
    if bounds is not None:
        cur.update({s: int(v) for s, v in bounds.items()})
    laws = network.conservation_laws()
    capped = set()
    for k, s in enumerate(network.species):   # a conservation law with nonnegative weights caps s
        caps = [int(law @ x0) // int(law[k]) for law in laws if law[k] > 0 and np.all(law >= 0)]
        if caps:
            cur[s] = min(caps)
            capped.add(s)
    expansions = []
    spent, last_res, budget_hit = 0, None, ""
    bar = _progress(total=max_expansions, desc=f"FSP {network.name}", disable=None if progress is None else not progress)
    try:
        for _ in range(max_expansions):
            space = network.state_space(cur, total=total, initial=initial)
            if last_res is not None:   # predicted cost: the last steps × the new size × the growth of the rates
                ratio = max(space.n / max(last_res.space.n, 1), 1.0)
                predicted = int(last_res.work / max(last_res.space.n, 1) * space.n * ratio ** (1 / len(cur)))
                if spent + predicted > max_work:
                    budget_hit = (f"the work budget max_work = {max_work:.3g} (states × steps) would be exceeded by "
                                  f"the next projection ({space.n} states, ≈ {predicted:.3g} more after {spent:.3g})")
                    break
            p0 = np.zeros(space.n)
            p0[space.index(x0[None])[0]] = 1.0
            # a stiff projection is first solved to a loose collocation bound: while it leaks more than tol even
            # with that bound counted against the leak, it is grown anyway; only the last one is solved tightly
            loose = max(integration_tol, _LOOSE_INTEGRATION)
            res = fsp_transient(network, space, p0, times, y=y, max_steps=max_steps, events=events,
                                integration_tol=loose)
            if (res.two_sided and loose > integration_tol
                    and float((res.leaked - res.integration_error).max()) <= tol):
                spent += res.work
                res = fsp_transient(network, space, p0, times, y=y, max_steps=max_steps, events=events,
                                    integration_tol=integration_tol)
            spent += res.work
            last_res = res
            last = float(res.leaked.max())   # = leaked[-1] without events (the sinks only fill); a jump can empty them
            expansions.append({"bounds": dict(cur), "n": space.n, "leaked": last, "work": res.work,
                               "leaked_by": {k: float(v[-1]) for k, v in res.leaked_by.items()}})
            moment_leak = 0.0
            want_moments = moment_tol is not None and not res.exact_moments
            if moment_tol is not None and not res.fsp_bound_reason and res.growth is not None:
                _, M2 = moment_sup(res.growth, float(res.exit_total), res.times)
                with np.errstate(invalid="ignore", over="ignore"):
                    moment_leak = float(np.max(np.where(res.leaked > 0, res.leaked * M2, 0.0)))
                expansions[-1]["moment_leak"] = moment_leak
            bar.update(1)
            bar.set_postfix(n=space.n, leaked=f"{last:.2e}", moment_leak=f"{moment_leak:.2e}")
            if last <= tol and (not want_moments or moment_leak <= moment_tol):
                res.expansions, res.tol, res.seconds = expansions, tol, time.perf_counter() - t_start
                res.work = spent
                return res
            share = tol if last > tol else max(last, 1e-300) * moment_tol / max(moment_leak, 1e-300)
            grow = [s for s in network.species if s not in capped and res.leaked_by[s].max() > share / (2 * len(cur))]
            if not grow:
                worst = max(res.leaked_by, key=lambda k: res.leaked_by[k][-1])
                if last <= tol:
                    budget_hit = (f"the leak goes through the bound of {worst!r}, which is not grown (a total or "
                                  "conservation bound)")
                    break
                raise TruncationError(f"the projection of {network.name!r} leaks {last:.3e} > tol {tol:.1e} by t = "
                                      f"{times[-1] if np.ndim(times) else times:g}, through the bound of {worst!r}, "
                                      "which is not grown (a total or conservation bound): raise it.", leaked=last,
                                      species=worst)
            # far from tol: double (fewer projections to solve); near it: the gentler factor
            factor = 2.0 if last > 1e6 * tol else _GROWTH
            for s in grow:
                cur[s] = max(int(math.ceil(cur[s] * factor)), cur[s] + _GROWTH_MIN)
    finally:
        bar.close()
    if last_res is not None and float(last_res.leaked.max()) <= tol:   # tol met, moment_tol not: say so
        ml = expansions[-1].get("moment_leak", float("nan"))
        last_res.moment_status = (f"moment_tol {moment_tol:.1e} not met: the leaked second moment is {ml:.3e} "
                                  f"after {len(expansions)} projections; " + (budget_hit or
                                  f"max_expansions = {max_expansions} reached"))
        last_res.expansions, last_res.tol, last_res.seconds = expansions, tol, time.perf_counter() - t_start
        last_res.work = spent
        return last_res
    if budget_hit:
        raise TruncationError(f"the projection of {network.name!r} still leaks {expansions[-1]['leaked']:.3e} > tol "
                              f"{tol:.1e}: {budget_hit}: raise `max_work` or `tol`.",
                              leaked=expansions[-1]["leaked"],
                              species=max(expansions[-1]["leaked_by"], key=expansions[-1]["leaked_by"].get))
    worst = max(expansions[-1]["leaked_by"], key=expansions[-1]["leaked_by"].get)
    raise TruncationError(f"the projection of {network.name!r} still leaks {expansions[-1]['leaked']:.3e} > tol "
                          f"{tol:.1e} after {max_expansions} projections (last bounds {expansions[-1]['bounds']}); "
                          f"most mass leaves through {worst!r}: raise `max_expansions` or `tol`.",
                          leaked=expansions[-1]["leaked"], species=worst)

