"""p_J(t) of a stiff projection by Radau IIA collocation, with an a posteriori ℓ1 bound (docs/theory.md §7.10).

Uniformization needs Λt mat-vecs (Λ the largest exit rate): a projection with one fast propensity
(Tyson's oscillator, a fast isomerisation) makes that 10⁷–10¹⁰.  There, z' = G z (G the generator on
J with its sinks: nonnegative off the diagonal, columns summing to 0) is stepped by SciPy's Radau IIA
(order 5, L-stable, adaptive steps; Hairer–Wanner IV.8), and the answer is *certified from the
computed solution itself*:

* on each step [t_n, t_n + h] the method's dense output is the collocation polynomial
  z̃(t_n + xh) = Σ_{j=0}^{3} a_j x^j, so the defect r(t) = z̃'(t) − G z̃(t) is a polynomial too:
  h·r = Σ_j s_j x^j with s_j = (j + 1)a_{j+1} − h G a_j (a_4 = 0), four sparse mat-vecs;
* the error e = z̃ − z solves e' = G e + r, and exp(tG) is a stochastic matrix (‖exp(tG)‖₁ = 1), so

      ‖z̃(t) − z(t)‖₁ ≤ ∫₀ᵗ ‖r(s)‖₁ ds + Σ_steps ‖z̃(t_n⁺) − z̃(t_n⁻)‖₁;

* ∫|r_i| over a step is bounded by the Bernstein form of r_i (|Σ b_k B_k| ≤ Σ |b_k| B_k and
  ∫₀¹ B_k = 1/(q + 1)) on `_PIECES` equal sub-steps (subdivision brings the Bernstein coefficients
  towards the values: 4 pieces give a bound ~4× tighter than one);
* the rounding of every computed term is added with its worst case: a sparse dot of m terms errs by
  ≤ γ_m Σ|G_ik||a_k|, so (m + 8)·u·(Σ_j (j + 1)‖a_{j+1}‖₁ + h w·|a_j|), w the column sums of |G|.

The bound never assumes the step's error estimate was right: it is the integral of a defect the
code computes.  It is typically 10²–10³ times the true error (no use is made of the decay of the fast
modes), so the tolerance handed to Radau is tightened until the bound meets the target
(`collocation`'s escalation; counted, never timed).  Negative entries of z̃ are set to 0: z ≥ 0, so
that moves z̃ towards z in every entry and keeps the bound.
"""
from __future__ import annotations

from math import comb

import numpy as np
import scipy.sparse as sp
from scipy.integrate import Radau

from sp_ode.markov.bounds import ConvergenceError

__all__ = ["collocation", "COLLOCATION_STEP_COST", "COLLOCATION_RTOL_MIN"]

_U = 2.0**-53
_PIECES = 4
#: Mat-vec equivalents charged per Radau step in the work count (its two LU solves, ~2.5 Newton
#: iterations, four defect mat-vecs): the count `transient_distribution`'s budget uses, not a time.
COLLOCATION_STEP_COST = 20
#: The tightest Radau tolerance tried (SciPy warns below 100·u).
COLLOCATION_RTOL_MIN = 1e-13
_FIRST_RTOL_FACTOR = 3e-4       # first try: rtol = target × this (the bound is ~10³ × rtol on the test chains)
_ATTEMPTS = 4


def _bernstein_pieces(q: int, pieces: int) -> np.ndarray:
    """(pieces·(q + 1), q + 1): the power coefficients on [0, 1] → Bernstein coefficients on each piece,
    each row scaled by ∫ of its basis polynomial over the piece (L/(q + 1))."""
    rows = []
    L = 1.0 / pieces
    for i in range(pieces):
        c = i * L
        shift = np.array([[comb(j, k) * c**(j - k) * L**k if j >= k else 0.0 for j in range(q + 1)]
                          for k in range(q + 1)])          # coefficients of p(c + L u) in u
        bern = np.array([[comb(k, j) / comb(q, j) if j <= k else 0.0 for j in range(q + 1)] for k in range(q + 1)])
        rows.append(L / (q + 1) * bern @ shift)
    return np.vstack(rows)


