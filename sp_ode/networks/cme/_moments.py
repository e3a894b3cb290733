"""Moments of the mass that left a finite state projection: Lyapunov bounds (docs/theory.md §7.10).

The leaked mass of an FSP bounds probabilities, not moments: mass that left the projection J may sit
at any count.  By the strong Markov property at the exit time τ (exit target X_τ = z),

    E[f(X_t); τ ≤ t] = E[1{τ ≤ t} φ(t − τ, X_τ)] ≤ ε(t) · sup_{0 ≤ s ≤ t} sup_{z exit target} φ(s, z),

with φ(s, z) = E_z[f(X_s)] and ε(t) = P(τ ≤ t) the leaked mass.  The supremum over the elapsed time
s ∈ [0, t] matters: a bound evaluated at s = t only (as an earlier version did) undercounts mass that
left late from a high exit state while the chain relaxes, and the interval then excluded the truth.

φ is bounded through a *weighted* Lyapunov function V_w(x) = Σ_u w_u x_u, w > 0 over the species no
conservation law caps (those enter the propensities as numbers in [0, cap]).  With Δ_r = w·ν_r and an
affine bound of each propensity on the side that matters (a_r ≤ c0 + c·x when Δ_r > 0, a_r ≥ … when
Δ_r < 0; a bounded propensity a_r ≤ K, `_propensity_bound`, gives c0 = K, c = 0; a non-affine one
that lowers V_w is dropped, its term being ≤ 0):

    𝓛V_w  = Σ_r a_r Δ_r           ≤ α + Σ_u g_u x_u ≤ α + β V_w,              β = max_u g_u / w_u,
    𝓛V_w² = Σ_r a_r (2 V_w Δ_r + Δ_r²) ≤ γ₀ + γ₁ V_w + γ₂ V_w²,          γ₂ = 2β
(2V_w Σ_r Δ_r c_r·x = 2V_w g·x ≤ 2βV_w², and Δ_r² a_r ≤ Δ_r²(c0 + max_u(c_u/w_u)⁺ V_w)).

Dynkin's formula and the comparison theorem give E_z[V_w(X_s)] ≤ m₁(s), E_z[V_w²] ≤ m₂(s), the solution
of m₁' = α + βm₁, m₂' = γ₀ + γ₁m₁ + γ₂m₂ from (V_w(z), V_w(z)²).  The weights are what account for
degradation: with w = 1 a catalytic production M → M + P gives β = k_P − δ_M > 0 and the bound grows
like e^{βt} although the chain is stable; w the left Perron vector of the drift matrix (Aᵀw = λ_max w
for the Metzler matrix A = Σ_r ν_r c_rᵀ) gives β = λ_max < 0 for every stable affine network, and the
bound stays below max(V_w(z), α/|β|) at every horizon.  Any w > 0 gives a valid bound: candidates
(1, the Perron vector, −A⁻ᵀ1) are tried and the smallest β kept, w normalised to min_u w_u = 1 so that
x_u ≤ V_w for every species.  `moment_sup` returns the suprema over s ∈ [0, t].
`sp_ode.networks.cme.transient.TransientDistribution` turns them into certified intervals.
"""
from __future__ import annotations

import math
import weakref

import numpy as np

__all__ = ["affine_observable", "affine_coefficients", "caps_of", "growth_constants", "moment_sup"]


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


def _reaction_bounds(network, y: np.ndarray, caps: dict[str, int]):
    """Per reaction: ("affine", c0_lo, c0_hi, c_u) | ("bounded", K) | ("other", expr) with the capped part at its extremes."""
    from sp_ode.networks.cme._propensity_bound import propensity_sup

    subs = {network.symbols[p]: v for p, v in network.parameters.items()}
    subs.update({network.symbols[v]: float(val) for v, val in zip(network.slow, y)})
    species = [network.symbols[s] for s in network.species]
    free = np.array([s not in caps for s in network.species])
    cap = np.array([float(caps.get(s, 0)) for s in network.species])
    out = []
    for expr in network.propensity_exprs:
        e = expr.subs(subs)
        coef = affine_coefficients(e, species)
        if coef is not None:
            c0, c = coef
            d = c[~free]
            out.append(("affine", c0 + float(np.sum(np.minimum(d, 0.0) * cap[~free])),
                        c0 + float(np.sum(np.maximum(d, 0.0) * cap[~free])), c[free]))
            continue
        K = propensity_sup(e, species)
        out.append(("bounded", K) if K is not None else ("other", expr))
    return out, free


def _constants(network, bounds, free, w: np.ndarray) -> tuple[dict | None, str]:
    """(α, β, γ₀, γ₁, γ₂) of V_w (module docstring), or (None, reason)."""
    alpha, g = 0.0, np.zeros(int(free.sum()))
    g0 = g1 = 0.0
    for r, b, nu in zip(network.reactions, bounds, network.stoichiometry):
        delta = float(w @ nu[free])
        if delta == 0:
            continue
        if b[0] == "other":
            if delta < 0:
                continue
            return None, (f"reaction {r.name!r} raises the total count and its propensity {b[1]} is neither affine "
                          "in the counts nor bounded by a constant found by construction: no bound on the moments "
                          "of the mass that left the projection")
        if b[0] == "bounded":
            if delta < 0:                      # a ≥ 0: the term is ≤ 0
                continue
            c0_lo = c0_hi = b[1]
            cu = np.zeros_like(g)
        else:
            _, c0_lo, c0_hi, cu = b
            if delta > 0:        # a_r ≥ 0: max(c0 + c·x, 0) ≤ max(c0, 0) + max(c, 0)·x is the upper bound used
                c0_hi, cu = max(c0_hi, 0.0), np.maximum(cu, 0.0)
        ratio = cu / w
        cmax = float(ratio.max()) if ratio.size else 0.0
        edge = c0_hi if delta > 0 else c0_lo
        alpha += delta * edge
        g += delta * cu
        g0 += delta**2 * max(c0_hi, 0.0)
        g1 += 2 * delta * edge + delta**2 * max(cmax, 0.0)
    # Σ_r 2V Δ_r (c_r·x) = 2V (g·x) ≤ 2β V²: the same drift vector as 𝓛V (degradation is credited)
    beta = float(np.max(g / w)) if g.size else 0.0
    return {"alpha": max(alpha, 0.0), "beta": beta, "gamma0": max(g0, 0.0), "gamma1": max(g1, 0.0),
            "gamma2": 2 * beta, "weights": w}, ""


