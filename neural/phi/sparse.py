"""Sparse generator families y ↦ Q(y) for φ_θ at scale: rates as transition lists, the residual matrix-free.

A φ_θ fit on n = 10⁴–10⁵ states never forms an n × n matrix.  Q(y) is kept as its
off-diagonal transitions t = (src_t → dst_t) with rates V_t(y) ≥ 0, and the residual
of docs/theory.md §3.4 (T4) is, for a distribution q,

    (Q(y)ᵀq)_j = Σ_{t: dst_t = j} V_t q_{src_t} − q_j Σ_{t: src_t = j} V_t,

one gather and two scatter-adds over the m transitions (`residual_torch`, differentiable
in q; `residual_numpy` the readable reference).  For a reaction network the pattern
(src, dst) is fixed — the reflecting finite state projection's moves (docs/theory.md §7.6) —
and V(y) for a batch of points is one broadcast evaluation of the propensities (NumPy or
torch, so on a GPU too); for a user's callable returning `scipy.sparse` the pattern is read
off Q(y) point by point and a batch uses the union of its points' patterns.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from sp_ode.markov.generator import check_generator

__all__ = ["SparseFamily", "residual_numpy", "residual_torch", "design_points"]


def residual_numpy(q: np.ndarray, src: np.ndarray, dst: np.ndarray, V: np.ndarray) -> np.ndarray:
    """Qᵀq for a batch from the transition list: q (B, n), V (B, m) -> (B, n) (reference implementation)."""
    B, n = q.shape
    w = V * q[:, src]
    r = np.zeros((B, n))
    for b in range(B):
        r[b] = np.bincount(dst, weights=w[b], minlength=n) - np.bincount(src, weights=w[b], minlength=n)
    return r


def residual_torch(q, src, dst, V):
    """Qᵀq in torch, differentiable in q: q (B, n), src/dst (m,) int64, V (B, m) -> (B, n)."""
    import torch

    w = V * q[:, src]
    zero = torch.zeros_like(q)
    return zero.index_add(1, dst, w) - zero.index_add(1, src, w)


def design_points(lower, upper, count: int, *, kind: str = "sobol", seed: int = 0) -> np.ndarray:
    """`count` points of a scrambled Sobol or Latin-hypercube design in the box [lower, upper] (N, d).

    `scipy.stats.qmc`; a Sobol design of 2ᵐ points is balanced, so `count` is best a power
    of two (other counts take the first `count` points of the next power).
    """
    from scipy.stats import qmc

    lower, upper = np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)
    d = lower.size
    if kind == "sobol":
        m = max(0, int(np.ceil(np.log2(max(count, 1)))))
        u = qmc.Sobol(d, scramble=True, seed=seed).random_base2(m)[:count]
    elif kind == "lhs":
        u = qmc.LatinHypercube(d, seed=seed).random(count)
    else:
        raise ValueError(f"`design` must be one of ('sobol', 'lhs'); got {kind!r}.")
    return qmc.scale(u, lower, upper) if count else np.zeros((0, d))


class _BatchedPropensities:
    """A network's propensities at its transitions for many y at once: V (B, m), NumPy or torch.

    Each reaction's sympy propensity is lambdified over (species counts, slow variables,
    parameters) and called with the source states of its moves as (1, m_r) rows and y as
    (B, 1) columns, so broadcasting does the batch.
    """

    def __init__(self, network, space, moves):
        import sympy

        self.network = network
        names = (*network.species, *network.slow, *network.parameters)
        args = [network.symbols[v] for v in names]
        self._np = [sympy.lambdify(args, e, modules="numpy") for e in network.propensity_exprs]
        self._exprs, self._args = network.propensity_exprs, args
        self._torch = None
        self.counts = [space.states[src].astype(np.float64).T for src, _ in moves]   # per reaction (S, m_r)
        self.pvals = list(network.parameters.values())

    def numpy(self, ys: np.ndarray) -> np.ndarray:
        ys = np.asarray(ys, dtype=np.float64).reshape(-1, len(self.network.slow))
        cols = [ys[:, j:j + 1] for j in range(ys.shape[1])]
        out = []
        with np.errstate(all="ignore"):
            for f, c in zip(self._np, self.counts):
                v = np.asarray(f(*[row[None, :] for row in c], *cols, *self.pvals), dtype=np.float64)
                out.append(np.broadcast_to(v, (ys.shape[0], c.shape[1])))
        return np.concatenate(out, axis=1)

    def torch(self, ys):
        """The same for a torch tensor ys (B, d) on any device (rates carry no gradient)."""
        import sympy
        import torch

        if self._torch is None:
            self._torch = [sympy.lambdify(self._args, e, modules="torch") for e in self._exprs]
            self._tcounts = {}
        key = (ys.device, ys.dtype)
        if key not in self._tcounts:
            self._tcounts[key] = [torch.as_tensor(c, device=ys.device, dtype=ys.dtype) for c in self.counts]
        cols = [ys[:, j:j + 1] for j in range(ys.shape[1])]
        out = []
        with torch.no_grad():
            for f, c in zip(self._torch, self._tcounts[key]):
                v = f(*[row[None, :] for row in c], *cols, *self.pvals)
                v = torch.as_tensor(v, device=ys.device, dtype=ys.dtype)
                out.append(v.expand(ys.shape[0], c.shape[1]))
        return torch.cat(out, dim=1)


@dataclass(eq=False)
class SparseFamily:
    """A generator family y ↦ Q(y) (sparse) on a box D = [lower, upper] ⊂ ℝᵈ.

    Attributes
    ----------
    name : str
    n, d : int
    lower, upper : ndarray (d,)
    Q_fn : callable y (d,) -> Q(y), scipy.sparse (validated by `Q`)
    src, dst : ndarray (m,) int64 or None
        The fixed transition pattern (reaction networks); None when it is read off Q(y).
    coords : ndarray (n, S) or None
        Per state its species counts (input of the factored head, `neural.phi.model`).
    species : tuple of str or None
    system
        The NetworkSystem it came from, if any (its slow ODE, for the reduced flow).
    """

    name: str
    n: int
    d: int
    lower: np.ndarray
    upper: np.ndarray
    Q_fn: Callable
    src: np.ndarray | None = None
    dst: np.ndarray | None = None
    coords: np.ndarray | None = None
    species: tuple | None = None
    system: object = None
    _props: _BatchedPropensities | None = field(default=None, repr=False)

    # --- constructors ----------------------------------------------------------------------
    @classmethod
    def from_network(cls, system, lower, upper, *, name: str | None = None) -> SparseFamily:
        """From an `sp_ode.NetworkSystem`: its reflecting-FSP moves, batched propensities and `system.Q`."""
        net, space = system.network, system.space
        moves = [(src, dst) for src, dst, _ in net.transitions(space)]
        src = np.concatenate([s for s, _ in moves]).astype(np.int64)
        dst = np.concatenate([t for _, t in moves]).astype(np.int64)
        props = _BatchedPropensities(net, space, moves)
        return cls(name or system.name, space.n, len(net.slow), np.asarray(lower, float), np.asarray(upper, float),
                   system.Q, src, dst, space.states.astype(np.int64), tuple(space.species), system, props)

    @classmethod
    def from_callable(cls, name: str, fn: Callable, n: int, lower, upper) -> SparseFamily:
        """From a callable y (d,) -> Q(y), dense or `scipy.sparse` (pattern read point by point)."""
        lower, upper = np.asarray(lower, float), np.asarray(upper, float)
        return cls(name, int(n), int(lower.size), lower, upper, fn)

    # --- generators --------------------------------------------------------------------------
    def Q(self, y) -> sp.csr_array:
        """Q(y) as a validated CSR generator (the message names y when it is not one)."""
        y = np.asarray(y, dtype=np.float64).reshape(self.d)
        raw = self.Q_fn(y)
        where = f"Q(y) at y = [{', '.join(f'{v:.6g}' for v in y)}]"
        Q = check_generator(raw if sp.issparse(raw) else np.asarray(raw, dtype=np.float64), name=where)
        if Q.shape != (self.n, self.n):
            raise ValueError(f"`{where}` must have shape ({self.n}, {self.n}) like Q at the other points; "
                             f"got {Q.shape}.")
        return sp.csr_array(Q)

    def rates(self, ys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(src (m,), dst (m,), V (B, m)): the off-diagonal transitions of Q(y) at the rows of `ys`.

        A network's rates are checked (finite, ≥ 0) here; a callable's Q(y) is validated by `Q`.
        """
        ys = np.asarray(ys, dtype=np.float64).reshape(-1, self.d)
        if self._props is not None:
            V = self._props.numpy(ys)
            bad = ~np.isfinite(V) | (V < 0)
            if bad.any():
                b = int(np.argmax(bad.any(axis=1)))
                self.Q(ys[b])  # raises the network's own error, naming the reaction and state
                raise ValueError(f"a propensity is negative or not finite at y = {ys[b].tolist()}.")
            return self.src, self.dst, V
        per = []
        for y in ys:
            C = self.Q(y).tocoo()
            off = (C.row != C.col) & (C.data != 0)
            per.append((C.row[off].astype(np.int64) * self.n + C.col[off], C.data[off]))
        keys = np.unique(np.concatenate([k for k, _ in per])) if per else np.zeros(0, np.int64)
        V = np.zeros((len(per), keys.size))
        for b, (k, v) in enumerate(per):
            V[b, np.searchsorted(keys, k)] = v
        return keys // self.n, keys % self.n, V

    def inside(self, ys: np.ndarray) -> np.ndarray:
        """Boolean (N,): which rows of `ys` (N, d) lie in D."""
        return np.all((ys >= self.lower) & (ys <= self.upper), axis=-1)

    def normalised(self, ys: np.ndarray) -> np.ndarray:
        """ys mapped affinely from D onto [−1, 1]ᵈ (distances between points for anchor choice)."""
        return 2 * (np.asarray(ys, float) - self.lower) / (self.upper - self.lower) - 1
