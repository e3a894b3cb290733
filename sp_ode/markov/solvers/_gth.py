"""Grassmann–Taksar–Heyman (GTH) elimination for p_st (docs/theory.md §7.2).

Gaussian elimination on Q in which every pivot s_k = Σ_{j>k} A[k, j] is recomputed
as a sum of (nonnegative) off-diagonal rates instead of read from the diagonal.
Every update adds nonnegative products to nonnegative entries, so no
cancellation happens and each p_i has a small componentwise relative error
(O'Cinneide 1993: first order c·n³·u, see `GTH_BOUND_CONSTANT`), even for
nearly completely decomposable chains — *as long as nothing underflows*.

Implementations of the same arithmetic:

- `gth_reference` — the textbook loop (readable; QuantEcon's `gth_solve`);
- `gth_blocked` — the same eliminations delayed over panels of `block`
  states so the trailing update is one matrix product (BLAS-3), as in blocked
  right-looking LU; each entry receives exactly the same nonnegative terms;
- `gth_batched` — the textbook loop vectorised over a stack of small
  generators (…, n, n);
- `gth_scaled` — the textbook loop with per-row power-of-two exponents,
  for chains whose elimination would underflow (docs/theory.md §7.2, "Scaling").

**The whole float range.**  Two things can underflow.  (1) Back substitution:
x_k = Σ_{i>k} x_i C_ik multiplies ratios along the chain, so x spans the range of
p_st, which may pass 1e-308 (a valley between two modes).  Every back
substitution here carries x as (mantissa, exponent) pairs (`_back_substitute`):
exact exponents, one rounding per product and nonnegative sums, so entries far
below 1e-308 keep full relative accuracy and `log=True` returns log p_st for
them.  (2) Elimination: the update terms C_ik · R_kj.  GTH is invariant under
scaling a row of the remaining matrix by c > 0 (the jump probabilities
R_kj / s_k are ratios within a row; the back-substituted variable becomes
x_i = p_i · c_i), so `gth_scaled` keeps every active row normalised to a
maximum in [1, 2) with exact powers of two and tracks the exponents.  The fast
paths are checked after the fact (`elimination_is_exact_range`): if any
stored entry or update product could have left the normal range, the caller
reruns `gth_scaled`.  A product that underflows even there (a jump
probability product below 2⁻¹⁰²² of its row's maximum) onto an entry that is
itself below 2⁻⁹⁶⁹ is counted and reported — it voids the componentwise promise
(next to a larger entry it would be below half an ulp, and is harmless).
"""
from __future__ import annotations

import numpy as np

from sp_ode.core.precision import UNIT_ROUNDOFF

__all__ = ["gth_reference", "gth_blocked", "gth_batched", "gth_scaled", "gth_solve", "normalise_exponents",
           "elimination_is_exact_range", "GTH_BOUND_CONSTANT", "gth_componentwise_bound"]

#: c in the componentwise bound |p̂_i − p_i| ≤ c·n³·u·p_i (u = 2⁻⁵³) used for GTH
#: (O'Cinneide 1993 proves a first-order bound of this form; 8 is a generous
#: constant chosen here — the measured errors stay below 1e-3 of it, docs/bench/stationary.md).
GTH_BOUND_CONSTANT = 8.0
# Entries and products are trusted only while they stay this far inside the normal range.
_LOW = 2.0**-960
_HIGH_ROW_SUM = 2.0**60


def gth_componentwise_bound(n: int) -> float:
    """c·n³·u (docs/theory.md §7.2), inflated by 1/(1 − c·n³·u) for the second-order terms; inf once ≥ 1/2."""
    b = GTH_BOUND_CONSTANT * float(n) ** 3 * UNIT_ROUNDOFF
    return b / (1.0 - b) if b < 0.5 else float("inf")


