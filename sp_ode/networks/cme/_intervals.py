"""Certified mean and SD intervals of a CME observable at every output time (docs/theory.md §7.10).

Two independent enclosures, intersected where both exist:

* **The moment equations** (`_closed_moments`), when every propensity is affine: exact means and
  covariances of the infinite chain, enclosed to ~1e-12 relative, independent of the projection.
* **The projection** (`_moments`): for f = a·x + b, a ≥ 0, E[a·x] = E_J[a·x] + E[a·x; τ ≤ t] with the
  first term from p_J (its rounding ρ relative per entry, the dropped Poisson tails `drop` absolute;
  after Radau collocation an ℓ1 error `drop` of either sign, so the lower end drops by it too)
  and the escaped part between 0 and ε(t)·(A·M₁(t) + B_c), where a·x ≤ A·V_w + B_c on the escaped
  mass (A = max_u a_u/w_u over the uncapped species, B_c the capped species at their caps) and M₁, M₂
  are the Lyapunov suprema over s ∈ [0, t] from the largest exit target.  The constant b is added
  exactly (E[f] = E[a·x] + b; Var f = Var a·x).  The old bound that took the escaped moments as zero
  is what `escaped="zero"` computes — kept only as the negative control of the tests; it misses.

An interval is never NaN; an infinite end comes with `status` "unbounded" and the reason, an interval
wider than the requested `moment_tol` with "wide", two enclosures that do not meet with
"inconsistent" (a defect to report: each is meant to be rigorous).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["MomentIntervals", "fsp_interval", "combine"]


class MomentIntervals(tuple):
    """((mean lower, upper), (SD lower, upper)), arrays (T,), with `status`, `reason` and `source`.

    Unpacks like the pair of pairs it is: `(mlo, mhi), (slo, shi) = td.intervals("X")`.

    Attributes
    ----------
    mean, sd : tuple of ndarray (T,)
    status : str
        "certified", "wide" (wider than the requested `moment_tol`), "unbounded" (an end is inf),
        or "inconsistent"
    reason : str
        Why the status is not "certified" ('' when it is)
    source : str
        "moment equations", "projection", or "moment equations ∩ projection"
    """

    def __new__(cls, mean: Sequence[np.ndarray], sd: Sequence[np.ndarray], *, status: str = "certified",
                reason: str = "", source: str = "") -> MomentIntervals:
        obj = super().__new__(cls, (tuple(mean), tuple(sd)))
        obj.mean, obj.sd = tuple(mean), tuple(sd)
        obj.status, obj.reason, obj.source = status, reason, source
        return obj

    def __reduce__(self):          # pickles (process pools) despite the keyword-only constructor
        return _rebuild, (self.mean, self.sd, self.status, self.reason, self.source)

    def __repr__(self) -> str:
        return (f"MomentIntervals(mean={self.mean!r}, sd={self.sd!r}, status={self.status!r}, "
                f"reason={self.reason!r}, source={self.source!r})")

    def to_dict(self) -> dict:
        return {"mean_lower": self.mean[0], "mean_upper": self.mean[1], "sd_lower": self.sd[0],
                "sd_upper": self.sd[1], "status": self.status, "reason": self.reason, "source": self.source}


def _rebuild(mean, sd, status, reason, source) -> MomentIntervals:
    return MomentIntervals(mean, sd, status=status, reason=reason, source=source)


def _sqrt(v: np.ndarray) -> np.ndarray:
    return np.sqrt(np.maximum(v, 0.0))


def fsp_interval(td, a: np.ndarray, b: float, *, escaped: str = "lyapunov"):
    """((mean lo, hi), (var lo, hi)) of a·x + b from the projection (module docstring), or None.

    `escaped="zero"` drops the escaped moments (the defective old bound; for negative controls only).
    """
    from sp_ode.networks.cme._moments import moment_sup

    if td.relative_rounding is None:       # collocation: an ℓ1 error of either sign, no relative part
        rho, drop = 0.0, td.integration_error
        low = drop
    else:                                  # uniformization: p̃ ≤ p_J(1 + ρ), the dropped tails only remove mass
        rho = td.relative_rounding
        drop = np.maximum(td.integration_error - rho, 0.0)
        low = 0.0
    fx = td.space.states @ a
    fmax = float(np.max(fx, initial=0.0))
    mu, s2 = td.p @ fx, td.p @ fx**2
    eps = td.leaked * (1 + rho) + drop                 # the escaped mass, with the integration's error
    with np.errstate(over="ignore", invalid="ignore"):
        if escaped == "zero" or td.growth is None:     # growth None: nothing left J (checked by the caller)
            e1 = e2 = np.zeros_like(td.times)
        else:
            g = td.growth
            free = g["free"]
            caps = g["caps"]
            w = g["weights"]
            A = float(np.max(a[free] / w, initial=0.0)) if w.size else 0.0
            Bc = float(sum(a[k] * caps[s] for k, s in enumerate(td.space.species) if not free[k]))
            M1, M2 = moment_sup(g, float(td.exit_total), td.times)
            e1 = np.where(eps > 0, eps * (A * M1 + Bc), 0.0)
            e2 = np.where(eps > 0, eps * (A * A * M2 + 2 * A * Bc * M1 + Bc * Bc), 0.0)
        g_lo = np.maximum(mu * (1 - rho) - low * fmax, 0.0)
        g_hi = mu * (1 + rho) + drop * fmax + e1
        s2_lo = np.maximum(s2 * (1 - rho) - low * fmax**2, 0.0)
        s2_hi = s2 * (1 + rho) + drop * fmax**2 + e2
        var_lo = np.maximum(s2_lo - g_hi**2, 0.0)
        var_hi = s2_hi - g_lo**2
    var_hi = np.where(np.isnan(var_hi), np.inf, var_hi)
    g_hi = np.where(np.isnan(g_hi), np.inf, g_hi)
    var_lo = np.where(np.isfinite(g_hi), var_lo, 0.0)
    return (g_lo + b, g_hi + b), (var_lo, var_hi)


def combine(exact, fsp, *, unbounded_reason: str = "", wide_reason: str = "") -> MomentIntervals | None:
    """Intersect the enclosures ((mean lo, hi), (var lo, hi)) that exist; the status (module docstring)."""
    parts = [x for x in (exact, fsp) if x is not None]
    if not parts:
        return None
    source = " ∩ ".join(n for n, x in (("moment equations", exact), ("projection", fsp)) if x is not None)
    m_lo = np.max([p[0][0] for p in parts], axis=0)
    m_hi = np.min([p[0][1] for p in parts], axis=0)
    v_lo = np.max([p[1][0] for p in parts], axis=0)
    v_hi = np.min([p[1][1] for p in parts], axis=0)
    status, reason = "certified", ""
    slack = 1e-12 * np.maximum(np.abs(m_hi), 1.0)
    if np.any(m_lo > m_hi + slack) or np.any(v_lo > v_hi + 1e-12 * np.maximum(np.abs(v_hi), 1.0)):
        status = "inconsistent"
        reason = ("the moment equations and the projection give disjoint enclosures (each is meant to be rigorous): "
                  "please report this network")
        m_lo = np.min([p[0][0] for p in parts], axis=0)
        m_hi = np.max([p[0][1] for p in parts], axis=0)
        v_lo = np.min([p[1][0] for p in parts], axis=0)
        v_hi = np.max([p[1][1] for p in parts], axis=0)
    m_lo, m_hi = np.minimum(m_lo, m_hi), np.maximum(m_lo, m_hi)
    v_lo, v_hi = np.minimum(v_lo, v_hi), np.maximum(v_lo, v_hi)
    if status == "certified" and not (np.all(np.isfinite(m_hi)) and np.all(np.isfinite(v_hi))):
        status = "unbounded"
        reason = unbounded_reason or "an end of the interval overflows"
    elif status == "certified" and exact is None and wide_reason:
        status, reason = "wide", wide_reason
    return MomentIntervals((m_lo, m_hi), (_sqrt(v_lo), _sqrt(v_hi)), status=status, reason=reason, source=source)
