"""One AIR hierarchy for both linear solves of the sparse stationary solver (docs/theory.md §7.1).

The sparse solver (`sp_ode.markov.solvers._sparse`) solves two systems built from the
pinned state k:

* the pinned system  A_k x = b,  A_k = (−Qᵀ) without row and column k, for p = x/Σ;
* the hitting-time system  G y = 1,  G = A_kᵀ = (−Q) without row and column k, whose
  solution y_i = E_i[τ_k] certifies the error bound of §7.1.

G is the generator itself (rows = outgoing rates), the orientation for which
*approximate ideal restriction* (AIR, Manteuffel–Southworth et al. 2018–2019,
`pyamg.air_solver`) was designed: on transport-like chains (a species driven by
another, the cascade CME of docs/bench/network.md) its V-cycle reduces the error
by ≈ 0.5–0.6 per GMRES step, nearly independently of n, where classical
Ruge–Stüben AMG needs steps growing like n^0.45.

One hierarchy, two preconditioners.  The V-cycle B ≈ G⁻¹ is a linear map (zero
initial guess, no presmoothing, F–F–C Jacobi postsmoothing, pseudo-inverse at the
coarsest level), so its exact adjoint Bᵀ ≈ G⁻ᵀ = A_k⁻¹ preconditions the pinned
system with the same quality — ‖I − BG‖₂ = ‖I − A_kBᵀ‖₂ — at the cost of one
more cycle-sized pass and no second setup.  With the smoothing steps written
x ← x + W_s(b − A x), W_s = D⁻¹ on the F (or C) points,

    B  = S_C S_F S_F · P B_c R + (the W_s terms),        S_s = I − W_s A,
    Bᵀ = Rᵀ B_cᵀ Pᵀ · S_Fᵀ S_Fᵀ S_Cᵀ + …,                S_sᵀ = I − A ᵀW_s,

which `AirCycles` applies level by level in the reverse order ("adjoint
state": a cotangent λ runs the steps backwards, each step adding W_s λ to the
result and subtracting AᵀW_sλ from λ).  Both cycles are written here, not taken
from pyamg's `solve`, so that they are an exact adjoint pair by construction;
the test `tests/markov/test_air.py` checks ⟨v, Bu⟩ = ⟨Bᵀv, u⟩ to rounding and that B
equals pyamg's own cycle.

AIR is no universal improvement: on the diffusive, bistable toggle-switch CME its
steps grow quickly (the hitting-time solve needs 9, 18, 36, 84 steps from 10⁴ to
10⁶ states; docs/bench/stationary.md §3), and there it costs about what classical
AMG does.  The solver therefore *probes* it on the cheap system first
(`probe_solve`): G y = 1 to the bound's loose tolerance, abandoned as soon
as its observed rate predicts more than `PROBE_MAX_STEPS` steps, and then
classical AMG takes both solves.
"""
from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from pyamg import amg_core

from sp_ode.core.errors import Error

__all__ = ["AirCycles", "probe_solve", "AIR_OPTIONS", "PROBE_MAX_STEPS"]

# Degree-1 AIR restriction: setup 4–5× cheaper than degree 2 (2.4 s against 11 s at 10⁶ states)
# for a few more GMRES steps (17 against 8 on the hitting-time system), the better trade.
AIR_OPTIONS = {
    "restrict": ("air", {"theta": 0.05, "degree": 1}),
    "presmoother": None,
    "postsmoother": ("fc_jacobi", {"omega": 1.0, "iterations": 1, "withrho": False,
                                   "f_iterations": 2, "c_iterations": 1}),
    "coarse_solver": "pinv",
}
_SMOOTHING = AIR_OPTIONS["postsmoother"][1]   # what pyamg's cycle does is what both cycles here do
_F_SWEEPS, _C_SWEEPS = _SMOOTHING["f_iterations"], _SMOOTHING["c_iterations"]
_OMEGA = np.array([float(_SMOOTHING["omega"])])
PROBE_MIN_STEPS = 6                # the observed rate is trusted from this many steps on
PROBE_MAX_STEPS = 80               # abandon AIR when the rate predicts more steps than this


