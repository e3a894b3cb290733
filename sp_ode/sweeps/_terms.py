"""Manifold terms of the sweep's reduced paths: h^{(k)} = φ + εh₁ + … + εᵏh_k per plan (T3, docs/theory.md §3.3).

Orders ≤ 1 come from `sp_ode.slow_manifold` (T3's closed form for a master equation, the series
otherwise); each higher order is one step of the invariance equation (O_j) on top of the last
(`next_term`), cross-checked against `slow_manifold(..., method="series")` in
tests/sweeps/test_sweep.py.  Built once per system in a process and kept in the plan's `built`
cache (`sp_ode.sweeps._paths.SweepPlan`).
"""
from __future__ import annotations

import jax
import jax.numpy as jnp

from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

__all__ = ["horner", "next_term", "manifold_terms", "manifold"]


def horner(terms, eps):
    """Σ_i εⁱ T_i by Horner's rule (differentiable in ε at 0, unlike ε ** arange)."""
    x = terms[-1]
    for T in reversed(terms[:-1]):
        x = T + eps * x
    return x


def next_term(system: FastSlowSystem, lower, j: int):
    """terms(y, args) -> [φ, h₁, …, h_j], h_j from the invariance equation (O_j) of T3.

    `lower(y, args)` gives [φ, …, h_{j−1}].  As in `sp_ode.slow_manifold` (series):
    A h_j = [εʲ] (ε DH·g(H, y) − f(H, y)), H = Σ_{i<j} εⁱh_i, A = D_x f(φ(y), y),
    with the last row replaced by 1ᵀh_j = 0 for a master equation (docs/theory.md
    §3.3).  Built on top of T3's closed form for orders ≤ 1, so each order costs one
    linear solve more than the last instead of nested derivatives through Newton's
    method for φ (what the series differentiates).
    """
    from sp_ode.manifolds.slow_manifold import taylor_coefficient  # noqa: PLC0415 - only for reduced paths

    f, g = system.f, system.g
    master = isinstance(system, MasterEquationSystem)

    def terms(y, args):
        y = jnp.reshape(y, (-1,))

        def stacked(yy):
            T = jnp.stack(lower(yy, args))
            return T, T
        # the lower terms and their y-Jacobians once: the j nested ε-derivatives below then pass
        # through f and g only (not through every lower term again; sp_ode.manifolds.slow_manifold)
        D, low_arr = jax.jacfwd(stacked, has_aux=True)(y)
        low = list(low_arr)

        def residual(eps):
            x = horner(low, eps)
            v = g(0.0, x, y, args)
            Dh_g = horner(list(D @ v), eps)
            r = eps * Dh_g - f(0.0, x, y, args)
            return r.at[-1].set(0.0) if master else r

        c = taylor_coefficient(residual, j)
        A = jax.jacfwd(lambda x: f(0.0, x, y, args))(low[0])
        if master:
            A = A.at[-1].set(1.0)
        return low + [jnp.linalg.solve(A, c)]
    return terms


def manifold_terms(plan, order: int):
    """terms(y, args) -> [φ, h₁, …, h_order]: `sp_ode.slow_manifold` up to order 1, then (O_j)."""
    # imported here: an all-full sweep never needs the manifolds (0.2 s of imports in a fresh process)
    from sp_ode.manifolds.slow_manifold import slow_manifold  # noqa: PLC0415

    key = ("terms", order)
    if key not in plan.built:
        if order <= 1:
            # T3's closed form (one inverse per y) for a master equation; the series otherwise
            method = "closed_form" if isinstance(plan.system, MasterEquationSystem) else "series"
            phi_eps = slow_manifold(plan.system, order=order, method=method).reduced_system(1.0).phi_eps

            def fn(y, args, phi_eps=phi_eps, order=order):
                T0 = phi_eps(y, 0.0, args)
                return [T0] if order == 0 else [T0, phi_eps(y, 1.0, args) - T0]  # degree-1 polynomial
        else:
            fn = next_term(plan.system, manifold_terms(plan, order - 1), order)
        plan.built[key] = fn
    return plan.built[key]


def manifold(plan, order: int):
    """h^{(order)}(y, ε, args) = Σ_{j ≤ order} εʲ h_j(y)."""
    key = ("manifold", order)
    if key not in plan.built:
        terms = manifold_terms(plan, order)

        def h(y, eps, args):
            return horner(terms(y, args), eps)
        plan.built[key] = h
    return plan.built[key]
