"""Stationary distributions of large sparse generators: AMG-preconditioned GMRES.

Solves Qᵀp = 0, 1ᵀp = 1, p ≥ 0 (docs/theory.md §2) for a validated, irreducible
`scipy.sparse` generator Q, in four stages:

1. **Locate the mass.**  A = −Qᵀ is a singular M-matrix whose null space is
   span{p}.  A few V-cycles of classical (Ruge–Stüben) algebraic multigrid,
   iterated on A x = 0 from the uniform vector, damp every other component and
   leave x ≈ c·p.  The state k = argmax x is pinned.  Pinning a state of large
   probability matters: the pinned system below is solved for x = p / p_k,
   which would overflow (or need a relative tolerance below eps) if p_k were
   tiny, as it is at the corners of a CME grid (p ≈ 1e-400 there).
2. **Solve the pinned system.**  Deleting row and column k of A leaves
   A_k, a *nonsingular* M-matrix (T1: irreducibility); with p_k = 1 the other
   entries solve A_k x = b, b = (Q[k, j])_{j≠k} ≥ 0.  A_k is solved with
   GMRES (`scipy.sparse.linalg.gmres`, restarted), started from stage 1 and
   preconditioned by one of two multigrid cycles:

   a. **AIR, probed first** (`sp_ode.markov._air`).  One AIR hierarchy
      (`pyamg.air_solver`) of the hitting-time matrix G = A_kᵀ = −Q_k serves
      both solves: its V-cycle preconditions G y = 1 of stage 4, which is
      solved *first* as a probe, and its exact adjoint preconditions A_k.  The
      probe is abandoned as soon as its observed rate predicts more than 80
      steps.
   b. **Classical AMG** (`pyamg.ruge_stuben_solver` on A_k, and a second
      hierarchy on G for stage 4) when the probe was abandoned, and from
      AIR's iterate if its adjoint cycle does not converge on A_k.

   Measured (docs/bench/network.md §3, docs/bench/stationary.md §3): on the
   transport-like cascade CME AIR's steps grow slowly (pinned solve 25 → 42,
   hitting times 9 → 17 from 10⁵ to 10⁶ states) where classical AMG's grow
   like n^0.45; on the diffusive, bistable toggle-switch CME the probe keeps
   AIR (84 hitting-time steps at 10⁶ states) and the call costs about what
   classical AMG cost (25.8 against 24.3 CPU-s with the bound).
3. **Nonnegativity, honestly.**  A_k⁻¹ ≥ 0 and b ≥ 0, so x ≥ 0 in exact
   arithmetic, but a Krylov iterate has rounding-level negative entries where
   p is tiny.  They are set to 0 (their number and the most negative value are
   reported), then one forward Gauss–Seidel sweep on A_k x = b is applied:
   every update x_i = (b_i + Σ_j |a_ij| x_j) / a_ii is a sum of nonnegative
   terms, so the result is ≥ 0 in floating point too, and the sweep smooths
   away the residual the clipping introduced.  Finally p = (x with x_k = 1)/Σ.
   The residual ‖Qᵀp‖∞ of the returned p is measured and reported.
4. **The bound** (docs/theory.md §7.1, `sp_ode.markov.bounds`).  A small
   residual proves nothing on a nearly decoupled chain, so the answer carries
   ‖p̂ − p_st‖₁ ≤ 2·max_i E_i[τ_k]·‖Qᵀp̂‖₁: one more preconditioned GMRES
   solve, of G y = 1 with G = A_kᵀ (the mean hitting times of the pinned state
   k) — AIR's probe when it was kept — certified by its own residual.  If the
   bound misses the requested tolerance and the residual is the reason, GMRES
   continues once with the pinned-system tolerance tightened by the missing factor.

Failure is a status, never a traceback or a silent answer: a pyamg exception
(e.g. its coarse-grid `pinv` on a badly scaled chain: "array must not contain
infs or NaNs"), a breakdown or a non-finite iterate all return `bound = inf`
and a `failure` message, and the caller escalates (dense GTH) or raises.
pyamg's C++ core prints diagnostics ("Outer denominator was zero…") straight to
file descriptor 1; the whole solve runs with fd 1 redirected to /dev/null so
that machine-readable output (`sp-ode stationary --json`) stays parseable.

Why these two (pyamg): setup is cheap and memory linear in n for both.  Classical
AMG alone, on the toggle-switch CME of `sp_ode.markov.cme`, needs GMRES
steps growing only slowly with the grid (16, 28, 38, 55 steps at 10⁴, 10⁵,
3.6·10⁵, 10⁶ states; `docs/bench/stationary.md` §3–4), but on the cascade CME
its steps grow like n^0.45 and the 10⁷-state solve did not converge in 400 steps
(docs/bench/network.md §3); AIR fixes the latter and costs about the same on
the former.  Measured alternatives: `scipy.sparse.linalg.spilu` + GMRES needed 140
steps (40× slower) already at 4·10⁴ states; nonsymmetric smoothed aggregation
had a 50× slower setup; AIR built on A_k itself (not on G) needed 50 steps at 10⁶
states against 42 for the adjoint of G's cycle, and degree-2 AIR 4× the setup;
a stronger threshold (θ = 0.5), W-cycles and forward/backward Gauss–Seidel
smoothing each cost more CPU at 10⁶ states; BiCGStab stagnated at 3·10⁻¹¹.
A sparse direct solve (SuperLU) of the same pinned system is as fast up to
~4·10⁵ states but its fill-in grows like n^1.5 (see the benchmark).
pyamg is single-threaded; the BLAS-1 vector operations of GMRES are pinned
to one thread as well (`threadpoolctl`): on vectors of ≤ 10⁶ entries threads
gain nothing, and OpenBLAS threads contending for a shared 2-core machine made
the solve 10–30× slower (measured: 0.17 s vs 6.7 s for 20 GMRES steps at
4·10⁴ states).  So the solver uses one core.
"""
from __future__ import annotations

