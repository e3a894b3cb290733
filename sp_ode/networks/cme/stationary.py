"""The stationary law of an infinite CME, with a bound that covers the truncation (docs/theory.md §7.15).

[`cme_stationary`][sp_ode.networks.cme.stationary.cme_stationary] answers p_st of the chemical master equation on the
whole (infinite) lattice, not only of its projection:

1. a Foster–Lyapunov certificate V = exp(θ w·x) (`sp_ode.networks.cme.lyapunov`) bounds the stationary
   mass outside a level set, π(w·x ≥ r) ≤ (c₁/c₂)e^{−θr}, and so picks a box J that holds all but
   δ of it;
2. p_J, the stationary law of the reflecting truncation on J, is solved by
   `sp_ode.stationary_distribution` (the method chosen by predicted cost, §7.9) with its own
   certified bound β_LA on ‖p̂ − p_J‖₁;
3. the truncation part β_T ≥ ‖p_J − π‖₁ = 2ε + 4HΦ/(1 − ε) (§7.15) is added:
   ‖p̂ − π‖₁ ≤ β_LA + β_T, with p̂ extended by 0 outside J.

On a box too large for the sparse route (its memory estimate above the budget), a network whose
propensities factor over the species is solved in tensor-train form instead
(`sp_ode.networks.cme.tensor_train`, `method="tt"` to ask for it): step 2's p_J and β_LA then come
from an AMEn solve certified on the Kronecker grid, and step 3 is the same.

`info` reports the two parts separately.  When no certificate is found the answer says so
(`status = "no_lyapunov"`, `bound = None`): the linear algebra on J is still certified, the
truncation is not.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from sp_ode.core.memory import DEFAULT_FRACTION, available_memory
from sp_ode.core.summary import Summarised, first_line, number
from sp_ode.core.validation import check_positive, check_positive_int
from sp_ode.markov.bounds import hitting_time_bound, residual_l1_bound
from sp_ode.markov.stationary import stationary_distribution
from sp_ode.networks.cme.lyapunov import find_lyapunov, truncation_bound, truncation_certificate
from sp_ode.networks.cme.tensor_train import (
    NotSeparableError,
    SeparableGenerator,
    TTDistribution,
    qtt_box,
    tt_available,
    tt_stationary,
)
from sp_ode.networks.network import NetworkError, ReactionNetwork
from sp_ode.networks.state_space import StateSpace

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float

__all__ = ["StationaryCME", "cme_stationary"]

# Share of `tol` given to the mass outside the first box (the rest to the flux and the linear algebra).
_MASS_SHARE = 0.25


@dataclass(repr=False)
class StationaryCME(Summarised):
    """p_st of an infinite CME on a projection J, with the truncation and linear-algebra bounds kept apart.

    Attributes
    ----------
    p : ndarray (n,) or TTDistribution
        The stationary law on J (0 outside J); in tensor-train form on the TT route (`p.full()` expands it).
    space : StateSpace or None
        The states of J (None on the TT route, whose J is the box `info["expansions"][-1]["bounds"]`).
    status : str
        "certified" (bound ≤ tol), "above_tol" (a finite bound above tol: the box is too small),
        "no_lyapunov" (no certificate: the truncation is not bounded; `bound` is None).
    bound : float or None
        ‖p − p_st‖₁ on the whole lattice ≤ bound = the `l1_bound` of `info`'s `linear_algebra` entry + the
        `bound` of its `truncation` entry.
    message : str
    info : dict
        `linear_algebra` (`l1_bound` ≥ ‖p − p_J‖₁: the smaller of the solve's own `bound` and its
        `a_posteriori_bound` 2H‖Qᵀp‖₁; and the `stationary_distribution` report: method, componentwise
        bound, selection), `truncation` (mass_outside ε, boundary_flux Φ, hitting_time H, bound), `lyapunov`
        (the certificate), `expansions` (boxes tried), `tol`.
    """

    p: np.ndarray | TTDistribution
    space: StateSpace | None
    status: str
    bound: float | None
    message: str
    info: dict = field(default_factory=dict)

    def marginal(self, species: str) -> np.ndarray:
        """Marginal law of `species` on J (within `bound` of the true one in ℓ1; on the TT route within
        `bound` + `p.negative_mass`, the marginal being of the unclipped tensor)."""
        if isinstance(self.p, TTDistribution):
            return self.p.marginal(species)
        return self.space.marginal(self.p, species)

    def _summary_title(self) -> str:
        return f"StationaryCME: {self.status}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        la, tr = self.info.get("linear_algebra", {}), self.info.get("truncation", {})
        n, species = (self.p.n, self.p.species) if isinstance(self.p, TTDistribution) else (self.space.n,
                                                                                            self.space.species)
        return [("states", f"{n} ({', '.join(species)})"),
                ("bound", f"‖p − p_st‖₁ ≤ {number(self.bound)}" if self.bound is not None else "none (no certificate)"),
                ("linear algebra", number(la.get("l1_bound"))), ("truncation", number(tr.get("bound"))),
                ("tol", number(self.info.get("tol"))), ("message", first_line(self.message))]



def _caps(network: ReactionNetwork, initial: Mapping | None) -> dict[str, int]:
    """Species bounded by a conservation law with nonnegative weights, at the value of `initial`."""
    laws = network.conservation_laws()
    if not len(laws):
        return {}
    if initial is None:
        raise NetworkError("the reactions conserve something; pass `initial=` (a state) to fix the conservation "
                           "class of the stationary law.")
    x0 = np.array([int(initial.get(s, 0)) for s in network.species], dtype=np.int64)
    caps: dict[str, int] = {}
    for law in laws:
        if np.all(law >= 0) and np.any(law > 0):
            for k in np.flatnonzero(law > 0):
                s = network.species[k]
                caps[s] = min(caps.get(s, 10**18), int(law @ x0) // int(law[k]))
    return caps


def hitting_time(Q, p: np.ndarray, info: dict) -> float:
    """Certified max_i E_i[τ_k] on J (docs/theory.md §7.1), reused from the solve when it carries one."""
    H = info.get("hitting_time")
    if H is not None and math.isfinite(H) and H > 0:
        return float(H)
    from scipy.sparse.linalg import spsolve

    Q = sp.csr_array(Q)
    n = Q.shape[0]
    if n == 1:
        return 0.0
    k = int(np.argmax(p))
    keep = np.delete(np.arange(n), k)
    G = -Q[keep][:, keep].tocsc()
    y = np.asarray(spsolve(G, np.ones(n - 1)), dtype=np.float64)
    return hitting_time_bound(Q, k, y)


def _posterior(Q, p: np.ndarray, H: float) -> float:
    """‖p − p_J‖₁ ≤ |Σp − 1| + 2uΣp + 2H‖Qᵀp‖₁/Σp (docs/theory.md §7.1; the residual's rounding included)."""
    if not math.isfinite(H):
        return math.inf
    total = math.fsum(p)
    return float(abs(total - 1.0) + 2 * 2.0**-53 * total + 2.0 * H * residual_l1_bound(Q, p) / total
                 * (1 + 8 * 2.0**-53))


def _route(network: ReactionNetwork, box: Mapping, method: str | None, yv: np.ndarray) -> dict | None:
    """The TT route's choice (a dict with its generator and reason), or None for the sparse route."""
    if method is not None and method != "tt":
        return None
    missing = [s for s in network.species if s not in box]
    y = yv if network.slow else None
    if method == "tt":
        if not tt_available():
            raise ImportError("method='tt' needs torchtt (pip install --no-build-isolation torchtt, after torch).")
        if len(network.conservation_laws()):
            raise NetworkError(f"method='tt' solves on a box: {network.name!r} conserves something, so its states lie "
                               "on a conservation class, not a box; use the sparse route (method=None).")
        if missing:
            raise NetworkError(f"method='tt' needs a bound for every species; missing {missing}.")
        return {"generator": SeparableGenerator(network, qtt_box([box[s] for s in network.species]), y),
                "reason": "method='tt' was asked for"}
    # Default: the sparse route unless its solve would not fit (about 1 kB per state measured at n = 10⁷:
    # results/networks/stationary_n1e7_air.json) and the TT route applies.
    if missing or len(network.conservation_laws()):
        return None
    n = math.prod(int(box[s]) + 1 for s in network.species)
    sparse_bytes = n * (96 * len(network.reactions) + 16 * len(network.species) + 32 + 700)
    avail = available_memory()
    if avail is None or sparse_bytes <= DEFAULT_FRACTION * avail[0] or not tt_available():
        return None
    try:
        gen = SeparableGenerator(network, qtt_box([box[s] for s in network.species]), y)
    except NotSeparableError:
        return None
    return {"generator": gen, "reason": f"the sparse route's ~{sparse_bytes / 2**30:.3g} GiB on {n} states exceeds "
                                        f"the memory budget; the propensities are separable"}


def cme_stationary(network: ReactionNetwork, *, y: Float[ArrayLike, " d"] | None = None, tol: float = 1e-6,
                   initial: Mapping[str, int] | None = None,
                   bounds: Mapping[str, int] | None = None, weights: Mapping[str, float] | None = None,
                   method: str | None = None, max_expansions: int = 8) -> StationaryCME:
    """p_st of the CME on the infinite lattice, with a certified bound on ‖p − p_st‖₁ (module docstring).

    Parameters
    ----------
    network : ReactionNetwork
    y : array (d,), optional
        Slow variables, held fixed
    tol : float
        Target for the total bound; when the box is chosen here, the level set's radius grows (by the
        Δr that e^{−θΔr} predicts for the truncation part, at least log 4/θ) until it is met
    initial : mapping species -> int, optional
        A state fixing the conservation class (required when the stoichiometry conserves something)
    bounds : mapping species -> int, optional
        A box of your own; it is certified as given (status "above_tol" when its bound exceeds `tol`).
        Required when no Lyapunov certificate is found.
    weights : mapping species -> float, optional
        User-given Lyapunov weights w (≥ 1 on each uncapped species); default: found by the LP
        (`sp_ode.networks.cme.lyapunov.find_lyapunov`).  Weights that give no negative drift are refused.
    method : str, optional
        "tt" for the tensor-train route (needs `torchtt`, separable propensities and no conservation
        law); any other value is passed to `sp_ode.stationary_distribution`.  Default: the sparse route
        by predicted cost, or the TT route on a box whose sparse solve would not fit in memory (`info`'s
        `route` says which and why).
    max_expansions : int
        Boxes tried at most

    Returns
    -------
    StationaryCME

    Raises
    ------
    TypeError, ValueError
        Bad arguments (named).
    NetworkError
        No Lyapunov certificate and no `bounds` (the message gives the reason); a conservation law
        without `initial`.
    MemoryBudgetError, NotIrreducibleError, ConvergenceError
        From the projection and its stationary solve.
    """
    if not isinstance(network, ReactionNetwork):
        raise TypeError(f"`network` must be a ReactionNetwork; got {type(network).__name__}.")
    tol = check_positive("tol", tol)
    max_expansions = check_positive_int("max_expansions", max_expansions)
    network.propensities(np.zeros((1, len(network.species)), dtype=np.int64), y)   # validates y (shape, finite)
    yv = np.atleast_1d(np.asarray(y, dtype=np.float64)) if network.slow else np.zeros(0)
    caps = _caps(network, initial)
    cert = find_lyapunov(network, yv, caps=caps, weights=weights, delta=_MASS_SHARE * tol)
    if bounds is None and not cert.found:
        raise NetworkError(f"no Lyapunov certificate for {network.name!r}: {cert.reason}. Without one the "
                           "stationary truncation cannot be bounded; pass `bounds=` for an answer whose truncation "
                           "is reported as not certified.")
    space_kw = {"initial": dict(initial)} if initial is not None else {}
    expansions = []
    r = cert.radius(_MASS_SHARE * tol) if cert.found else math.nan
    for _ in range(max_expansions if bounds is None else 1):
        box = dict(bounds) if bounds is not None else cert.box_for_radius(r)
        route = _route(network, box, method, yv)
        if route is not None:
            space = None
            p, la = tt_stationary(route["generator"], target=(1 - _MASS_SHARE) * tol / 2)
            la["route"] = {k: v for k, v in route.items() if k != "generator"}
            gen = route["generator"]
            log_peak, leaves = gen.log_flux_peak(cert.weights, cert.theta) if cert.found else (-math.inf, True)
            tr = truncation_bound(cert, gen.species, gen.bounds, None, log_peak,
                                  la["hitting_time"] if leaves else 0.0)
            la_bound, n_states, box_used = float(la["bound"]), gen.n, dict(zip(gen.species, gen.bounds.tolist()))
        else:
            space = network.state_space(box, **space_kw)
            Q = network.generator(space, yv if network.slow else None)
            p, la = stationary_distribution(Q, method=method, return_info=True)
            o = network.outflow(space, yv if network.slow else None)
            H = hitting_time(Q, p, la) if cert.found or not math.isfinite(la["bound"]) else math.inf
            tr = truncation_certificate(cert, space, o, H if np.any(o > 0) else 0.0)
            # GTH's a-priori bound c·n³·u is loose in ℓ1; the a-posteriori 2H‖Qᵀp‖₁ (§7.1) with the same H is
            # usually far smaller: the linear-algebra part is the smaller of the two (both are bounds)
            la["a_posteriori_bound"] = _posterior(Q, p, H)
            la_bound = min(float(la["bound"]), la["a_posteriori_bound"])
            n_states, box_used = space.n, {s: int(v) for s, v in zip(space.species, space.bounds)}
        total = la_bound + tr["bound"] if cert.found else math.inf
        expansions.append({"bounds": box_used, "n": n_states,
                           "linear_algebra": la_bound, "truncation": tr["bound"], "total": total})
        if total <= tol or bounds is not None:
            break
        # ε and Φ fall like e^{−θΔr} as the level set grows by Δr (H changes little): jump to the radius that
        # brings the truncation part to half of what `tol` leaves it, at least log 4/θ further
        room = max(tol - la_bound, 0.0) / 2.0
        need = math.log(tr["bound"] / room) if room > 0 and math.isfinite(tr["bound"]) else math.log(4.0)
        r = r + max(math.log(4.0), need) / cert.theta
    la_report = {"l1_bound": la_bound, **{k: la.get(k) for k in ("method", "requested_method", "algorithm", "bound", "bound_kind",
                                        "a_posteriori_bound",
                                        "componentwise_bound", "uncertified_below", "residual", "selection",
                                        "escalations", "route", "ranks", "hitting_time", "negative_mass",
                                        "operator_ranks", "hitting_time_ranks", "attempts", "hitting_time_attempts", "mode", "rank_cap",
                                        "rank_cap_reached") if k in la}}
    if la_report.get("selection"):
        la_report["selection"] = {k: v for k, v in la_report["selection"].items() if k != "plan"}
    if not cert.found:
        status, bound = "no_lyapunov", None
        message = (f"linear algebra on J certified (‖p − p_J‖₁ ≤ {la_bound:.3g}); the truncation is NOT bounded: "
                   f"{cert.reason}")
        tr["bound"] = None
    else:
        bound = float(la_bound + tr["bound"])
        status = "certified" if bound <= tol else "above_tol"
        message = (f"‖p − p_st‖₁ ≤ {bound:.3g} on the infinite lattice = linear algebra {la_bound:.3g} + truncation "
                   f"{tr['bound']:.3g} (mass outside J ≤ {tr['mass_outside']:.3g}, flux out of J ≤ "
                   f"{tr['boundary_flux']:.3g}, max hitting time {tr['hitting_time']:.3g})")
        if status == "above_tol":
            message += f"; above tol {tol:.3g}: " + ("enlarge `bounds`" if bounds is not None else
                                                     f"not met in {max_expansions} boxes")
    info = {"linear_algebra": la_report, "truncation": tr, "lyapunov": cert.as_dict(), "expansions": expansions,
            "tol": tol, "assumes": "the CME is irreducible on its conservation class (checked on J only)"}
    return StationaryCME(p, space, status, bound, message, info)

