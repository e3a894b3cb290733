"""Spectrum of a generator and the group inverse (docs/theory.md §3.2–3.3, §7.4).

- :func:`spectral_gap` γ = −max{Re λ : λ eigenvalue of Q, λ ≠ 0} (T2);
- :func:`group_inverse` A^# = (A − p1ᵀ)⁻¹ + p1ᵀ of A = Qᵀ and
  :func:`group_inverse_apply` (T3, T4).

Both need p_st, so this module sits above :mod:`sp_ode.markov.stationary`.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from sp_ode.core.validation import check_finite_array
from sp_ode.markov.generator import EPS, check_generator, is_irreducible, require_irreducible
from sp_ode.markov.stationary import stationary_distribution


def _symmetrised_if_reversible(Q):
    """D^{1/2} Q D^{-1/2} (D = diag p_st) when detailed balance p_i Q_ij = p_j Q_ji holds, else None.

    For a reversible chain this similarity makes Q symmetric, so its (real)
    eigenvalues come from a symmetric eigensolver: accurate even where Q is so
    non-normal that a general eigensolver returns pseudospectral noise (e.g. a
    birth–death chain with λ ≠ μ).
    """
    if not is_irreducible(Q):
        return None
    p = stationary_distribution(Q)
    if np.any(p <= 0):  # tails below the float range: the similarity would divide by zero
        return None
    F = (sp.diags_array(p) @ Q) if sp.issparse(Q) else p[:, None] * Q  # flows p_i Q_ij
    asym = abs(F - F.T).max()
    if asym > 1e3 * EPS * abs(F).max():
        return None
    r = np.sqrt(p)
    if sp.issparse(Q):
        S = sp.diags_array(r) @ Q @ sp.diags_array(1 / r)
        return sp.csc_array((S + S.T) / 2)
    S = r[:, None] * Q / r[None, :]
    return (S + S.T) / 2


def spectral_gap(Q) -> float:
    """γ = −max{Re λ : λ eigenvalue of Q, λ ≠ 0} (docs/theory.md §3.2 (T2)).

    The zero eigenvalue is removed once (the one of smallest modulus); for a
    reducible Q the result is 0 up to rounding.  Reversible chains are
    symmetrised first (accurate eigenvalues, see ``_symmetrised_if_reversible``).
    Dense eigenvalues for n ≤ 2000; beyond, shift-invert Lanczos/Arnoldi near 0,
    which finds γ when the slowest mode is also the one nearest the origin.
    A general (non-reversible, highly non-normal) Q may have eigenvalues that no
    floating-point method resolves; γ is then as accurate as ``scipy.linalg.eigvals``.
    """
    Q = check_generator(Q)
    n = Q.shape[0]
    if n == 1:
        return float("inf")  # no non-zero eigenvalue: the fast dynamics are trivial
    S = _symmetrised_if_reversible(Q)
    large = sp.issparse(Q) and n > 2000
    if S is not None:
        if large:
            from scipy.sparse.linalg import eigsh

            shift = -1e-3 * _tiny_gap_guess(S)
            lam = eigsh(S, k=2, sigma=shift, return_eigenvectors=False)
        else:
            lam = scipy.linalg.eigvalsh(S.toarray() if sp.issparse(S) else S)
    elif large:
        from scipy.sparse.linalg import eigs

        shift = -1e-8 * float(np.max(np.abs(Q.diagonal())))
        lam = eigs(sp.csc_array(Q.T), k=min(6, n - 2), sigma=shift, return_eigenvectors=False)
    else:
        Qd = Q.toarray() if sp.issparse(Q) else Q
        lam = scipy.linalg.eigvals(Qd)
    lam = np.delete(lam, np.argmin(np.abs(lam)))
    return float(-np.max(np.real(lam)))


def _tiny_gap_guess(S) -> float:
    """A scale below the smallest nonzero eigenvalue magnitude, for the shift: n⁻² · min exit rate."""
    n = S.shape[0]
    return float(np.min(np.abs(S.diagonal()))) / n**2


def _bordered(Q, p):
    """A − p1ᵀ with A = Qᵀ: nonsingular for irreducible Q (it acts as −I on span(p))."""
    Qd = Q.toarray() if sp.issparse(Q) else Q
    return Qd.T - np.outer(p, np.ones_like(p))


def group_inverse(Q, p=None) -> np.ndarray:
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


def group_inverse_apply(Q, v, p=None) -> np.ndarray:
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
