"""Stationary distributions p_st of Markov generators (docs/theory.md §2–3, T1).

p_st solves Qᵀp = 0, 1ᵀp = 1, p ≥ 0; it is unique and strictly positive when Q
is irreducible (T1).  :func:`stationary_distribution` validates Q once and
dispatches to a registry of methods:

========  ==================================================================
``gth``   Grassmann–Taksar–Heyman elimination (blocked, BLAS-3): subtraction-
          free, componentwise relative accuracy O(n·eps). Default for dense Q.
``solve`` LU solve of the bordered system: Qᵀ with one (redundant) equation
          replaced by 1ᵀp = 1. Fast; only normwise accurate.
``sparse``Preconditioned Krylov solve for large sparse Q (see ``sp_ode.markov._sparse``);
          default for ``scipy.sparse`` input; never negative; reports its residual.
``jax``   :func:`stationary_jax`, a pure-JAX bordered solve: ``jit``/``vmap``/
          ``grad``-compatible, for batches over y and for dp_st/dy (T3).
========  ==================================================================

Stacks ``(..., n, n)`` of dense generators give ``(..., n)``.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from sp_ode.core.precision import in_float64
from sp_ode.core.validation import check_choice
from sp_ode.markov._gth import gth_batched, gth_blocked
from sp_ode.markov.generator import check_generator, closed_classes, require_irreducible

# Below this size a stack is solved by the batch-vectorised loop; above, one blocked solve per matrix.
_BATCH_VECTORISE_MAX_N = 64


def _gth(Q: np.ndarray) -> np.ndarray:
    if Q.shape[-1] <= _BATCH_VECTORISE_MAX_N:
        return gth_batched(Q.reshape(-1, *Q.shape[-2:])).reshape(Q.shape[:-1])
    flat = Q.reshape(-1, *Q.shape[-2:])
    return np.stack([gth_blocked(q) for q in flat]).reshape(Q.shape[:-1])


def _bordered_system(Q):
    """(Qᵀ with its last row replaced by 1ᵀ, e_n): the last equation of Qᵀp = 0 is redundant since 1ᵀQᵀ = 0."""
    M = np.swapaxes(Q, -1, -2).copy()
    M[..., -1, :] = 1.0
    rhs = np.zeros(Q.shape[:-1])
    rhs[..., -1] = 1.0
    return M, rhs


def _project_to_simplex(p: np.ndarray) -> np.ndarray:
    """Clip rounding-level negatives to 0 and renormalise (methods that are only normwise accurate)."""
    p = np.maximum(p, 0.0)
    return p / p.sum(axis=-1, keepdims=True)


def _solve(Q: np.ndarray) -> np.ndarray:
    M, rhs = _bordered_system(Q)
    return _project_to_simplex(np.linalg.solve(M, rhs[..., None])[..., 0])


@in_float64
def _jax(Q: np.ndarray) -> np.ndarray:
    return _project_to_simplex(np.asarray(stationary_jax(Q), dtype=np.float64))


def _sparse(Q) -> tuple[np.ndarray, dict]:
    from sp_ode.markov._sparse import sparse_stationary

    return sparse_stationary(sp.csr_array(Q))


METHODS: dict[str, Callable] = {"gth": _gth, "solve": _solve, "sparse": _sparse, "jax": _jax}


def _require_irreducible_stack(Q: np.ndarray) -> None:
    """Irreducibility depends only on the pattern of positive rates: check each distinct pattern once."""
    flat = Q.reshape(-1, *Q.shape[-2:])
    patterns, first = np.unique(flat > 0, axis=0, return_index=True)
    for i in first:
        idx = np.unravel_index(int(i), Q.shape[:-2])
        require_irreducible(flat[i], name=f"Q[{', '.join(map(str, idx))}]")


def stationary_jax(Q):
    """p_st by a bordered solve in JAX: ``jit``-, ``vmap``- and ``grad``-compatible.

    Solves [Qᵀ with last row → 1ᵀ] p = e_n.  Derivatives follow from the
    implicit function theorem through ``jnp.linalg.solve``, giving
    Dp_st = −(A − p1ᵀ)⁻¹(∂A)p (T3).  No validation (it runs under tracing):
    validate with :func:`sp_ode.check_generator` first.

    Parameters
    ----------
    Q : array (..., n, n), JAX or NumPy

    Returns
    -------
    jax.Array (..., n)
    """
    import jax
    import jax.numpy as jnp

    from sp_ode.core.precision import float64

    if not isinstance(Q, jax.core.Tracer):  # called eagerly: compute in float64 whatever the user's setting
        with float64():
            return _stationary_jax(jnp.asarray(np.asarray(Q, dtype=np.float64)))
    if Q.dtype != jnp.float64:
        raise TypeError(f"`Q` must be float64 inside a JAX transformation; got {Q.dtype}. sp_ode computes "
                        "p_st in float64: trace inside `with sp_ode.core.precision.float64():`.")
    return _stationary_jax(Q)


def _stationary_jax(Q):
    import jax.numpy as jnp

    M = jnp.swapaxes(Q, -1, -2).at[..., -1, :].set(1.0)
    rhs = jnp.zeros(Q.shape[:-1], dtype=M.dtype).at[..., -1].set(1.0)
    return jnp.linalg.solve(M, rhs[..., None])[..., 0]


def stationary_residual(Q, p) -> float:
    """‖Qᵀp‖∞ (absolute)."""
    Qt = Q.T if sp.issparse(Q) else np.swapaxes(np.asarray(Q), -1, -2)
    r = Qt @ p if sp.issparse(Q) else np.einsum("...ij,...j->...i", Qt, p)
    return float(np.max(np.abs(r)))


def stationary_distribution(Q, method: str | None = None, *, return_info: bool = False):
    """Stationary distribution p_st of an irreducible generator Q.

    Parameters
    ----------
    Q : array_like (n, n) or (..., n, n), or scipy.sparse (n, n)
        Generator(s): Q[i, j] ≥ 0 the rate i → j, rows summing to zero.
    method : {"gth", "solve", "sparse", "jax"}, optional
        Default "gth" for dense input, "sparse" for ``scipy.sparse`` input.
    return_info : bool
        Also return a dict with ``method``, ``residual`` (‖Qᵀp‖∞) and, for
        ``sparse``, the solver's own report.

    Returns
    -------
    p : ndarray (n,) or (..., n), float64, p ≥ 0, sum 1.
    info : dict, only when ``return_info``.

    Raises
    ------
    TypeError, ValueError
        Q is not a generator (see :func:`sp_ode.check_generator`) or `method` unknown.
    NotIrreducibleError
        Q has more than one communicating class (the message names the closed
        classes; see :func:`stationary_distributions`).
    """
    is_sparse = sp.issparse(Q)
    method = ("sparse" if is_sparse else "gth") if method is None else method
    check_choice("method", method, METHODS)
    Q = check_generator(Q, batch=not is_sparse)
    if Q.ndim == 2:
        require_irreducible(Q)
    else:
        _require_irreducible_stack(Q)
    if is_sparse and method != "sparse":
        if Q.shape[0] > 5000:
            raise ValueError(f"`method` {method!r} needs a dense matrix; Q is sparse with n = {Q.shape[0]} — use "
                             "method='sparse'.")
        Q = Q.toarray()
    if method == "sparse" and not is_sparse:
        if Q.ndim != 2:
            raise ValueError(f"`method` 'sparse' takes a single (n, n) generator; got shape {Q.shape}.")
        Q = sp.csr_array(Q)
    out = METHODS[method](Q)
    p, extra = out if isinstance(out, tuple) else (out, {})
    if not return_info:
        return p
    if "method" in extra:  # the solver's own description of its algorithm
        extra["algorithm"] = extra.pop("method")
    info = {**extra, "method": method, "residual": stationary_residual(Q, p)}
    return p, info


def stationary_distributions(Q) -> tuple[list[np.ndarray], np.ndarray]:
    """One stationary distribution per closed class of a (possibly reducible) generator.

    Every stationary distribution of Q is a convex combination of these.

    Returns
    -------
    classes : list of ndarray of int — the closed classes
    P : ndarray (K, n) — row k is supported on ``classes[k]``
    """
    Q = check_generator(Q)
    Qd = Q.toarray() if sp.issparse(Q) else Q
    classes = closed_classes(Qd)
    P = np.zeros((len(classes), Qd.shape[0]))
    for k, c in enumerate(classes):
        # A closed class's block is itself an irreducible generator (no rate leaves it).
        P[k, c] = _gth(Qd[np.ix_(c, c)])
    return classes, P
