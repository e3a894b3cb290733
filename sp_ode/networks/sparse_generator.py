"""Fixed-pattern assembly of a network's FSP generator Q(y), ∂_yQ(y) and the pinned M-matrix.

Along a slow trajectory only the values of Q(y) change, never its sparsity
pattern, so the pattern — Q's CSR structure, the pinned matrix
A_k = −(Qᵀ) without row and column k (docs/theory.md §7.1), and the maps from
propensities to entries — is built once and every later Q(y) is one
`np.bincount` over precomputed slots.  Propensities are still checked at every
y (finite, ≥ 0, never pushing a count negative), with errors naming the reaction.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sp_ode.core.memory import check_memory

__all__ = ["PatternedGenerator"]


def _csr_pattern(rows: np.ndarray, cols: np.ndarray, n: int):
    """CSR (indptr, indices) of the union of (rows, cols) and, per input entry, its slot in `data`."""
    keys = rows.astype(np.int64) * n + cols
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    new = np.empty(sk.shape, dtype=bool)
    new[:1] = True
    new[1:] = sk[1:] != sk[:-1]
    uid = np.cumsum(new) - 1
    slot = np.empty_like(uid)
    slot[order] = uid
    uniq = sk[new]
    indices = (uniq % n).astype(np.int32 if n < 2**31 else np.int64)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(uniq // n, minlength=n))])
    return indptr, indices, slot


class PatternedGenerator:
    """Q(y) on a state space J with a fixed CSR pattern (the caller validated network and J).

    Parameters
    ----------
    network
        Sp_ode.networks.network.ReactionNetwork
    space
        Sp_ode.networks.state_space.StateSpace

    Raises
    ------
    MemoryBudgetError
        The pattern would not fit (`network.generator_nbytes`, estimated before building it).
    """

    def __init__(self, network, space):
        check_memory(network.generator_nbytes(space), what=f"the generator pattern of {network.name!r} on "
                                                            f"{space.n} states")
        self.network, self.space, self.n = network, space, space.n
        n = space.n
        trans = network.transitions(space)
        self.moves = [(src, dst) for src, dst, _ in trans]
        self.exits = [ex for _, _, ex in trans]
        self.negative = network.negative_targets(space)
        rows = np.concatenate([src for src, _ in self.moves] + [np.arange(n)])
        cols = np.concatenate([dst for _, dst in self.moves] + [np.arange(n)])
        self.indptr, self.indices, slot = _csr_pattern(rows, cols, n)
        self.nnz = int(self.indices.shape[0])
        m = sum(src.shape[0] for src, _ in self.moves)
        self.off_slot, self.diag_slot = slot[:m], slot[m:]
        self.src_all = rows[:m]
        self._pinned: dict[int, tuple] = {}

    # --- values -------------------------------------------------------------------------------
    def propensities(self, y) -> np.ndarray:
        """(R, n) propensities at every state, checked (PropensityError / NegativeCountError)."""
        y = self.network._y(y)
        a = self.network.propensities(self.space.states, y)
        self.network.check_propensities(a, self.space, y, self.negative)
        return a

    def _data(self, a: np.ndarray) -> np.ndarray:
        vals = np.concatenate([a[r, src] for r, (src, _) in enumerate(self.moves)])
        out = np.bincount(self.src_all, weights=vals, minlength=self.n)
        return (np.bincount(self.off_slot, weights=vals, minlength=self.nnz)
                - np.bincount(self.diag_slot, weights=out, minlength=self.nnz))

    def Q(self, y=None, a: np.ndarray | None = None) -> sp.csr_array:
        """Q(y) as CSR with the fixed pattern (explicit zeros possible where a propensity vanishes)."""
        a = self.propensities(y) if a is None else a
        return sp.csr_array((self._data(a), self.indices, self.indptr), shape=(self.n, self.n))

    def dQ(self, y) -> list[sp.csr_array]:
        """[∂Q/∂y_j] (d matrices, same pattern), from the exact sympy derivatives of the propensities."""
        da = self.network.propensity_derivatives(self.space.states, y)
        return [sp.csr_array((self._data(d), self.indices, self.indptr), shape=(self.n, self.n)) for d in da]

    def outflow(self, a: np.ndarray) -> np.ndarray:
        """o_i: total propensity leaving J from state i (docs/theory.md §7.6)."""
        o = np.zeros(self.n)
        for r, ex in enumerate(self.exits):
            o[ex] += a[r, ex]
        return o

    # --- the pinned system ---------------------------------------------------------------------
    def pinned_pattern(self, k: int):
        """(A_k pattern, map Q.data → A_k.data, map Q.data → b), cached per pinned state k.

        A_k = −(Qᵀ)[keep, keep] and b = Q[k, keep] (docs/theory.md §7.1: with p_k pinned,
        the remaining entries solve A_k x = b, A_k a nonsingular M-matrix by T1).
        """
        if k not in self._pinned:
            n = self.n
            ids = sp.csr_array((np.arange(1, self.nnz + 1, dtype=np.float64), self.indices, self.indptr),
                               shape=(n, n))
            keep = np.ones(n, dtype=bool)
            keep[k] = False
            At = ids.T.tocsr()[keep][:, keep].tocsr()
            At.sort_indices()
            amap = At.data.astype(np.int64) - 1
            row = ids[[k], :].tocoo()
            newcol = np.cumsum(keep) - 1
            bpos = newcol[row.col[row.col != k]]
            bmap = row.data[row.col != k].astype(np.int64) - 1
            self._pinned[k] = (At.indptr, At.indices, amap, bpos, bmap)
            if len(self._pinned) > 4:
                del self._pinned[next(iter(self._pinned))]
        return self._pinned[k]

    def pinned(self, Q: sp.csr_array, k: int) -> tuple[sp.csr_matrix, np.ndarray]:
        """(A_k, b) for the generator Q (which must carry this object's pattern)."""
        indptr, indices, amap, bpos, bmap = self.pinned_pattern(k)
        Ak = sp.csr_matrix((-Q.data[amap], indices, indptr), shape=(self.n - 1, self.n - 1))
        b = np.zeros(self.n - 1)
        b[bpos] = Q.data[bmap]
        return Ak, b
