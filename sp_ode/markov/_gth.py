"""Grassmann–Taksar–Heyman (GTH) elimination for p_st (Grassmann, Taksar & Heyman 1985).

Gaussian elimination on Q in which every pivot s_k = Σ_{j>k} A[k, j] is recomputed
as a sum of (nonnegative) off-diagonal rates instead of read from the diagonal.
Every update adds nonnegative products to nonnegative entries, so no
cancellation happens and each p_i has componentwise relative error O(n·eps),
even for nearly completely decomposable chains and tails of 1e-200.

Three implementations of the same arithmetic:

- :func:`gth_reference` — the textbook loop (readable; QuantEcon's ``gth_solve``);
- :func:`gth_blocked` — the same eliminations delayed over panels of ``block``
  states so the trailing update is one matrix product (BLAS-3), as in blocked
  right-looking LU; each entry receives exactly the same nonnegative terms;
- :func:`gth_batched` — the textbook loop vectorised over a stack of small
  generators (…, n, n).
"""
from __future__ import annotations

import numpy as np

# Back substitution grows x by the ratio p_0/p_{n−1}, which can pass 1e308 on chains
# whose p spans more than the float range; rescale before it overflows (entries
# below the range then underflow to 0, the correctly rounded answer).
_RESCALE_AT = 1e200


def _back_substitute(A: np.ndarray) -> np.ndarray:
    """x_{n−1} = 1, x_k = Σ_{i>k} x_i · A[i, k] (A[k+1:, k] holds the scaled column)."""
    n = A.shape[0]
    x = np.zeros(n)
    x[n - 1] = 1.0
    for k in range(n - 2, -1, -1):
        x[k] = x[k + 1:] @ A[k + 1:, k]
        if x[k] > _RESCALE_AT:
            x[k:] /= x[k]
    return x / x.sum()


def gth_reference(Q: np.ndarray) -> np.ndarray:
    """Textbook GTH (one state eliminated per step).  Q must be an irreducible generator."""
    A = np.array(Q, dtype=np.float64)
    n = A.shape[0]
    for k in range(n - 1):
        scale = A[k, k + 1:].sum()
        A[k + 1:, k] /= scale
        A[k + 1:, k + 1:] += np.outer(A[k + 1:, k], A[k, k + 1:])
    return _back_substitute(A)


def gth_blocked(Q: np.ndarray, block: int = 128) -> np.ndarray:
    """Blocked GTH: panels of `block` eliminations, trailing update by one GEMM.

    Within a panel, state k's row A[k, k+1:] and column A[k+1:, k] are brought
    up to date with the panel's earlier rank-1 terms (C[:, :j] R[:j, :]) just
    before k is eliminated; the trailing block then receives Σ c_k r_kᵀ at once.
    Diagonal entries are never read (pivots come from off-diagonal sums), so
    the GEMM may overwrite them freely.
    """
    A = np.array(Q, dtype=np.float64)
    n = A.shape[0]
    for k0 in range(0, n - 1, block):
        k1 = min(k0 + block, n - 1)
        b = k1 - k0
        C = np.zeros((n, b))  # scaled columns c_k (rows > k)
        R = np.zeros((b, n))  # rows r_k (columns > k)
        for j, k in enumerate(range(k0, k1)):
            if j:
                A[k, k + 1:] += C[k, :j] @ R[:j, k + 1:]
                A[k + 1:, k] += C[k + 1:, :j] @ R[:j, k]
            scale = A[k, k + 1:].sum()
            A[k + 1:, k] /= scale
            C[k + 1:, j] = A[k + 1:, k]
            R[j, k + 1:] = A[k, k + 1:]
        if k1 < n:
            A[k1:, k1:] += C[k1:] @ R[:, k1:]
    return _back_substitute(A)


def gth_batched(Q: np.ndarray) -> np.ndarray:
    """GTH over a stack (B, n, n) of irreducible generators, vectorised over B."""
    A = np.array(Q, dtype=np.float64)
    B, n, _ = A.shape
    for k in range(n - 1):
        scale = A[:, k, k + 1:].sum(axis=-1)
        A[:, k + 1:, k] /= scale[:, None]
        A[:, k + 1:, k + 1:] += A[:, k + 1:, k, None] * A[:, k, None, k + 1:]
    x = np.zeros((B, n))
    x[:, n - 1] = 1.0
    for k in range(n - 2, -1, -1):
        x[:, k] = np.einsum("bi,bi->b", x[:, k + 1:], A[:, k + 1:, k])
        big = x[:, k] > _RESCALE_AT
        if big.any():
            x[big, k:] /= x[big, k, None]
    return x / x.sum(axis=-1, keepdims=True)
