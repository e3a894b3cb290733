"""Adaptive Chebyshev interpolation on an interval: the one builder of the slow-manifold tables.

A vector function v(y) on [a, b] is sampled at nested Chebyshev–Lobatto points
y_j = (a + b)/2 − (b − a)/2 · cos(πj/M), M = 8, 16, 32, …, and fitted by the degree-M Chebyshev
series.  Doubling M keeps every old node (θ_j = πj/M is θ_{2j} at 2M), so each level costs only
the new nodes.  The change of the previous interpolant at the new nodes,

    δ_M = max_j |p_{M/2}(y_{2j+1}) − v(y_{2j+1})| / max(1, |v(y_{2j+1})|),

is the error estimate; the level is accepted when δ_M ≤ tol.  The nodes are visited in one direction
(from b down to a, θ = π … 0), so a caller whose v warm-starts a solve from the previous one gets its
warm starts from a neighbour.

**Tensor fits** (`chebyshev_fit_tensor`).  A vector function v(y, k) on [a, b] × [c, d] is sampled on the
tensor grid of a fixed set of M_y + 1 Lobatto nodes in y and nested Lobatto nodes in k: at each k-node the
caller returns v at all the y-nodes at once (the network tables need every y-node of one k together, for a
derivative in y).  The k-direction is `chebyshev_fit` itself on the flattened values — the same nested
doubling and the same change δ, now over every y-node and component — and each k-node's values must also
pass the y-direction's δ at M_y (the change of the degree-M_y/2 interpolant of the even y-nodes at the odd
ones); at the first k-node that does not, M_y is doubled and the fit started again.  The result is the
tensor interpolant

    p(y, k) = Σ_l Σ_j C[l, j] T_l(ξ_k) T_j(ξ_y),

whose coefficients at fixed k, c_j(k) = Σ_l C[l, j] T_l(ξ_k), are a 1-D fit in y (`TensorChebyshev.y_coef`).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sp_ode.core.errors import Error

__all__ = ["ChebyshevFit", "chebyshev_fit", "ChebyshevConvergenceError", "TensorChebyshev",
           "chebyshev_fit_tensor", "lobatto_nodes"]

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


def lobatto_nodes(a: float, b: float, M: int) -> np.ndarray:
    """The M + 1 Chebyshev–Lobatto points of [a, b], y_j = (a + b)/2 − (b − a)/2·cos(πj/M), from b down to a."""
    theta = np.pi * np.arange(M + 1)[::-1] / M
    return 0.5 * (a + b) - 0.5 * (b - a) * np.cos(theta)


def _check_degree(name: str, M) -> int:
    if isinstance(M, bool) or not isinstance(M, (int, np.integer)) or M < 2 or M & (M - 1):
        raise ValueError(f"`{name}` must be a power of 2, at least 2 (the levels are nested); got {M!r}.")
    return int(M)


def chebyshev_fit(values: Callable[[float], np.ndarray], a: float, b: float, *, tol: float, max_nodes: int,
                  remedy: str = "shrink the interval or raise `max_nodes`",
                  first_degree: int = FIRST_DEGREE, judged: np.ndarray | None = None) -> ChebyshevFit:
    """Fit v(y) on [a, b] to the change `tol` with at most `max_nodes` nodes (module docstring).

    `values(y)` returns a 1-D array (the same length at every y); it is called once per node.  The first
    level has degree `first_degree` (a power of 2; the first estimate is at twice it).  `judged`, a boolean
    mask over the components, restricts δ to those (default: all); the others are fitted on the same nodes.

    Raises
    ------
    ValueError
        `first_degree` is not a power of 2 (≥ 2).
    ChebyshevConvergenceError
        No level within `max_nodes` met `tol`; the message names the interval, the nodes, the last change
        and `remedy`.
    """
    a, b = float(a), float(b)
    cache: dict[int, np.ndarray] = {}     # a node's values, keyed by j·2³⁰/M (θ = πj/M): equal for nested nodes
    M, prev, err = _check_degree("first_degree", first_degree), None, np.inf
    cols = slice(None) if judged is None else np.asarray(judged, dtype=bool)
    while True:
        nodes = lobatto_nodes(a, b, M)                              # θ = π … 0: y from b down to a
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
            err = float(np.max((np.abs(np.polynomial.chebyshev.chebval(xi[1::2], prev).T - V[1::2])
                                / np.maximum(1.0, np.abs(V[1::2])))[:, cols]))
            if err <= tol:
                return ChebyshevFit(a, b, coef, nodes, V, err)
        if 2 * M + 1 > max_nodes:
            raise ChebyshevConvergenceError(
                f"the slow-manifold table did not converge on [{a:.6g}, {b:.6g}] with {M + 1} nodes "
                f"(change {err:.2e} > tol {tol:.1e}); {remedy}.")
        prev, M = coef, 2 * M


@dataclass(frozen=True)
class TensorChebyshev:
    """A converged tensor fit of v(y, k) (module docstring): `coef` (M_k + 1, M_y + 1, m) on
    ξ_y = (2y − a − b)/(b − a), ξ_k = (2k − c − d)/(d − c); `error_k` the last change in k (over every
    y-node), `error_y` the worst change in y over the k-nodes, both over the judged components; `free_k`,
    `free_y` the same changes of the components not judged (nan when every one is)."""

    a: float
    b: float
    c: float
    d: float
    coef: np.ndarray
    error_k: float
    error_y: float
    free_k: float = float("nan")
    free_y: float = float("nan")

    @property
    def degrees(self) -> tuple[int, int]:
        """(M_y, M_k)."""
        return self.coef.shape[1] - 1, self.coef.shape[0] - 1

    def y_coef(self, k) -> np.ndarray:
        """The 1-D Chebyshev coefficients in y at k (scalar or array (b,)): (M_y + 1, m) or (b, M_y + 1, m)."""
        k = np.asarray(k, dtype=np.float64)
        xk = (2 * k.reshape(-1) - self.c - self.d) / (self.d - self.c)
        Tk = np.polynomial.chebyshev.chebvander(xk, self.coef.shape[0] - 1)        # (b, M_k + 1)
        C = np.tensordot(Tk, self.coef, axes=(-1, 0))                               # (b, M_y + 1, m)
        return C.reshape(*k.shape, *self.coef.shape[1:])

    def __call__(self, y, k) -> np.ndarray:
        """p(y, k) at matching (broadcast) y and k: (..., m)."""
        y, k = np.broadcast_arrays(np.asarray(y, dtype=np.float64), np.asarray(k, dtype=np.float64))
        C = self.y_coef(k.reshape(-1))                                               # (b, M_y + 1, m)
        xy = (2 * y.reshape(-1) - self.a - self.b) / (self.b - self.a)
        Ty = np.polynomial.chebyshev.chebvander(xy, C.shape[1] - 1)                  # (b, M_y + 1)
        return np.einsum("bj,bjm->bm", Ty, C).reshape(*y.shape, C.shape[2])


class _CoarseInY(Error):
    """A k-node's values failed the y-direction's change: stop this k-fit, double M_y (`chebyshev_fit_tensor`)."""


def _change(V: np.ndarray) -> float:
    """δ of values V (M + 1, m) at the Lobatto nodes (in their order, b down to a): the degree-M/2 interpolant
    of the even nodes at the odd ones, relative to max(1, |v|) (the estimate of `chebyshev_fit` at level M)."""
    if V.size == 0:
        return float("nan")
    M = V.shape[0] - 1
    xi = -np.cos(np.pi * np.arange(M + 1)[::-1] / M)
    half = np.polynomial.chebyshev.chebfit(xi[::2], V[::2], M // 2)
    return float(np.max(np.abs(np.polynomial.chebyshev.chebval(xi[1::2], half).T - V[1::2])
                        / np.maximum(1.0, np.abs(V[1::2]))))


def chebyshev_fit_tensor(values: Callable[[np.ndarray, float], np.ndarray], a: float, b: float, c: float, d: float,
                         *, degree_y: int, tol: float, max_nodes: int, max_nodes_k: int | None = None,
                         first_degree_k: int = 4, judged: np.ndarray | None = None,
                         remedy: str = "shrink the intervals or raise `max_nodes`") -> TensorChebyshev:
    """Fit v(y, k) on [a, b] × [c, d] to the change `tol` in both directions (module docstring).

    `values(nodes, k)` returns v at the y-nodes `nodes` (`lobatto_nodes(a, b, M_y)`, b down to a) for one k:
    shape (M_y + 1, m); it is called once per k-node (k from d down to c) and y-degree tried.  M_y starts at
    `degree_y` (a power of 2, e.g. a 1-D fit's degree at one k), at most `max_nodes` y-nodes; the k-levels start
    at `first_degree_k`, at most `max_nodes_k` k-nodes (default `max_nodes`).  `judged`, a boolean mask over
    the m components, restricts both changes to those (default: all); the others' changes are reported.

    Raises
    ------
    ValueError
        `degree_y` or `first_degree_k` is not a power of 2 (≥ 2), or `judged` judges nothing.
    ChebyshevConvergenceError
        A direction did not meet `tol` within its node budget (the message says which).
    """
    a, b, c, d = float(a), float(b), float(c), float(d)
    My = _check_degree("degree_y", degree_y)
    _check_degree("first_degree_k", first_degree_k)
    mask = None if judged is None else np.asarray(judged, dtype=bool)
    if mask is not None and not mask.any():
        raise ValueError("`judged` must judge at least one component; got none.")
    while True:
        nodes = lobatto_nodes(a, b, My)
        shape: list = []
        worst, free = [0.0], [float("nan")]

        def flat(k, nodes=nodes, shape=shape, worst=worst, free=free):
            V = np.asarray(values(nodes, float(k)), dtype=np.float64)
            shape[:] = V.shape
            on = np.ones(V.shape[1], dtype=bool) if mask is None else mask
            worst[0] = max(worst[0], _change(V[:, on]))
            if not on.all():
                free[0] = float(np.nanmax([free[0], _change(V[:, ~on])]))
            if worst[0] > tol:          # M_y too small at this k: the other k-nodes would be wasted on it
                raise _CoarseInY
            return V.reshape(-1)

        try:
            fit = chebyshev_fit(flat, c, d, tol=tol, max_nodes=max_nodes if max_nodes_k is None else max_nodes_k,
                                first_degree=first_degree_k, remedy=f"(in k) {remedy}",
                                judged=None if mask is None else np.tile(mask, My + 1))
        except _CoarseInY:
            fit = None
        if fit is not None:
            m = shape[1]
            Ck = fit.coef.reshape(fit.degree + 1, My + 1, m)                 # k-coefficients of the y-node values
            xi = (2 * nodes - a - b) / (b - a)
            Cy = np.polynomial.chebyshev.chebfit(xi, Ck.transpose(1, 0, 2).reshape(My + 1, -1), My)
            coef = Cy.reshape(My + 1, fit.degree + 1, m).transpose(1, 0, 2)
            free_k = float("nan") if mask is None else _change(fit.values[:, ~np.tile(mask, My + 1)])
            return TensorChebyshev(a, b, c, d, coef, fit.error, worst[0], free_k, free[0])
        if 2 * My + 1 > max_nodes:
            raise ChebyshevConvergenceError(
                f"the tensor table did not converge in y on [{a:.6g}, {b:.6g}] with {My + 1} nodes (change "
                f"{worst[0]:.2e} > tol {tol:.1e} at some k in [{c:.6g}, {d:.6g}]); {remedy}.")
        My *= 2