def growth_constants(network, y: np.ndarray, caps: dict[str, int]) -> tuple[dict | None, str]:
    """The Lyapunov moment system of V_w (module docstring): m₁' ≤ α + βm₁, m₂' ≤ γ₀ + γ₁m₁ + γ₂m₂.

    Returns
    -------
    (dict or None, str)
        {"alpha", "beta", "gamma0", "gamma1", "gamma2", "weights" (over the uncapped species), "caps",
        "free" (bool per species)}, or None with the reason (a non-affine, unbounded propensity raises V_w).
    """
    key = (tuple(sorted(network.parameters.items())), tuple(np.asarray(y, dtype=np.float64).ravel().tolist()),
           tuple(sorted(caps.items())))
    per = _CACHE.setdefault(network, {})
    if key not in per:            # sympy work (interval bounds, cancel/apart): once per network, y and caps
        per[key] = _growth_constants(network, y, caps)
    g, why = per[key]
    return (None if g is None else dict(g)), why


#: growth constants per network (weakly held) and (parameters, y, caps)
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _growth_constants(network, y: np.ndarray, caps: dict[str, int]) -> tuple[dict | None, str]:
    bounds, free = _reaction_bounds(network, y, caps)
    nf = int(free.sum())
    if nf == 0:
        return {"alpha": 0.0, "beta": 0.0, "gamma0": 0.0, "gamma1": 0.0, "gamma2": 0.0, "weights": np.zeros(0),
                "caps": dict(caps), "free": free}, ""
    candidates = [np.ones(nf)]
    A = np.zeros((nf, nf))               # drift matrix of the affine parts: d/dt E x ≈ A x + …
    for b, nu in zip(bounds, network.stoichiometry):
        if b[0] == "affine":
            A += np.outer(nu[free], b[3])
    try:
        lam, vecs = np.linalg.eig(A.T)
        v = np.real(vecs[:, int(np.argmax(lam.real))])
        v = v * np.sign(v.sum() or 1.0)
        if np.all(v > 0):
            candidates.append(v)
        u = np.linalg.solve(A.T, -np.ones(nf))
        if np.all(u > 0):
            candidates.append(u)
    except np.linalg.LinAlgError:
        pass
    best, why = None, ""
    for w in candidates:
        w = w / w.min()
        if not np.all(np.isfinite(w)) or w.max() > 1e12:
            continue
        g, reason = _constants(network, bounds, free, w)
        if g is None:
            why = why or reason
            continue
        if best is None or (g["beta"], g["gamma2"]) < (best["beta"], best["gamma2"]):
            best = g
    if best is None:
        return None, why
    best["caps"], best["free"] = dict(caps), free
    return best, ""


def moment_sup(g: dict, v0: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(M₁(t), M₂(t)) = sup over s ∈ [0, t] of the Lyapunov bounds m₁(s), m₂(s) from (v0, v0²); inf on overflow.

    m₁ solves a scalar linear ODE, so it is monotone and M₁ = max(v0, m₁(t)).  With γ₂ < 0, m₂ on [0, t] is
    below the solution with the constant input γ₀ + γ₁M₁(t), a convex combination of v0² and its fixed point:
    M₂ ≤ max(v0², (γ₀ + γ₁M₁)/(−γ₂)).  With γ₂ ≥ 0 every term of m₂' is ≥ 0 and M₂ = m₂(t).
    """
    t = np.maximum(np.asarray(t, dtype=np.float64), 0.0)
    a, b = g["alpha"], g["beta"]
    g0, g1, g2 = g["gamma0"], g["gamma1"], g["gamma2"]
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(b * t)
        phi = np.where(b == 0, t, np.expm1(b * t) / (b if b != 0 else 1.0))
        m1 = v0 * e + a * phi
        M1 = np.maximum(v0, m1)
        if g2 < 0:
            M2 = np.maximum(v0 * v0, (g0 + g1 * M1) / (-g2))
        else:
            M2 = np.array([_m2(g, v0, float(s)) for s in t])
    M1 = np.where(np.isfinite(M1), M1 * (1 + 1e-12), np.inf)   # rounding of exp/expm: a relative margin
    M2 = np.where(np.isfinite(M2), M2 * (1 + 1e-12), np.inf)
    return M1, M2


def _m2(g: dict, v0: float, s: float) -> float:
    import scipy.linalg

    A = np.array([[0.0, 0.0, 0.0], [g["alpha"], g["beta"], 0.0], [g["gamma0"], g["gamma1"], g["gamma2"]]])
    if max(g["beta"], g["gamma2"], 0.0) * s > 700:
        return math.inf
    z = scipy.linalg.expm(A * s) @ np.array([1.0, v0, v0 * v0])
    return float(z[2]) if np.isfinite(z[2]) else math.inf
