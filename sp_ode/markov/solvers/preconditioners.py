"""Multigrid preconditioners for pinned generator systems (docs/theory.md §7.1).

The public face of `sp_ode.markov._air` for callers outside this package (the
warm-started solves of `sp_ode.markov.solvers.warm_start`): the pinned system
A_k x = b of a generator, A_k = (−Qᵀ) without row and column k, is preconditioned
by the exact adjoint of an AIR V-cycle built on G = A_kᵀ = −Q_k (the generator's
own orientation, for which AIR is designed).
"""
from __future__ import annotations

import numpy as np

from sp_ode.markov.solvers._sparse import quiet_stdout

__all__ = ["air_adjoint_preconditioner"]


def air_adjoint_preconditioner(Ak):
    """The adjoint AIR cycle Bᵀ ≈ A_k⁻¹, or `None` where the AIR setup breaks down.

    Parameters
    ----------
    Ak : scipy.sparse matrix (m, m)
        A pinned generator matrix (a nonsingular M-matrix).

    Returns
    -------
    scipy.sparse.linalg.LinearOperator or None
        `None` when pyamg's setup raises or the cycle returns non-finite values
        (the caller then uses another preconditioner).

    Raises
    ------
    TypeError, ValueError
        `Ak` is not a square `scipy.sparse` matrix.
    """
    import pyamg
    import scipy.sparse as sp

    from sp_ode.markov._air import AIR_OPTIONS, AirCycles

    if not sp.issparse(Ak):
        raise TypeError(f"`Ak` must be a scipy.sparse matrix; got {type(Ak).__name__}.")
    if Ak.ndim != 2 or Ak.shape[0] != Ak.shape[1]:
        raise ValueError(f"`Ak` must be square; got shape {Ak.shape}.")
    Ak = Ak.tocsr()
    try:
        with quiet_stdout(), np.errstate(all="ignore"):
            cycles = AirCycles(pyamg.air_solver(Ak.T.tocsr(), **AIR_OPTIONS), finest_transpose=Ak)
            finite = bool(np.all(np.isfinite(cycles.adjoint @ np.ones(Ak.shape[0]))))
    except (ValueError, ArithmeticError, np.linalg.LinAlgError, RuntimeError):
        return None
    return cycles.adjoint if finite else None
