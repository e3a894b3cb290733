"""Numeric evidence for proof.md §3–4 (T2 Tikhonov and T3 slow manifold): the O(ε) and O(ε²) rates.

System: the built-in non-reversible 3-state family Q(y) = `sp_ode.FAMILIES["cycle3"]`
with ε dx/dt = Q(y)ᵀx, dy/dt = g(x, y) = 1.5 x₁ − x₀ − 0.3 y, from x(0) = e₀
(far from the manifold), y(0) = 0.  For ε = 1/16 … 1/1024 the full system is
solved with scipy Radau (rtol 1e-11, atol 1e-13) — deliberately independent of
the toolkit's fast–slow module — and, on t ∈ [0.5, 1] (past the initial layer
of width O(ε log 1/ε)), we measure

    d₀ = max ‖x − p_st(y)‖∞              (T2: O(ε)),
    d₁ = max ‖x − p_st(y) − ε h₁(y)‖∞    (T3: O(ε²)),
    d_y = max |y − y₀|                   (T2: O(ε), y₀ the reduced flow y₀' = g(p_st(y₀), y₀)),

with p_st from `sp_ode.stationary_distribution` and h₁ from the closed form of T3
(∂_y A by central differences, error ~1e-10, far below ε²).  The log–log slopes
must be 1, 2 and 1 within 0.15.  A second claim compares the toolkit's own
`sp_ode.slow_manifold` (the invariance equation solved order by order with JAX)
with the same closed form.

    python proofs/check_rates.py [--smoke] [--json]
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402
from scipy.integrate import solve_ivp  # noqa: E402

import sp_ode  # noqa: E402
from sp_ode.cli.claims import ClaimSet  # noqa: E402

claims = ClaimSet("check_rates.py")
FAMILY = sp_ode.FAMILIES["cycle3"]
SLOPE_TOL = 0.15


def Q_of(y: float) -> np.ndarray:
    """cycle3 written out in NumPy (the family's generic array-namespace call costs 0.5 ms; this is
    called ~10⁵ times); `rates` asserts it equals `FAMILY` before use."""
    e, eh, em = np.exp(y), np.exp(y / 2), np.exp(-y)
    R = np.array([[0.0, 2.0 * e, 0.5], [1.0, 0.0, 1.0 + em], [1.5 * eh, 0.3, 0.0]])
    return R - np.diag(R.sum(axis=1))


def g(x: np.ndarray, y: float) -> float:
    return 1.5 * x[1] - x[0] - 0.3 * y


def p_st(y: float) -> np.ndarray:
    return sp_ode.stationary_distribution(Q_of(y))


def h1(y: float) -> np.ndarray:
    """T3: h₁ = (A − p1ᵀ)⁻¹ [Dp · g(p, y)], Dp = −(A − p1ᵀ)⁻¹ (∂_y A) p."""
    p = p_st(y)
    A = Q_of(y).T
    step = 1e-5
    dA = (Q_of(y + step).T - Q_of(y - step).T) / (2 * step)
    B = A - np.outer(p, np.ones(3))
    Dp = -np.linalg.solve(B, dA @ p)
    return np.linalg.solve(B, Dp * g(p, y))


def distances(eps: float, times: np.ndarray) -> tuple[float, float, float]:
    def full(t, z):
        x, y = z[:3], z[3]
        return np.concatenate([Q_of(y).T @ x / eps, [g(x, y)]])

    z0 = np.array([1.0, 0.0, 0.0, 0.0])
    sol = solve_ivp(full, (0.0, times[-1]), z0, method="Radau", t_eval=times, rtol=1e-11, atol=1e-13)
    red = solve_ivp(lambda t, y: [g(p_st(y[0]), y[0])], (0.0, times[-1]), [0.0], method="DOP853",
                    t_eval=times, rtol=1e-12, atol=1e-14)
    if sol.status != 0 or red.status != 0:
        raise RuntimeError(f"solve_ivp failed at eps = {eps}: {sol.message} / {red.message}")
    d0 = d1 = dy = 0.0
    for k in range(len(times)):
        x, y = sol.y[:3, k], sol.y[3, k]
        p = p_st(y)
        d0 = max(d0, np.max(np.abs(x - p)))
        d1 = max(d1, np.max(np.abs(x - p - eps * h1(y))))
        dy = max(dy, abs(y - red.y[0, k]))
    return d0, d1, dy


@claims.claim(
    "T2T3.rates",
    "Past the initial layer, |x - p_st(y)| = O(eps), |x - p_st(y) - eps h1(y)| = O(eps^2) and "
    "|y - y_reduced| = O(eps): fitted log-log slopes 1, 2, 1 (within 0.15).",
    "scipy Radau (rtol 1e-11) on cycle3 + linear g, eps = 1/16..1/1024 (1/16..1/128 with --smoke)",
)
def rates(smoke: bool):
    for y in (-1.3, 0.0, 0.7):
        if not np.allclose(Q_of(y), np.asarray(FAMILY(np.array([y]))), rtol=1e-14, atol=0):
            return False, f"Q_of differs from FAMILIES['cycle3'] at y = {y}"
    Ps = [16, 32, 64, 128] if smoke else [16, 32, 64, 128, 256, 512, 1024]
    times = np.linspace(0.5, 1.0, 6 if smoke else 26)
    rows = np.array([distances(1.0 / P, times) for P in Ps])
    eps = 1.0 / np.array(Ps, dtype=float)
    slopes = [float(np.polyfit(np.log(eps), np.log(rows[:, j]), 1)[0]) for j in range(3)]
    ok = all(abs(s - e) <= SLOPE_TOL for s, e in zip(slopes, (1.0, 2.0, 1.0)))
    consts = rows[-1] / np.array([eps[-1], eps[-1] ** 2, eps[-1]])
    return ok, (f"slopes {slopes[0]:.3f}, {slopes[1]:.3f}, {slopes[2]:.3f} (expected 1, 2, 1); "
                f"constants at the smallest eps: {consts[0]:.3f} eps, {consts[1]:.3f} eps^2, {consts[2]:.3f} eps")


@claims.claim(
    "T3.toolkit-h1",
    "The toolkit's slow manifold (sp_ode.slow_manifold, method 'series': the invariance equation solved "
    "order by order with JAX derivatives) agrees with T3's closed form h1 and with p_st on a grid of y.",
    "sp_ode.slow_manifold vs numpy closed form (central differences for d_y A), 9 (smoke 5) points in [-2, 2]",
)
def toolkit_h1(smoke: bool):
    import jax.numpy as jnp

    def g_jax(t, x, y, args):
        return jnp.stack([1.5 * x[1] - x[0] - 0.3 * y[0]])

    system = sp_ode.MasterEquationSystem(FAMILY, g_jax, eps=0.01)
    ys = np.linspace(-2.0, 2.0, 5 if smoke else 9)
    terms = np.asarray(sp_ode.slow_manifold(system, order=1, method="series").terms(ys.reshape(-1, 1)))
    err_phi = max(float(np.max(np.abs(terms[k, 0] - p_st(y)))) for k, y in enumerate(ys))
    err_h1 = max(float(np.max(np.abs(terms[k, 1] - h1(y)))) for k, y in enumerate(ys))
    scale = max(float(np.max(np.abs(h1(y)))) for y in ys)
    # φ: Newton to rounding; h₁: our central differences carry ~1e-10 relative error
    ok = err_phi < 1e-12 and err_h1 < 1e-8 * scale
    return ok, f"max |phi - p_st| = {err_phi:.1e}, max |h1_toolkit - h1_T3| = {err_h1:.1e} (max |h1| = {scale:.2f})"


if __name__ == "__main__":
    raise SystemExit(claims.main())
