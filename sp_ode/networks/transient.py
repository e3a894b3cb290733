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
mat-vecs (stiff chains, Λt large) `scipy.sparse.linalg.expm_multiply` (Al-Mohy–Higham) is
used instead; its error is then only checked through mass conservation, and
`integration_error` says so (None).

**Moments with a bound** (§7.10).  The leaked mass bounds probabilities, not moments: mass
that left J may sit at any count.  When every reaction that raises the total count
V(x) = Σ_s x_s has a propensity affine in the counts, a_r ≤ c0_r + c1_r·V (checked
symbolically), Dynkin's formula and Grönwall give E[V(X_t) | exit at state z] ≤ m₁(t; z) and
E[V² | …] ≤ m₂(t; z) from a 3×3 linear system; with z the largest exit target,

    E_J[X_s] ≤ E[X_s] ≤ E_J[X_s] + ε(t)·m₁(t),      E[X_s²] ≤ E_J[X_s²] + ε(t)·m₂(t),

so means and standard deviations come as certified intervals.  Otherwise only the
probabilities are bounded and the moment intervals are `None` with the reason.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from sp_ode.core.validation import check_positive, check_positive_int
from sp_ode.networks._moments import affine_observable, caps_of, growth_constants, moment_growth
from sp_ode.networks.events import Event, EventMaps, check_events, event_sink_generator, integrate_with_events
from sp_ode.networks.network import NetworkError, ReactionNetwork, TruncationError
from sp_ode.networks.state_space import StateSpace

__all__ = ["TransientDistribution", "transient_distribution", "fsp_transient", "UNIFORMIZATION_MAX_STEPS"]

#: Mat-vecs allowed for uniformization over the whole time span; beyond, expm_multiply.
UNIFORMIZATION_MAX_STEPS = 200_000
_LOG_TAIL = -160 * math.log(2.0)    # Poisson tail dropped per output interval: ≤ 2⁻¹⁶⁰ ≈ 7e-49 (so the truncation
                                    # cannot move an entry above ~1e-40 by more than 1e-8 of itself)
_GROWTH = 1.5               # adaptive projection: a leaking species' bound grows by this factor (2 while the
                            # leak is above 10⁶·tol) …
_GROWTH_MIN = 10            # … and by at least this many molecules


