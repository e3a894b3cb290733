"""Spectrum of a generator and the group inverse (docs/theory.md §3.2–3.3, §7.4).

- [`spectral_gap`][sp_ode.markov.spectral.spectral_gap] γ = −max{Re λ : λ eigenvalue of Q, λ ≠ 0} (T2);
- [`group_inverse`][sp_ode.markov.spectral.group_inverse] A^# = (A − p1ᵀ)⁻¹ + p1ᵀ of A = Qᵀ and
  [`group_inverse_apply`][sp_ode.markov.spectral.group_inverse_apply] (T3, T4).

Both need p_st, so this module sits above `sp_ode.markov.stationary`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from sp_ode.core.validation import check_finite_array
from sp_ode.markov.bounds import ConvergenceError
from sp_ode.markov.generator import EPS, check_generator, is_irreducible, require_irreducible
from sp_ode.markov.stationary import DENSE_GTH_MAX, stationary_distribution

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float, GeneratorMatrix

# Weyl: a backward-stable symmetric eigensolver moves each eigenvalue by ≤ c·n·u·‖S‖₂ (c stated here).
_WEYL_C = 10.0


def _log_stationary(Q) -> np.ndarray | None:
    """log p_st over the whole range (dense GTH), or log of the sparse answer; None when not available."""
    n = Q.shape[0]
    try:
        if sp.issparse(Q) and n > DENSE_GTH_MAX:
            with np.errstate(divide="ignore"):
                return np.log(stationary_distribution(Q))
        Qd = Q.toarray() if sp.issparse(Q) else Q
        return stationary_distribution(Qd, log=True)
    except ConvergenceError:
        return None


def _symmetrised_if_reversible(Q):
    """The symmetric S = D^{1/2} Q D^{-1/2} (D = diag p_st) when detailed balance p_i Q_ij = p_j Q_ji holds, else None.

    Under detailed balance S_ij = √(p_i/p_j) Q_ij = √(Q_ij Q_ji) exactly, so S is
    formed from the rates alone (√Q_ij·√Q_ji: no overflow or underflow, however
    deep the valleys of p_st), keeping Q's diagonal.  Its (real) eigenvalues come
    from a symmetric eigensolver: accurate to c·n·u·‖S‖ (Weyl) even where Q is so
    non-normal that a general eigensolver returns pseudospectral noise.  Detailed
    balance is tested edge by edge in the log domain, with log p_st from GTH
    (docs/theory.md §7.2), to a relative 1e3·n·u.
    """
    if not is_irreducible(Q):
        return None
    n = Q.shape[0]
    lp = _log_stationary(Q)
    if lp is None or not np.all(np.isfinite(lp)):
        return None
    C = sp.coo_array(Q)
    off = (C.row != C.col) & (C.data != 0)
    i, j, v = C.row[off], C.col[off], C.data[off]
    R = sp.csr_array((v, (i, j)), shape=(n, n))
    Rt = sp.csr_array(R.T)
    if (R != 0).astype(np.int8).sum() != ((R != 0).multiply(Rt != 0)).astype(np.int8).sum():
        return None  # an edge without its reverse: not reversible
    back = np.asarray(Rt[i, j]).ravel()  # Q_ji for each edge (i, j)
    if np.any(np.abs(lp[i] + np.log(v) - lp[j] - np.log(back)) > 1e3 * n * EPS):
        return None
    S_off = sp.csr_array((np.sqrt(v) * np.sqrt(back), (i, j)), shape=(n, n))
    S = S_off + sp.diags_array(np.asarray(Q.diagonal()).ravel())
    S = (S + S.T) / 2  # exact symmetry (the two halves are equal entry by entry already)
    return sp.csc_array(S) if sp.issparse(Q) else S.toarray()


def spectral_gap(Q: GeneratorMatrix, *, return_info: bool = False) -> float | tuple[float, dict]:
    """γ = −max{Re λ : λ eigenvalue of Q, λ ≠ 0} (docs/theory.md §3.2 (T2), §7.4); never negative.

    The zero eigenvalue is removed once (the one of smallest modulus).
    Reversible chains are symmetrised first (`_symmetrised_if_reversible`):
    the computed γ̂ is then within τ = c·n·u·‖S‖₁ of γ (Weyl, c = 10).  Dense
    eigenvalues for n ≤ 2000; beyond, shift-invert Lanczos/Arnoldi near 0,
    which finds γ when the slowest mode is also the one nearest the origin.

    **Below resolution.**  When γ̂ ≤ τ, float64 cannot tell γ from 0 for this
    Q (e.g. a metastable chain whose true γ is 1e-69): the function returns
    0.0, a lower bound (γ ≥ 0 always, §7.4), and with `return_info` says so
    (`resolved` False, `upper_bound` γ̂⁺ + τ).  For a non-reversible Q the
    same τ is reported, but a general eigensolver's error on a highly
    non-normal Q can exceed it (the eigenvalues are only as good as the
    pseudospectrum allows).

    Parameters
    ----------
    Q : (n, n) generator, dense or `scipy.sparse`
    return_info : bool
        Also return a dict: `computed` γ̂, `resolution` τ, `resolved`,
        `lower_bound`, `upper_bound`, `symmetrised`, `eigensolver`.

    Returns
    -------
    gamma : float ≥ 0 (inf for n = 1: no non-zero eigenvalue)
    info : dict, only with `return_info`
    """
    Q = check_generator(Q)
    n = Q.shape[0]
    if n == 1:
        info = {"computed": float("inf"), "resolution": 0.0, "resolved": True, "lower_bound": float("inf"),
                "upper_bound": float("inf"), "symmetrised": False, "eigensolver": None}
        return (float("inf"), info) if return_info else float("inf")
    S = _symmetrised_if_reversible(Q)
    large = sp.issparse(Q) and n > 2000
    if S is not None:
        if large:
            from scipy.sparse.linalg import eigsh

            shift = -1e-3 * _tiny_gap_guess(S)
            lam = eigsh(S, k=2, sigma=shift, return_eigenvectors=False)
            solver = "eigsh (symmetrised, shift-invert)"
        else:
            lam = scipy.linalg.eigvalsh(S.toarray() if sp.issparse(S) else S)
            solver = "eigvalsh (symmetrised)"
        norm = float(abs(S).sum(axis=0).max())
    elif large:
        from scipy.sparse.linalg import eigs

        shift = -1e-8 * float(np.max(np.abs(Q.diagonal())))
        lam = eigs(sp.csc_array(Q.T), k=min(6, n - 2), sigma=shift, return_eigenvectors=False)
        solver = "eigs (shift-invert Arnoldi)"
        norm = float(abs(Q).sum(axis=0).max())
    else:
        Qd = Q.toarray() if sp.issparse(Q) else Q
        lam = scipy.linalg.eigvals(Qd)
        solver = "eigvals (general, not symmetrisable)"
        norm = float(np.abs(Qd).sum(axis=0).max())
    lam = np.delete(lam, np.argmin(np.abs(lam)))
    computed = float(-np.max(np.real(lam)))
    tau = float(_WEYL_C * n * EPS * norm)
    resolved = computed > tau
    gamma = computed if resolved else 0.0
    if not return_info:
        return gamma
    return gamma, {"computed": computed, "resolution": tau, "resolved": bool(resolved),
                   "lower_bound": max(computed - tau, 0.0) if S is not None else 0.0,
                   "upper_bound": max(computed, 0.0) + tau, "symmetrised": S is not None, "eigensolver": solver}


def _tiny_gap_guess(S) -> float:
    """A scale below the smallest nonzero eigenvalue magnitude, for the shift: n⁻² · min exit rate."""
    n = S.shape[0]
    return float(np.min(np.abs(S.diagonal()))) / n**2


def _bordered(Q, p):
    """A − p1ᵀ with A = Qᵀ: nonsingular for irreducible Q (it acts as −I on span(p))."""
    Qd = Q.toarray() if sp.issparse(Q) else Q
    return Qd.T - np.outer(p, np.ones_like(p))


def group_inverse(Q: GeneratorMatrix, p: Float[ArrayLike, " n"] | None = None) -> Float[np.ndarray, "n n"]:
    """Group inverse A^# of A = Qᵀ: A^# = (A − p1ᵀ)⁻¹ + p1ᵀ (docs/theory.md §3.3 (T3)).

    Characterised by A A^# A = A, A^# A A^# = A^#, A A^# = A^# A.  For q on the
    simplex, q − p_st = A^# (Qᵀq) (T4).

    Parameters
    ----------
    Q : (n, n) irreducible generator
    p : (n,), optional
        p_st(Q) if already known.

    Returns
    -------
    ndarray (n, n)

    Raises
    ------
    NotIrreducibleError
        If Q is reducible (A^# still exists, but p is then not unique).
    """
    Q = check_generator(Q)
    require_irreducible(Q)
    p = stationary_distribution(Q) if p is None else np.asarray(p, dtype=np.float64)
    M = _bordered(Q, p)
    return np.linalg.inv(M) + np.outer(p, np.ones_like(p))


def group_inverse_apply(Q: GeneratorMatrix, v: Float[ArrayLike, " n"],
                        p: Float[ArrayLike, " n"] | None = None) -> Float[np.ndarray, " n"]:
    """A^# v for A = Qᵀ without forming A^#: solve (A − p1ᵀ)x = v, return x + p(1ᵀv).

    Parameters
    ----------
    v : (n,) or (n, k)
    """
    Q = check_generator(Q)
    require_irreducible(Q)
    v = check_finite_array("v", v)
    if v.shape[0] != Q.shape[0] or v.ndim > 2:
        raise ValueError(f"`v` must have shape (n,) or (n, k) with n = {Q.shape[0]}; got {v.shape}.")
    p = stationary_distribution(Q) if p is None else np.asarray(p, dtype=np.float64)
    x = np.linalg.solve(_bordered(Q, p), v)
    return x + (np.outer(p, v.sum(axis=0)) if v.ndim == 2 else p * v.sum())
