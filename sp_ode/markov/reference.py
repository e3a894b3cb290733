"""Hard reference chains with exact stationary distributions, for tests and benchmarks.

Two families where floating-point solvers of Qᵀp = 0, 1ᵀp = 1 lose accuracy
(docs/theory.md §6), each returned with its exact p as `fractions.Fraction`:

* `ncd_chain` — a nearly completely decomposable chain: strongly connected
  blocks coupled by rates of size δ.  The diagonal −(Σ rates) absorbs δ into O(1)
  numbers, so LU/SVD on Qᵀ lose about log10(1/δ) digits; GTH (subtraction-free)
  does not.
* `birth_death_tail` — a birth–death chain whose p_k decays geometrically to
  ~1e-200: normwise-accurate solvers return the tail with no correct digits.

Exactness convention.  A generator is defined by its off-diagonal rates.  The
exact reference is the stationary distribution of the chain whose rates are the
float64 off-diagonal entries of the returned Q *exactly* (`Fraction(float)` is
exact), with diagonal −Σ_j Q_ij computed in rational arithmetic.  The float
diagonal of the returned Q is that sum rounded once; a solver that uses it
inherits the rounding, which is part of what the accuracy benchmark measures.

Exact answers come from `exact_stationary`: Gaussian elimination over the
rationals on the system Qᵀp = 0 with one equation replaced by 1ᵀp = 1 — an
independent method (it shares nothing with GTH).
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp

__all__ = ["ncd_chain", "birth_death_tail", "exact_stationary", "componentwise_error", "kmr_chain",
           "exact_birth_death", "reversible_grids"]


def exact_stationary(Q) -> list[Fraction]:
    """Exact stationary distribution of an irreducible float generator.

    Plainly: with A = Qᵀ in rationals (off-diagonal rates exact, diagonal
    the exact negative row sum), replace the last equation of A p = 0 by 1ᵀp = 1 and
    eliminate with Fractions.  Irreducibility makes the replaced matrix nonsingular
    (docs/theory.md §3.1 (T1): the bordered matrix has full column rank).

    Parameters
    ----------
    Q : array_like, shape (n, n)
        Generator (rate i→j at `Q[i, j]`), n ≤ ~40 (cost is O(n³) big-rational ops).

    Returns
    -------
    list of Fraction, length n
        p with Qᵀp = 0 and Σp = 1 exactly.

    Raises
    ------
    ValueError
        If the replaced system is singular (Q not irreducible).
    """
    Q = np.asarray(Q, dtype=np.float64)
    n = Q.shape[0]
    rates = [[Fraction(float(Q[i, j])) if i != j else Fraction(0) for j in range(n)] for i in range(n)]
    # Row k of the system is equation k of Qᵀp = 0: Σ_i Q[i, k] p_i = 0.
    M = [[rates[i][k] for i in range(n)] for k in range(n)]
    for k in range(n):
        M[k][k] = -sum(rates[k])
    M[n - 1] = [Fraction(1)] * n
    b = [Fraction(0)] * (n - 1) + [Fraction(1)]
    for col in range(n):
        piv = next((r for r in range(col, n) if M[r][col] != 0), None)
        if piv is None:
            raise ValueError("`Q` must be irreducible: the bordered system is singular.")
        if piv != col:
            M[col], M[piv] = M[piv], M[col]
            b[col], b[piv] = b[piv], b[col]
        pivot_row, pivot = M[col], M[col][col]
        for r in range(col + 1, n):
            factor = M[r][col] / pivot
            if factor:
                row = M[r]
                for c in range(col, n):
                    row[c] -= factor * pivot_row[c]
                b[r] -= factor * b[col]
    p = [Fraction(0)] * n
    for r in range(n - 1, -1, -1):
        s = b[r] - sum(M[r][c] * p[c] for c in range(r + 1, n))
        p[r] = s / M[r][r]
    return p


def ncd_chain(delta: float, *, n_blocks: int = 3, block_size: int = 4) -> tuple[np.ndarray, list[Fraction]]:
    """A nearly completely decomposable generator coupled by δ, with its exact p.

    States are `n_blocks` blocks of `block_size`.  Inside a block every pair is
    joined by an O(1) rate (1 + ((3i + 5j) mod 7))/4 ∈ [0.25, 1.75] (binary fractions,
    exact in float).  Block b's last state jumps to block b+1's first state at rate
    δ·(1 + b), and back at rate 2δ (cyclically), so the chain is irreducible and,
    as δ → 0, decomposes into the blocks.  Deterministic: no random numbers.

    Parameters
    ----------
    delta : float
        Coupling, 0 < δ ≤ 1 (the benchmark sweeps 1e-4 … 1e-15).
    n_blocks, block_size : int
        Layout; n = n_blocks·block_size states (default 12).

    Returns
    -------
    Q : ndarray, shape (n, n), float64
        The generator; rows sum to zero up to one rounding of the diagonal.
    p_exact : list of Fraction, length n
        The exact stationary distribution (module docstring: exactness convention).

    Raises
    ------
    ValueError
        If δ is not in (0, 1] or the layout is smaller than 2 blocks of 2 states.
    """
    delta = float(delta)
    if not 0.0 < delta <= 1.0:
        raise ValueError(f"`delta` must be in (0, 1]; got {delta}.")
    if n_blocks < 2 or block_size < 2:
        raise ValueError(f"need n_blocks >= 2 and block_size >= 2; got {n_blocks}, {block_size}.")
    n = n_blocks * block_size
    Q = np.zeros((n, n))
    for b in range(n_blocks):
        lo = b * block_size
        for i in range(lo, lo + block_size):
            for j in range(lo, lo + block_size):
                if i != j:
                    Q[i, j] = (1 + ((3 * i + 5 * j) % 7)) / 4
        last, nxt = lo + block_size - 1, ((b + 1) % n_blocks) * block_size
        Q[last, nxt] += delta * (1 + b)
        Q[nxt, last] += 2 * delta
    np.fill_diagonal(Q, 0.0)
    np.fill_diagonal(Q, -Q.sum(axis=1))
    return Q, exact_stationary(Q)


def birth_death_tail(n: int = 26, *, birth: float = 1.0, death: float = 1e8) -> tuple[np.ndarray, list[Fraction]]:
    """A birth–death chain with a geometric tail, and its exact p (closed form).

    Rates k → k+1 = `birth`, k → k−1 = `death`.  Detailed balance (docs/theory.md §6) gives
    p_k ∝ (birth/death)^k exactly, computed here in Fractions of the float rates.  The
    defaults reach p_{n−1} ≈ 1e-200.

    Parameters
    ----------
    n : int
        Number of states, ≥ 2.
    birth, death : float
        Positive rates.

    Returns
    -------
    Q : ndarray, shape (n, n), float64
    p_exact : list of Fraction, length n

    Raises
    ------
    ValueError
        If n < 2 or a rate is not positive, or the tail would underflow float64.
    """
    if n < 2:
        raise ValueError(f"`n` must be >= 2; got {n}.")
    if not (birth > 0 and death > 0):
        raise ValueError(f"`birth` and `death` must be > 0; got {birth}, {death}.")
    r = Fraction(float(birth)) / Fraction(float(death))
    weights = [r**k for k in range(n)]
    total = sum(weights)
    p_exact = [w / total for w in weights]
    if float(min(p_exact)) < np.finfo(np.float64).tiny:
        raise ValueError(f"p_exact underflows float64 (min {float(min(p_exact)):.1e}); lower `n` or the ratio.")
    Q = np.zeros((n, n))
    idx = np.arange(n - 1)
    Q[idx, idx + 1] = float(birth)
    Q[idx + 1, idx] = float(death)
    np.fill_diagonal(Q, -Q.sum(axis=1))
    return Q, p_exact


def componentwise_error(p, p_exact) -> float:
    """max_i |p_i − p_exact_i| / p_exact_i, evaluated exactly and rounded once.

    Parameters
    ----------
    p : array_like, shape (n,)
        A computed distribution (float).
    p_exact : sequence of Fraction, length n
        The exact one (all entries > 0).
    """
    p = np.asarray(p, dtype=np.float64).ravel()
    return float(max(abs(Fraction(float(x)) - e) / e for x, e in zip(p, p_exact)))


def kmr_chain(N: int, eps: float) -> tuple[list[float], list[float]]:
    """(up, down) rates of the KMR-type birth–death chain of N + 1 states with mutation rate ε (a deep valley).

    From QuantEcon's KMR test matrices, as a continuous-time birth–death chain; exact p_st by
    `exact_birth_death`.
    """
    up = [eps / 2] + [(N - n) / N * (eps / 2 + (1 - eps) * (n / (N - 1) > 1 / 3)) for n in range(1, N)]
    down = [n / N * (eps / 2 + (1 - eps) * ((n - 1) / (N - 1) < 1 / 3)) for n in range(1, N)] + [eps / 2]
    return up, down


def exact_birth_death(up, down) -> list[Fraction]:
    """p_k ∝ Π_{i<k} λ_i / μ_{i+1}, in exact rationals of the float rates."""
    w = [Fraction(1)]
    for lam, mu in zip(up, down):
        w.append(w[-1] * Fraction(lam) / Fraction(mu))
    total = sum(w)
    return [x / total for x in w]


def reversible_grids(k: int, delta: float, seed: int = 0):
    """(Q sparse, p_st) of two k×k grids joined by one pair of rates ∝ `delta` (nearly decoupled).

    Rates Q_ij = exp((V_i − V_j)/2) on grid edges make the chain reversible with
    p_st ∝ exp(−V) exactly, however small `delta` (docs/theory.md §6).
    """
    rng = np.random.default_rng(seed)
    n = 2 * k * k
    V = rng.uniform(0.0, 3.0, size=n)
    rows, cols, vals = [], [], []
    for block in range(2):
        for i in range(k):
            for j in range(k):
                s = block * k * k + i * k + j
                for di, dj in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                    ii, jj = i + di, j + dj
                    if 0 <= ii < k and 0 <= jj < k:
                        t = block * k * k + ii * k + jj
                        rows.append(s)
                        cols.append(t)
                        vals.append(np.exp((V[s] - V[t]) / 2))
    a, b = k * k - 1, k * k  # the bridge between the two grids
    rows += [a, b]
    cols += [b, a]
    vals += [delta * np.exp((V[a] - V[b]) / 2), delta * np.exp((V[b] - V[a]) / 2)]
    R = sp.csr_array((vals, (rows, cols)), shape=(n, n))
    Q = R - sp.diags_array(np.asarray(R.sum(axis=1)).ravel())
    w = np.exp(-(V - V.min()))
    return sp.csr_array(Q), w / w.sum()