@dataclass
class TransientDistribution:
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
    integration_error : ndarray (T,) or None
        ℓ1 error bound of the time integration
        (uniformization: the dropped Poisson tails and the rounding, accumulated); None for expm_multiply
    relative_rounding : ndarray (T,) or None
        Componentwise relative rounding bound of p_J
        (uniformization adds nonnegative terms only: (m + 3)·u per step and entry)
    method : str
        "uniformization" or "expm_multiply"
    growth : dict or None
        The moment-growth constants (module docstring), or None
    growth_reason : str
        Why there is no moment bound (empty when there is one)
    mass_defect : float
        Max_t |Σp_J + leaked − 1| (a check of the integration)
    expansions : list of dict
        The projections tried (bounds, n, leaked at the last time)
    tol : float or None
    seconds : float
    network : ReactionNetwork
        For `intervals` of its observables
    """

    times: np.ndarray
    p: np.ndarray
    space: StateSpace
    leaked: np.ndarray
    leaked_by: dict
    integration_error: np.ndarray | None
    relative_rounding: np.ndarray | None
    method: str
    growth: dict | None
    growth_reason: str
    mass_defect: float
    exit_total: int
    expansions: list = field(default_factory=list)
    tol: float | None = None
    seconds: float = 0.0
    network: ReactionNetwork | None = field(default=None, repr=False)

    @property
    def species(self) -> tuple[str, ...]:
        return self.space.species

    def _index(self, species: str) -> int:
        if species not in self.space.species:
            raise ValueError(f"`species` must be one of {self.space.species}; got {species!r}.")
        return self.space.species.index(species)

    def _err(self) -> np.ndarray:
        return np.full_like(self.leaked, np.inf) if self.integration_error is None else self.integration_error

    def mean(self, name: str) -> np.ndarray:
        """E_J[f](t) of a species or observable f (Σ_J p_J f; the lower end of `intervals` for f ≥ 0)."""
        if name in self.space.species:
            return self.p @ self.space.states[:, self.space.species.index(name)].astype(np.float64)
        if self.network is None:
            raise ValueError(f"`name` must be a species {self.space.species}; got {name!r}.")
        return self.p @ self.network.observable(name, self.space.states)

    def means(self) -> dict[str, np.ndarray]:
        """E_J[X_s](t) = Σ_J p_J x_s for every species (the lower end of `mean_bounds`)."""
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
    def moment_bound_reason(self) -> str:
        """Why `mean_bounds` is None ('' when it is not)."""
        if self.growth is None and np.any(self.leaked > 0):   # no mass left J: no leaked moments to bound
            return self.growth_reason
        if self.relative_rounding is None:
            return "expm_multiply carries no rigorous integration bound (uniformization would need too many steps)"
        return ""

    def intervals(self, name: str) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None:
        """Certified ((mean lower, upper), (SD lower, upper)) at every time of a species or observable.

        For f = a·x + b with a ≥ 0 (a species, or an observable affine in the counts): the part on J is
        computed from p_J with its rounding ρ (every entry relative, §7.10) and the dropped Poisson tails,
        and the leaked part through a·x ≤ A·V + B (A the largest a_s over V's species, B the species
        capped by a conservation law at their caps, plus |b|): E[f; τ ≤ t] ≤ ε(t)(A m₁(t) + B),
        E[f²; τ ≤ t] ≤ ε(t)(A² m₂ + 2AB m₁ + B²).  None (see `moment_bound_reason`, or an
        observable that is not affine with a ≥ 0).

        Raises
        ------
        ValueError
            `name` is neither a species nor an observable of the network.
        """
        if self.moment_bound_reason:
            return None
        ab = affine_observable(self.network, self.space, name)
        if ab is None:
            return None
        a, b = ab
        if self.growth is None:            # nothing left J (leaked = 0 exactly): the leaked terms vanish
            m1 = m2 = np.zeros_like(self.times)
            caps = {}
        else:
            m1, m2 = moment_growth(self.growth, float(self.exit_total), self.times)
            m1, m2 = np.maximum(m1, 0.0), np.maximum(m2, 0.0)
            caps = self.growth["caps"]
        capped = np.array([s in caps for s in self.space.species])
        cap = np.array([float(caps.get(s, 0)) for s in self.space.species])
        rho = self.relative_rounding
        drop = np.maximum(self.integration_error - rho, 0.0)         # dropped Poisson tails (absolute ℓ1)
        f = self.space.states @ a + b
        fmax = float(np.max(np.abs(f), initial=0.0))
        # on the leaked mass: a·x ≤ A·V + B, A = max over V's species of a_s, B = the capped species at their caps
        A = float(a[~capped].max(initial=0.0))
        B = float(np.sum(a[capped] * cap[capped])) + abs(b)
        mu, s2 = self.p @ f, self.p @ f**2
        mu_lo = np.maximum(mu * (1 - rho), 0.0) if b >= 0 else mu * (1 + rho) - drop * fmax
        mu_hi = mu * (1 + rho) + drop * fmax + self.leaked * (A * m1 + B)
        s2_lo = np.maximum(s2 * (1 - rho), 0.0)
        s2_hi = s2 * (1 + rho) + drop * fmax**2 + self.leaked * (A * A * m2 + 2 * A * B * m1 + B * B)
        sd_lo = np.sqrt(np.maximum(s2_lo - np.maximum(mu_hi, 0.0) ** 2, 0.0))
        sd_hi = np.sqrt(np.maximum(s2_hi - np.maximum(mu_lo, 0.0) ** 2, 0.0))
        return (mu_lo, mu_hi), (sd_lo, sd_hi)

    def affine_form(self, name: str) -> tuple[np.ndarray, float] | None:
        """(a (S,), b) with the species or observable `name` = a·x + b, a ≥ 0; None when it is not of that form."""
        return affine_observable(self.network, self.space, name)

    def mean_bounds(self) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
        """Certified [lower, upper] of E[X_s](t) for every species, or None (see `moment_bound_reason`)."""
        out = {s: self.intervals(s) for s in self.species}
        return None if any(v is None for v in out.values()) else {s: v[0] for s, v in out.items()}

    def sd_bounds(self) -> dict[str, tuple[np.ndarray, np.ndarray]] | None:
        """Certified [lower, upper] of the SD of X_s(t) for every species, or None (see `moment_bound_reason`)."""
        out = {s: self.intervals(s) for s in self.species}
        return None if any(v is None for v in out.values()) else {s: v[1] for s, v in out.items()}

    def marginal(self, species: str, i: int = -1) -> tuple[np.ndarray, float]:
        """(marginal law of `species` on {0 … bound} at `times[i]`, its ℓ1 error bound ε + integration; inf
        when the integration carries no bound)."""
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
               "observables": {o: None if iv is None else {"mean": self.mean(o), "mean_lower": iv[0][0],
                                                             "mean_upper": iv[0][1], "sd_lower": iv[1][0],
                                                             "sd_upper": iv[1][1]} for o, iv in obs.items()},
               "moment_bound_reason": self.moment_bound_reason, "expansions": self.expansions, "tol": self.tol,
               "seconds": self.seconds,
               "kind": "p_J(t) on the projection; ‖p(t) − p_J(t)‖₁ ≤ leaked + integration_error (FSP bound)"}
        if marginals:
            out["marginals"] = {}
            for s in self.species:
                rows = [self.marginal(s, i) for i in range(len(self.times))]
                out["marginals"][s] = {"values": np.array([r[0] for r in rows]),
                                       "l1_error_bound": np.array([r[1] for r in rows])}
        return out


# --- the sink generator and its solution --------------------------------------------------------------

def _sink_generator(network: ReactionNetwork, space: StateSpace, y: np.ndarray, free: np.ndarray):
    """(Q_J: CSR of the moves inside J, exits (m, n): exit rate of each state into each sink, sink names, V_exit).

    V_exit is the largest V = Σ_{free s} x_s of a state that a move out of J reaches."""
    Q = network.generator(space, y)
    a = network.propensities(space.states, y)
    names = list(space.species) + (["total"] if space.total is not None else [])
    exits = np.zeros((len(names), space.n))
    v_exit = 0
    for r, (_, _, ex) in enumerate(network.transitions(space)):
        if ex.size == 0:
            continue
        target = space.states[ex] + network.stoichiometry[r]
        over = target > space.bounds
        which = np.where(over.any(axis=1), np.argmax(over, axis=1), len(space.species))  # species, else "total"
        np.add.at(exits, (which, ex), a[r, ex])
        moving = a[r, ex] > 0
        if moving.any():
            v_exit = max(v_exit, int(target[moving][:, free].sum(axis=1).max(initial=0)))
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
    """Uniformization (module docstring); None when it would need more than `max_steps` mat-vecs."""
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
        return None
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
    return np.array(P_out), np.array(L_out), np.array(err_out), np.array(rel_out)


def _expm(Q, exits, p0, times):
    from scipy.sparse.linalg import expm_multiply

    n, m = Q.shape[0], exits.shape[0]
    G = sp.block_array([[Q - sp.diags_array(exits.sum(axis=0)), sp.csr_array(exits.T)],
                        [sp.csr_array((m, n)), sp.csr_array((m, m))]], format="csr")
    z0 = np.concatenate([p0, np.zeros(m)])
    out = []
    cur, t_prev = z0, float(times[0])
    for t in times:
        if t > t_prev:
            cur = expm_multiply((G.T * (float(t) - t_prev)).tocsr(), cur)
            t_prev = float(t)
        out.append(cur.copy())
    Z = np.maximum(np.array(out), 0.0)
    return Z[:, :n], Z[:, n:]


def _integrate(Q, exits, p0, grid, max_steps: int):
    """(P, L, err, rel, method) on `grid`: uniformization, or expm_multiply past `max_steps` (no bound then)."""
    res = _uniformized(Q, exits, p0, grid, max_steps)
    if res is not None:
        return (*res, "uniformization")
    P, L = _expm(Q, exits, p0, grid)
    return P, L, None, None, "expm_multiply"


def _check_times(times) -> np.ndarray:
    t = np.atleast_1d(np.asarray(times, dtype=np.float64))
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"`times` must be a non-empty 1-D sequence; got shape {t.shape}.")
    if not np.all(np.isfinite(t)) or t.min() < 0 or np.any(np.diff(t) < 0):
        raise ValueError(f"`times` must be finite, ≥ 0 and nondecreasing; got {t.tolist()[:6]}.")
    return t


def fsp_transient(network: ReactionNetwork, space: StateSpace, p0, times, *, y=None,
                  max_steps: int = UNIFORMIZATION_MAX_STEPS, events: Sequence[Event] = ()) -> TransientDistribution:
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
    events : sequence of Event
        Time- and state-triggered assignments, represented exactly (`sp_ode.networks.events`)

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
    caps = caps_of(network, space)
    free = np.array([s not in caps for s in network.species])
    events = check_events(events)
    maps = EventMaps(network, events, y) if events else None
    if maps is not None and maps.stated:      # moves into a trigger set go to its image (events.py)
        Q, exits, names, v_exit = event_sink_generator(network, space, y, free, maps)
    else:
        Q, exits, names, v_exit = _sink_generator(network, space, y, free)
    # integrate from t = 0: prepend 0 when the first output time is later
    grid = times if times[0] == 0 else np.concatenate([[0.0], times])
    why_events = ""
    if maps is None:
        P, L, err, rel, method = _integrate(Q, exits, p0, grid, max_steps)
    else:                                     # the time events' jump maps between spans (events.py)
        P, L, err, rel, method, v_far, why_events = integrate_with_events(
            lambda v, g: _integrate(Q, exits, v, g, max_steps), maps, space, p0, grid, free, len(names))
        v_exit = max(v_exit, v_far)
        if maps.stated:
            why_events = why_events or (f"the jumps of the state-triggered events {[maps.events[k].name for k in maps.stated]}"
                                        " are not in the moment-growth bound of the leaked mass")
    if times[0] != 0:
        P, L = P[1:], L[1:]
        err = None if err is None else err[1:]
        rel = None if rel is None else rel[1:]
    leaked = L.sum(axis=1)
    defect = float(np.max(np.abs(P.sum(axis=1) + leaked - 1.0)))
    growth, why = growth_constants(network, y, caps)
    if why_events:
        growth, why = None, why_events
    return TransientDistribution(times, P, space, leaked, dict(zip(names, L.T)), err, rel, method, growth, why,
                                 defect, v_exit, seconds=time.perf_counter() - t0, network=network)


def transient_distribution(network: ReactionNetwork, initial: Mapping[str, int], times, *,
                           bounds: Mapping[str, int] | None = None, total: int | None = None, tol: float = 1e-8,
                           moment_tol: float | None = None, y=None, max_expansions: int = 20,
                           max_steps: int = UNIFORMIZATION_MAX_STEPS,
                           events: Sequence[Event] = ()) -> TransientDistribution:
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
        Also grow the projection until the leaked part of the second moments, max_t ε(t)·m₂(t)
        (module docstring), is below this — so that the certified mean and SD intervals are narrow
        (ignored when the network has no moment bound).
    y
        Slow variables, held fixed
    max_expansions : int
        Projections tried at most
    events : sequence of Event
        Time- and state-triggered assignments (`sp_ode.networks.events`; from SBML:
        `from_sbml(..., with_events=True)`); the leaked mass after a jump is bounded as before.

    Returns
    -------
    TransientDistribution
        `expansions` lists every projection tried.

    Raises
    ------
    TruncationError
        The leak stays above `tol` after `max_expansions` projections, or only a total-count bound
        leaks (names the species hit most and the leaked mass).
    NetworkError, MemoryBudgetError
        From `network.state_space` (a projection that would not fit is refused before it is built).
    """
    t_start = time.perf_counter()
    if not isinstance(network, ReactionNetwork):
        raise TypeError(f"`network` must be a ReactionNetwork; got {type(network).__name__}.")
    tol = check_positive("tol", tol)
    moment_tol = None if moment_tol is None else check_positive("moment_tol", moment_tol)
    max_expansions = check_positive_int("max_expansions", max_expansions)
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
    for _ in range(max_expansions):
        space = network.state_space(cur, total=total, initial=initial)
        p0 = np.zeros(space.n)
        p0[space.index(x0[None])[0]] = 1.0
        res = fsp_transient(network, space, p0, times, y=y, max_steps=max_steps, events=events)
        last = float(res.leaked.max())        # = leaked[-1] without events (the sinks only fill); a jump can empty them
        expansions.append({"bounds": dict(cur), "n": space.n, "leaked": last,
                           "leaked_by": {k: float(v[-1]) for k, v in res.leaked_by.items()}})
        moment_leak = 0.0
        if moment_tol is not None and not res.moment_bound_reason and res.growth is not None:
            _, m2 = moment_growth(res.growth, float(res.exit_total), res.times)
            moment_leak = float(np.max(res.leaked * np.maximum(m2, 0.0)))
            expansions[-1]["moment_leak"] = moment_leak
        if last <= tol and (moment_tol is None or moment_leak <= moment_tol):
            res.expansions, res.tol, res.seconds = expansions, tol, time.perf_counter() - t_start
            return res
        share = tol if last > tol else max(last, 1e-300) * moment_tol / max(moment_leak, 1e-300)
        grow = [s for s in network.species if s not in capped and res.leaked_by[s].max() > share / (2 * len(cur))]
        if not grow:
            worst = max(res.leaked_by, key=lambda k: res.leaked_by[k][-1])
            raise TruncationError(f"the projection of {network.name!r} leaks {last:.3e} > tol {tol:.1e} by t = "
                                  f"{times[-1] if np.ndim(times) else times:g}, through the bound of {worst!r}, which "
                                  "is not grown (a total or conservation bound): raise it.", leaked=last, species=worst)
        # far from tol: double (fewer projections to solve); near it: the gentler factor
        factor = 2.0 if last > 1e6 * tol else _GROWTH
        for s in grow:
            cur[s] = max(int(math.ceil(cur[s] * factor)), cur[s] + _GROWTH_MIN)
    worst = max(expansions[-1]["leaked_by"], key=expansions[-1]["leaked_by"].get)
    raise TruncationError(f"the projection of {network.name!r} still leaks {expansions[-1]['leaked']:.3e} > tol "
                          f"{tol:.1e} after {max_expansions} projections (last bounds {expansions[-1]['bounds']}); "
                          f"most mass leaves through {worst!r}: raise `max_expansions` or `tol`.",
                          leaked=expansions[-1]["leaked"], species=worst)

