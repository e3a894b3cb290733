"""The identity at scale of the network verdict (step 2 of `sp_ode.verification.network`; docs/theory.md §7.7).

[`network_identity`][sp_ode.verification.network_steps.network_identity] checks p_st(y) by independent
routes at a few y — the sparse stationary solver (a linear solve, with its error bound),
subtraction-free elimination (banded/dense GTH, a componentwise a-priori bound) and the attractor of
the frozen fast flow x' = Q(y)ᵀx (uniformised chain on sparse vectors, no solve) — each pair compared
within the sum of its certified bounds.  A reducible Q(y), a failed solve or an attractor that does not
settle is a FAIL or an *inconclusive* point with its reason, never a pass.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from sp_ode.markov.attractor import MARGIN, MAX_STEPS, attractor_distribution
from sp_ode.markov.generator import closed_classes, communicating_classes, format_classes
from sp_ode.markov.spectral import spectral_gap
from sp_ode.markov.stationary import DENSE_GTH_MAX, stationary_distribution
from sp_ode.systems.network import NetworkSystem
from sp_ode.systems.system import slow_symbol
from sp_ode.verification.identity import IDENTITY_TOL, IdentityMethod

if TYPE_CHECKING:
    from collections.abc import Callable

    from sp_ode.core.typing import ArrayLike, Float

__all__ = ["network_identity", "NetworkIdentity", "KINDS", "ATTRACTOR_TOL"]

ATTRACTOR_TOL = 1e-12        # stop when the starts agree and the last doubling moved nothing by more
ATTRACTOR_SAFETY = 4.0       # the attractor is run only when this × Λ·ln(1/tol)/γ fits in its step budget


def _extreme_starts(space, n: int, limit: int = 8) -> list[int]:
    """Vertices to start from: fewest and most molecules in total, and each species' min and max count."""
    states = np.asarray(space.states) if space is not None else None
    if states is None or states.shape[0] != n:
        return sorted({0, n - 1})
    picks = [int(np.argmin(states.sum(axis=1))), int(np.argmax(states.sum(axis=1)))]
    for s in range(states.shape[1]):
        picks += [int(np.argmax(states[:, s])), int(np.argmin(states[:, s]))]
    out = []
    for i in picks:
        if i not in out:
            out.append(i)
    return out[:limit]


# --- the identity at scale ------------------------------------------------------------------------------------

#: The kinds of the methods of :func:`network_identity` (docs/theory.md §7.7): two differ when their
#: failure modes do — a Krylov solve's error is its residual times ‖A^#‖, subtraction-free elimination's
#: is c·n³·u whatever the conditioning, the attractor's is its mixing.
KINDS = {"sparse": "iterative linear solve", "elimination": "subtraction-free elimination",
         "attractor": "attractor"}


@dataclass
class NetworkIdentity:
    """p_st(y) by independent routes at a few y (module docstring, docs/theory.md §7.7).

    Attributes
    ----------
    ys : ndarray (N, d)
    methods : list of IdentityMethod
        The sparse solver's answer ("iterative linear solve"),
        banded/dense GTH ("subtraction-free elimination") and the attractor ("attractor");
        `values` (N, n), NaN where not computed.
    points : list of dict
        Per y: `y`, `status`, `difference` / `tolerance` (the solver
        against the attractor), `elimination_difference` / `elimination_tolerance` /
        `elimination_kind` ("componentwise" or "l1") / `elimination_bound`, `solver`
        (algorithm used), `solver_bound`, `solver_componentwise_bound`, `attractor_status`
        ("ok", "FAIL" or "inconclusive": did not settle in the step budget), `attractor_radius`,
        `attractor_steps`, `tau`, `spectral_gap` (computed γ̂ of Q(y), an estimate),
        `reason`, `notes`.
    independent : bool
        At least one comparison between methods of different kinds was made.
    status : "ok", "FAIL" or "skipped"
    message : str
    max_error, tolerance : float
        The largest difference and the tolerance at that point.
    """

    ys: np.ndarray
    methods: list
    points: list
    independent: bool
    status: str
    message: str
    max_error: float
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> dict:
        return {"status": self.status, "message": self.message, "ys": self.ys, "independent": self.independent,
                "methods": [{"name": m.name, "kind": m.kind, "points": int(len(m.points)), "note": m.note}
                            for m in self.methods],
                "max_error": self.max_error, "tolerance": self.tolerance, "points": self.points}