import contextlib
import ctypes
import math
import os
import sys
import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from sp_ode.core.memory import available_memory
from sp_ode.markov.bounds import posterior_bound

try:  # optional: without it BLAS keeps its own thread count
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None

__all__ = ["sparse_stationary", "pinned_direct_stationary", "quiet_stdout"]

METHOD = "AMG-preconditioned GMRES on the pinned M-matrix + Gauss-Seidel nonnegativity sweep"
PRECONDITIONERS = {
    "air": "adjoint V-cycle of pyamg AIR on G = A_kᵀ (one hierarchy for both solves)",
    "rs": "pyamg Ruge-Stuben V-cycle on A_k",
    "rs_after_air": "pyamg Ruge-Stuben V-cycle on A_k, after AIR's adjoint cycle did not converge",
}

_LOCATE_CYCLES = 3     # V-cycles of stage 1: enough to find the mode, not to converge
_RESTART = 100         # GMRES restart length; restarting at 40 tripled the steps at 10⁶ states (156 vs 55)
_KRYLOV_MIN_RESTART = 20
_KRYLOV_BYTES = 6e9    # … the Krylov basis (restart × n float64) is kept under 6 GB and under
_KRYLOV_FREE = 0.3     # 30 % of the memory free at the start of the solve.  The cap matters
                       # from ~10⁷ states: a 1 GB cap forced restart 20 there, and at 4·10⁶ states
                       # restart 50 already took 264 steps against 100 at restart 100 (cascade CME).
_AIR_RESTART = 40      # AIR converges as fast with restart 40 as with 100 (42 steps at 10⁶ states; 20: 46), and
                       # each step orthogonalises against fewer vectors: at 10⁷ states that is ~1 s a step