class AirCycles:
    """The AIR V-cycle B ≈ G⁻¹ of a pyamg hierarchy and its exact adjoint Bᵀ ≈ G⁻ᵀ (module docstring).

    Parameters
    ----------
    ml : pyamg MultilevelSolver
        Built by `pyamg.air_solver(G, **AIR_OPTIONS)`: each level but the last carries `A`,
        `P`, `R` and the C/F `splitting`.
    finest_transpose : sparse CSR (m, m), optional
        Gᵀ itself (A_k), used by the adjoint instead of the transposed view of G.

    Attributes
    ----------
    forward, adjoint : scipy.sparse.linalg.LinearOperator
        B and Bᵀ.
    levels : int
    operator_complexity : float
    nbytes : int
    """

    def __init__(self, ml, finest_transpose=None):
        # Gᵀ as CSR, when the caller holds it (the pinned matrix A_k): a CSR product is faster
        # than the product with the transposed view of G (CSC) in the finest adjoint step.
        self._finest_T = finest_transpose
        self._levels = []
        depth_count = len(ml.levels)
        # Coarse levels (1 … L−2) are renumbered F points first, then C points, so that every
        # smoothing step works on a contiguous block (views, no gathers or scatters); the finest
        # level keeps G's numbering (G is the caller's matrix) and the coarsest has no splitting.
        orders = [None] * depth_count
        for depth in range(1, depth_count - 1):
            c_points = np.asarray(ml.levels[depth].splitting, dtype=bool)
            orders[depth] = np.concatenate([np.flatnonzero(~c_points), np.flatnonzero(c_points)])
        inverse = [None if o is None else np.argsort(o).astype(np.int32) for o in orders]
        for depth, lv in enumerate(ml.levels[:-1]):
            P = _renumbered(lv.P, orders[depth], inverse[depth + 1])
            R = _renumbered(lv.R, orders[depth + 1], inverse[depth])
            A = lv.A.tocsr()
            dinv = _OMEGA[0] / A.diagonal()              # W = ω D⁻¹ of the Jacobi steps x ← x + W(b − Ax)
            if depth == 0:
                # The finest operator is G itself: no copy of it.  Forward Jacobi runs on the F
                # (C) rows only (pyamg's C++ kernel); the adjoint applies Gᵀ to a vector that is
                # zero off those rows.
                c_points = np.asarray(lv.splitting, dtype=bool)
                f_idx = np.flatnonzero(~c_points).astype(A.indptr.dtype)
                c_idx = np.flatnonzero(c_points).astype(A.indptr.dtype)
                rows, d_f, d_c = None, dinv[f_idx], dinv[c_idx]
            else:
                # Coarse operators are replaced by their F and C row blocks (same memory, since
                # ``ml`` is dropped by the caller): both directions then touch only those rows.
                n_f = int(np.count_nonzero(~np.asarray(lv.splitting, dtype=bool)))
                renumbered = _renumbered(A, orders[depth], inverse[depth])
                A = None
                rows = {"F": renumbered[:n_f], "C": renumbered[n_f:]}
                del renumbered
                dinv = dinv[orders[depth]]
                f_idx, c_idx = slice(0, n_f), slice(n_f, dinv.size)
                d_f, d_c = dinv[f_idx], dinv[c_idx]
            steps = [("F", f_idx, d_f)] * _F_SWEEPS + [("C", c_idx, d_c)] * _C_SWEEPS
            self._levels.append((A, rows, P, R, steps))
        coarse = ml.levels[-1].A.toarray()
        self._coarse = sla.pinv(coarse)
        self._coarse_T = self._coarse.T.copy()
        n = ml.levels[0].A.shape[0]
        self.levels = len(ml.levels)
        self.operator_complexity = float(ml.operator_complexity())
        self.forward = spla.LinearOperator((n, n), matvec=lambda b: self._forward(np.ravel(b), 0), dtype=np.float64)
        self.adjoint = spla.LinearOperator((n, n), matvec=lambda c: self._adjoint(np.ravel(c), 0), dtype=np.float64)

    @property
    def nbytes(self) -> int:
        """Memory the cycles hold beyond G and Gᵀ (the caller's): coarse F/C row blocks, P, R, coarsest pinv."""
        total = self._coarse.nbytes + self._coarse_T.nbytes
        for _, rows, P, R, _ in self._levels:
            for M in (P, R, *(rows or {}).values()):
                total += M.data.nbytes + M.indices.nbytes + M.indptr.nbytes
        return int(total)

    def _forward(self, b: np.ndarray, lvl: int) -> np.ndarray:
        if lvl == len(self._levels):
            return self._coarse @ b
        A, rows, P, R, steps = self._levels[lvl]
        x = P @ self._forward(R @ b, lvl + 1)          # x0 = 0, no presmoothing: the residual is b
        for block, idx, dinv in steps:                   # Jacobi on the F points (twice), then C
            if rows is None:
                amg_core.jacobi_indexed(A.indptr, A.indices, A.data, x, b, idx, _OMEGA)
            else:
                x[idx] += dinv * (b[idx] - rows[block] @ x)
        return x

    def _adjoint(self, c: np.ndarray, lvl: int) -> np.ndarray:
        if lvl == len(self._levels):
            return self._coarse_T @ c
        A, rows, P, R, steps = self._levels[lvl]
        lam = c.copy() if lvl == 0 else c               # coarse inputs are this method's own temporaries
        acc = {}                                         # block -> Σ W_s λ on its points
        if rows is None:
            w = np.zeros_like(c)
            AT = A.T if self._finest_T is None else self._finest_T
            previous = None
        for block, idx, dinv in reversed(steps):        # the smoothing steps backwards
            wi = dinv * lam[idx]
            acc[block] = acc[block] + wi if block in acc else wi
            if rows is None:
                if previous is not None and previous is not idx:
                    w[previous] = 0.0
                w[idx] = wi
                previous = idx
                lam -= AT @ w
            else:
                lam -= rows[block].T @ wi
        g = R.T @ self._adjoint(P.T @ lam, lvl + 1)
        for block, idx, _ in steps:
            if block in acc:
                g[idx] += acc.pop(block)
        return g


