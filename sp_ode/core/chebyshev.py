"""Adaptive Chebyshev interpolation on an interval: the one builder of the slow-manifold tables.

A vector function v(y) on [a, b] is sampled at nested Chebyshev–Lobatto points
y_j = (a + b)/2 − (b − a)/2 · cos(πj/M), M = 8, 16, 32, …, and fitted by the degree-M Chebyshev
series.  Doubling M keeps every old node (θ_j = πj/M is θ_{2j} at 2M), so each level costs only
the new nodes.  The change of the previous interpolant at the new nodes,

    δ_M = max_j |p_{M/2}(y_{2j+1}) − v(y_{2j+1})| / max(1, |v(y_{2j+1})|),

is the error estimate; the level is accepted when δ_M ≤ tol.  The nodes are visited in one direction
(from b down to a, θ = π … 0), so a caller whose v warm-starts a solve from the previous one gets its
warm starts from a neighbour.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sp_ode.core.errors import Error

__all__ = ["ChebyshevFit", "chebyshev_fit", "ChebyshevConvergenceError"]

FIRST_DEGREE = 8


class ChebyshevConvergenceError(Error, RuntimeError):
    """The interpolant's change stayed above the tolerance up to the node budget."""


@dataclass(frozen=True)
class ChebyshevFit:
    """A converged fit: `coef` (M + 1, k) on ξ = (2y − a − b)/(b − a) ∈ [−1, 1], its nodes (b down to a)
    and values there, and the last change `error` (the estimate, module docstring)."""

    a: float
    b: float
    coef: np.ndarray
    nodes: np.ndarray
    values: np.ndarray
    error: float

    @property
    def degree(self) -> int:
        return self.coef.shape[0] - 1

    @property
    def xi(self) -> np.ndarray:
        return (2 * self.nodes - self.a - self.b) / (self.b - self.a)

    def __call__(self, y) -> np.ndarray:
        """The interpolant at y (scalar or array): (k,) or (..., k)."""
        xi = (2 * np.asarray(y, dtype=np.float64) - self.a - self.b) / (self.b - self.a)
        return np.moveaxis(np.polynomial.chebyshev.chebval(xi, self.coef), 0, -1)


def chebyshev_fit(values: Callable[[float], np.ndarray], a: float, b: float, *, tol: float, max_nodes: int,
                  remedy: str = "shrink the interval or raise `max_nodes`") -> ChebyshevFit:
    """Fit v(y) on [a, b] to the change `tol` with at most `max_nodes` nodes (module docstring).

    `values(y)` returns a 1-D array (the same length at every y); it is called once per node.

    Raises
    ------
    ChebyshevConvergenceError
        No level within `max_nodes` met `tol`; the message names the interval, the nodes, the last change
        and `remedy`.
    """
    a, b = float(a), float(b)
    cache: dict[int, np.ndarray] = {}     # a node's values, keyed by j·2³⁰/M (θ = πj/M): equal for nested nodes
    M, prev, err = FIRST_DEGREE, None, np.inf
    while True:
        theta = np.pi * np.arange(M + 1)[::-1] / M                 # θ = π … 0: y from b down to a
        nodes = 0.5 * (a + b) - 0.5 * (b - a) * np.cos(theta)
        V = []
        for j, y in zip(range(M, -1, -1), nodes):                   # θ = πj/M: the key j/M on one integer grid
            key = j * (1 << 30) // M
            if key not in cache:
                cache[key] = np.asarray(values(float(y)), dtype=np.float64)
            V.append(cache[key])
        V = np.array(V)
        xi = (2 * nodes - a - b) / (b - a)
        coef = np.polynomial.chebyshev.chebfit(xi, V, M)
        if prev is not None:
            err = float(np.max(np.abs(np.polynomial.chebyshev.chebval(xi[1::2], prev).T - V[1::2])
                               / np.maximum(1.0, np.abs(V[1::2]))))
            if err <= tol:
                return ChebyshevFit(a, b, coef, nodes, V, err)
        if 2 * M + 1 > max_nodes:
            raise ChebyshevConvergenceError(
                f"the slow-manifold table did not converge on [{a:.6g}, {b:.6g}] with {M + 1} nodes "
                f"(change {err:.2e} > tol {tol:.1e}); {remedy}.")
        prev, M = coef, 2 * M