def _back_substitute(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(m, e) of x (see `_back_substitute_exponents`); plain floats when x stays well inside the range."""
    n = A.shape[0]
    x = np.zeros(n)
    x[n - 1] = 1.0
    for k in range(n - 2, -1, -1):
        x[k] = x[k + 1:] @ A[k + 1:, k]
        if not 2.0**-900 < x[k] < 2.0**900:  # leaving the safe range: redo with exact exponents
            return _back_substitute_exponents(A)
    return np.frexp(x)


def _back_substitute_exponents(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x_{n−1} = 1, x_k = Σ_{i>k} x_i · A[i, k], as mantissas m ∈ [1/2, 1) and integer exponents e (x = m·2^e).

    A[k+1:, k] holds the scaled column C_ik ≥ 0.  Each term x_i C_ik is formed as
    (m_i C_ik)·2^{e_i}, renormalised by `frexp` and summed relative to the
    largest exponent, so nothing overflows and nothing above 2⁻¹⁰⁷⁴ of the
    largest term is lost.
    """
    n = A.shape[0]
    m = np.zeros(n)
    e = np.zeros(n, dtype=np.int64)
    m[n - 1] = 0.5
    e[n - 1] = 1
    for k in range(n - 2, -1, -1):
        t = m[k + 1:] * A[k + 1:, k]
        mu, g = np.frexp(t)
        f = e[k + 1:] + g
        pos = t > 0
        if not pos.any():  # cannot happen for an irreducible Q: some later state feeds k
            continue
        E = int(f[pos].max())
        s = np.ldexp(mu[pos], f[pos] - E).sum()
        m[k], gk = np.frexp(s)
        e[k] = E + gk
    return m, e


def normalise_exponents(m: np.ndarray, e: np.ndarray, shift: np.ndarray | None = None, *, log: bool = False) -> np.ndarray:
    """p = x / Σx from (m, e) with x_i = m_i 2^{e_i − shift_i}; log p when `log` (−inf for x_i = 0)."""
    if shift is not None:
        e = e - shift
    pos = m > 0
    E = int(e[pos].max())
    total = np.ldexp(m[pos], e[pos] - E).sum()
    with np.errstate(divide="ignore"):  # log 0 = −inf for entries that are exactly 0
        if log:
            return np.where(pos, np.log(m / total) + (e - E) * np.log(2.0), -np.inf)
    return np.where(pos, np.ldexp(m / total, np.clip(e - E, -2000, 0)), 0.0)


def elimination_is_exact_range(Q: np.ndarray, A: np.ndarray) -> bool:
    """True when the unscaled elimination that produced `A` (from `Q`) never left the normal float range.

    Every update is a product C_ik · R_kj of a stored scaled column entry and a
    stored pivot-row entry (both kept in `A`), and entries only grow, so it
    suffices that all positive off-diagonal rates of Q and all stored entries
    are ≥ 2⁻⁹⁶⁰, that for every k (min C_·k)(min R_k·) ≥ 2⁻⁹⁶⁰, and that row sums
    stay ≤ 2⁶⁰ (so no C_ik = M_ik / s_k can underflow to 0 unseen).
    """
    n = A.shape[0]
    if n < 2:
        return True
    off = ~np.eye(n, dtype=bool)
    if np.min(Q, where=off & (Q > 0), initial=np.inf) < _LOW or \
            np.sum(np.abs(Q), axis=1, where=off).max() > _HIGH_ROW_SUM:
        return False
    if not np.max(A, where=off, initial=0.0) < 2.0**960:  # overflow (or NaN) somewhere
        return False
    if np.min(A, where=off & (A > 0), initial=np.inf) >= 2.0**-480:  # then every product is ≥ 2⁻⁹⁶⁰
        return True
    U = np.triu(A, 1)
    L = np.tril(A, -1)
    with np.errstate(invalid="ignore"):
        minR = np.where(U > 0, U, np.inf).min(axis=1)[:-1]
        minC = np.where(L > 0, L, np.inf).min(axis=0)[:-1]
    if minR.min() < _LOW or minC.min() < _LOW:
        return False
    return bool(np.all(minR * minC >= _LOW))


def gth_reference(Q: np.ndarray) -> np.ndarray:
    """Textbook GTH (one state eliminated per step).  Q must be an irreducible generator."""
    A = np.array(Q, dtype=np.float64)
    n = A.shape[0]
    for k in range(n - 1):
        scale = A[k, k + 1:].sum()
        A[k + 1:, k] /= scale
        A[k + 1:, k + 1:] += np.outer(A[k + 1:, k], A[k, k + 1:])
    return normalise_exponents(*_back_substitute(A))


def _eliminate_blocked(Q: np.ndarray, block: int) -> np.ndarray:
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
    return A


def gth_blocked(Q: np.ndarray, block: int = 128) -> np.ndarray:
    """Blocked GTH: panels of `block` eliminations, trailing update by one GEMM.

    Within a panel, state k's row A[k, k+1:] and column A[k+1:, k] are brought
    up to date with the panel's earlier rank-1 terms (C[:, :j] R[:j, :]) just
    before k is eliminated; the trailing block then receives Σ c_k r_kᵀ at once.
    Diagonal entries are never read (pivots come from off-diagonal sums), so
    the GEMM may overwrite them freely.  No range check (see `gth_solve`).
    """
    return normalise_exponents(*_back_substitute(_eliminate_blocked(Q, block)))


def gth_scaled(Q: np.ndarray, *, log: bool = False) -> tuple[np.ndarray, int]:
    """GTH with per-row power-of-two exponents (module docstring): (p or log p, underflowed update terms).

    Row i of the working array is row i of the reduced generator times 2^{−r_i}.
    Each row is normalised (max in [1, 2)) before it is used as a pivot row and
    before it receives an update, so every stored entry is normal and every
    update term C_ik R_kj is a product of jump probabilities times the row's
    scale.  The stored C_ik = A_ik / s_k then carries 2^{r_k − r_i}, so back
    substitution x_k = Σ x_i C_ik computes x_i ∝ p_i 2^{r_i}, and
    p_i ∝ x_i 2^{−r_i} with exact integer exponents.

    Raises
    ------
    FloatingPointError
        If a reduced row spans more than the float range (its entries overflow).
    """
    with np.errstate(over="ignore", under="ignore"):
        return _gth_scaled(Q, log=log)


def _gth_scaled(Q: np.ndarray, *, log: bool) -> tuple[np.ndarray, int]:
    A = np.array(Q, dtype=np.float64)
    n = A.shape[0]
    np.fill_diagonal(A, 0.0)
    r = np.zeros(n, dtype=np.int64)  # true row i = A[i] · 2^{r_i}

    def normalise_rows(rows: np.ndarray, lo: int) -> None:
        mx = A[rows, lo:].max(axis=1)
        ok = mx > 0
        _, g = np.frexp(mx[ok])
        sel = rows[ok]
        A[sel] = np.ldexp(A[sel], (1 - g)[:, None])
        r[sel] += g - 1

    lost = 0
    normalise_rows(np.arange(n), 0)
    for k in range(n - 1):
        col = A[k + 1:, k]
        hit = np.flatnonzero(col > 0) + k + 1
        if hit.size:
            normalise_rows(hit, k)  # the rows about to be updated, C_ik included (it rescales with them)
        normalise_rows(np.array([k]), k + 1)
        scale = A[k, k + 1:].sum()
        A[k + 1:, k] /= scale
        if hit.size:
            rk = A[k, k + 1:]
            upd = np.outer(A[hit, k], rk)
            # A term lost to underflow matters only where the entry receiving it is itself below
            # 2⁻⁹⁶⁹ (rows are normalised to max ~1): next to a larger entry it is under half an ulp.
            lost += int(np.count_nonzero((upd < 2.0**-1022) & (rk > 0)[None, :]
                                         & (A[hit, k + 1:] < 2.0**-969)))
            A[hit, k + 1:] += upd
            A[hit, hit] = 0.0  # returns to i itself land on the (never read) diagonal slot
    if not np.all(np.isfinite(A)):  # a row spanning more than the float range: no promise possible
        raise FloatingPointError("GTH: a reduced row spans more than the float range")
    m, e = _back_substitute(A)
    return normalise_exponents(m, e, r, log=log), lost  # p_i ∝ x_i 2^{−r_i} (docstring)


def gth_batched(Q: np.ndarray) -> np.ndarray:
    """GTH over a stack (B, n, n) of irreducible generators, vectorised over B (no range check)."""
    return np.stack([normalise_exponents(*_back_substitute(a)) for a in _eliminate_batched(Q)])


def _eliminate_batched(Q: np.ndarray) -> np.ndarray:
    A = np.array(Q, dtype=np.float64)
    n = A.shape[-1]
    for k in range(n - 1):
        scale = A[:, k, k + 1:].sum(axis=-1)
        A[:, k + 1:, k] /= scale[:, None]
        A[:, k + 1:, k + 1:] += A[:, k + 1:, k, None] * A[:, k, None, k + 1:]
    return A


def gth_solve(Q: np.ndarray, *, log: bool = False, block: int = 128,
              batch_max_n: int = 64) -> tuple[np.ndarray, dict]:
    """GTH over the whole float range for one (n, n) or a stack (..., n, n) of irreducible generators.

    Runs the fast elimination (blocked, or batch-vectorised for n ≤ `batch_max_n`),
    checks it with `elimination_is_exact_range`, and reruns
    `gth_scaled` for every matrix that fails the check.

    Returns
    -------
    p : ndarray (..., n)
        P_st, or log p_st when `log`
    info : dict
        `scaled` (how many matrices needed the scaled rerun),
        `underflow_terms` (update products lost even there; 0 means the
        componentwise bound of docs/theory.md §7.2 applies to every entry).
    """
    shape = Q.shape
    flat = np.asarray(Q, dtype=np.float64).reshape(-1, *shape[-2:])
    n = shape[-1]
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):  # checked below
        if n <= batch_max_n:
            elim = _eliminate_batched(flat)
        else:
            elim = [_eliminate_blocked(q, block) for q in flat]
    out = np.empty(flat.shape[:-1])
    done = np.zeros(flat.shape[0], dtype=bool)
    if n <= batch_max_n:  # the common case of many small generators: checks and back substitution vectorised
        done = _fast_batched(flat, elim, out, log=log)
    scaled = lost = 0
    for b in np.flatnonzero(~done):
        q, a = flat[b], elim[b]
        with np.errstate(invalid="ignore"):
            ok = elimination_is_exact_range(q, a)
        if ok:
            out[b] = normalise_exponents(*_back_substitute(a), log=log)
        else:
            scaled += 1
            try:
                out[b], lost_b = gth_scaled(q, log=log)
            except FloatingPointError:
                out[b], lost_b = np.nan, 1  # no answer and no promise: the caller reports bound ∞
            lost += lost_b
    return out.reshape(shape[:-1]), {"scaled": scaled, "underflow_terms": lost}