def _elimination(Q) -> tuple[np.ndarray | None, dict]:
    """p_st by GTH (banded, else dense where it fits) with its componentwise bound, or (None, reason)."""
    tries = ["banded"] + (["gth"] if Q.shape[0] <= DENSE_GTH_MAX else [])
    reasons = []
    for m in tries:
        try:
            q, info = stationary_distribution(Q.toarray() if m == "gth" else Q, method=m, return_info=True, tol=1.0)
        except (ArithmeticError, ValueError, RuntimeError, MemoryError) as exc:
            reasons.append(f"{m}: {type(exc).__name__}: {str(exc)[:160]}")
            continue
        kappa = info.get("componentwise_bound")
        if info["method"] in ("banded", "gth") and kappa is not None and math.isfinite(kappa) and kappa < 0.5:
            return q, {"method": info["method"], "bound": float(kappa)}
        reasons.append(f"{m}: no componentwise promise ({info.get('failure') or 'bound ' + str(kappa)})")
    return None, {"reason": "; ".join(reasons) or "no elimination method fits"}


def _compare(q_s, info_s, q_g, kappa_g) -> tuple[float, float, str]:
    """(difference, tolerance, kind) of the sparse answer against GTH's, both with their certified bounds.

    Componentwise when the sparse answer is certified entrywise (κ_s): |p̂_s − p̂_g| ≤ (κ_s + κ_g)·p
    ≤ (κ_s + κ_g)·p̂_g/(1 − κ_g) for every entry, reported as the largest ratio of the two sides; else
    in ℓ1: ‖p̂_s − p̂_g‖₁ ≤ β_s + κ_g.
    """
    kappa_s = info_s.get("componentwise_bound")
    if kappa_s is not None and math.isfinite(kappa_s):
        scale = (kappa_s + kappa_g) / (1.0 - kappa_g) * (1 + 1e-12)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(q_g > 0, np.abs(q_s - q_g) / (scale * q_g), np.where(q_s == 0, 0.0, np.inf))
        worst = float(np.max(ratio))
        return worst * scale, scale, "componentwise"
    diff = float(np.abs(q_s - q_g).sum())
    return diff, float(info_s["bound"]) + kappa_g + IDENTITY_TOL, "l1"


def _gap(Q) -> float:
    try:
        return float(spectral_gap(Q))
    except (ArithmeticError, ValueError, RuntimeError, np.linalg.LinAlgError):
        return float("nan")


