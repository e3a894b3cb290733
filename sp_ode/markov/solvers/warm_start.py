"""Warm-started stationary solves and group-inverse solves along a slow trajectory.

For a family Q(y) with a fixed pattern, p_st(y) is found from the pinned system
A_k x = b (A_k = −(Qᵀ) without row/column k, b = Q[k, ·], p = (x with x_k = 1)/Σ;
docs/theory.md §7.1), a nonsingular M-matrix by T1.  Two solvers:

- `direct`: a sparse LU (SuperLU, `scipy.sparse.linalg.splu`) of A_k per y.
  Exact up to rounding; the same factors also give every group-inverse solve
  A^#v needed by h₁ (below).  Best up to ~10⁵ states on 1-D/2-D CME grids.
- `amg`: GMRES preconditioned by a multigrid cycle: the adjoint of an AIR cycle built
  on G = A_kᵀ, as the public sparse solver (`sp_ode.markov._air`), else a
  classical-AMG hierarchy of A_k, else incomplete LU where both setups break down.
  The hierarchy built at one y is *reused* at the next ones, and GMRES starts
  from the previous solution — the warm start.  While Q(y) changes little the
  old hierarchy remains a good preconditioner and the start is already close;
  when the GMRES steps grow past `2·(steps at setup) + 10` or a solve fails,
  the hierarchy is rebuilt at the current y (`rebuilds` counts these).

**Group inverse without an n×n matrix** (docs/theory.md §3.3, §7.1).  For
v ∈ 1^⊥ (1ᵀv = 0), w = A^#v with A = Qᵀ is the solution of Aw = v with 1ᵀw = 0.
Row k of Aw = v is implied by the others (1ᵀA = 0 and 1ᵀv = 0), so
w̃ = (0 at k, (Qᵀ)_kk⁻¹ v_{−k} elsewhere) solves Aw̃ = v, and w = w̃ − (1ᵀw̃)p
(adding a multiple of p = ker A).  One solve with the pinned matrix, nothing dense.

Every solve reports its status: relative residual of the pinned system, GMRES
steps, whether it converged, and ‖Qᵀp‖∞ of the returned p; a solve that does not
converge even after a rebuild raises `RuntimeError` naming y (never a silent
answer).
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import numpy as np
import scipy.sparse.linalg as spla

from sp_ode.markov.solvers.preconditioners import air_adjoint_preconditioner

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None

__all__ = ["WarmStationary", "SOLVERS"]

SOLVERS = ("direct", "amg")
_TOL = 1e-12          # relative residual of the pinned system, as the cold sparse solver
_RESTART = 60
_MAXITER = 600
_REPIN_BELOW = 1e-8   # re-pin when the pinned state's probability falls below this × max p


def _guess_mode(Q, use_amg: bool = True) -> int:
    """A probable state to pin (docs/theory.md §7.1: pinning an improbable state makes x = p/p_k huge).

    Three classical-AMG V-cycles on the singular system −Qᵀx = 0 from the uniform vector
    damp everything but the null vector p (as the public sparse solver's first stage); where
    the AMG setup breaks down, or for the direct solver, 256 steps of the uniformised chain.  A wrong guess
    only costs a second solve: the solve re-pins at the mode it found.
    """
    import warnings

    import pyamg

    n = Q.shape[0]
    A = (-Q.T).tocsr()
    A.eliminate_zeros()
    try:
        if not use_amg:  # (pyamg's C++ setup prints its breakdowns to stdout: not on the direct path)
            raise ValueError
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ml = pyamg.ruge_stuben_solver(A)
            if all(np.all(np.isfinite(lvl.A.data)) for lvl in ml.levels):
                x = ml.solve(np.zeros(n), x0=np.full(n, 1.0 / n), maxiter=3, tol=0.0)
                if np.all(np.isfinite(x)) and x.max() > 0:
                    return int(np.argmax(x))
    except Exception:  # noqa: BLE001 — any breakdown of the heuristic falls through to the next one
        pass
    lam = 1.05 * float(np.max(-Q.diagonal())) or 1.0
    Qt = Q.T.tocsr()
    p = np.full(n, 1.0 / n)
    for _ in range(256):
        p = p + (Qt @ p) / lam
    return int(np.argmax(p))


class WarmStationary:
    """p_st(y) and A^#v for a `PatternedGenerator`, warm-started across calls.

    Parameters
    ----------
    gen : PatternedGenerator
    solver : {"direct", "amg"}
    warm : bool
        Reuse the AMG hierarchy and start GMRES from the previous solution (`amg`
        only).  `warm=False` rebuilds the hierarchy and starts from the uniform vector
        at every y (the cold baseline of the benchmark).
    tol : float
        GMRES relative residual on the pinned system.
    """

    def __init__(self, gen, solver: str = "direct", *, warm: bool = True, tol: float = _TOL):
        if solver not in SOLVERS:
            raise ValueError(f"`solver` must be one of {SOLVERS}; got {solver!r}.")
        self.gen, self.solver, self.warm, self.tol = gen, solver, warm, float(tol)
        self.k: int | None = None
        self.x: np.ndarray | None = None
        self.ml = None
        self.ref_steps = None
        self.rebuilds = 0
        self.preconditioner = None
        self._history: list = []
        self._lu = None
        self._Ak = None
        self._p = None
        self._one_thread = False          # inside `one_blas_thread`: `solve` need not limit BLAS again

    # --- linear algebra ---------------------------------------------------------------------
    def _build_ml(self, Ak):
        import pyamg


        Ak = Ak.tocsr(copy=True)
        Ak.eliminate_zeros()
        self.rebuilds += 1
        self.ref_steps = None
        # First choice: the adjoint of an AIR cycle on G = A_kᵀ, as the public sparse solver
        # (docs/theory.md §7.1); on transport-like chains its steps grow far more slowly.
        adjoint = air_adjoint_preconditioner(Ak)
        if adjoint is not None:
            self.ml, self.preconditioner = adjoint, "air (adjoint cycle)"
            return
        ml = pyamg.ruge_stuben_solver(Ak)
        finite = all(np.all(np.isfinite(lvl.A.data)) for lvl in ml.levels)
        if finite:
            self.ml, self.preconditioner = ml.aspreconditioner(cycle="V"), "amg"
            return
        # Classical interpolation broke down (a zero denominator: seen on the telegraph chain,
        # whose gene-switching rows have no strong coarse neighbour): incomplete LU instead.
        ilu = spla.spilu(Ak.tocsc(), drop_tol=1e-6, fill_factor=10)
        self.ml = spla.LinearOperator(Ak.shape, matvec=ilu.solve, dtype=np.float64)
        self.preconditioner = "ilu (AMG setup broke down)"

    def _gmres(self, Ak, b, x0):
        steps = [0]

        def count(_):
            steps[0] += 1

        # "legacy": `maxiter` counts steps, not restart cycles (see sp_ode/markov/solvers/_sparse.py::_gmres)
        x, status = spla.gmres(Ak, b, x0=x0, rtol=self.tol, atol=0.0, restart=min(_RESTART, Ak.shape[0]),
                               maxiter=_MAXITER, M=self.ml, callback=count, callback_type="legacy")
        return x, status == 0 and bool(np.all(np.isfinite(x))), steps[0]

    def _solve_pinned(self, Ak, b, x0):
        """x with A_k x = b; (x, info)."""
        if self.solver == "direct":
            Ak = Ak.copy()
            Ak.eliminate_zeros()  # SuperLU reported exact singularity on explicit zeros (measured)
            self._lu = spla.splu(Ak.tocsc())
            x = self._lu.solve(b)
            return x, {"steps": 0, "converged": bool(np.all(np.isfinite(x)))}
        if self.ml is None or not self.warm:
            self._build_ml(Ak)
        x, ok, steps = self._gmres(Ak, b, x0)
        rebuilt = False
        if self.warm and (not ok or (self.ref_steps is not None and steps > 2 * self.ref_steps + 10)):
            self._build_ml(Ak)  # the reused hierarchy no longer fits Q(y): rebuild it here
            x, ok, steps2 = self._gmres(Ak, b, x if ok else x0)
            steps += steps2
            rebuilt = True
        if self.ref_steps is None:
            self.ref_steps = steps
        return x, {"steps": steps, "converged": ok, "rebuilt": rebuilt}

    def _start(self, y) -> np.ndarray:
        """Starting vector (scaled so that x_k = 1): the last p, or its extrapolation in y.

        Along a slow trajectory successive y lie (nearly) on a curve; with the last three
        solutions the quadratic Lagrange extrapolation in the coordinate along the last step
        is O(|Δy|³) from p(y) instead of O(|Δy|) for the last p alone.
        """
        x = self.x
        if y is not None and len(self._history) >= 2:
            ys = [h[0] for h in self._history]
            d = ys[0] - ys[1]
            dd = float(d @ d)
            if dd > 0:
                coord = lambda v: float((np.ravel(v) - ys[0]) @ d) / dd
                t = [coord(v) for v in ys]
                s = coord(y)
                if abs(s) <= 4.0 and len(set(np.round(t, 12))) == len(t):
                    w = [np.prod([(s - t[j]) / (t[i] - t[j]) for j in range(len(t)) if j != i]) for i in range(len(t))]
                    x = sum(wi * h[1] for wi, h in zip(w, self._history))
        return x / x[self.k] if x[self.k] > 0 else self.x / self.x[self.k]

    # --- public --------------------------------------------------------------------------------
    @contextlib.contextmanager
    def one_blas_thread(self) -> Iterator[WarmStationary]:
        """Hold BLAS at one thread for every `solve` inside (as each `solve` does by itself).

        Why: entering `threadpool_limits` finds the loaded libraries again (it reads the process's memory
        map), 1.6 ms a time — 37 % of a table node's time at n = 1024 (measured, two solves a node).  A
        caller making many solves in a row (a table) enters it once; the numbers are the same."""
        if threadpool_limits is None or self._one_thread:  # pragma: no cover
            yield self
            return
        with threadpool_limits(limits=1, user_api="blas"):
            self._one_thread = True
            try:
                yield self
            finally:
                self._one_thread = False

    def solve(self, Q, y=None) -> tuple[np.ndarray, dict]:
        """p_st of the patterned generator Q (at slow state y, for messages); (p, info)."""
        if threadpool_limits is None or self._one_thread:  # pragma: no cover
            return self._solve(Q, y)
        with threadpool_limits(limits=1, user_api="blas"):
            return self._solve(Q, y)

    def _solve(self, Q, y):
        t0 = time.perf_counter()
        n = self.gen.n
        if n == 1:
            self._p = np.ones(1)
            return self._p, {"residual": 0.0, "steps": 0, "converged": True, "seconds": 0.0}
        if self.k is None:
            self.k = _guess_mode(Q, use_amg=self.solver == "amg")
        for attempt in range(2):
            Ak, b = self.gen.pinned(Q, self.k)
            keep = np.arange(n) != self.k
            x0 = self._start(y)[keep] if (self.warm and self.x is not None) else np.full(n - 1, 1.0)
            xk, info = self._solve_pinned(Ak, b, x0)
            if attempt == 0 and not info["converged"]:
                finite = np.where(np.isfinite(xk), np.abs(xk), 0.0)
                self.k = int(np.flatnonzero(keep)[np.argmax(finite)]) if finite.max() > 1 else self.k
                self.x, self.ml = None, None
                continue
            if not info["converged"]:
                raise RuntimeError(f"stationary solve ({self.solver}) did not converge at y = {np.ravel(y).tolist()} "
                                   f"after {info['steps']} GMRES steps.")
            x = np.insert(xk, self.k, 1.0)
            if attempt == 0 and x[self.k] < _REPIN_BELOW * np.max(x):
                self.k = int(np.argmax(x))   # pinned state improbable: pin the mode and re-solve
                self.x = x
                self.ml = None
                continue
            break
        neg = x < 0
        most_negative = float(x[neg].min() / x.sum()) if neg.any() else 0.0
        x = np.maximum(x, 0.0)
        p = x / x.sum()
        if self.warm and y is not None:
            self._history = [(np.array(y, dtype=np.float64).ravel(), p.copy()), *self._history[:2]]
        self.x, self._p, self._Ak = p.copy(), p, Ak
        info.update(residual=float(np.abs(Q.T @ p).max()), pinned_state=self.k, negatives_clipped=int(neg.sum()),
                    most_negative=most_negative, seconds=time.perf_counter() - t0, rebuilds=self.rebuilds,
                    solver=self.solver, warm=self.warm, preconditioner=self.preconditioner)
        return p, info

    def group_inverse_apply(self, v: np.ndarray) -> np.ndarray:
        """A^#v (A = Qᵀ of the last `solve`) for v (n,) or (n, m) in 1^⊥ (module docstring)."""
        v = np.asarray(v, dtype=np.float64)
        squeeze = v.ndim == 1
        V = v[:, None] if squeeze else v
        keep = np.arange(self.gen.n) != self.k
        W = np.zeros_like(V)
        for j in range(V.shape[1]):
            rhs = -V[keep, j]          # (Qᵀ)_kk = −A_k
            if self.solver == "direct":
                W[keep, j] = self._lu.solve(rhs)
            else:
                w, ok, _ = self._gmres(self._Ak, rhs, np.zeros_like(rhs))
                if not ok:
                    raise RuntimeError("group-inverse solve (GMRES) did not converge.")
                W[keep, j] = w
        W -= np.outer(self._p, W.sum(axis=0))
        return W[:, 0] if squeeze else W
