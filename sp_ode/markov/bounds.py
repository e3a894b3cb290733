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
  itself certified by its residual s = 1 − Gŷ: ‖y‖∞ ≤ ‖ŷ‖∞ / (1 − ‖s‖∞)
  whenever ‖s‖∞ < 1 (y = ŷ + G⁻¹s and ‖G⁻¹‖∞ = ‖y‖∞).  Rounding is accounted
  for: the residuals are computed in floating point, so γ_m-multiples of
  |Q||q| and |G||ŷ| (m the most nonzeros in a row or column, plus two for the
  rounded diagonal) are added, and |1ᵀq − 1| is added for the normalisation.
  The bound is rigorous up to the rounding in those few extra sums.
* **A-priori, componentwise (§7.2)** — for GTH, |p̂_i − p_i| ≤ c·n³·u·p_i
  (`sp_ode.markov._gth.gth_componentwise_bound`), hence also in ℓ1.
* **Rounding of the rates as given (§7.9)** — `input_rounding_bound`: rates
  known only to relative δ (a float32 Q: δ = 2⁻²⁴) move p_st by at most the factor
  ((1 + δ)/(1 − δ))^(n−1) − 1 in every entry, by the Markov chain tree theorem.

[`ConvergenceError`][sp_ode.markov.bounds.ConvergenceError] is raised by [`sp_ode.stationary_distribution`][sp_ode.markov.stationary.stationary_distribution]
when no method reaches the requested tolerance.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from sp_ode.core.precision import UNIT_ROUNDOFF

__all__ = ["ConvergenceError", "residual_l1_bound", "hitting_time_bound", "posterior_bound", "input_rounding_bound"]

_U_LD = float(np.finfo(np.longdouble).eps) / 2


class ConvergenceError(RuntimeError):
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
    finite, has a negative entry, or its residual ‖1 − Gŷ‖∞ is not below 1.
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
    s = np.abs(1.0 - Gy) + 2 * _gamma(_terms_per_column(Q)) * (np.abs(aGy) + 1.0)
    smax = float(s.max()) * (1 + 4 * UNIT_ROUNDOFF)
    if not smax < 1.0:
        return math.inf
    return float(y_hat.max()) / (1.0 - smax) * (1 + 4 * UNIT_ROUNDOFF)


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
    """Componentwise relative change of p_st when every rate moves by a relative δ at most (docs/theory.md §7.9).

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