def network_identity(system: NetworkSystem, ys: Float[ArrayLike, "N d"],
                     *, p: Float[ArrayLike, "N n"] | Callable | None = None, tol: float = ATTRACTOR_TOL,
                     max_steps: int = MAX_STEPS, elimination: bool = True) -> NetworkIdentity:
    """Check p_st(y) by independent routes at each y (module docstring, docs/theory.md §7.7).

    Three methods: the sparse solver (AMG-GMRES; its answer refined and certified entrywise where
    it can be), subtraction-free elimination (banded GTH, dense where banded cannot keep its
    promise; componentwise a-priori bound) and the attractor of x' = Q(y)ᵀx (uniformised chain,
    no solve).  At each y every pair that could be computed is compared within the sum of its
    certified bounds.  A point passes when at least one comparison between different kinds was
    made and none failed; an attractor that does not settle within `max_steps` is
    *inconclusive* (a slowly mixing, metastable chain — reported with its spectral gap), not a
    failure, when the elimination comparison holds.

    Parameters
    ----------
    system : NetworkSystem
    ys : array_like (N, d)
    p : ndarray (N, n) or callable y -> (n,), optional
        A claimed p_st used *in place of* the solver's answer (a negative control); it carries no
        bound, so its tolerances are the other method's bound (+ 10⁻¹²).
    tol, max_steps
        See `sp_ode.markov.attractor.attractor_distribution` from a few starts.
    elimination : bool
        Include the subtraction-free elimination (default True).

    Returns
    -------
    NetworkIdentity
    """

    if not isinstance(system, NetworkSystem):
        raise TypeError(f"`system` must be a NetworkSystem; got {type(system).__name__}.")
    ys = np.asarray(ys, dtype=np.float64).reshape(-1, system.d)
    N, n = ys.shape[0], system.n
    starts = _extreme_starts(system.space, n)
    sol_vals = np.full((N, n), np.nan)
    gth_vals = np.full((N, n), np.nan)
    att_vals = np.full((N, n), np.nan)
    points, algorithms, escal = [], {}, []
    where = slow_symbol(system)   # `y` in the messages, named as the network names it
    gth_used, gth_missing = {}, []
    for i, y in enumerate(ys):
        rec = {"y": y.tolist(), "status": "FAIL", "difference": float("nan"), "tolerance": float("nan"),
               "elimination_difference": float("nan"), "elimination_tolerance": float("nan"),
               "elimination_kind": None, "elimination_bound": float("nan"), "solver": None,
               "solver_bound": float("nan"), "solver_componentwise_bound": None, "attractor_status": None,
               "attractor_radius": float("nan"), "attractor_steps": 0, "tau": float("nan"),
               "spectral_gap": float("nan"), "attractor_predicted_steps": float("nan"), "reason": "", "notes": [],
               "compared": []}
        points.append(rec)
        Q = sp.csr_array(system.Q(y), copy=True)
        Q.eliminate_zeros()
        classes = communicating_classes(Q)
        if len(classes) > 1:
            closed = closed_classes(Q)
            rec["reason"] = (f"Q(y) is reducible at {where} = {y.tolist()}: {len(classes)} communicating classes, "
                             f"{len(closed)} closed (sizes {[len(c) for c in closed][:4]}: "
                             f"{format_classes(closed, limit=3, states=system.network.state_labels(system.space))}); "
                             "p_st(y) is "
                             + ("not unique" if len(closed) > 1 else "not positive")
                             + " and the identity does not hold as stated")
            continue
        info = {"bound": 0.0, "componentwise_bound": None, "method": "claimed"}
        if p is None:
            try:
                q, info = stationary_distribution(Q, method="sparse", return_info=True)
            except (ArithmeticError, ValueError, RuntimeError, np.linalg.LinAlgError) as exc:
                rec["reason"] = f"the sparse solver failed at {where} = {y.tolist()}: {type(exc).__name__}: {exc}"
                continue
            rec["solver"] = str(info["method"])
            algorithms[rec["solver"]] = algorithms.get(rec["solver"], 0) + 1
            for e in info.get("escalations", []):
                escal.append(f"{e['method']}: {e['reason']}")
        else:
            q = np.asarray(p(y) if callable(p) else np.asarray(p)[i], dtype=np.float64).reshape(-1)
            if q.shape != (n,):
                raise ValueError(f"`p` must give shape (n,) = ({n},) per point; got {q.shape}.")
            rec["solver"] = "claimed"
        bound = float(info["bound"])
        rec["solver_bound"] = bound
        rec["solver_componentwise_bound"] = info.get("componentwise_bound")
        sol_vals[i] = q
        if not math.isfinite(bound):
            rec["reason"] = f"the solver's bound is not finite at {where} = {y.tolist()}: its answer certifies nothing"
            continue
        compared, failed = [], []
        # --- subtraction-free elimination ------------------------------------------------------------------
        if elimination:
            q_g, ginfo = _elimination(Q)
            if q_g is None:
                rec["notes"].append(f"elimination not available: {ginfo['reason']}")
                gth_missing.append(ginfo["reason"])
            else:
                gth_vals[i] = q_g
                gth_used[ginfo["method"]] = gth_used.get(ginfo["method"], 0) + 1
                diff, tol_g, kind = _compare(q, info, q_g, ginfo["bound"])
                rec.update(elimination_difference=diff, elimination_tolerance=tol_g, elimination_kind=kind,
                           elimination_bound=ginfo["bound"])
                same_kind = rec["solver"] in ("banded", "gth")      # the solver escalated to GTH itself
                if not same_kind:
                    compared.append("elimination")
                else:
                    rec["notes"].append("the sparse solver escalated to GTH: the elimination comparison is not "
                                        "independent and is not counted")
                if not diff <= tol_g:
                    failed.append(f"the solver's p_st and subtraction-free elimination differ by {diff:.2e} "
                                  f"({kind}; tolerance {tol_g:.1e}) at {where} = {y.tolist()}")
        # --- the attractor ---------------------------------------------------------------------------------------
        # Its steps are set by the spectral gap: about Λ·ln(1/tol)/γ uniformised steps to settle.  Where that
        # exceeds the budget the attractor cannot settle and is not run (a metastable chain), said so.
        rec["spectral_gap"] = _gap(Q)
        lam = MARGIN * float(np.max(-Q.diagonal()))
        predicted = lam * math.log(1.0 / tol) / rec["spectral_gap"] if rec["spectral_gap"] > 0 else math.inf
        rec["attractor_predicted_steps"] = predicted
        # measured: the search settles after 2–6× this estimate (telegraph, cascade, birth–death, Michaelis–
        # Menten: 4096 steps for ≈ 1900 predicted; checkpoints are powers of two), hence the factor 4
        if ATTRACTOR_SAFETY * predicted > max_steps:
            rec["attractor_status"] = "inconclusive"
            rec["notes"].append(
                f"the attractor was not run: the spectral gap γ ≈ {rec['spectral_gap']:.3g} (relaxation time "
                f"≈ {1.0 / rec['spectral_gap'] if rec['spectral_gap'] > 0 else math.inf:.3g}) predicts ≈ {predicted:.2g} "
                f"uniformised steps to settle to {tol:g}, more than 4 × the budget {max_steps}: a slowly mixing, "
                "budget-limited chain: metastable sets, or a budget too small")
        else:
            att = attractor_distribution(Q, starts, tol=tol, max_steps=max_steps)
            rec.update(attractor_radius=att.radius, attractor_steps=att.steps, tau=att.tau)
            if att.converged:
                att_vals[i] = att.p
                diff = float(np.max(np.abs(q - att.p)))
                tolerance = bound + att.radius + IDENTITY_TOL
                rec.update(difference=diff, tolerance=tolerance)
                compared.append("attractor")
                rec["attractor_status"] = "ok" if diff <= tolerance else "FAIL"
                if diff > tolerance:
                    failed.append(f"the solver's p_st and the attractor differ by {diff:.2e} (tolerance "
                                  f"{tolerance:.1e}) at {where} = {y.tolist()}")
            else:
                rec["attractor_status"] = "inconclusive"
                rec["notes"].append(
                    f"the attractor did not settle: after {att.steps} uniformised steps (τ = {att.tau:.3g}) the "
                    f"{att.starts} starts still differ by {att.spread:.1e} and the last doubling moved it by "
                    f"{att.change:.1e}; computed spectral gap γ ≈ {rec['spectral_gap']:.3g}: a slowly mixing chain")
        rec["compared"] = compared
        if failed:
            rec["reason"] = failed[0]
        elif not compared:
            rec["reason"] = (f"no independent comparison at {where} = {y.tolist()}: "
                             + "; ".join(rec["notes"] or ["nothing to compare"]))
        else:
            rec["status"], rec["reason"] = "ok", ""
    every = np.arange(N)
    if p is None:
        used = ", ".join(f"{k} at {v} y" for k, v in algorithms.items()) or "none"
        cw = [r["solver_componentwise_bound"] for r in points if r["solver_componentwise_bound"] is not None]
        solver = IdentityMethod("p_st by the sparse solver (stationary_distribution, method='sparse')",
                                KINDS["sparse"], sol_vals, every[np.all(np.isfinite(sol_vals), axis=1)],
                                f"AMG-GMRES on the pinned system; algorithm used: {used}; ℓ1 bound ≤ "
                                f"{max((r['solver_bound'] for r in points if r['solver']), default=float('nan')):.1e}"
                                + (f", entrywise ≤ {max(cw):.1e} (log-space refinement, §7.9)" if cw else "")
                                + (f"; escalations: {escal[0]}" if escal else ""))
    else:
        solver = IdentityMethod("the claimed p_st (passed in place of the solver's answer)", "closed form",
                                sol_vals, every, "carries no bound")
    methods = [solver]
    if elimination:
        gb = [r["elimination_bound"] for r in points if math.isfinite(r["elimination_bound"])]
        methods.append(IdentityMethod(
            "p_st by subtraction-free elimination (banded GTH after reverse Cuthill–McKee; dense GTH where banded "
            "cannot keep its promise)", KINDS["elimination"], gth_vals,
            every[np.all(np.isfinite(gth_vals), axis=1)],
            (f"{', '.join(f'{k} at {v} y' for k, v in gth_used.items())}; a-priori entrywise bound "
             f"c·n³·u ≤ {max(gb):.1e}, whatever the conditioning (§7.2)") if gb else
            f"not available: {gth_missing[0] if gth_missing else 'not run'}"))
    att_steps = max((r["attractor_steps"] for r in points), default=0)
    inconclusive = sum(r["attractor_status"] == "inconclusive" for r in points)
    attractor = IdentityMethod(
        "attractor of the frozen fast flow x' = Q(y)ᵀx (uniformised chain on sparse vectors)", KINDS["attractor"],
        att_vals, every[np.all(np.isfinite(att_vals), axis=1)],
        f"no linear solve: P = I + Q/Λ applied to {1 + len(starts)} starts (uniform + extreme states), "
        f"≤ {att_steps} steps; radius = spread of the starts + last change + rounding"
        + (f"; did not settle at {inconclusive} of {N} y (slow mixing)" if inconclusive else ""))
    methods.append(attractor)
    independent = any(r.get("compared") for r in points)   # a comparison between different kinds was made
    failed = [r for r in points if r["status"] != "ok"]
    finite = [r for r in points if math.isfinite(r["difference"]) or math.isfinite(r["elimination_difference"])]

    def worst_of(r):
        pairs = [(r["difference"], r["tolerance"]), (r["elimination_difference"], r["elimination_tolerance"])]
        pairs = [(d, t) for d, t in pairs if math.isfinite(d)]
        return max(pairs, key=lambda dt: dt[0] / dt[1] if dt[1] > 0 else math.inf)

    largest = max(finite, key=lambda r: (lambda d, t: d / t if t > 0 else math.inf)(*worst_of(r)), default=None)
    max_error, tolerance = worst_of(largest) if largest is not None else (float("nan"), float("nan"))
    if failed:
        status, message = "FAIL", f"identity: {failed[0]['reason']}" + (
            f" (and {len(failed) - 1} more point(s))" if len(failed) > 1 else "")
    elif not independent or not N:
        status, message = "skipped", "no two methods that solve different problems could be compared"
    else:
        parts = []
        if any(math.isfinite(r["elimination_difference"]) for r in points):
            worst_g = max((r["elimination_difference"] / r["elimination_tolerance"] for r in points
                           if math.isfinite(r["elimination_difference"])), default=float("nan"))
            parts.append(f"{solver.name} vs subtraction-free elimination: within {worst_g:.2g} of the certified "
                         "tolerance at every y")
        if any(math.isfinite(r["difference"]) for r in points):
            parts.append(f"vs the attractor: max difference "
                         f"{max(r['difference'] for r in points if math.isfinite(r['difference'])):.1e}")
        if inconclusive:
            gaps = [r["spectral_gap"] for r in points if math.isfinite(r["spectral_gap"])]
            parts.append(f"the attractor did not settle at {inconclusive} of {N} y: the chain mixes slowly "
                         + (f"(spectral gap γ ≈ {min(gaps):.2g})" if gaps else "")
                         + " — inconclusive, not counted")
        status, message = "ok", "; ".join(parts) + f" ({N} y)"
    return NetworkIdentity(ys, methods, points, independent, status, message, max_error, tolerance)