_DEFAULT_TOL = 1e-13   # relative residual ‖b − A_k x‖₂ / ‖b‖₂ (1e-13: +2 GMRES steps, ~40× smaller ‖Qᵀp‖₁ than 1e-12)
_DERIVED_TOL_MIN_N = 10**6   # from this size on, tol=None means: derived from the requested bound (below)
_DERIVED_TOL_MARGIN = 8.0    # the derived tolerance aims at bound_tol / 8
_LOOSEST_TOL = 1e-9          # … and is never looser than this
_DEFAULT_MAXITER = 400  # total GMRES iterations (inner steps, across restarts)
_REPIN_BELOW = 1e-6     # re-pin (once) when an unconverged solve pinned a state with p_k < this · max p
_HITTING_TOL = 0.1      # ‖1 − Gŷ‖∞ ≤ ‖·‖₂ ≤ 0.1: certifies max y within 11 % (bounds.hitting_time_bound)
_TIGHTEST_TOL = 1e-15   # the tightest pinned-system tolerance tried when the bound needs a smaller residual


def pinned_system(A: sp.csr_matrix, k: int):
    """(A_k, b, keep): A with row/column k deleted, and b = −A[keep, k] (= Q[k, keep] ≥ 0)."""
    n = A.shape[0]
    keep = np.ones(n, dtype=bool)
    keep[k] = False
    Ak = A[keep][:, keep].tocsr()
    b = -np.asarray(A[:, [k]].toarray()).ravel()[keep]
    return Ak, b, keep


def locate_mass(A: sp.csr_matrix) -> np.ndarray:
    """Stage 1: a rough x ≈ c·p from AMG V-cycles on the singular system A x = 0."""
    import pyamg

    n = A.shape[0]
    uniform = np.full(n, 1.0 / n)
    try:
        ml = pyamg.ruge_stuben_solver(A)
        # b = 0 is consistent; tol = 0 makes pyamg run exactly `maxiter` cycles.
        x = ml.solve(np.zeros(n), x0=uniform, maxiter=_LOCATE_CYCLES, tol=0.0)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError):
        # Classical interpolation can break down on the *singular* A (a zero denominator
        # leaves NaN in a coarse operator, and the coarsest pseudo-inverse refuses it:
        # telegraph, N = 40, y = 1).  The guess only picks the pinned state, so fall back to
        # the uniform law; the pinned system A_k is nonsingular and gets its own hierarchy.
        return uniform
    x = np.nan_to_num(x, nan=0.0, posinf=0.0, neginf=0.0)
    return x if np.any(x > 0) else uniform


