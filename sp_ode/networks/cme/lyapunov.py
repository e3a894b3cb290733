"""Foster–Lyapunov certificates for the stationary law of an infinite CME (docs/theory.md §7.15).

A stationary FSP answer p on a finite projection J is only as good as J: the reflecting
truncation's linear algebra is certified by `sp_ode.stationary_distribution`, but the mass of
the true p_st outside J, and the flux the truncation suppresses, need a bound on the infinite
chain.  As in the stationary FSP of Gupta, Mikelson & Khammash (2017) that bound comes from a
Foster–Lyapunov function; here

    V(x) = exp(θ·u(x)),   u(x) = w·x,   w_s ≥ 1 on the species no conservation law caps, 0 on capped ones,

with the drift (A V)(x) ≤ c₁ − c₂ V(x) at *every* state of the infinite lattice, proved from the
propensities' form (checked symbolically):

* a reaction whose change d_r = w·ν_r is > 0 needs an upper bound on its propensity a_r: exactly
  affine in the counts (c₀ + c·x, the capped species at their extremes), or bounded by a constant
  (a ratio of polynomials with nonnegative coefficients whose numerator's monomials all appear in
  the denominator, Hill and Michaelis–Menten terms: a_r ≤ max_m n_m/d_m);
* one with d_r < 0 needs a lower bound: its affine form, or 0 (any propensity is ≥ 0).

Then A V/V = Σ_r a_r (e^{θd_r} − 1) ≤ A₀ + G·x with G_s ≤ −γ w_s (γ > 0), so with c₂ = γ/θ,
A V + c₂V ≤ V·(A₀ + γ/θ − γu) ≤ c₁ := sup_{u ≥ 0} e^{θu}(A₀ + γ/θ − γu) (closed form below), and
(Dynkin, Grönwall, Fatou: §7.15) E_π[V] ≤ c₁/c₂ for the stationary law π, so

    π(u ≥ r) ≤ (c₁/c₂)·e^{−θr}     (Markov's inequality on V).

The weights w come from a linear programme on the drift of u itself (the θ → 0 limit:
M w ≤ −c w, M_st = Σ_r c_rs ν_rt over the affine reactions), or are given by the user; θ is chosen
on a grid to make the level set holding all but δ of the mass smallest.  When no certificate is
found, [`find_lyapunov`][sp_ode.networks.cme.lyapunov.find_lyapunov] returns one with `found = False` and the reason — it never pretends.
[`truncation_certificate`][sp_ode.networks.cme.lyapunov.truncation_certificate] turns a certificate into the bound on
‖p_J − π‖₁ of §7.15.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sp_ode.networks.cme._moments import affine_coefficients

if TYPE_CHECKING:
    import sympy

    from sp_ode.core.typing import ArrayLike, Float
    from sp_ode.networks.network import ReactionNetwork
    from sp_ode.networks.state_space import StateSpace

__all__ = ["LyapunovCertificate", "find_lyapunov", "truncation_certificate", "truncation_bound", "propensity_supremum"]

# θ·max(w) tried for the exponential function (log-spaced): small θ is the linear-function limit.
_THETA_GRID = np.geomspace(1e-3, 8.0, 96)
# Relative margin on every float computation of c₁, A₀, γ (a few operations of rounding each).
_MARGIN = 1e-12
# Largest weight ratio the LP may choose (keeps the level sets' boxes of comparable sides).
_MAX_WEIGHT = 1e4


@dataclass(frozen=True)
class LyapunovCertificate:
    """A Foster–Lyapunov function V = exp(θ w·x) with (A V) ≤ c₁ − c₂V on the whole lattice (module docstring).

    Attributes
    ----------
    found : bool
        False when no certificate was found; `reason` says why (the other fields are then empty).
    reason : str
    weights : ndarray (S,)
        w (0 on species capped by a conservation law).
    theta, log_c1, c2 : float
        θ, log c₁ (c₁ may exceed the float range) and c₂.
    caps : dict species -> int
        Species bounded by a conservation law with nonnegative weights.
    terms : dict reaction name -> str
        How each reaction entered the drift ("affine", "bounded by …", "dropped (lowers u)", "no change").
    """

    found: bool
    reason: str
    weights: np.ndarray = field(default_factory=lambda: np.zeros(0))
    theta: float = math.nan
    log_c1: float = math.nan
    c2: float = math.nan
    caps: dict = field(default_factory=dict)
    terms: dict = field(default_factory=dict)
    species: tuple = ()

    @property
    def c1(self) -> float:
        return math.exp(self.log_c1) if self.log_c1 < 700 else math.inf

    @property
    def log_mean_bound(self) -> float:
        """log(c₁/c₂) ≥ log E_π[V]."""
        return self.log_c1 - math.log(self.c2) if self.found else math.inf

    @property
    def mean_bound(self) -> float:
        """E_π[V] ≤ c₁/c₂."""
        return math.exp(self.log_mean_bound) if self.log_mean_bound < 700 else math.inf

    def tail(self, r: float) -> float:
        """Bound on π(w·x ≥ r) = π(V ≥ e^{θr}) ≤ (c₁/c₂)e^{−θr} (Markov), capped at 1."""
        if not self.found:
            return 1.0
        return float(min(1.0, math.exp(min(0.0, self.log_mean_bound - self.theta * float(r))) * (1 + _MARGIN)))

    def radius(self, delta: float) -> float:
        """Smallest r with `tail(r)` ≤ δ: outside {w·x < r} lies at most δ of the stationary mass."""
        return max(0.0, (self.log_mean_bound - math.log(delta)) / self.theta) * (1 + 1e-9) if self.found \
            else math.inf

    def box(self, delta: float) -> dict[str, int]:
        """Per-species bounds N_s of a box whose complement has stationary mass ≤ δ: `box_for_radius(radius(δ))`."""
        return self.box_for_radius(self.radius(delta))

    def box_for_radius(self, r: float) -> dict[str, int]:
        """The box holding the level set {w·x < r}: N_s = ⌈r/w_s⌉ − 1, capped species at their cap.

        A state outside it has some free species with x_s ≥ N_s + 1, hence w·x ≥ w_s(N_s + 1) ≥ r.
        """
        return {s: int(self.caps[s]) if s in self.caps else max(0, math.ceil(r / w) - 1)
                for s, w in zip(self.species, self.weights)}

    def as_dict(self) -> dict:
        return {"found": self.found, "reason": self.reason, "function": "V(x) = exp(theta * w.x)",
                "weights": dict(zip(self.species, self.weights.tolist())), "theta": self.theta, "log_c1": self.log_c1,
                "c2": self.c2, "log_mean_bound": self.log_mean_bound, "caps": dict(self.caps), "terms": dict(self.terms)}


def propensity_supremum(expr: sympy.Expr, species: Sequence[sympy.Symbol]) -> float | None:
    """A certified upper bound on a propensity over the nonnegative orthant, or None.

    Accepts N/D with N, D polynomials in the counts whose coefficients are all ≥ 0, D with a
    positive constant term, and every monomial of N present in D: then D ≥ Σ_{m ∈ N} d_m x^m > 0
    and N/D ≤ max_m n_m/d_m (the mediant inequality).  Hill repression a/(1 + (x/K)^h),
    activation a·x^h/(K^h + x^h) and V·x/(K + x) qualify (integer h).
    """
    import sympy

    expr = expr.replace(lambda e: e.is_Pow and e.exp.is_Float and float(e.exp) == int(e.exp) and e.exp > 0,
                        lambda e: sympy.Pow(e.base, int(e.exp)))
    num, den = sympy.fraction(sympy.together(expr))
    try:
        pn, pd = sympy.Poly(sympy.expand(num), *species), sympy.Poly(sympy.expand(den), *species)
        cn = {m: float(c) for m, c in pn.terms()}
        cd = {m: float(c) for m, c in pd.terms()}
    except (sympy.PolynomialError, TypeError, ValueError):
        return None
    if pd.is_zero or any(c < 0 for c in (*cn.values(), *cd.values())):
        return None
    zero = (0,) * len(species)
    if cd.get(zero, 0.0) <= 0:
        return None
    ratios = [cn[m] / cd[m] if cd.get(m, 0.0) > 0 else math.inf for m in cn if cn[m] > 0]
    bound = max(ratios, default=0.0)
    return bound * (1 + _MARGIN) if math.isfinite(bound) else None


def _classify(network, y: np.ndarray, caps: dict) -> list[dict]:
    """Per reaction: its affine form (with the capped species at their extremes) or constant bound, or None."""
    subs = {network.symbols[p]: v for p, v in network.parameters.items()}
    subs.update({network.symbols[v]: float(val) for v, val in zip(network.slow, y)})
    sym = [network.symbols[s] for s in network.species]
    free = np.array([s not in caps for s in network.species])
    cap = np.array([float(caps.get(s, 0)) for s in network.species])
    out = []
    for r, expr, nu in zip(network.reactions, network.propensity_exprs, network.stoichiometry):
        e = expr.subs(subs)
        item = {"name": r.name, "nu": nu[free].astype(np.float64), "affine": None, "sup": None, "text": str(r)}
        coef = affine_coefficients(e, sym)
        if coef is not None:
            c0, c = coef
            d = c[~free]
            item["affine"] = (c0 + float(np.sum(np.minimum(d, 0.0) * cap[~free])),     # c0_lo
                              c0 + float(np.sum(np.maximum(d, 0.0) * cap[~free])),     # c0_hi
                              c[free])
        else:
            item["sup"] = propensity_supremum(e, sym)
        out.append(item)
    return out


def _lp_weights(items: list[dict], nfree: int) -> tuple[np.ndarray | None, str]:
    """w ≥ 1 with (M + cI)w ≤ 0 for the largest c found by bisection, then Σw least at c/2 (module docstring)."""
    from scipy.optimize import linprog

    M = np.zeros((nfree, nfree))
    extra = []      # rows a with a·w ≤ 0: a reaction with an unbounded non-affine propensity must not raise u
    for it in items:
        if it["affine"] is not None:
            M += np.outer(it["affine"][2], it["nu"])
        elif it["sup"] is None and np.any(it["nu"] > 0):
            if np.all(it["nu"] >= 0):
                return None, (f"reaction {it['name']!r} ({it['text']}) raises the counts and its propensity is "
                              "neither affine in the counts nor bounded by a constant: no Foster–Lyapunov "
                              "function of the form exp(θ w·x) exists for it")
            extra.append(it["nu"])

    def feasible(c: float, objective: bool = False):
        A = np.vstack([M + c * np.eye(nfree), *[np.atleast_2d(a) for a in extra]])
        res = linprog(np.ones(nfree) if objective else np.zeros(nfree), A_ub=A, b_ub=np.zeros(A.shape[0]),
                      bounds=[(1.0, _MAX_WEIGHT)] * nfree, method="highs")
        return res.x if res.status == 0 else None

    hi = float(np.abs(M).sum()) + 1.0
    if feasible(1e-12 * hi) is None:
        return None, ("no weights w ≥ 1 make the mean drift of w·x negative in every direction (the linear "
                      "programme M w ≤ −c w, M from the affine propensities, is infeasible for every c > 0): "
                      "some species grows without a degradation that outpaces it")
    lo = 1e-12 * hi
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if feasible(mid) is not None else (lo, mid)
    w = feasible(0.5 * lo, objective=True)
    return (w, "") if w is not None else (None, "the linear programme for the weights failed numerically")


def _exponential(items: list[dict], w: np.ndarray, t: float) -> tuple[float, float, float] | None:
    """(θ, log c₁, c₂) for V = exp(θ w·x) at θ = t/max(w), or None when the drift is not negative (module docstring)."""
    theta = t / float(w.max())
    A0, G = 0.0, np.zeros(w.size)
    A0_abs, G_abs = 0.0, np.zeros(w.size)     # sums of |terms|: the rounding of A0 and G is below u·(R + 2)·these
    for it in items:
        d = float(it["nu"] @ w)
        if d == 0:
            continue
        f = math.expm1(theta * d)
        if it["affine"] is not None:
            c0_lo, c0_hi, c = it["affine"]
            A0 += f * (c0_hi if f > 0 else c0_lo)
            A0_abs += abs(f * (c0_hi if f > 0 else c0_lo))
            G += f * c
            G_abs += np.abs(f * c)
        elif f > 0:
            if it["sup"] is None:
                return None
            A0 += f * it["sup"]
            A0_abs += f * it["sup"]
        # f < 0 and not affine: a_r ≥ 0, the term is ≤ 0 and dropped
    slack = 4 * (len(items) + 2) * 2.0**-53       # the rounding of each sum, with room (expm1, the products)
    A0 = A0 + slack * A0_abs + _MARGIN * abs(A0)
    gamma = float(np.min((-G - slack * G_abs) / w)) * (1 - _MARGIN)
    if not gamma > 0:
        return None
    c2 = gamma / theta
    B = A0 + c2
    if B <= 0:
        return None                              # AV ≤ −c₂V: no stationary law could exist; refuse, do not trust it
    if A0 <= 0:
        log_c1 = math.log(B)                     # the sup of e^{θu}(B − γu) over u ≥ 0 is at u = 0
    else:
        log_c1 = theta * A0 / gamma + math.log(c2)   # at u* = A0/γ: e^{θu*}(B − γu*) = e^{θA0/γ}·γ/θ
    return theta, log_c1 + _MARGIN * (1 + abs(log_c1)), c2


def _best_theta(items: list[dict], w: np.ndarray, delta: float) -> tuple[float, float, float, float] | None:
    """(r(δ), θ, log c₁, c₂) at the θ of the grid with the smallest radius r(δ) = (log(c₁/c₂) − log δ)/θ."""
    best = None
    for t in _THETA_GRID:
        got = _exponential(items, w, float(t))
        if got is None:
            continue
        theta, log_c1, c2 = got
        r = (max(log_c1 - math.log(c2), 0.0) - math.log(delta)) / theta
        if best is None or r < best[0]:
            best = (r, theta, log_c1, c2)
    return best


def _log_volume(r: float, w: np.ndarray) -> float:
    return float(np.sum(np.log(np.ceil(r / w))))


def _refine_weights(items, w, best, delta):
    """Coordinate search on log w for the smallest box holding all but δ (any w ≥ 1 with a drift is valid)."""
    vol, step = _log_volume(best[0], w), 1.5
    for _ in range(24):
        improved = False
        for s in range(w.size):
            for f in (step, 1.0 / step):
                cand = w.copy()
                cand[s] *= f
                cand = np.minimum(cand / cand.min(), _MAX_WEIGHT)
                got = _best_theta(items, cand, delta)
                if got is not None and (v := _log_volume(got[0], cand)) < vol - 1e-9:
                    w, best, vol, improved = cand, got, v, True
        if not improved:
            step = step ** 0.5
            if step < 1.02:
                break
    return w, best


def find_lyapunov(network: ReactionNetwork, y: Float[ArrayLike, " d"] | None = None, *, caps: dict | None = None,
                  weights: Float[ArrayLike, " S"] | None = None, delta: float = 1e-8) -> LyapunovCertificate:
    """A certificate V = exp(θ w·x), A V ≤ c₁ − c₂V on the whole lattice, for the CME of `network` (module docstring).

    Parameters
    ----------
    network : ReactionNetwork
    y : array (d,), optional
        Slow variables, held fixed
    caps : mapping species -> int, optional
        Species bounded by a conservation law (they get weight 0 and enter at their extremes)
    weights : mapping species -> float, optional
        User-given w (each ≥ 1 on the uncapped species); only θ is then searched.  Weights for which
        no θ gives a negative drift are refused (`found = False`, with the reason).
    delta : float
        The mass outside the level set for which θ is tuned (the smallest radius r(δ) on the grid).

    Returns
    -------
    LyapunovCertificate
        `found = False` with `reason` when no certificate exists of this form.
    """
    y = np.zeros(0) if y is None else np.atleast_1d(np.asarray(y, dtype=np.float64))
    caps = {} if caps is None else {str(k): int(v) for k, v in dict(caps).items()}
    species = tuple(network.species)
    free = [s for s in species if s not in caps]
    if not free:
        return LyapunovCertificate(False, "every species is capped by a conservation law: the chain is finite; "
                                          "project on the whole class (no truncation)", caps=caps, species=species)
    items = _classify(network, y, caps)
    terms = {}
    for it in items:
        terms[it["name"]] = ("affine" if it["affine"] is not None else
                             f"bounded by {it['sup']:.6g}" if it["sup"] is not None else "not affine, not bounded")
    if weights is not None:
        wmap = {str(k): float(v) for k, v in dict(weights).items()}
        unknown = sorted(set(wmap) - set(free))
        if unknown:
            raise ValueError(f"`weights` names {unknown[0]!r}, which is not an uncapped species of {tuple(free)}.")
        missing = [s for s in free if s not in wmap]
        if missing:
            raise ValueError(f"`weights` must give every uncapped species a weight; {missing[0]!r} has none.")
        bad = [s for s in free if not (math.isfinite(wmap[s]) and wmap[s] >= 1.0)]
        if bad:
            raise ValueError(f"`weights[{bad[0]!r}]` must be finite and >= 1 (w·x must grow with every species); "
                             f"got {wmap[bad[0]]!r}.")
        w = np.array([wmap[s] for s in free])
    else:
        w, why = _lp_weights(items, len(free))
        if w is None:
            return LyapunovCertificate(False, why, caps=caps, terms=terms, species=species)
    best = _best_theta(items, w, delta)
    if best is not None and weights is None:
        w, best = _refine_weights(items, w, best, delta)
    if best is None:
        culprit = [it for it in items if it["affine"] is None and it["sup"] is None and float(it["nu"] @ w) > 0]
        why = (f"reaction {culprit[0]['name']!r} ({culprit[0]['text']}) raises w·x with a propensity that is "
               "neither affine nor bounded" if culprit else
               f"with weights {dict(zip(free, np.round(w, 6).tolist()))} the drift of exp(θ w·x) is not negative "
               "for any θ tried: these weights are no Lyapunov function")
        return LyapunovCertificate(False, why, caps=caps, terms=terms, species=species)
    _, theta, log_c1, c2 = best
    full = np.array([0.0 if s in caps else float(w[free.index(s)]) for s in species])
    for it, name in zip(items, terms):
        if float(it["nu"] @ w) == 0:
            terms[name] = "no change of w·x"
        elif float(it["nu"] @ w) < 0 and it["affine"] is None:
            terms[name] = "dropped (lowers w·x; propensity ≥ 0)"
    return LyapunovCertificate(True, "", full, float(theta), float(log_c1), float(c2), caps, terms, species)


def truncation_certificate(cert: LyapunovCertificate, space: StateSpace, outflow: np.ndarray,
                           hitting_time: float) -> dict:
    """Bound on ‖p_J − π‖₁ for the stationary law p_J of the reflecting truncation on J (docs/theory.md §7.15).

    With ε ≥ π(S∖J), Φ ≥ Σ_{x∈J} π_x o_x (the stationary flux out of J) and H ≥ max_i E_i[τ_k] on J,

        ‖p_J − π‖₁ ≤ 2ε + 4HΦ/(1 − ε),    ε = (c₁/c₂)e^{−θ·u_out},    Φ = (c₁/c₂)·max_{x∈J} o_x e^{−θ w·x},

    u_out the least w·x of a state outside J.  Returns a dict with those terms and `bound` (inf
    when the box cuts a conserved species below its cap, or ε ≥ 1).
    """
    log_peak = -math.inf
    if cert.found:
        o = np.asarray(outflow, dtype=np.float64)
        hot = o > 0
        if hot.any():
            log_peak = float(np.max(np.log(o[hot]) - cert.theta * (space.states[hot] @ cert.weights)))
    return truncation_bound(cert, space.species, space.bounds, space.total, log_peak, hitting_time)


def truncation_bound(cert: LyapunovCertificate, species: Sequence[str], bounds: Sequence[int] | np.ndarray,
                     total: int | None, log_flux_peak: float, hitting_time: float) -> dict:
    """[`truncation_certificate`][sp_ode.networks.cme.lyapunov.truncation_certificate] from the box and max_{x∈J} (log o_x − θ w·x).

    The peak is what any route computes on its own representation of J (the enumerated states, or
    the Kronecker grid of `sp_ode.networks.cme.tensor_train`); −inf when no move leaves J.
    """
    out = {"mass_outside": math.inf, "boundary_flux": math.inf, "hitting_time": float(hitting_time),
           "bound": math.inf, "u_outside": None, "reason": ""}
    if not cert.found:
        out["reason"] = cert.reason
        return out
    w = cert.weights
    bounds = np.asarray(bounds)
    free = np.array([s not in cert.caps for s in species])
    for s, N in zip(species, bounds):
        if s in cert.caps and int(N) < int(cert.caps[s]):
            out["reason"] = (f"the box bounds {s!r} by {int(N)} below its conservation cap {cert.caps[s]}: states of "
                             "the class lie outside the box at every level of V")
            return out
    u_out = float(np.min(w[free] * (bounds[free] + 1.0)))
    if total is not None:
        u_out = min(u_out, float(w[free].min()) * (total + 1.0 - sum(cert.caps.values())))
    u_out = max(u_out, 0.0)
    eps = cert.tail(u_out)
    log_phi = cert.log_mean_bound + log_flux_peak
    phi = 0.0 if log_flux_peak == -math.inf else (math.exp(log_phi) * (1 + _MARGIN) if log_phi < 709 else math.inf)
    out.update(mass_outside=eps, boundary_flux=phi, u_outside=u_out)
    if eps >= 1.0:
        out["reason"] = "the box is inside the level set that holds the stationary mass: ε ≥ 1"
        return out
    flux_term = 4.0 * float(hitting_time) * phi / (1.0 - eps) if phi > 0 else 0.0
    out["bound"] = (2.0 * eps + flux_term) * (1 + _MARGIN)
    out["flux_term"] = flux_term
    return out
