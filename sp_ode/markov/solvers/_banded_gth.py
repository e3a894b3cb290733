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

The elimination runs on a strided (n, n) view of the band array — A[i, j] = B[i, j − i + b] sits
at flat offset i·(w − 1) + j + b — so each step is one dense rank-1 update of a b × b window, and
from bandwidth 32 on the steps are delayed over panels of 32 states with one matrix product for
the trailing window (BLAS-3, as blocked dense GTH); a readable loop of explicit band offsets
(`reference=True`) is kept beside them and the test compares the three.

The elimination is trusted only while every stored entry stays well inside
the normal float range (the same sufficient test as the dense path, see
`sp_ode.markov.solvers._gth.elimination_is_exact_range`); otherwise the result
is reported as unreliable (the caller escalates) instead of silently losing
underflowed terms.  Back substitution carries exact binary exponents, so
entries far below 1e-308 keep their relative accuracy.
"""
from __future__ import annotations

import contextlib

import numpy as np
import scipy.sparse as sp
from numpy.lib.stride_tricks import as_strided
from scipy.sparse.csgraph import reverse_cuthill_mckee

from sp_ode.markov.solvers._gth import normalise_exponents

try:  # optional: without it BLAS keeps its own thread count
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover
    threadpool_limits = None

__all__ = ["band_plan", "banded_gth"]

_LOW = 2.0**-480       # stored entries at or above this keep every product ≥ 2⁻⁹⁶⁰ (normal)
_HIGH = 2.0**960
_HIGH_ROW_SUM = 2.0**60
# Panel of the blocked elimination, used from this bandwidth on: at b = 100 and 200 (2-D CME grids of
# 10⁴ and 4·10⁴ states) it is 2.5× and 5.7× faster than the unblocked one; at b = 50 they tie
# (docs/bench/stationary_default.md).
_PANEL = 32


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


def _band_array(Q, perm: np.ndarray, b: int) -> tuple[np.ndarray, bool]:
    """The off-diagonal rates of Q[perm][:, perm] in band storage B[i, j − i + b], and the input range guard."""
    Q = sp.coo_array(sp.csr_array(Q)[perm][:, perm])
    n = Q.shape[0]
    off = Q.row != Q.col
    rows, cols, vals = Q.row[off], Q.col[off], Q.data[off].astype(np.float64)
    positive = vals[vals > 0]
    # Range guard on the input (as for dense GTH): tiny rates or huge row sums void the promise.
    row_sums = np.bincount(rows, weights=np.abs(vals), minlength=n)
    reliable = bool(positive.size == 0 or positive.min() >= 2.0**-960) and bool(row_sums.max(initial=0.0) <= _HIGH_ROW_SUM)
    B = np.zeros((n, 2 * b + 1))
    B[rows, cols - rows + b] = vals
    return B, reliable


def _eliminate_band(B: np.ndarray, b: int) -> None:
    """GTH eliminations in place on the band array, through a strided (n, n) view of it.

    A[i, j] = B[i, j − i + b] sits at flat offset i·(w − 1) + j + b (w = 2b + 1), so
    `as_strided` with strides ((w − 1)·8, 8) presents B as the matrix A itself.  The view
    is exact on the band |i − j| ≤ b, and every slice used below stays inside it: eliminating
    k touches rows and columns k+1 … k+b only.  Each step is then three vector operations
    and one dense rank-1 update of a b × b window — the same nonnegative terms, in the same
    order, as `_eliminate_band_reference`, at a fraction of its indexing cost.  The
    diagonal receives the returns i → … → i; it is never read (pivots are off-diagonal sums).
    """
    n, w = B.shape
    A = as_strided(B.reshape(-1)[b:], shape=(n, n), strides=((w - 1) * B.itemsize, B.itemsize), writeable=True)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        for k in range(n - 1):
            hi = min(n, k + b + 1)
            row = A[k, k + 1:hi]
            col = A[k + 1:hi, k]
            col /= row.sum()              # GTH pivot: a sum of nonnegative rates, never a difference
            A[k + 1:hi, k + 1:hi] += col[:, None] * row[None, :]
    B[:, b] = 0.0


def _eliminate_band_blocked(B: np.ndarray, b: int, block: int = _PANEL) -> None:
    """The eliminations of `_eliminate_band` delayed over panels of `block` states (BLAS-3).

    As in dense blocked GTH (`sp_ode.markov.solvers._gth.gth_blocked`), state k's row and
    column are brought up to date with the panel's earlier rank-1 terms just before k is
    eliminated, and the trailing window (rows and columns k1 … k1 + b − 1 after a panel
    ending at k1, inside the band) receives the panel's terms as one matrix product.  The
    panel arrays C, R hold zeros outside the band, so nothing outside it is ever written.
    Each entry receives the same nonnegative terms as in the unblocked elimination.
    """
    n, w = B.shape
    A = as_strided(B.reshape(-1)[b:], shape=(n, n), strides=((w - 1) * B.itemsize, B.itemsize), writeable=True)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        for k0 in range(0, n - 1, block):
            k1 = min(k0 + block, n - 1)
            hi = min(n, k1 + b)                      # the last row/column the panel touches, + 1
            C = np.zeros((hi - k0, k1 - k0))          # scaled columns c_k, rows in local coordinates
            R = np.zeros((k1 - k0, hi - k0))          # rows r_k, columns in local coordinates
            for j, k in enumerate(range(k0, k1)):
                hk = min(n, k + b + 1)
                a, z = k + 1 - k0, hk - k0
                if j:
                    A[k, k + 1:hk] += C[k - k0, :j] @ R[:j, a:z]
                    A[k + 1:hk, k] += C[a:z, :j] @ R[:j, k - k0]
                col = A[k + 1:hk, k]
                col /= A[k, k + 1:hk].sum()
                C[a:z, j] = col
                R[j, a:z] = A[k, k + 1:hk]
            if k1 < hi:
                A[k1:hi, k1:hi] += C[k1 - k0:] @ R[:, k1 - k0:]
    B[:, b] = 0.0


def _eliminate_band_reference(B: np.ndarray, b: int) -> None:
    """The same eliminations written with explicit band offsets (readable; checked against the strided one)."""
    n = B.shape[0]
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        for k in range(n - 1):
            hi = min(n, k + b + 1)
            idx = np.arange(k + 1, hi)      # rows/columns k+1 … hi−1 can be touched
            row = B[k, b + 1:b + 1 + idx.size]   # A[k, k+1:hi]
            col = B[idx, b - (idx - k)] / row.sum()   # A[k+1:hi, k] / s_k
            B[idx, b - (idx - k)] = col
            offs = (idx[None, :] - idx[:, None]) + b
            B[idx[:, None], offs] += np.outer(col, row)
    B[:, b] = 0.0


def banded_gth(Q, perm: np.ndarray, b: int, *, log: bool = False, reference: bool = False) -> tuple[np.ndarray, dict]:
    """p_st (or log p_st) of an irreducible sparse generator by GTH in band storage.

    Parameters
    ----------
    Q
        Scipy.sparse (n, n), a validated irreducible generator
    perm, b : from `band_plan`
    reference : bool
        Eliminate with the readable loop (`_eliminate_band_reference`) instead of the strided one.

    Returns
    -------
    p : ndarray (n,) in the original state order
    info : dict
        `bandwidth`, `reliable` (False when an entry left the
        range in which no update term can underflow; the answer then carries no
        componentwise promise and the caller must not accept it).
    """
    B, reliable = _band_array(Q, perm, b)
    n = B.shape[0]
    if reference:
        _eliminate_band_reference(B, b)
    else:
        # one BLAS thread: the panel products are small, and threads contending for a shared machine
        # made them slower (the same choice as the sparse solver, sp_ode.markov.solvers._sparse)
        limits = threadpool_limits(limits=1, user_api="blas") if threadpool_limits else contextlib.nullcontext()
        with limits:
            (_eliminate_band_blocked if b >= _PANEL else _eliminate_band)(B, b)
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

