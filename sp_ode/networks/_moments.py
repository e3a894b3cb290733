"""Moments of the mass that left a finite state projection: the growth bounds of docs/theory.md §7.10.

The leaked mass of an FSP bounds probabilities, not moments.  With V the total count of the species
no conservation law caps, Dynkin's formula and Grönwall bound E[V] and E[V²] of the process after it
left the projection — when every reaction that raises V has a propensity affine in the counts
(checked symbolically here) — by the 3×3 linear system m₁' ≤ α + βm₁, m₂' ≤ γ₀ + γ₁m₁ + γ₂m₂.
`sp_ode.networks.transient.TransientDistribution` turns them into certified intervals.
"""
from __future__ import annotations

import numpy as np

__all__ = ["affine_observable", "affine_coefficients", "caps_of", "growth_constants", "moment_growth"]


def affine_observable(network, space, name: str) -> tuple[np.ndarray, float] | None:
    """(a (S,), b) with the species or observable `name` = a·x + b and a ≥ 0, else None."""
    if name in space.species:
        a = np.zeros(len(space.species))
        a[space.species.index(name)] = 1.0
        return a, 0.0
    if network is None or name not in network.observables:
        raise ValueError(f"`name` must be a species {space.species} or an observable "
                         f"{tuple(network.observables) if network is not None else ()}; got {name!r}.")
    e = network.observables[name].subs({network.symbols[p]: v for p, v in network.parameters.items()})
    coef = affine_coefficients(e, [network.symbols[s] for s in network.species])
    if coef is None or np.any(coef[1] < 0):
        return None
    return coef[1], coef[0]


def affine_coefficients(expr, species) -> tuple[float, np.ndarray] | None:
    """(c0, c (S,)) when `expr` is exactly c0 + c·x in the counts x, else None."""
    import sympy

    try:
        poly = sympy.Poly(sympy.expand(expr), *species)
    except sympy.PolynomialError:
        return None
    if poly.total_degree() > 1:
        return None
    try:
        c0 = float(poly.coeff_monomial(1))
        c = np.array([float(poly.coeff_monomial(x)) for x in species])
    except TypeError:          # a coefficient that is not a real number
        return None
    return c0, c


def caps_of(network, space) -> dict[str, int]:
    """Species bounded on the whole chain by a conservation law with nonnegative weights (constant on J)."""
    caps: dict[str, int] = {}
    if space.n == 0:
        return caps
    for law in network.conservation_laws():
        if np.all(law >= 0) and np.any(law > 0):
            value = space.states @ law
            if np.all(value == value[0]):
                for k in np.flatnonzero(law > 0):
                    s = space.species[k]
                    caps[s] = min(caps.get(s, int(value[0]) // int(law[k])), int(value[0]) // int(law[k]))
    return caps


def growth_constants(network, y: np.ndarray, caps: dict[str, int]) -> tuple[dict | None, str]:
    """The moment system of V = Σ_{s unbounded} x_s (module docstring): m₁' ≤ α + βm₁, m₂' ≤ γ₀ + γ₁m₁ + γ₂m₂.

    Species capped by a conservation law (`caps`) are not in V: they enter the propensities as numbers in
    [0, cap].  With Δ_r the change of V, 𝓛V = Σ_r a_r Δ_r and 𝓛V² = Σ_r a_r (2VΔ_r + Δ_r²).  A reaction
    whose propensity is exactly affine, a_r = c0 + c·x_U + d·x_B, has a_lo ≤ a_r ≤ a_hi with the capped
    part at its extremes, and c·x_U between min_u c_u·V and max_u c_u·V; then Δ_r a_r ≤ Δ_r a_(hi|lo) in
    𝓛V (β = max_u Σ_r Δ_r c_ru), and 2VΔ_r a_r ≤ 2VΔ_r a_(hi|lo), Δ_r² a_r ≤ Δ_r² a_hi in 𝓛V².  A
    reaction that lowers V and is not affine is dropped (it consumes ≥ |Δ_r| of V's molecules, so its
    terms are ≤ 0 where it fires); one that raises V and is not affine leaves the moments unbounded.
    Returns (None, reason) then.
    """
    subs = {network.symbols[p]: v for p, v in network.parameters.items()}
    subs.update({network.symbols[v]: float(val) for v, val in zip(network.slow, y)})
    species = [network.symbols[s] for s in network.species]
    free = np.array([s not in caps for s in network.species])
    cap = np.array([float(caps.get(s, 0)) for s in network.species])
    alpha, b = 0.0, np.zeros(int(free.sum()))
    g0 = g1 = g2 = 0.0
    for r, expr, nu in zip(network.reactions, network.propensity_exprs, network.stoichiometry):
        delta = int(nu[free].sum())
        if delta == 0:
            continue
        coef = affine_coefficients(expr.subs(subs), species)
        if coef is None:
            if delta < 0:
                continue
            return None, (f"reaction {r.name!r} raises the total count and its propensity {expr} is not affine in "
                          "the counts: no bound on the moments of the mass that left the projection")
        c0, c = coef
        cu, d = c[free], c[~free]
        c0_hi = c0 + float(np.sum(np.maximum(d, 0.0) * cap[~free]))
        c0_lo = c0 + float(np.sum(np.minimum(d, 0.0) * cap[~free]))
        cmax = max(float(cu.max()) if cu.size else 0.0, 0.0)
        cmin = float(cu.min()) if cu.size else 0.0
        c0_edge = c0_hi if delta > 0 else c0_lo
        alpha += delta * c0_edge
        b += delta * cu
        g0 += delta**2 * c0_hi
        g1 += 2 * delta * c0_edge + delta**2 * cmax
        g2 += 2 * delta * (cmax if delta > 0 else cmin)
    return {"alpha": alpha, "beta": float(b.max()) if b.size else 0.0,   # may be negative: Σ b_u x_u ≤ max_u b_u·V
            "gamma0": max(g0, 0.0), "gamma1": max(g1, 0.0), "gamma2": g2, "caps": dict(caps)}, ""


def moment_growth(g: dict, v0: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """m₁, m₂ at times t solving m₁' = α + βm₁, m₂' = γ₀ + γ₁m₁ + γ₂m₂ from (v0, v0²) — upper bounds (Grönwall)."""
    import scipy.linalg

    A = np.array([[0.0, 0.0, 0.0], [g["alpha"], g["beta"], 0.0], [g["gamma0"], g["gamma1"], g["gamma2"]]])
    z0 = np.array([1.0, v0, v0 * v0])
    out = np.array([scipy.linalg.expm(A * float(s)) @ z0 for s in np.maximum(t, 0.0)])
    # expm's own rounding: a relative 1e-12 margin keeps the bound an upper one
    return out[:, 1] * (1 + 1e-12), out[:, 2] * (1 + 1e-12)
