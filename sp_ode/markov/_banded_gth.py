"""GTH on a band: subtraction-free p_st of large sparse chains with a small bandwidth (docs/theory.md §7.2).

Gaussian elimination without pivoting never fills outside the band of the
matrix (|i − j| ≤ b), and GTH is Gaussian elimination without pivoting whose
pivots are recomputed as sums of nonnegative off-diagonal rates.  So after a
bandwidth-reducing symmetric permutation (reverse Cuthill–McKee on the pattern
of Q + Qᵀ) the whole elimination lives in an (n, 2b + 1) band array: memory
8·n·(2b + 1) bytes and O(n·b²) flops instead of 8n² and O(n³).  Every entry of
the band receives exactly the nonnegative terms it receives in dense GTH, so the
componentwise accuracy of GTH carries over unchanged — in particular on nearly
completely decomposable chains (blocks coupled by δ = 1e-15), where Krylov and
multigrid solvers lose the small blocks' mass while reporting tiny residuals.
One-dimensional chains (birth–death, KMR) have b = 1; a k × k grid has b ≈ k.

The elimination is trusted only while every stored entry stays well inside
the normal float range (the same sufficient test as the dense path, see
`sp_ode.markov._gth.elimination_is_exact_range`); otherwise the result
is reported as unreliable (the caller escalates) instead of silently losing
underflowed terms.  Back substitution carries exact binary exponents, so
entries far below 1e-308 keep their relative accuracy.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from sp_ode.markov._gth import normalise_exponents

__all__ = ["band_plan", "banded_gth"]

_LOW = 2.0**-480       # stored entries at or above this keep every product ≥ 2⁻⁹⁶⁰ (normal)
_HIGH = 2.0**960
_HIGH_ROW_SUM = 2.0**60


def band_plan(Q) -> tuple[np.ndarray, int, int]:
    """(permutation, bandwidth b, bytes of the band array) for a sparse generator Q.

    The permutation is reverse Cuthill–McKee on the symmetrised pattern: it
    keeps the band narrow for chains and grids, which is where banded GTH pays.
    """
    Q = sp.csr_array(Q)
    n = Q.shape[0]
    pattern = sp.csr_matrix((Q != 0).astype(np.int8) + (Q != 0).astype(np.int8).T)
    perm = reverse_cuthill_mckee(pattern, symmetric_mode=True)
    coo = sp.coo_array(Q[perm][:, perm])
    off = coo.row != coo.col
    b = int(np.max(np.abs(coo.row[off] - coo.col[off]), initial=0))
    return np.asarray(perm), b, 8 * n * (2 * b + 1)


def banded_gth(Q, perm: np.ndarray, b: int, *, log: bool = False) -> tuple[np.ndarray, dict]:
    """p_st (or log p_st) of an irreducible sparse generator by GTH in band storage.

    Parameters
    ----------
    Q
        Scipy.sparse (n, n), a validated irreducible generator
    perm, b : from `band_plan`

    Returns
    -------
    p : ndarray (n,) in the original state order
    info : dict
        `bandwidth`, `reliable` (False when an entry left the
        range in which no update term can underflow; the answer then carries no
        componentwise promise and the caller must not accept it).
    """
    Q = sp.coo_array(sp.csr_array(Q)[perm][:, perm])
    n = Q.shape[0]
    off = Q.row != Q.col
    rows, cols, vals = Q.row[off], Q.col[off], Q.data[off].astype(np.float64)
    positive = vals[vals > 0]
    # Range guard on the input (as for dense GTH): tiny rates or huge row sums void the promise.
    row_sums = np.bincount(rows, weights=np.abs(vals), minlength=n)
    reliable = bool(positive.size == 0 or positive.min() >= 2.0**-960) and bool(row_sums.max(initial=0.0) <= _HIGH_ROW_SUM)
    w = 2 * b + 1
    B = np.zeros((n, w))                # B[i, j − i + b] = A[i, j]
    B[rows, cols - rows + b] = vals
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        for k in range(n - 1):
            hi = min(n, k + b + 1)
            L = hi - k - 1                  # rows/columns k+1 … hi−1 can be touched
            row = B[k, b + 1:b + 1 + L]     # A[k, k+1:hi]
            idx = np.arange(k + 1, hi)
            col = B[idx, b - (idx - k)]     # A[k+1:hi, k]
            scale = row.sum()               # GTH pivot: a sum of nonnegative rates, never a difference
            col = col / scale
            B[idx, b - (idx - k)] = col
            ci = np.flatnonzero(col > 0)
            rj = np.flatnonzero(row > 0)
            if ci.size and rj.size:
                I, J = idx[ci], idx[rj]
                offs = (J[None, :] - I[:, None]) + b
                upd = col[ci, None] * row[None, rj]
                diag = offs == b            # returns to i itself land on the diagonal, never read
                B[I[:, None], offs] += np.where(diag, 0.0, upd)
    stored = B[B > 0]
    if stored.size and (not np.all(np.isfinite(B)) or stored.max() >= _HIGH or stored.min() < _LOW):
        reliable = False
    m, e = _back_substitute_band(B, b)
    p = normalise_exponents(m, e, log=log)
    out = np.empty(n)
    out[perm] = p
    return out, {"bandwidth": b, "reliable": reliable}


def _back_substitute_band(B: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray]:
    """x_{n−1} = 1, x_k = Σ_{k<i≤k+b} x_i A[i, k] as mantissas m ∈ [1/2, 1) and exponents e (x = m·2^e)."""
    n = B.shape[0]
    m = np.zeros(n)
    e = np.zeros(n, dtype=np.int64)
    m[n - 1], e[n - 1] = 0.5, 1
    for k in range(n - 2, -1, -1):
        idx = np.arange(k + 1, min(n, k + b + 1))
        t = m[idx] * B[idx, b - (idx - k)]
        pos = t > 0
        if not pos.any():  # cannot happen for an irreducible Q: some later state feeds k
            continue
        mu, g = np.frexp(t[pos])
        f = e[idx][pos] + g
        E = int(f.max())
        m[k], gk = np.frexp(np.ldexp(mu, f - E).sum())
        e[k] = E + gk
    return m, e

