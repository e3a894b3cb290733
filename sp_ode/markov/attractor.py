"""p_st as the attractor of the frozen fast flow dp/dτ = Qᵀp, by the uniformised chain — no linear solve (docs/theory.md §7.3).

With Λ = `MARGIN`·max_i (exit rate of i) (strictly above it, so every P_ii ≥ 1/9 > 0 and
the chain is aperiodic) the uniformised chain P = I + Q/Λ (`sp_ode.uniformize`: its
diagonal is formed from the off-diagonal rates, never by a subtraction) is stochastic,
irreducible and has p_st as its unique stationary law.  Laws started at several points are
advanced together for 2, 4, 8, … uniformised steps (τ = steps/Λ):

* **all n vertices** (dense chains, the default): the matrix of their laws is M = P^(2^j),
  obtained by repeated squaring.  Because p_stᵀM = p_stᵀ, every entry p_st,k is a convex
  combination of the k-th column, hence

      min_i M_ik ≤ p_st,k ≤ max_i M_ik,

  a **certified bracket**; the answer is its midpoint and the radius its half-width plus the
  rounding allowance ρ = 4·2^j·n·u·max_k m_k (u the unit roundoff; each squaring of
  nonnegative matrices has entrywise relative error ≤ nu/(1 − nu), amplified at most while
  the chain has not mixed, i.e. over the ≈ 2^j steps counted).
* **a few starts** (sparse chains: the uniform law and the given vertices): X ← PᵀX by sparse
  products with nonnegative entries, checkpoints at 16, 32, 64, … steps.  The spread of the
  starts' images plus the change over the last doubling is an error *indicator*, not a
  bracket (all n vertices would be needed for that), plus the rounding ρ = 1.01·steps·m·u
  (m the most nonzeros in a row of P; P is an ℓ1 contraction).

Either way the search stops when the spread (and the change) are ≤ `tol`, or stagnate at
rounding level below `RADIUS_MAX` (three doublings without halving the spread).  A
reducible chain, whose starts never agree, is never converged.  Used by the identity checks
of `sp_ode.verification` as the method independent of every linear solve.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from sp_ode.core.precision import UNIT_ROUNDOFF
from sp_ode.core.validation import check_positive, check_positive_int
from sp_ode.markov.generator import check_generator, uniformize

if TYPE_CHECKING:
    from sp_ode.core.typing import GeneratorMatrix

__all__ = ["Attractor", "attractor_distribution", "MARGIN", "RADIUS_MAX", "MAX_SQUARINGS", "MAX_STEPS"]

MARGIN = 1.125            # Λ = 1.125·max exit rate: every P_ii ≥ 1/9 > 0 (aperiodic)
RADIUS_MAX = 1e-10        # a radius wider than this is too loose to certify agreement
MAX_SQUARINGS = 64        # 2^64 uniformised steps: beyond any chain float64 can resolve
MAX_STEPS = 2 ** 18       # uniformised steps of the few-starts search before giving up
STALL = 3                 # doublings without halving the spread: rounding level reached


@dataclass(frozen=True)
class Attractor:
    """Where dp/dτ = Qᵀp goes, by the uniformised chain (module docstring).

    Attributes
    ----------
    p : ndarray (..., n)
        The bracket's midpoint (all vertices), or the image of the uniform start.
    radius : ndarray (...) or float
        The bound |p_st − p| ≤ radius, entrywise, when `certified`; an indicator otherwise.
    certified : bool
        The starts were all n vertices (the bracket), not a few.
    lower, upper : ndarray (..., n)
        Min and max over the starts' laws of each entry.
    uniform : ndarray (..., n)
        The image of the uniform start.
    spread : ndarray (...) or float
        Max_k (upper_k − lower_k)
    change
        The largest move over the last
        doubling (few starts; 0 for the bracket, whose spread already bounds it).
    steps : ndarray (...) int or int
        Uniformised steps taken
    tau
        Fast time reached, steps/Λ.
    converged : ndarray (...) bool or bool
        Number of starting laws.
    starts : int
        Number of starting laws.
    """

    p: np.ndarray
    radius: np.ndarray | float
    certified: bool
    lower: np.ndarray
    upper: np.ndarray
    uniform: np.ndarray
    spread: np.ndarray | float
    change: np.ndarray | float
    steps: np.ndarray | int
    tau: np.ndarray | float
    converged: np.ndarray | bool
    starts: int

    @property
    def squarings(self):
        """log₂ of the uniformised steps (the squarings of the bracket)."""
        return np.log2(np.maximum(self.steps, 1)).astype(int)


def attractor_distribution(Q: GeneratorMatrix, starts: Sequence[int] | None = None, *, tol: float = 1e-13,
                           max_steps: int | None = None) -> Attractor:
    """p_st of a generator as the attractor of its uniformised chain (module docstring).

    Parameters
    ----------
    Q : array_like (n, n) or (N, n, n), or scipy.sparse (n, n)
        Generator(s), validated by `sp_ode.check_generator`.
    starts : sequence of int, optional
        Vertex starts of the few-starts search (besides the uniform law).  None: all n vertices
        (the certified bracket) for a dense `Q`, the first and last state for a sparse one.
    tol : float
        Stop when the spread (and the change over the last doubling) are ≤ `tol`.
    max_steps : int, optional
        Budget of uniformised steps of the few-starts search (default `MAX_STEPS`).

    Returns
    -------
    Attractor (with a leading axis N for a stack)

    Raises
    ------
    TypeError, ValueError
        `Q` not a generator (stack), `tol`/`max_steps` not positive, a start out of range.
    """
    tol = check_positive("tol", tol)
    max_steps = MAX_STEPS if max_steps is None else check_positive_int("max_steps", max_steps)
    Q = check_generator(Q, batch=True)
    if starts is None and not sp.issparse(Q):
        return _bracket(Q, tol)
    if not sp.issparse(Q) and Q.ndim != 2:
        raise ValueError(f"`starts` applies to one generator, not a stack; got Q of shape {Q.shape}.")
    n = Q.shape[0]
    verts = sorted({0, n - 1}) if starts is None else [int(v) for v in starts]
    bad = [v for v in verts if not 0 <= v < n]
    if bad:
        raise ValueError(f"`starts` must be state indices in [0, {n}); got {bad}.")
    return _few_starts(Q, verts, tol, max_steps)


def _bracket(Q: np.ndarray, tol: float) -> Attractor:
    """All vertices at once: M = P^(2^j) by repeated squaring, for a generator or a stack."""
    single = Q.ndim == 2
    Qs = Q.reshape(-1, *Q.shape[-2:])
    n = Qs.shape[-1]
    M, lam = uniformize(Qs, margin=MARGIN)        # rows sum to 1
    M = np.array(M)
    j = np.zeros(Qs.shape[0], dtype=int)
    done = np.zeros(Qs.shape[0], dtype=bool)
    spread = np.max(M.max(axis=1) - M.min(axis=1), axis=1)
    best = spread.copy()
    stalled = np.zeros(Qs.shape[0], dtype=int)
    for _ in range(MAX_SQUARINGS):
        done |= spread <= tol
        if done.all():
            break
        act = ~done
        M2 = M[act] @ M[act]
        M2 /= M2.sum(axis=2, keepdims=True)       # keep the rows stochastic against rounding drift
        M[act] = M2
        j[act] += 1
        spread[act] = np.max(M2.max(axis=1) - M2.min(axis=1), axis=1)
        improved = spread < 0.5 * best
        stalled = np.where(act & ~improved, stalled + 1, np.where(act, 0, stalled))
        best = np.minimum(best, spread)
        done |= act & (stalled >= STALL) & (spread <= RADIUS_MAX)
    lower, upper = M.min(axis=1), M.max(axis=1)
    mid = 0.5 * (lower + upper)
    rho = 4.0 * (2.0 ** j) * n * UNIT_ROUNDOFF * mid.max(axis=1)
    radius = 0.5 * (upper - lower).max(axis=1) + rho
    steps = (2 ** j).astype(np.int64) if np.all(j < 63) else 2.0 ** j
    out = dict(p=mid, radius=radius, lower=lower, upper=upper, uniform=M.mean(axis=1), spread=spread,
               change=np.zeros_like(spread), steps=steps, tau=2.0 ** j / np.asarray(lam), converged=done)
    if single:
        out = {k: np.asarray(v)[0] for k, v in out.items()}
        out["radius"], out["spread"], out["change"] = (float(out[k]) for k in ("radius", "spread", "change"))
        out["converged"] = bool(out["converged"])
    return Attractor(certified=True, starts=n, **out)


def _few_starts(Q, verts: list[int], tol: float, max_steps: int) -> Attractor:
    """The uniform law and e_v for each v in `verts`, advanced by sparse products X ← PᵀX."""
    P, lam = uniformize(sp.csr_array(Q) if sp.issparse(Q) else Q, margin=MARGIN)
    PT = sp.csr_array(P).T.tocsr()
    n = PT.shape[0]
    m = int(np.diff(PT.indptr).max()) if n else 1
    X = np.zeros((n, 1 + len(verts)))
    X[:, 0] = 1.0 / n
    for k, v in enumerate(verts):
        X[v, k + 1] = 1.0
    steps, chunk = 0, 16
    prev = X.copy()
    best, stalled = np.inf, 0
    spread = change = np.inf
    converged = False
    while steps < max_steps:
        for _ in range(min(chunk, max_steps - steps)):
            X = PT @ X
        steps += min(chunk, max_steps - steps)
        X /= X.sum(axis=0, keepdims=True)          # keep each column a law against rounding drift
        spread = float(np.max(X.max(axis=1) - X.min(axis=1)))
        change = float(np.max(np.abs(X - prev)))
        prev = X.copy()
        if spread <= tol and change <= tol:
            converged = True
            break
        stalled = stalled + 1 if spread >= 0.5 * best else 0
        best = min(best, spread)
        if stalled >= STALL and max(spread, change) <= RADIUS_MAX:
            converged = True
            break
        if stalled >= STALL and change <= tol:
            break        # every start has stopped moving but they disagree: several closed classes
        chunk = steps                                # doubling: τ = 16/Λ, 32/Λ, 64/Λ, …
    rho = 1.01 * steps * m * UNIT_ROUNDOFF
    radius = max(spread, change) + rho
    return Attractor(X[:, 0].copy(), float(radius), False, X.min(axis=1), X.max(axis=1), X[:, 0].copy(), spread,
                     change, int(steps), steps / lam, bool(converged and radius <= RADIUS_MAX), 1 + len(verts))