def _fast_batched(Q: np.ndarray, A: np.ndarray, out: np.ndarray, *, log: bool) -> np.ndarray:
    """Finish the stack where the quick sufficient range test passes; return which ones were done.

    The test is the first stage of `elimination_is_exact_range` (all positive rates and
    stored entries ≥ 2⁻⁴⁸⁰, row sums ≤ 2⁶⁰, nothing ≥ 2⁹⁶⁰), and back substitution in plain
    floats must keep every x_k in (2⁻⁹⁰⁰, 2⁹⁰⁰); the rest go through the per-matrix path.
    """
    B, n, _ = Q.shape
    off = ~np.eye(n, dtype=bool)[None]
    with np.errstate(invalid="ignore"):
        ok = (np.min(Q, axis=(1, 2), where=off & (Q > 0), initial=np.inf) >= 2.0**-480) \
            & (np.sum(np.abs(Q), axis=2, where=off).max(axis=1) <= _HIGH_ROW_SUM) \
            & (np.max(A, axis=(1, 2), where=off, initial=0.0) < 2.0**960) \
            & (np.min(A, axis=(1, 2), where=off & (A > 0), initial=np.inf) >= 2.0**-480)
    x = np.zeros((B, n))
    x[:, n - 1] = 1.0
    with np.errstate(all="ignore"):
        for k in range(n - 2, -1, -1):
            x[:, k] = np.einsum("bi,bi->b", x[:, k + 1:], A[:, k + 1:, k])
        ok &= np.all((x > 2.0**-900) & (x < 2.0**900), axis=1)
    p = x[ok] / x[ok].sum(axis=1, keepdims=True)
    out[ok] = np.log(p) if log else p
    return ok
