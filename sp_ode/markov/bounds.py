"""Error bounds for computed stationary distributions (docs/theory.md §7.1, §7.2).

Two kinds of bound, one per kind of method:

* **A-posteriori, normwise (§7.1)** — for any q with 1ᵀq = 1,
  ‖q − p_st‖₁ ≤ ‖A^#‖₁ ‖Qᵀq‖₁.  The norm of the group inverse on 1^⊥ is bounded
  through a *pinned* system.  Pin a state k and let G = −Q with row and column
  k deleted: G is a nonsingular M-matrix (irreducibility), G⁻¹ ≥ 0, and
  y = G⁻¹1 is the vector of mean hitting times of k, y_i = E_i[τ_k].  Writing
  w = q − p_st, the rows j ≠ k of −Qᵀw = −Qᵀq give w_{−k} = z + w_k x with
  z = G⁻ᵀ(−Qᵀq)_{−k}, x = p_{−k}/p_k ≥ 0, and 1ᵀw = 0 gives
  w_k = −1ᵀz / (1 + 1ᵀx); hence ‖w‖₁ ≤ ‖z‖₁ + |1ᵀz| ≤ 2‖z‖₁ and

      ‖q − p_st‖₁ ≤ 2 · max_i E_i[τ_k] · ‖Qᵀq‖₁            (‖G⁻ᵀ‖₁ = ‖G⁻¹1‖∞).

  Because G⁻¹ ≥ 0 the 1-norm needs no estimator (Hager–Higham estimates can
  fall below the true norm): *one* solve G ŷ = 1 gives it, and the solve is
  itself certified by its residual, one-sidedly: Gŷ ≥ m·1 with m > 0 gives
  ŷ = G⁻¹Gŷ ≥ m·y, so ‖y‖∞ ≤ ‖ŷ‖∞ / m (m = 1 − max_i (1 − Gŷ)_i ≥ 1 − ‖1 − Gŷ‖∞:
  an overshoot of Gŷ costs nothing).  Rounding is accounted
  for: the residuals are computed in floating point, so γ_m-multiples of
  |Q||q| and |G||ŷ| (m the most nonzeros in a row or column, plus two for the
  rounded diagonal) are added, and |1ᵀq − 1| is added for the normalisation.
  The bound is rigorous up to the rounding in those few extra sums.
* **A-priori, componentwise (§7.2)** — for GTH, |p̂_i − p_i| ≤ c·n³·u·p_i
  (`sp_ode.markov.solvers._gth.gth_componentwise_bound`), hence also in ℓ1.
* **Rounding of the rates as given (§7.12)** — `input_rounding_bound`: rates
  known only to relative δ (a float32 Q: δ = 2⁻²⁴) move p_st by at most the factor
  ((1 + δ)/(1 − δ))^(n−1) − 1 in every entry, by the Markov chain tree theorem.

[`ConvergenceError`][sp_ode.markov.bounds.ConvergenceError] is raised by [`sp_ode.stationary_distribution`][sp_ode.markov.stationary.stationary_distribution]
when no method reaches the requested tolerance.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from sp_ode.core.errors import Error
from sp_ode.core.precision import UNIT_ROUNDOFF

__all__ = ["ConvergenceError", "residual_l1_bound", "hitting_time_bound", "posterior_bound", "input_rounding_bound",
           "componentwise_refinement", "componentwise_certificate", "RELIABLE_FACTOR"]

_U_LD = float(np.finfo(np.longdouble).eps) / 2


class ConvergenceError(Error, RuntimeError):
    """No method reached the requested accuracy; `bound`, `tol` and `info` say how far it got."""

    def __init__(self, message: str, *, bound: float = math.inf, tol: float = math.nan, info: dict | None = None):
        super().__init__(message)
        self.bound = bound
        self.tol = tol
        self.info = info or {}


def _gamma(m: int, u: float = UNIT_ROUNDOFF) -> float:
    mu = m * u
    return mu / (1.0 - mu) if mu < 0.5 else math.inf


def _terms_per_column(Q) -> int:
    if sp.issparse(Q):  # terms in a column (the matrix–vector sums) or a row (the rounded diagonal)
        return int(max(np.diff(sp.csc_array(Q).indptr).max(initial=0),
                       np.diff(sp.csr_array(Q).indptr).max(initial=0))) + 2
    return Q.shape[0] + 2


def residual_l1_bound(Q, q: np.ndarray) -> float:
    """An upper bound on ‖Qᵀq‖₁ for the exact Q (float off-diagonal rates, exact diagonal −Σ_j Q_ij) and q ≥ 0.

    Sparse Q: evaluated in extended precision (`np.longdouble`, unit roundoff
    u_ld = 2⁻⁶⁴ on x86-64; equal to u where the platform has no extended type):
    with R the off-diagonal rates, r = Rᵀq − (R1)∘q, and both nonnegative sums
    carry the rounding γ_m(u_ld) of m-term sums of products — so the floor of the
    bound is the residual of q itself (rounded to float64), not the arithmetic
    used to measure it.  Dense Q: float64 (one BLAS product), ‖fl(Qᵀq)‖₁ plus
    2γ_{n+2}‖|Q|ᵀq‖₁ for the product's rounding and the stored diagonal's.
    """
    n = Q.shape[0]
    if not sp.issparse(Q):
        # Dense: float64 and one BLAS product; |Q|ᵀq = Qᵀq − 2 diag(Q)∘q (off-diagonal rates ≥ 0).
        q = np.asarray(q, dtype=np.float64)
        r = Q.T @ q
        absr = np.abs(r - 2.0 * np.diagonal(Q) * q)
        g = _gamma(n + 2)
        return float(np.abs(r).sum() * (1 + n * UNIT_ROUNDOFF) + 2 * g * absr.sum() * (1 + n * UNIT_ROUNDOFF)) * (1 + 4 * UNIT_ROUNDOFF)
    C = sp.coo_array(Q)
    off = C.row != C.col
    R = sp.csr_array((C.data[off].astype(np.longdouble), (C.row[off], C.col[off])), shape=(n, n))
    ql = np.asarray(q, dtype=np.longdouble)
    inflow = np.asarray(R.T @ ql).ravel()
    out = np.asarray(R @ np.ones(n, dtype=np.longdouble)).ravel() * ql
    g = _gamma(_terms_per_column(Q), _U_LD)
    r = np.abs(inflow - out).sum() * (1 + n * _U_LD) + g * (inflow.sum() + out.sum()) * (1 + n * _U_LD)
    return float(r) * (1 + 4 * UNIT_ROUNDOFF)


def hitting_time_bound(Q, k: int, y_hat: np.ndarray) -> float:
    """Certified upper bound on max_i E_i[τ_k] = ‖G⁻¹‖∞ from a candidate ŷ ≈ G⁻¹1 (module docstring).

    `y_hat` has length n − 1 (state k removed).  Returns inf when ŷ is not
    finite, has a negative entry, or some entry of Gŷ is not certified > 0.
    """
    y_hat = np.asarray(y_hat, dtype=np.float64).ravel()
    n = Q.shape[0]
    if n == 1:
        return 0.0
    if not np.all(np.isfinite(y_hat)) or y_hat.min() < 0:
        return math.inf
    # With y the full vector (y_k = 0): Gŷ = −(Qy)_{−k} and, as G has a positive diagonal and
    # nonpositive off-diagonal entries, |G|ŷ = (Qy − 2 diag(Q)∘y)_{−k}: one product with Q, no slicing.
    y = np.insert(y_hat, k, 0.0)
    Qy = np.asarray(Q @ y).ravel()
    d = np.asarray(Q.diagonal()).ravel()
    Gy = np.delete(-Qy, k)
    aGy = np.delete(Qy - 2.0 * d * y, k)
    # one-sided (module docstring): m ≤ min_i (Gŷ)_i, the computed entries less their rounding bound
    low = Gy - 2 * _gamma(_terms_per_column(Q)) * (np.abs(aGy) + 1.0)
    m = float(low.min()) * (1 - 4 * UNIT_ROUNDOFF) if low.size else 1.0
    if not m > 0.0:
        return math.inf
    return float(y_hat.max()) / m * (1 + 4 * UNIT_ROUNDOFF)


def posterior_bound(Q, q: np.ndarray, k: int, y_hat: np.ndarray) -> tuple[float, float]:
    """(‖q − p_st‖₁ bound, certified max hitting time H) for a computed distribution q ≥ 0 (§7.1 via hitting times)."""
    q = np.asarray(q, dtype=np.float64)
    if not np.all(np.isfinite(q)) or q.min() < 0:
        return math.inf, math.inf
    H = hitting_time_bound(Q, k, y_hat)
    if math.isinf(H):
        return math.inf, H
    # ‖q − p‖₁ ≤ ‖q − q/Σq‖₁ + ‖q/Σq − p‖₁ = |Σq − 1| + 2H‖Qᵀq‖₁/Σq  (fsum: Σq to within u).
    total = math.fsum(q)
    if not total > 0:
        return math.inf, H
    eta = abs(total - 1.0) + 2 * UNIT_ROUNDOFF * total
    bound = 2.0 * H * residual_l1_bound(Q, q) / total * (1 + 8 * UNIT_ROUNDOFF) + eta
    return float(bound), H


def input_rounding_bound(n: int, delta: float) -> float:
    """Componentwise relative change of p_st when every rate moves by a relative δ at most (docs/theory.md §7.12).

    By the Markov chain tree theorem p_i = w_i / Σ_r w_r, each w_r a sum of products of
    n − 1 rates with positive coefficients; rates within a factor (1 ± δ) of the true ones
    move every w_r by a factor in [(1 − δ)^(n−1), (1 + δ)^(n−1)], hence every p_i by a factor
    in [((1 − δ)/(1 + δ))^(n−1), ((1 + δ)/(1 − δ))^(n−1)].  Returns that factor minus 1 (also
    a bound on the ℓ1 change, since Σ p_i = 1); 0 for δ = 0 or n = 1.  The diagonal is not an
    independent datum: it is minus the row's rates.
    """
    if delta <= 0 or n <= 1:
        return 0.0
    if delta >= 1:
        return math.inf
    return math.expm1((n - 1) * (math.log1p(delta) - math.log1p(-delta)))
# ---------------------------------------------------------------------------------------------
# Componentwise certificate of a sparse answer (docs/theory.md §7.9)

#: Entries of a normwise answer at or above this multiple of its ℓ1 bound are within relative 1e-3:
#: they seed the refinement; the states below are re-estimated from them (stage A).
RELIABLE_FACTOR = 1e3
_NEWTON_STEPS = 8            # stage B: exact relative corrections, at most
_GMRES_RESTART = 50
_GMRES_MAXITER = 300         # the jump-count solve of stage C
_STEP_RTOL = 1e-10           # one correction of stage B: GMRES to this relative residual …
_STEP_MAXITER = 100          # … or this many steps, whichever first
_PRECONDITIONERS = ("air", "rs")
_PHI_TOL = 0.1               # stage C: ‖1 − Sφ̂‖ target (ω ≥ 0.9 where the solve met it)


def _in_edges(Q, n: int):
    """(target i, source j, R_ji / q_i, terms per row) over the positive off-diagonal rates of Q."""
    C = sp.coo_array(Q)
    off = (C.row != C.col) & (C.data > 0)
    src, dst, rate = C.row[off].astype(np.int64), C.col[off].astype(np.int64), C.data[off].astype(np.float64)
    q = np.bincount(src, weights=rate, minlength=n)                 # exit rates, sums of nonnegative terms
    m = int(max(np.bincount(src, minlength=n).max(initial=0), np.bincount(dst, minlength=n).max(initial=0)))
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # checked by the caller
        return dst, src, rate / q[dst], m


def _max_plus(ti, tj, w, lx, U) -> np.ndarray:
    """Stage A, first estimate: lx_i = max_j (lx_j + log(R_ji/q_i)) over in-neighbours, from the reliable states.

    A Bellman–Ford pass in the (max, +) semiring: it keeps neighbouring ratios within the in-degree
    (ρ_i ∈ [1, in-degree]) but undercounts paths, so it can be off by e^100 across a 2-D grid.
    """
    n = lx.size
    lx = np.where(U, -np.inf, lx)
    lw = np.log(w)
    for _ in range(n):
        cand = np.full(n, -np.inf)
        np.maximum.at(cand, ti, lw + lx[tj])
        new = np.where(U, np.maximum(lx, cand), lx)
        if np.array_equal(new, lx):
            break
        lx = new
    return lx


def _balance_estimate(Q, lx, U) -> np.ndarray | None:
    """Stage A, second estimate: lx_i = lx_j + log(R_ji/R_ij) across edges that have a reverse edge.

    Exact for reversible chains (detailed balance, whatever the path), so a 1-D chain's tail comes out
    right where max-plus loses a constant factor per step; propagated outwards from the reliable
    states, the largest candidate kept.  None when some state has no such edge to a known state.
    """
    n = lx.size
    C = sp.coo_array(Q)
    off = (C.row != C.col) & (C.data > 0)
    src, dst, rate = C.row[off].astype(np.int64), C.col[off].astype(np.int64), C.data[off].astype(np.float64)
    R = sp.csr_array((rate, (src, dst)), shape=(n, n))
    rev = np.asarray(R[dst, src]).ravel()
    two_way = rev > 0
    es, ed, step = src[two_way], dst[two_way], np.log(rate[two_way]) - np.log(rev[two_way])
    lx = np.where(U, -np.inf, lx)
    known = ~U
    while True:
        front = known[es] & ~known[ed]
        if not front.any():
            break
        cand = np.full(n, -np.inf)
        np.maximum.at(cand, ed[front], lx[es[front]] + step[front])
        new = ~known & np.isfinite(cand)
        lx[new] = cand[new]
        known |= new
    return lx if known.all() else None


def _ratios(ti, tj, w, lx, n):
    """ρ_i = Σ_j (R_ji/q_i)·x̂_j/x̂_i (inflow over outflow at x̂ = exp(lx)), the terms, and max |lx_j − lx_i| per i."""
    d = lx[tj] - lx[ti]
    val = w * np.exp(d)
    rho = np.bincount(ti, weights=val, minlength=n)
    dmax = np.zeros(n)
    np.maximum.at(dmax, ti, np.abs(d))
    return rho, val, dmax


def componentwise_refinement(Q, p: np.ndarray, k: int, normwise_bound: float, *,
                             budget_seconds: float | None = None) -> tuple[np.ndarray, np.ndarray, dict]:
    """Refine a normwise answer in log space and certify every entry (docs/theory.md §7.9).

    With the pinned state k (x = p/p_k, x_k = 1) and x̂ = exp(lx) > 0, the relative error
    ν = x/x̂ − 1 solves *exactly*

        S ν = ε,   S = (D X̂)⁻¹ A_k X̂ = I − P*,   P*_ij = R_ji x̂_j / (q_i x̂_i),   ε_i = ρ_i − 1,

    where ρ_i is inflow over outflow at x̂ (a ratio of nonnegative sums, computed without
    subtraction) and A_k = D − N the pinned M-matrix (D the exit rates q).  S is well scaled
    once neighbouring ratios x̂_j/x̂_i are roughly right — whatever the size of x̂ — so a
    normwise-accurate solve of it is componentwise accurate in x.

    A. Entries of `p` below `RELIABLE_FACTOR`·`normwise_bound` carry no relative accuracy:
       they are re-estimated from the others — by a max-plus (Bellman–Ford) pass in log space,
       and by detailed balance across two-way edges (exact for reversible chains).
    B. Exact relative corrections lx ← lx + log(1 + ν̂), ν̂ from GMRES on S (AIR on S, else
       classical AMG on S with its rows scaled to diagonal dominance, as preconditioner), until
       max|ε| stops falling — from the seed with the smaller max|ε| first, from the other one
       when that stagnates above 1e-10.
    C. The certificate: φ̂ ≈ S⁻¹1 (the expected number of jumps of the time-reversed chain
       before it hits k), ω = Sφ̂ and δ = max_i |ε_i|/ω_i, each with its rounding.  If ω > 0
       then x̂∘(1 ∓ δφ̂) are a sub- and a supersolution of A_k x = b, and as A_k⁻¹ ≥ 0,
       |x_i − x̂_i| ≤ δφ̂_i x̂_i for every i; normalising gives the relative bound on p.

    Parameters
    ----------
    Q
        Scipy.sparse (n, n), validated irreducible generator
    p : ndarray (n,)
        The normwise answer (its ℓ1 bound `normwise_bound`)
    k : int
        The pinned state (a state of large probability)
    budget_seconds : float, optional
        Abandon the refinement (`failure` says so) once it has run this long.

    pyamg's C++ core prints setup breakdowns to file descriptor 1: callers that need a clean
    stdout run this under `sp_ode.markov.solvers._sparse.quiet_stdout` (as `stationary_distribution` does).

    Returns
    -------
    p, logp : ndarray (n,)
        The refined answer and its logarithm (entries below 1e-308 live in logp)
    info : dict
        `componentwise_bound` (max relative error bound over all entries; inf when
        not certified), `certified` (bool), `failure` (why not), `delta`, `phi_max`,
        `relative_residual` (max|ε| after B), `history` (max|ε| per correction, seeds in turn),
        `seed` (the stage-A estimate used), `newton_steps`, `gmres_steps`, `reestimated`
        (states of stage A), `seconds`.
    """
    import time

    import scipy.sparse.linalg as spla

    t0 = time.perf_counter()
    p = np.asarray(p, dtype=np.float64)
    n = p.shape[0]
    info = {"componentwise_bound": math.inf, "certified": False, "failure": None, "delta": math.nan,
            "phi_max": math.nan, "relative_residual": math.nan, "history": [], "newton_steps": 0,
            "gmres_steps": 0, "reestimated": 0, "pinned_state": int(k), "seconds": 0.0}
    if n == 1:
        info.update(componentwise_bound=0.0, certified=True)
        return p.copy(), np.zeros(1), info
    if not (math.isfinite(normwise_bound) and p[k] > 0):
        info["failure"] = "no finite normwise bound (or p_k = 0) to seed the refinement from"
        return p, _log(p), info
    ti, tj, w, m = _in_edges(Q, n)
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        info["failure"] = "a jump probability R_ij/q_i is not a positive normal number (rates span the float range)"
        return p, _log(p), info
    with np.errstate(divide="ignore"):
        lx = np.log(np.maximum(p, 0.0)) - math.log(p[k])
    # --- A: re-estimate the states the normwise bound does not cover ---------------------------------------
    reliable = p >= RELIABLE_FACTOR * normwise_bound
    reliable[k] = True
    U = ~reliable
    info["reestimated"] = int(U.sum())
    seeds = {"max-plus": _max_plus(ti, tj, w, lx, U), "detailed balance": _balance_estimate(Q, lx, U)}
    worst_of = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for key, cand in seeds.items():
            if cand is not None and np.all(np.isfinite(cand)):
                rho, _, _ = _ratios(ti, tj, w, cand, n)
                worst_of[key] = float(np.max(np.abs(rho[U] - 1.0))) if U.any() else 0.0
    if not worst_of:
        info["failure"] = "some states are not reached from the reliable ones (is Q irreducible?)"
        return p, _log(p), info
    order = sorted(worst_of, key=worst_of.get)              # the seed whose relative residual is smaller first
    # --- B: exact relative corrections ---------------------------------------------------------------------
    keep = np.ones(n, dtype=bool)
    keep[k] = False
    idx = np.cumsum(keep) - 1
    inner = keep[ti] & keep[tj]
    rows, cols = idx[ti[inner]], idx[tj[inner]]
    steps = [0]

    def count(_):
        steps[0] += 1

    def system(lx):
        rho, val, dmax = _ratios(ti, tj, w, lx, n)
        S = sp.csr_array((-val[inner], (rows, cols)), shape=(n - 1, n - 1)) + sp.eye_array(n - 1, format="csr")
        return rho, val, dmax, S

    floor = 16 * UNIT_ROUNDOFF * (m + 4)
    state = {"over_budget": False}

    def corrections(lx):
        """Stage B from one seed: (best max|ε|, its lx, the last preconditioner); ε per step in info["history"]."""
        best, precond, kinds = None, None, list(_PRECONDITIONERS)
        history: list[float] = []
        for step in range(_NEWTON_STEPS + 1):
            rho, val, dmax, S = system(lx)
            eps = (rho - 1.0)[keep]
            worst = float(np.max(np.abs(eps))) if np.all(np.isfinite(eps)) else math.inf
            history.append(worst)
            info["history"].append(worst)
            if best is None or worst < best[0]:
                best = (worst, lx.copy())
            elif len(kinds) > 1:
                # the step made things worse: the preconditioner failed on this S; the next one from the best
                kinds.pop(0)
                lx = best[1].copy()
                rho, val, dmax, S = system(lx)
                eps = (rho - 1.0)[keep]
                worst = best[0]
            else:
                break
            if worst <= floor or step == _NEWTON_STEPS:
                break
            if budget_seconds is not None and time.perf_counter() - t0 > budget_seconds:
                state["over_budget"] = True
                break
            if len(history) >= 3 and worst > 0.5 * min(history[:-1]):
                break          # stagnation
            # S changes with every correction: a fresh hierarchy each time (a stale one diverged)
            precond = _preconditioner(S, kinds)
            info["preconditioner"] = kinds[0]
            # The 2-norm residual is no stopping rule here: ν may span 10⁵⁰ (a max-plus estimate off by
            # e¹¹⁷ in a grid corner) while the new ε_i = (ε − Sν̂)_i / (1 + ν̂_i) is what counts; so a
            # fixed effort per step, and ε is measured afresh.
            nu, _ = spla.gmres(S, eps, rtol=_STEP_RTOL, atol=0.0, restart=_GMRES_RESTART, maxiter=_STEP_MAXITER,
                               M=precond, callback=count, callback_type="legacy")
            if not np.all(np.isfinite(nu)):
                nu = np.zeros_like(nu)
            lx[keep] += np.log1p(np.maximum(nu, -1.0 + 2.0**-10))
            info["newton_steps"] += 1
        return best[0], best[1], precond

    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            best = None
            for seed in order:
                # a seed whose corrections stagnate above 1e-10 gives way to the other one (within the budget)
                worst, lx, precond = corrections(seeds[seed].copy())
                if best is None or worst < best[0]:
                    best, info["seed"] = (worst, lx, precond), seed
                if worst <= 1e-10 or state["over_budget"]:
                    break
            worst, lx, precond = best
            rho, val, dmax, S = system(lx)
            eps = (rho - 1.0)[keep]
            info["relative_residual"] = worst
            if budget_seconds is not None and time.perf_counter() - t0 > budget_seconds:
                state["over_budget"] = True
            # --- C: the certificate ------------------------------------------------------------------------
            abandon = state["over_budget"] and worst > 1e-10
            phi = np.full(n - 1, np.nan)
            if not abandon:
                if precond is None:
                    precond = _preconditioner(S, list(_PRECONDITIONERS))
                phi, _ = spla.gmres(S, np.ones(n - 1), rtol=_PHI_TOL / math.sqrt(n - 1), atol=0.0,
                                    restart=_GMRES_RESTART, maxiter=_GMRES_MAXITER, M=precond, callback=count,
                                    callback_type="legacy")
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError) as exc:
        info.update(failure=f"the refinement's AMG/GMRES solve failed ({type(exc).__name__}: {exc})",
                    gmres_steps=steps[0], seconds=time.perf_counter() - t0)
        return p, _log(p), info
    info["gmres_steps"] = steps[0]
    if abandon:
        info.update(failure=f"abandoned after {time.perf_counter() - t0:.2g} s (its budget {budget_seconds:.2g} s) "
                            f"with relative residual {worst:.1e}", seconds=time.perf_counter() - t0)
        return p, _log(p), info
    with np.errstate(all="ignore"):
        cert = _certify(S, eps, rho[keep], dmax[keep], phi, lx, keep, m)
    info.update(cert, seconds=time.perf_counter() - t0)
    if not info["certified"]:   # an uncertified refinement is not returned: the normwise answer stands
        return p, _log(p), info
    logp = _normalised_log(lx)
    return np.exp(logp), logp, info


def componentwise_certificate(Q, logp: np.ndarray, k: int) -> dict:
    """Stage C of `componentwise_refinement` alone: certify a given positive vector entrywise (§7.9).

    `logp` (n,) is log of a candidate p_st (any normalisation; entries must be finite); `k` the
    pinned state.  Returns `componentwise_bound` (max_i |p̂_i − p_i| / p̂_i; inf when not
    certified), `certified`, `failure`, `delta`, `phi_max`.  A wrong candidate gets a bound
    that covers its error, or none: this is the check of the refinement, usable on any answer.
    """
    import scipy.sparse.linalg as spla

    lx = np.asarray(logp, dtype=np.float64) - float(logp[k])
    n = lx.shape[0]
    if not np.all(np.isfinite(lx)):
        return {"componentwise_bound": math.inf, "certified": False, "failure": "an entry is 0 or not finite"}
    ti, tj, w, m = _in_edges(Q, n)
    keep = np.ones(n, dtype=bool)
    keep[k] = False
    idx = np.cumsum(keep) - 1
    inner = keep[ti] & keep[tj]
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        rho, val, dmax = _ratios(ti, tj, w, lx, n)
        S = sp.csr_array((-val[inner], (idx[ti[inner]], idx[tj[inner]])), shape=(n - 1, n - 1)) \
            + sp.eye_array(n - 1, format="csr")
        eps = (rho - 1.0)[keep]
        try:
            precond = _preconditioner(S, list(_PRECONDITIONERS))
            phi, _ = spla.gmres(S, np.ones(n - 1), rtol=_PHI_TOL / math.sqrt(n - 1), atol=0.0, restart=_GMRES_RESTART,
                                maxiter=_GMRES_MAXITER, M=precond, callback_type="legacy")
        except (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError) as exc:
            return {"componentwise_bound": math.inf, "certified": False,
                    "failure": f"the jump-count solve failed ({type(exc).__name__}: {exc})"}
    with np.errstate(all="ignore"):
        out = _certify(S, eps, rho[keep], dmax[keep], phi, lx, keep, m)
    out.setdefault("componentwise_bound", math.inf)
    out.setdefault("certified", False)
    return out


def _preconditioner(S, kinds: list[str]):
    """AIR on S (first choice: it resolved a 10⁵¹-wide ν in one step on the cascade CME, where classical
    AMG did not), else classical AMG on S with its rows scaled to diagonal dominance (S itself may lack
    it where x̂ is rough); a setup that breaks down moves on to the next kind."""
    import pyamg

    from sp_ode.markov._air import AIR_OPTIONS

    while kinds:
        try:
            if kinds[0] == "air":
                return pyamg.air_solver(sp.csr_matrix(S), **AIR_OPTIONS).aspreconditioner(cycle="V")
            I = sp.eye_array(S.shape[0], format="csr")
            off = S - I
            offsum = np.asarray(-off.sum(axis=1)).ravel()
            Sd = sp.diags_array(1.0 / np.maximum(1.0, offsum * (1.0 + 1e-3))) @ off + I
            return pyamg.ruge_stuben_solver(sp.csr_matrix(Sd)).aspreconditioner(cycle="V")
        except (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError):
            kinds.pop(0)
    raise RuntimeError("no multigrid setup succeeded on the scaled pinned matrix")


def _log(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.maximum(p, 0.0))


def _normalised_log(lx: np.ndarray) -> np.ndarray:
    top = float(lx.max())
    return lx - (top + math.log(float(np.exp(lx - top).sum())))


def _certify(S, eps, rho, dmax, phi, lx, keep, m) -> dict:
    """δ, the bracket x̂∘(1 ± δφ̂) and the relative bound on p, every quantity with its rounding (§7.9)."""
    u = UNIT_ROUNDOFF
    if not np.all(np.isfinite(phi)):
        return {"failure": "the hitting-jump solve S φ = 1 did not return a finite φ"}
    phi = np.maximum(phi, 0.0)
    g = _gamma(m + 2)
    # ε_i = ρ_i − 1 with ρ_i a sum of terms (R_ji/q_i)·exp(lx_j − lx_i): per term (|d| + 4)u, the sums γ
    eps_err = ((dmax + 4.0) * u + 2 * g) * rho * (1 + 1e-8) + u * np.abs(eps)
    omega = S @ phi                                                   # φ_i − Σ_j P*_ij φ_j
    absterms = np.abs(S) @ phi                                        # φ_i + Σ_j P*_ij φ_j
    omega_lo = omega - (((dmax + 4.0) * u + 2 * g) * absterms * (1 + 1e-8) + u * np.abs(omega))
    need = np.abs(eps) + eps_err
    if not np.all(omega_lo[need > 0] > 0):
        return {"failure": "the certificate's ω = Sφ̂ is not positive everywhere (the jump-count solve was not "
                           "accurate enough)", "phi_max": float(phi.max())}
    delta = float(np.max(need / np.where(omega_lo > 0, omega_lo, np.inf))) * (1 + 4 * u)
    phi_full = np.zeros(keep.size)
    phi_full[keep] = phi
    x = np.exp(lx - lx.max())
    mean_phi = float((x * phi_full).sum() / x.sum())
    kappa_x = delta * phi_full                                          # |x_i/x̂_i − 1| ≤ δφ̂_i
    if delta * mean_phi >= 1.0 or not math.isfinite(delta):
        return {"failure": f"the bracket is wider than the answer (δ·mean φ = {delta * mean_phi:.2g} ≥ 1): the "
                           "chain is too ill-conditioned for a componentwise certificate here",
                "delta": delta, "phi_max": float(phi.max())}
    kappa = (kappa_x + delta * mean_phi) / (1.0 - delta * mean_phi)
    # p_i = exp(logp_i) rounds once more: (|logp_i| + 2)u relative
    logp = _normalised_log(lx)
    kappa = kappa + (np.abs(logp) + 2.0) * u
    bound = float(kappa.max()) * (1 + 4 * u)
    certified = bound < 1.0
    return {"componentwise_bound": bound if certified else math.inf, "certified": certified,
            "failure": None if certified else f"the componentwise bound {bound:.2g} is not below 1",
            "delta": delta, "phi_max": float(phi.max()), "mean_phi": mean_phi}