@contextlib.contextmanager
def quiet_stdout():
    """Redirect file descriptor 1 to /dev/null (C/C++ output of pyamg); flush both layers on the way in and out."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:  # pragma: no cover
        libc = None
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        yield
    finally:
        if libc is not None:
            libc.fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)


def _failure(n: int, message: str, t0: float) -> tuple[np.ndarray, dict]:
    return np.full(n, np.nan), {
        "residual": math.inf, "relative_residual": math.inf, "iterations": 0, "converged": False,
        "method": METHOD, "pinned_state": None, "amg_levels": 0, "negatives_clipped": 0, "most_negative": 0.0,
        "residual_before_sweep": math.inf, "bound": math.inf, "hitting_time": math.inf,
        "componentwise_bound": None, "bound_kind": _BOUND_KIND, "failure": message,
        "seconds": {"setup": 0.0, "solve": time.perf_counter() - t0}}


_BOUND_KIND = "a-posteriori ℓ1: 2·max E[τ_k]·‖Qᵀq‖₁ (§7.1)"


def sparse_stationary(Q, *, tol: float | None = None, maxiter: int | None = None,
                      bound_tol: float | None = None) -> tuple[np.ndarray, dict]:
    """Stationary distribution of a large sparse irreducible generator (module docstring).

    The caller has validated Q (`sp_ode.check_generator`) and checked that it
    is irreducible; nothing is re-checked here.

    Parameters
    ----------
    Q : scipy.sparse matrix or array, shape (n, n)
        Generator: `Q[i, j] ≥ 0` the rate i → j, rows summing to zero, irreducible.
    tol : float, optional
        GMRES stopping rule on the pinned system, ‖b − A_k x‖₂ ≤ tol·‖b‖₂
        (default 1e-13; from 10⁶ states on, when AIR was kept and `bound_tol` is
        given, the default is derived from `bound_tol` instead: the loosest
        tolerance expected to give a bound ≤ bound_tol/8, between 1e-13 and 1e-9,
        reported as `info["pinned_tol"]`).
    maxiter : int, optional
        Cap on GMRES iterations (default 400), for each of the two solves.
    bound_tol : float, optional
        The caller's tolerance on the error bound: when the bound misses it
        because of the residual, GMRES continues once with a tighter `tol`.

    Returns
    -------
    p : ndarray, shape (n,), float64
        p ≥ 0 (never negative), Σp = 1.
    info : dict
        `residual` ‖Qᵀp‖∞; `relative_residual` = residual / max|Q|;
        `iterations` (GMRES steps); `converged` (GMRES met `tol`);
        `attempts` (2 when the pinned state was moved to the mode and re-solved);
        `method`; `pinned_state` k; `amg_levels`; `negatives_clipped`
        (entries of the Krylov iterate < 0 that were set to 0) and
        `most_negative` (the smallest such value, 0.0 if none, in units of the
        pinned probability: the iterate is x = p / p_k);
        `residual_before_sweep` (‖Qᵀp‖∞ of the unclipped Krylov iterate);
        `bound` (on ‖p − p_st‖₁, inf when not certified), `hitting_time`,
        `bound_kind`; `failure` (a message) when the solve failed (p is then NaN);
        `seconds` (setup, solve, bound).
    """
    t0 = time.perf_counter()
    limits = threadpool_limits(limits=1, user_api="blas") if threadpool_limits else contextlib.nullcontext()
    with limits, quiet_stdout(), np.errstate(all="ignore"):
        try:
            return _sparse_stationary(Q, tol=tol, maxiter=maxiter, bound_tol=bound_tol)
        except (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError, MemoryError) as exc:
            return _failure(Q.shape[0], f"the AMG/GMRES solve failed ({type(exc).__name__}: {exc})", t0)


def _available_bytes() -> float:
    """Memory this process may still use (sp_ode.core.memory: system, cgroup and rlimit headroom); +inf where unknown."""
    found = available_memory()
    return math.inf if found is None else float(found[0])


def _restart_length(n1: int, maxiter: int, longest: int = _RESTART) -> int:
    """GMRES restart: `longest`, unless the basis would exceed the Krylov memory cap (see above)."""
    cap = min(_KRYLOV_BYTES, _KRYLOV_FREE * _available_bytes())
    by_memory = max(_KRYLOV_MIN_RESTART, int(cap // (8 * (n1 + 1))))
    return max(1, min(longest, by_memory, maxiter, n1))


def _gmres(M, b, x0, precond, *, tol, maxiter, count, longest=_RESTART):
    n1 = M.shape[0]
    restart = _restart_length(n1, maxiter, longest)
    # callback_type="legacy" makes `maxiter` count GMRES steps.  With "pr_norm" it counts restart
    # cycles, and scipy ends a cycle early whenever the *preconditioned* residual passes the test:
    # a cycle of two steps then used up a whole quarter of the budget (found with AIR, whose
    # preconditioned residual can pass long before the true one).
    x, status = spla.gmres(M, b, x0=x0, rtol=tol, atol=0.0, restart=restart, maxiter=maxiter, M=precond,
                           callback=count, callback_type="legacy")
    return x, status


def _air_probe(G, Ak, *, maxiter, count):
    """Stage 2a: AIR on the hitting-time system (`sp_ode.markov._air`).

    Returns (cycles, y, record): the AIR cycles and the hitting times when AIR converged at
    a rate worth keeping, else (None, None, record); `record` says what was tried.
    """
    import pyamg

    from sp_ode.markov._air import AIR_OPTIONS, AirCycles, probe_solve

    t = time.perf_counter()
    m = G.shape[0]
    try:
        cycles = AirCycles(pyamg.air_solver(G, **AIR_OPTIONS), finest_transpose=Ak)
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError) as exc:
        return None, None, {"kept": False, "reason": f"AIR setup failed ({type(exc).__name__}: {exc})",
                            "seconds": time.perf_counter() - t, "steps": 0}
    setup = time.perf_counter() - t
    y, status, steps = probe_solve(G, np.ones(m), cycles, tol=_HITTING_TOL / math.sqrt(m), maxiter=maxiter,
                                   restart=_restart_length(m, maxiter, _AIR_RESTART), count=count)
    elapsed = time.perf_counter() - t
    rec = {"setup_seconds": setup, "seconds": elapsed, "solve_seconds": elapsed - setup, "steps": steps,
           "levels": cycles.levels, "operator_complexity": cycles.operator_complexity}
    if y is None or status != 0 or not np.all(np.isfinite(y)):
        rec.update(kept=False, reason="too slow on this chain (its rate predicted too many steps)"
                   if y is None else "did not converge on G y = 1")
        return None, None, rec
    rec.update(kept=True, reason="")
    return cycles, y, rec


def _derived_tol(bound_tol: float, y: np.ndarray, x0: np.ndarray, b: np.ndarray) -> float:
    """The loosest pinned-system tolerance that should still give a bound ≤ bound_tol / margin.

    With r = b − A_k x, the full residual is Qᵀp̂ = (−r, 1ᵀr)/Σx (the column sums of A vanish),
    so ‖Qᵀp̂‖₁ ≤ 2‖r‖₁/Σx ≤ 2√n‖r‖₂/Σx, and the bound 2·H·‖Qᵀp̂‖₁ ≤ bound_tol needs
    ‖r‖₂/‖b‖₂ ≤ bound_tol·Σx / (4·H·√n·‖b‖₂).  H = max ŷ from the probe and Σx from the
    stage-1 guess are estimates, hence the margin; the certified bound is computed afterwards
    all the same, and a miss tightens the solve (stage 4).
    """
    H = float(np.max(y))
    sigma = 1.0 + float(np.sum(x0))
    bnorm = float(np.linalg.norm(b))
    if not (H > 0 and bnorm > 0 and math.isfinite(H * sigma)):
        return _DEFAULT_TOL
    derived = bound_tol * sigma / (4.0 * H * math.sqrt(b.size + 1) * bnorm) / _DERIVED_TOL_MARGIN
    return float(min(max(derived, _DEFAULT_TOL), _LOOSEST_TOL))


def _sparse_stationary(Q, *, tol, maxiter, bound_tol):
    import pyamg
    from pyamg.relaxation.relaxation import gauss_seidel

    t0 = time.perf_counter()
    Q = sp.csr_matrix(Q, dtype=np.float64)
    n = Q.shape[0]
    derive_tol = tol is None and bound_tol is not None and n >= _DERIVED_TOL_MIN_N
    tol = _DEFAULT_TOL if tol is None else float(tol)
    maxiter = _DEFAULT_MAXITER if maxiter is None else int(maxiter)
    scale = float(abs(Q).max()) if Q.nnz else 0.0
    if n == 1:
        p = np.ones(1)
        return p, {"residual": 0.0, "relative_residual": 0.0, "iterations": 0, "converged": True,
                   "method": METHOD, "preconditioner": None, "air_probe": None, "pinned_state": 0, "amg_levels": 0,
                   "negatives_clipped": 0, "most_negative": 0.0, "residual_before_sweep": 0.0, "bound": 0.0,
                   "hitting_time": 0.0, "componentwise_bound": None, "bound_kind": _BOUND_KIND,
                   "seconds": {"setup": 0.0, "solve": 0.0, "bound": 0.0}}

    A = (-Q.T).tocsr()
    A.sort_indices()
    guess = locate_mass(A)
    steps = [0]

    def count(_):
        steps[0] += 1

    t1 = None
    for attempt in range(2):
        # Pin the most probable state of the current guess; a second attempt (re-pinning at
        # the mode of the first solution) happens only if the first did not converge and its
        # pinned state turned out improbable (the stage-1 guess misled it).
        k = int(np.argmax(guess))
        if A is None:
            A = (-Q.T).tocsr()
            A.sort_indices()
        Ak, b, keep = pinned_system(A, k)
        A = None  # 64 B/state, rebuilt only for a second attempt: at 10⁷ states memory is the limit
        x0 = np.maximum(guess[keep] / guess[k], 0.0) if guess[k] > 0 else np.zeros(n - 1)
        G = Ak.T.tocsr()
        air, y, probe = _air_probe(G, Ak, maxiter=maxiter, count=count)
        pinned_tol, longest = tol, _RESTART
        if air is not None:
            precond, levels, used, longest = air.adjoint, air.levels, PRECONDITIONERS["air"], _AIR_RESTART
            if derive_tol:
                pinned_tol = _derived_tol(bound_tol, y, x0, b)
        else:
            ml = pyamg.ruge_stuben_solver(Ak)
            precond, levels, used = ml.aspreconditioner(cycle="V"), len(ml.levels), PRECONDITIONERS["rs"]
        if t1 is None:
            t1 = time.perf_counter()
        x, status = _gmres(Ak, b, x0, precond, tol=pinned_tol, maxiter=maxiter, count=count, longest=longest)
        if not np.all(np.isfinite(x)):  # breakdown/overflow: keep the (finite) starting guess
            x, status = x0, 1
        if status != 0 and air is not None:
            # AIR passed the probe on G but not on A_k: classical AMG takes over from its iterate.
            ml = pyamg.ruge_stuben_solver(Ak)
            precond, levels, used = ml.aspreconditioner(cycle="V"), len(ml.levels), PRECONDITIONERS["rs_after_air"]
            longest = _RESTART
            x2, status = _gmres(Ak, b, x, precond, tol=pinned_tol, maxiter=maxiter, count=count)
            x = x2 if np.all(np.isfinite(x2)) else x
        raw = np.insert(x, k, 1.0)
        if status == 0 or attempt == 1 or raw[k] >= _REPIN_BELOW * raw.max():
            break
        guess = np.maximum(raw, 0.0)

    del guess

    def full(xk):
        q = np.insert(xk, k, 1.0)
        return q / q.sum()

    residual_before = float(np.abs(Q.T @ full(x)).max())
    negative = x < 0
    most_negative = float(x[negative].min()) if negative.any() else 0.0
    x = np.maximum(x, 0.0)
    gauss_seidel(Ak, x, b, iterations=1, sweep="forward")  # keeps x ≥ 0 (module docstring, stage 3)
    p = full(x)
    p += 0.0  # −0.0 → +0.0, so that no entry even prints as negative
    t2 = time.perf_counter()
    # Stage 4: certified hitting times of k (G y = 1) and the bound.  AIR's probe already
    # solved it; otherwise the pinned system's hierarchy is dropped first (at 10⁷ states it
    # is ~2.6 GB, as large as G's) and G gets its own classical hierarchy.
    if y is None:
        if air is None:
            del ml, precond
        mlG = pyamg.ruge_stuben_solver(G)
        y, _ = _gmres(G, np.ones(n - 1), None, mlG.aspreconditioner(cycle="V"), tol=_HITTING_TOL / math.sqrt(n - 1),
                      maxiter=maxiter, count=count)
        del mlG
    bound, H = posterior_bound(Q, p, k, y)
    if bound_tol is not None and bound_tol < bound < math.inf and status == 0:
        # The residual is what failed the bound: tighten the pinned solve once, by the missing factor.
        tighter = max(pinned_tol * bound_tol / bound / 4, _TIGHTEST_TOL)
        if tighter < pinned_tol:
            if air is None:
                precond = pyamg.ruge_stuben_solver(Ak).aspreconditioner(cycle="V")
            x2, status2 = _gmres(Ak, b, x, precond, tol=tighter, maxiter=maxiter, count=count, longest=longest)
            if np.all(np.isfinite(x2)):
                x2 = np.maximum(x2, 0.0)
                gauss_seidel(Ak, x2, b, iterations=1, sweep="forward")
                p2 = full(x2) + 0.0
                bound2, _ = posterior_bound(Q, p2, k, y)
                if bound2 < bound:
                    p, bound = p2, bound2
    residual = float(np.abs(Q.T @ p).max())
    t3 = time.perf_counter()
    hitting = probe.get("solve_seconds", 0.0) if probe.get("kept") else 0.0
    in_setup = hitting if attempt == 0 else 0.0     # a second attempt's probe ran inside the "solve" interval
    info = {
        "residual": residual,
        "relative_residual": residual / scale if scale > 0 else 0.0,
        "iterations": steps[0],
        "converged": bool(status == 0),
        "pinned_tol": pinned_tol,
        "attempts": attempt + 1,
        "method": f"{METHOD}; preconditioner: {used}",
        "preconditioner": used,
        "air_probe": probe,
        "pinned_state": k,
        "amg_levels": levels,
        "negatives_clipped": int(negative.sum()),
        "most_negative": most_negative,
        "residual_before_sweep": residual_before,
        "bound": bound,
        "hitting_time": H,
        "componentwise_bound": None,
        "bound_kind": _BOUND_KIND,
        # The probe's GMRES solve is the bound's hitting-time solve: it is charged to "bound" (the AIR
        # setup it shares with the pinned solve stays in "setup").
        "seconds": {"setup": t1 - t0 - in_setup, "solve": t2 - t1 - (hitting - in_setup), "bound": t3 - t2 + hitting},
    }
    if math.isinf(bound):
        info["failure"] = "the hitting-time solve did not certify a bound (GMRES did not converge on G y = 1)"
    elif status != 0:
        info["failure"] = f"GMRES did not reach its tolerance in {maxiter} iterations"
    return p, info


def pinned_direct_stationary(Q, pin: int | None = None) -> np.ndarray:
    """Readable direct reference: sparse LU (`scipy.sparse.linalg.spsolve`) of the pinned system.

    Pins state k = `pin` (p_k = 1), solves A_k x = b as in stage 2 of
    `sparse_stationary` but by SuperLU, and normalises.  Pin a state of
    large probability (e.g. `info["pinned_state"]` of `sparse_stationary`):
    x = p / p_k overflows when p_k is tiny.  This is the
    baseline of the sparse-scale benchmark; its memory grows with the LU fill-in
    (about n^1.5 on a 2-D grid).

    Parameters
    ----------
    Q
        Scipy.sparse matrix, shape (n, n), a validated irreducible generator.
    pin : int, optional
        The pinned state k (default n − 1).

    Returns
    -------
    p : ndarray
        Shape (n,), float64, Σp = 1 (rounding-level negatives possible, not clipped).
    """
    Q = sp.csr_matrix(Q, dtype=np.float64)
    n = Q.shape[0]
    if n == 1:
        return np.ones(1)
    k = n - 1 if pin is None else int(pin)
    A = (-Q.T).tocsr()
    Ak, b, keep = pinned_system(A, k)
    p = np.empty(n)
    p[keep] = spla.spsolve(Ak.tocsc(), b)
    p[k] = 1.0
    return p / p.sum()
