"""Non-neural surrogates of p_st(y) on a box (issue 27's baseline): tensor-product Chebyshev and Smolyak sparse grids.

Both interpolate y ↦ log p_st(y) (n values per node; log space because a CME's stationary law is
close to an exponential family in the counts, the same reason the network's head is in log space)
at nested Chebyshev–Lobatto (Clenshaw–Curtis) nodes and return softmax(interpolant), a distribution.

- tensor product, m nodes per axis: m^d exact solves;
- Smolyak's combination technique of level L (Gerstner–Griebel 1998): the sum over multi-indices l
  with L − d + 1 ≤ |l|₁ ≤ L of (−1)^{L−|l|} C(d − 1, L − |l|) · (tensor interpolant on levels l), level
  0 one node (the centre), level ℓ ≥ 1 2^ℓ + 1 nodes; all its nodes are nested, so each exact solve
  is done once.

Chebyshev coefficients come from ``scipy.fft.dct`` (type I) along each axis.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
from scipy.fft import dct


def _nodes(level: int) -> np.ndarray:
    if level == 0:
        return np.zeros(1)
    m = 2**level + 1
    return np.cos(np.pi * np.arange(m) / (m - 1))


def _coefficients(F: np.ndarray, axis: int) -> np.ndarray:
    m = F.shape[axis]
    if m == 1:
        return F
    c = dct(F, type=1, axis=axis) / (m - 1)
    idx = [slice(None)] * F.ndim
    for k in (0, m - 1):
        idx[axis] = k
        c[tuple(idx)] /= 2
    return c


def _basis(x: np.ndarray, m: int) -> np.ndarray:
    """T_0 … T_{m−1} at x (N,) -> (N, m)."""
    return np.cos(np.outer(np.arccos(np.clip(x, -1, 1)), np.arange(m)))


class ChebyshevSurrogate:
    """A combination of tensor Chebyshev interpolants of log p_st over [lower, upper] (module docstring)."""

    def __init__(self, solve: Callable, lower, upper, levels: list[tuple[tuple[int, ...], float]]):
        self.lower, self.upper = np.asarray(lower, float), np.asarray(upper, float)
        self.d = self.lower.size
        cache: dict[tuple, np.ndarray] = {}
        self.terms = []
        for lv, weight in levels:
            axes = [_nodes(level) for level in lv]
            F = None
            for idx in itertools.product(*[range(len(a)) for a in axes]):
                z = np.array([a[i] for a, i in zip(axes, idx)])
                key = tuple(np.round(z, 14))
                if key not in cache:
                    y = self.lower + (z + 1) * (self.upper - self.lower) / 2
                    cache[key] = np.log(np.maximum(solve(y), 1e-300))
                if F is None:
                    F = np.empty(tuple(len(a) for a in axes) + cache[key].shape)
                F[idx] = cache[key]
            C = F
            for ax in range(self.d):
                C = _coefficients(C, ax)
            self.terms.append((weight, C))
        self.solves = len(cache)

    def predict(self, ys: np.ndarray) -> np.ndarray:
        z = 2 * (np.asarray(ys, float) - self.lower) / (self.upper - self.lower) - 1
        out = 0.0
        for weight, C in self.terms:
            T = C
            for ax in range(self.d):   # contract the leading axis each time: (N, …) after the first
                B = _basis(z[:, ax], C.shape[ax])
                T = np.einsum("km,m...->k...", B, T) if ax == 0 else np.einsum("km,km...->k...", B, T)
            out = out + weight * T
        out = out - out.max(axis=1, keepdims=True)
        p = np.exp(out)
        return p / p.sum(axis=1, keepdims=True)


def tensor_levels(d: int, level: int) -> list:
    return [((level,) * d, 1.0)]


def smolyak_levels(d: int, L: int) -> list:
    out = []
    for lv in itertools.product(range(L + 1), repeat=d):
        s = sum(lv)
        if L - d + 1 <= s <= L:
            out.append((lv, (-1) ** (L - s) * math.comb(d - 1, L - s)))
    return out


def smolyak_count(d: int, L: int) -> int:
    """The number of distinct nodes (exact solves) of the level-L sparse grid in d dimensions."""
    pts = set()
    for lv, _ in smolyak_levels(d, L):
        for z in itertools.product(*[np.round(_nodes(level), 14) for level in lv]):
            pts.add(z)
    return len(pts)
