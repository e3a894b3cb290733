"""The initial layer: where a start off the slow manifold joins it (docs/theory.md §7.5).

From x0 ≠ h_ε(y0) the full solution of ε dx/dt = f(x, y), dy/dt = g(x, y) first relaxes along
the fast fibre through (x0, y0), in a layer of width O(ε log 1/ε), and only then follows the slow
manifold — from a base point y* that is **not** y0.  A reduced path of any order started at y0 is
therefore only O(ε) accurate (Tikhonov); started at y* it keeps its order.  On the fast clock
τ = t/ε (Vasil'eva; O'Malley, *Singular Perturbation Methods*, ch. 2) the boundary-layer
functions give

    y* = y0 + ε η₁ + O(ε²),   η₁ = ∫₀^∞ [g(X(τ), y0) − g(φ(y0), y0)] dτ,                 (L₁)

along the frozen fibre X' = f(X, y0), X(0) = x0, which tends to φ(y0) like e^{−γτ} (γ the decay
rate of D_x f at (φ(y0), y0), the spectral gap for a master equation).  For Michaelis–Menten
(ε v' = u − (u + K)v, u' = −u + (u + K − λ)v, v(0) = 0) X(τ) = φ(1 − e^{−(u0+K)τ}) and
η₁ = −(u0 + K − λ)φ(u0)/(u0 + K) in closed form.

Two projections are offered (`initial_layer=` of `simulate_reduced`):

* `"first_order"`: y* = y0 + ε η₁ by (L₁).  The start error is O(ε²), so a path of order k
  reaches O(ε^{min(k+1, 2)}).
* `"projected"` (the default): the layer itself, solved with the coupling on, on the fast clock
  (x' = f(x, y), y' = ε g(x, y), τ ∈ [0, S], S the frozen fibre's decay time, e^{−γS} ≤ e^{−40}),
  then the path's own reduced flow y' = g(h(y), y) integrated back over Δt = εS (RK4, `RK4_STEPS`
  steps) to t0.  At τ = S the state lies within e^{−40}‖x0 − φ‖ of the invariant manifold, so the
  base point is found to O(ε^{k+1}·εS) for an order-k path: the start then never limits the order.
  Its cost is fixed on the fast clock and does not grow as ε → 0.

Both first solve the frozen fibre, which decides whether a projection exists: γ ≤ 0 (no attracting
fibre) or a fibre still moving after `MAX_EXTEND` doublings of S (layer not resolved) warn
(`InitialLayerWarning`) and leave y0 unshifted; a fibre that settles elsewhere than φ(y0) (another
attractor: x0 outside the basin) or leaves the domain raises `LayerBasinError` naming x0 and the
fibre's end.  The projection is asymptotic in ε: it fails with a fold in the layer (γ → 0 along the
fibre) or several attractors on the fibre, which these checks report.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from sp_ode.core.cache import LRUCache
from sp_ode.core.errors import Error, SpOdeWarning
from sp_ode.core.precision import in_float64
from sp_ode.systems.integration import split_args

__all__ = ["LayerShift", "LayerBasinError", "InitialLayerWarning", "LAYER_METHODS", "layer_shift",
           "decay_rate"]

LAYER_METHODS = ("projected", "first_order", "none")
LAYER_DECAY = 40.0       # γS: the layer has decayed by e^{-40} ≈ 4e-18 at τ = S
MAX_EXTEND = 4           # doublings of S before the layer is declared unresolved
SETTLED_RTOL = 1e-9      # the fibre has settled when ‖f(X)‖/γ ≤ this·(1 + ‖X‖)
BASIN_RTOL = 1e-6        # the fibre's end must be φ(y0) to this (relative), or x0 is outside its basin
RK4_STEPS = 16           # back along the reduced flow over Δt = εS (error ~ (εS/16)^5 ‖D⁵‖)
LAYER_RTOL, LAYER_ATOL = 1e-11, 1e-13


class LayerBasinError(Error, ValueError):
    """x0 is not in the basin of the slow manifold: its fast fibre ends elsewhere than φ(y0)."""


class InitialLayerWarning(SpOdeWarning):
    """The start could not be projected onto the slow manifold (no attracting fibre, layer unresolved)."""


@dataclass(frozen=True)
class LayerShift:
    """Where the start (x0, y0) joins the slow manifold; `Trajectory.stats["initial_layer"]`.

    Attributes
    ----------
    method : str
        "projected", "first_order" or "none" (no shift applied: see `message`).
    y0, y_start : ndarray (d,)
        The given slow start and the base point the reduced path starts from.
    shift : ndarray (d,)
        y_start − y0 (the shift applied).
    first_order : ndarray (d,)
        ε η₁ of (L₁), the frozen-fibre shift (whatever the method; NaN when none exists).
    eta1 : ndarray (d,)
        η₁ itself (ε-free).
    gamma : float
        Decay rate of the fibre at (φ(y0), y0).
    tau : float
        Fast time S integrated.
    remainder : float
        ‖D_x g‖ ‖X(S) − φ(y0)‖/γ ε, the neglected tail of the layer integral.
    message : str
        Empty when the shift was applied; otherwise why not.
    """

    method: str
    y0: np.ndarray
    y_start: np.ndarray
    shift: np.ndarray
    first_order: np.ndarray
    eta1: np.ndarray
    gamma: float
    tau: float
    remainder: float
    message: str = ""

    def as_dict(self) -> dict:
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()}


def decay_rate(Fx: np.ndarray, master: bool) -> float:
    """γ = min −Re λ(D_x f) of one fibre (the conserved mode λ = 0 of a master equation left out)."""
    lam = np.linalg.eigvals(np.asarray(Fx, dtype=np.float64))
    if master and lam.size:
        lam = np.delete(lam, int(np.argmin(np.abs(lam))))
    return float(np.min(-lam.real)) if lam.size else math.inf


_KERNELS = LRUCache(32)


def _kernels(f, g, red, static, static_key):
    """jitted (frozen fibre rhs, its Jacobian, coupled layer rhs, its Jacobian, reduced rhs, D_x f, D_x g)."""
    def make():
        def frozen(tau, z, y0, phi0, t0, dyn):
            a = static.combine(dyn)
            m = phi0.shape[0]
            X = z[:m]
            return jnp.concatenate([f(t0, X, y0, a), g(t0, X, y0, a) - g(t0, phi0, y0, a)])

        def coupled(tau, z, m_like, eps, t0, dyn):
            a = static.combine(dyn)
            m = m_like.shape[0]
            x, y = z[:m], z[m:]
            t = t0 + eps * tau
            return jnp.concatenate([f(t, x, y, a), eps * g(t, x, y, a)])

        def reduced(t, y, eps_h, dyn):   # ε of the manifold is data: the kernel is shared across ε
            a = static.combine(dyn)
            return red.g(t, red.manifold(y, eps_h, a), y, a)

        def jac_x(t0, x, y0, dyn):
            a = static.combine(dyn)
            return (jax.jacfwd(lambda xx: f(t0, xx, y0, a))(x), jax.jacfwd(lambda xx: g(t0, xx, y0, a))(x))

        return (jax.jit(frozen), jax.jit(jax.jacfwd(frozen, argnums=1)), jax.jit(coupled),
                jax.jit(jax.jacfwd(coupled, argnums=1)), jax.jit(reduced), jax.jit(jac_x))
    return _KERNELS.get_or_make((f, g, red.phi_key, static_key), make)


def _fmt(v) -> str:
    return np.array2string(np.asarray(v), precision=6, separator=", ")


@in_float64
def layer_shift(system, red, x0, y0, *, eps: float, t0: float = 0.0, args=None,
                method: str = "projected", master: bool = False) -> LayerShift:
    """Project the start (x0, y0) along its fast fibre onto the manifold of `red` (module docstring).

    Parameters
    ----------
    system : FastSlowSystem
        The full system (its f and g).
    red : ReducedSystem
        The path: its manifold h(y) (φ at ε = 0) and reduced flow.
    x0 : ndarray (m,), y0 : ndarray (d,)
    eps : float
        Ε of the full system.
    t0 : float
        Start time (the fibre is frozen at t0).
    args
        Parameters of f and g (default the system's).
    method : {"projected", "first_order", "none"}
    master : bool
        A master equation (the conserved mode of D_x f is not a decay rate).

    Returns
    -------
    LayerShift

    Raises
    ------
    LayerBasinError
        The fibre from x0 settles at a point other than φ(y0), or leaves the domain (non-finite).

    Warns
    -----
    InitialLayerWarning
        D_x f at (φ(y0), y0) has an eigenvalue with Re ≥ 0 (no attracting fibre), or the fibre has
        not settled after `MAX_EXTEND` doublings of S: y0 is then used unshifted.
    """
    x0 = np.asarray(x0, dtype=np.float64)
    y0 = np.asarray(y0, dtype=np.float64)
    args = system.args if args is None else args
    dyn, static, static_key = split_args(args)
    frozen, frozen_jac, coupled, coupled_jac, reduced, jac_x = _kernels(system.f, system.g, red, static, static_key)
    nan = np.full(y0.shape, np.nan)

    def unshifted(message, gamma=math.nan, tau=0.0, eta=nan, remainder=math.nan):
        if message:
            warnings.warn(f"initial layer: {message}; the reduced path starts at y0 unshifted (O(ε) accurate).",
                          InitialLayerWarning, stacklevel=4)
        return LayerShift("none", y0, y0.copy(), np.zeros_like(y0), eps * eta, eta, gamma, tau, remainder, message)

    if method == "none":
        return unshifted("")
    phi0 = np.asarray(red.manifold(jnp.asarray(y0), 0.0, args), dtype=np.float64)
    if not np.all(np.isfinite(phi0)):
        raise LayerBasinError(f"`x0` = {_fmt(x0)} cannot be projected: the manifold φ(y0) is not defined at "
                              f"y0 = {_fmt(y0)} (got {_fmt(phi0)}).")
    Fx, Gx = (np.asarray(a, dtype=np.float64) for a in jac_x(t0, phi0, y0, dyn))
    gamma = decay_rate(Fx, master)
    if not gamma > 0:
        return unshifted(f"no attracting fibre at y0 = {_fmt(y0)}: D_x f at (φ(y0), y0) has decay rate "
                         f"γ = {gamma:.3g} ≤ 0 (the manifold repels or is not hyperbolic there)", gamma)
    m, d = x0.size, y0.size

    def settled_at(X):
        Xf = np.asarray(frozen(0.0, np.concatenate([X, np.zeros(d)]), y0, phi0, t0, dyn))[:m]
        return np.linalg.norm(Xf, np.inf) / gamma <= SETTLED_RTOL * (1.0 + np.linalg.norm(X, np.inf))

    # --- the frozen fibre X' = f(X, y0) with J' = g(X, y0) − g(φ0, y0): η₁ = J(∞) -------------------
    S = LAYER_DECAY / gamma
    z = np.concatenate([x0, np.zeros(d)])
    tau = 0.0
    for _ in range(MAX_EXTEND + 1):
        sol = solve_ivp(lambda s, zz: np.asarray(frozen(s, zz, y0, phi0, t0, dyn)), (tau, S), z, method="LSODA",
                        jac=lambda s, zz: np.asarray(frozen_jac(s, zz, y0, phi0, t0, dyn)),
                        rtol=LAYER_RTOL, atol=LAYER_ATOL)
        z, tau = sol.y[:, -1], float(sol.t[-1])
        if not sol.success or not np.all(np.isfinite(z)):
            raise LayerBasinError(f"`x0` = {_fmt(x0)} is not in the basin of the slow manifold: its fast fibre "
                                  f"X' = f(X, y0), y0 = {_fmt(y0)}, leaves the domain (solver: {sol.message}; "
                                  f"X = {_fmt(z[:m])} at τ = {tau:.3g}).")
        if settled_at(z[:m]):
            break
        S *= 2.0
    X_end = z[:m]
    if not settled_at(X_end):
        return unshifted(f"layer not resolved: the fast fibre from x0 = {_fmt(x0)} is still moving at τ = "
                         f"{tau:.3g} (= {LAYER_DECAY * 2 ** MAX_EXTEND:g}/γ, γ = {gamma:.3g}), X = {_fmt(X_end)}",
                         gamma, tau)
    if np.linalg.norm(X_end - phi0, np.inf) > BASIN_RTOL * (1.0 + np.linalg.norm(phi0, np.inf)):
        raise LayerBasinError(f"`x0` = {_fmt(x0)} is not in the basin of the slow manifold at y0 = {_fmt(y0)}: its "
                              f"fast fibre X' = f(X, y0) settles at X = {_fmt(X_end)}, not at φ(y0) = {_fmt(phi0)} "
                              "(another attractor). Start nearer the branch, or choose the branch with x_guess=/phi=.")
    eta1 = z[m:]
    remainder = eps * np.linalg.norm(Gx, 2) * np.linalg.norm(X_end - phi0) / gamma
    if method == "first_order":
        y_start = y0 + eps * eta1
        return LayerShift(method, y0, y_start, y_start - y0, eps * eta1, eta1, gamma, tau, float(remainder))

    # --- "projected": the layer with the coupling on, then back along the path's own flow -------------
    sol = solve_ivp(lambda s, zz: np.asarray(coupled(s, zz, x0, eps, t0, dyn)), (0.0, tau), np.concatenate([x0, y0]),
                    method="LSODA", jac=lambda s, zz: np.asarray(coupled_jac(s, zz, x0, eps, t0, dyn)),
                    rtol=LAYER_RTOL, atol=LAYER_ATOL)
    zS = sol.y[:, -1]
    if not sol.success or not np.all(np.isfinite(zS)):
        raise LayerBasinError(f"`x0` = {_fmt(x0)}: the initial layer at ε = {eps:g} leaves the domain "
                              f"(solver: {sol.message}).")
    y = zS[m:]
    t_end = t0 + eps * tau
    dt = (t0 - t_end) / RK4_STEPS
    t = t_end

    def rhs(tt, yy):
        return np.asarray(reduced(tt, jnp.asarray(yy), red.eps, dyn), dtype=np.float64)

    for _ in range(RK4_STEPS):
        k1 = rhs(t, y)
        k2 = rhs(t + dt / 2, y + dt / 2 * k1)
        k3 = rhs(t + dt / 2, y + dt / 2 * k2)
        k4 = rhs(t + dt, y + dt * k3)
        y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t += dt
    return LayerShift(method, y0, y, y - y0, eps * eta1, eta1, gamma, tau, float(remainder))