def _renumbered(M, row_order, col_inverse):
    """M with rows taken in `row_order` and columns renamed j → col_inverse[j] (CSR; either may be None)."""
    M = sp.csr_array(M)
    if row_order is not None:
        M = M[row_order]
    if col_inverse is not None:
        M = sp.csr_array((M.data, col_inverse[M.indices], M.indptr), shape=M.shape)
    return M


class _Abandon(Error):
    pass


def probe_solve(G, rhs, cycles: AirCycles, *, tol: float, maxiter: int, restart: int, count=None):
    """GMRES on G y = rhs preconditioned by AIR, abandoned early when AIR converges too slowly.

    After `PROBE_MIN_STEPS` steps the mean reduction per step ρ = (r_s/r_1)^(1/(s−1)) of the
    preconditioned residual predicts 1 + log(tol)/log ρ steps; above `PROBE_MAX_STEPS` the
    probe stops and returns `None` (the caller uses classical AMG).  `maxiter` counts GMRES
    steps (scipy's `callback_type="legacy"`), not restart cycles.

    Parameters
    ----------
    G : sparse (m, m)
    rhs : ndarray (m,)
    cycles : AirCycles of G
    tol : float
        GMRES relative tolerance
    maxiter : int
        Total steps
    restart : int
    count : callable, optional
        Called with each step's residual (the caller's step counter).

    Returns
    -------
    (y, status, steps) with y None when abandoned.
    """
    seen = []

    def watch(r):
        seen.append(r)
        if count is not None:
            count(r)
        s = len(seen)
        # The rate is measured from the first step on: scipy reports ‖M r‖/‖b‖ (left preconditioning),
        # whose scale ‖M b‖/‖b‖ is unknown here, while the stopping test is relative to ‖M b‖.
        if s >= max(2, PROBE_MIN_STEPS) and seen[0] > 0:
            ratio = r / seen[0]
            rate = ratio ** (1.0 / (s - 1)) if ratio > 0 else 0.0
            if rate >= 1.0 or (rate > 0 and 1 + math.log(tol) / math.log(rate) > PROBE_MAX_STEPS):
                raise _Abandon

    restart = max(1, min(restart, maxiter, G.shape[0]))
    try:
        y, status = spla.gmres(G, rhs, rtol=tol, atol=0.0, restart=restart, maxiter=maxiter,
                               M=cycles.forward, callback=watch, callback_type="legacy")
    except _Abandon:
        return None, 1, len(seen)
    return y, status, len(seen)