def _radau(G, z0: np.ndarray, grid: np.ndarray, rtol: float):
    """One certified Radau pass from z0 at grid[0]: (Z at `grid`, ℓ1 bound at `grid`, steps)."""
    Gc = sp.csr_array(G)
    w = np.asarray(abs(Gc).sum(axis=0)).ravel()
    m = int(np.diff(Gc.indptr).max(initial=1))
    out = np.empty((grid.size, z0.size))
    err = np.zeros(grid.size)
    j, t0 = 0, float(grid[0])              # the span starts at grid[0] (after a time event, not at 0)
    while j < grid.size and grid[j] <= t0:
        out[j] = z0
        j += 1
    if j == grid.size:
        return out, err, 0
    solver = Radau(lambda t, z: Gc @ z, t0, z0.copy(), float(grid[-1]), jac=Gc, rtol=rtol, atol=rtol * 1e-3)
    M = None
    bound, steps, prev_end = 0.0, 0, z0
    while j < grid.size:
        msg = solver.step()
        if solver.status == "failed":
            raise ConvergenceError(f"Radau collocation failed on the projection at t = {solver.t:.6g}: {msg}",
                                   bound=bound, info={"steps": steps, "rtol": rtol})
        steps += 1
        d = solver.dense_output()
        h = float(d.h)
        a = [d.y_old] + [d.Q[:, i] for i in range(d.Q.shape[1])]
        q = len(a) - 1
        if M is None:
            M = _bernstein_pieces(q, _PIECES)
        norms = [float(np.abs(v).sum()) for v in a]
        S = np.empty((q + 1, z0.size))
        rnd = 0.0
        for i in range(q + 1):
            Ga = Gc @ a[i]
            S[i] = ((i + 1) * a[i + 1] if i < q else 0.0) - h * Ga
            rnd += (m + 8) * _U * ((i + 1) * norms[i + 1] if i < q else 0.0) + (m + 8) * _U * h * float(w @ np.abs(a[i]))
        end = sum(a)
        # the defect's integral, the rounding of its terms and of the transform, the jump from the last step
        step = float(np.abs(M @ S).sum()) + rnd + (q + 2) * _U * float(np.abs(S).sum())
        jump = float(np.abs(d.y_old - prev_end).sum()) + (q + 1) * _U * sum(norms)
        bound += step + jump
        prev_end = end
        while j < grid.size and grid[j] <= solver.t:
            out[j] = d(grid[j])
            err[j] = bound + (q + 1) * _U * sum(norms)          # evaluating z̃(t) rounds too
            j += 1
    np.maximum(out, 0.0, out=out)
    return out, err, steps


def collocation(G, z0: np.ndarray, grid: np.ndarray, target: float):
    """(Z (T, N) at `grid`, ℓ1 bound (T,), Radau steps summed over the attempts, rtol of the kept attempt).

    `G` (N, N) generates z' = G z (nonnegative off the diagonal, columns summing to 0), `z0` the law at grid[0].
    The Radau tolerance starts at `target`·3e-4 and is cut (by the bound's excess^1.4, at least 10×) while the
    bound at the last time exceeds `target` and still halves with each cut, down to `COLLOCATION_RTOL_MIN`; the last attempt is returned
    whatever its bound (the caller reports it)."""
    rtol = min(max(target * _FIRST_RTOL_FACTOR, COLLOCATION_RTOL_MIN), 1e-3)
    spent, last = 0, np.inf
    for _ in range(_ATTEMPTS):
        Z, err, steps = _radau(G, z0, grid, rtol)
        spent += steps
        # met, at the floor, or no longer falling with rtol (the bound is then held by something else — the
        # rounding floor u·‖G‖·t): stop, and the caller reports the bound as it is
        if err[-1] <= target or rtol <= COLLOCATION_RTOL_MIN or err[-1] > 0.5 * last:
            break
        last = float(err[-1])
        # the bound falls like rtol^0.74 on the test chains (docs/theory.md §7.10): cut by the excess^1.4
        rtol = max(rtol * min(0.1, (0.5 * target / err[-1]) ** 1.4), COLLOCATION_RTOL_MIN)
    return Z, err, spent, rtol
