"""Chemical master equation (CME) generators for two species on a truncated grid.

Two species X and Y with copy numbers (x, y) ∈ {0, …, N−1}² react by

    ∅ → X   at rate  α₁ / (1 + (y/K)^h)      (production of X, repressed by Y)
    X → ∅   at rate  δ₁ · x                  (degradation)
    ∅ → Y   at rate  α₂ / (1 + (x/K)^h)      (production of Y, repressed by X)
    Y → ∅   at rate  δ₂ · y

— the genetic toggle switch of Gardner, Cantor & Collins (Nature 403, 2000) in its
stochastic (CME) form, the standard two-species test problem of finite state
projection (Munsky & Khammash, J. Chem. Phys. 124, 2006).  With `repression=None`
production is constant (α₁, α₂): two independent birth–death species whose
stationary law on the box is exactly a product of two Poisson(α_s/δ_s) laws
truncated to {0, …, N−1} (detailed balance holds on the box because births are
simply blocked at x = N−1 or y = N−1).

The generator follows docs/theory.md §2: state (x, y) has index `x * N + y`;
`Q[i, j] ≥ 0` is the rate i → j and rows sum to zero, so the CME is dp/dt = Qᵀp
and its stationary distribution solves Qᵀp = 0, 1ᵀp = 1.  Reactions that would
leave the box are dropped (a reflecting truncation, so Q stays a generator).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sp_ode.core.memory import check_memory
from sp_ode.core.validation import check_nonnegative, check_positive, check_positive_int

__all__ = ["cme_two_species", "estimated_bytes"]

# Peak bytes per state while building Q: the int64 grid coordinates, four COO triplets
# (int64 row, int64 column, float64 rate) and their concatenation, the CSR copy.  Measured
# peak RSS growth at N = 1000 stays below this (docs/bench/stationary.md).
_BYTES_PER_STATE = 400


def estimated_bytes(N: int) -> int:
    """Estimated peak memory (bytes) of [`cme_two_species`][sp_ode.markov.cme.cme_two_species] on the N×N grid: 400·N²."""
    return _BYTES_PER_STATE * int(N) ** 2


def _pair(name: str, value) -> tuple[float, float]:
    if np.ndim(value) == 0:
        value = (value, value)
    if len(value) != 2:
        raise ValueError(f"`{name}` must be a number or a pair (X, Y); got {value!r}.")
    return check_positive(f"{name}[0]", value[0]), check_positive(f"{name}[1]", value[1])


def cme_two_species(
    N: int,
    *,
    production: float | tuple[float, float] | None = None,
    degradation: float | tuple[float, float] = 1.0,
    repression: float | tuple[float, float] | None = None,
    max_bytes: int | None = None,
) -> sp.csr_array:
    """Generator of the two-species toggle-switch CME on the N×N grid, as CSR.

    Parameters
    ----------
    N : int
        Copy numbers 0 … N−1 per species; n = N² states (N ≥ 2).
    production : float or (float, float), optional
        α₁, α₂ > 0.  Default `N / 2` for both, which (with `degradation=1`)
        centres the mass in the box at any N and leaves the box edges ≥ 2 means away.
    degradation : float or (float, float)
        δ₁, δ₂ > 0 (per molecule).
    repression : (K, h) or None
        Hill constant K > 0 and coefficient h ≥ 0 of mutual repression; `None`
        (default) means constant production (independent species, closed form above).
    max_bytes : int, optional
        Refuse to build when `estimated_bytes` exceeds this (default: the memory
        budget of `sp_ode.core.memory.check_memory`), instead of allocating until the
        process is killed.

    Returns
    -------
    Q : scipy.sparse.csr_array, shape (N², N²), float64
        `Q[i, j]` the rate from state i = x·N + y to state j; rows sum to zero
        (diagonal = −Σ off-diagonal, so to rounding); at most 5 entries per row.

    Raises
    ------
    TypeError
        If `N` is not an integer or a rate is not a real number.
    ValueError
        If `N` < 2, a rate is not finite and positive, or `repression` is malformed.
    MemoryBudgetError
        If the estimated memory exceeds `max_bytes` or the budget (the message names N, n and the
        estimate); a ValueError, not a MemoryError: nothing was allocated.

    Examples
    --------
    >>> Q = cme_two_species(50, production=20.0, repression=(20.0, 2.0))
    >>> Q.shape
    (2500, 2500)
    """
    N = check_positive_int("N", N)
    if N < 2:
        raise ValueError(f"`N` must be >= 2 (at least two copy numbers per species); got {N}.")
    limit = None if max_bytes is None else check_positive_int("max_bytes", max_bytes)
    check_memory(estimated_bytes(N), limit=limit, remedy="Use a smaller N (or raise `max_bytes`).",
                 what=f"`N` = {N} (n = N² = {N * N:.3g} states, {_BYTES_PER_STATE}·N² bytes)")
    a1, a2 = _pair("production", N / 2 if production is None else production)
    d1, d2 = _pair("degradation", degradation)
    if repression is not None:
        if np.ndim(repression) != 1 or len(repression) != 2:
            raise ValueError(f"`repression` must be None or a pair (K, h); got {repression!r}.")
        K = check_positive("repression[0] (K)", repression[0])
        h = check_nonnegative("repression[1] (h)", repression[1])

    counts = np.arange(N, dtype=np.float64)
    if repression is None:
        prod_x = np.full(N, a1)  # production of X as a function of y
        prod_y = np.full(N, a2)  # production of Y as a function of x
    else:
        prod_x = a1 / (1.0 + (counts / K) ** h)
        prod_y = a2 / (1.0 + (counts / K) ** h)

    x, y = np.divmod(np.arange(N * N, dtype=np.int64), N)  # index = x * N + y
    rows, cols, vals = [], [], []

    def add(mask, step, rate):
        i = np.flatnonzero(mask)
        rows.append(i)
        cols.append(i + step)
        vals.append(rate[i])

    add(x < N - 1, N, prod_x[y])          # X birth: x → x+1
    add(x > 0, -N, d1 * x.astype(np.float64))   # X death
    add(y < N - 1, 1, prod_y[x])          # Y birth: y → y+1
    add(y > 0, -1, d2 * y.astype(np.float64))   # Y death
    rows, cols, vals = np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)
    out = np.bincount(rows, weights=vals, minlength=N * N)
    diag = np.arange(N * N, dtype=np.int64)
    Q = sp.csr_array(
        (np.concatenate([vals, -out]), (np.concatenate([rows, diag]), np.concatenate([cols, diag]))),
        shape=(N * N, N * N),
    )
    Q.sum_duplicates()
    Q.sort_indices()
    return Q
