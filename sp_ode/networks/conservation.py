"""Conservation laws of a reaction network: an integer basis, and the nonnegative ones as extreme rays.

A conservation law is a weight vector c with c·ν_r = 0 for every reaction r (ν_r its change
of the counts), so c·x is the same in every state reachable from x₀ (docs/theory.md §7.6).
The laws form the left null space of the stoichiometry; its *nonnegative* part is the
polyhedral cone C = {c ≥ 0 : c·ν_r = 0 ∀r}, and a law c ∈ C with c_s > 0 bounds the count
of s on the class of x₀: x_s ≤ ⌊c·x₀ / c_s⌋.  Every c ∈ C is a nonnegative combination of
the *extreme rays* of C, and the bound of a combination is never tighter than the best bound
of its rays (the mediant inequality: Σλ_i a_i / Σλ_i b_i ≥ min_i a_i/b_i), so the rays give
the tightest cap a conservation law can give.

A basis of the null space returned by Gaussian elimination need not have any nonnegative
member even when C spans it: for Michaelis–Menten with species (A, B, C, D), A + B ⇌ C →
B + D, elimination gives (0, 1, 1, 0) and (−1, −1, 0, 1); the extreme rays are
B + C (the enzyme) and A + C + D (the substrate).  `extreme_rays` computes them exactly, in
integers, by the double description method (Motzkin et al. 1953; Fukuda & Prodon 1996):
start from the rays e_1 … e_S of the orthant, and intersect with one hyperplane c·ν_r = 0 at
a time, keeping the rays on it and combining each *adjacent* pair on opposite sides
(adjacent: no other ray vanishes on every coordinate where both vanish).  The number of
rays can grow exponentially; past `MAX_RAYS` the computation stops and says so (None).
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["MAX_RAYS", "conservation_basis", "extreme_rays", "conservation_laws", "conservation_caps"]

#: Extreme rays kept at most while intersecting (double description); past it no rays are used.
MAX_RAYS = 2_000


def conservation_basis(stoich: np.ndarray) -> np.ndarray:
    """Integer basis (k, S) of {c : stoich @ c = 0} by exact elimination (sympy), rows scaled to integers."""
    import sympy

    if stoich.size == 0:
        return np.eye(stoich.shape[1], dtype=np.int64)
    rows = []
    for v in sympy.Matrix(stoich.tolist()).nullspace():
        den = math.lcm(*[int(sympy.fraction(e)[1]) for e in v])
        rows.append([int(e * den) for e in v])
    return np.array(rows, dtype=np.int64).reshape(len(rows), stoich.shape[1])


def extreme_rays(stoich: np.ndarray, *, max_rays: int = MAX_RAYS) -> np.ndarray | None:
    """The extreme rays (m, S) of {c ≥ 0 : stoich @ c = 0}, primitive integer vectors in a fixed order.

    Parameters
    ----------
    stoich : ndarray (R, S) of int
        One row ν_r per reaction.
    max_rays : int
        Stop (return None) when an intermediate cone has more rays than this.

    Returns
    -------
    ndarray (m, S) int64, or None
        m = 0 when no nonnegative law exists.  Rows sorted by support size, then
        lexicographically descending (deterministic).  None past `max_rays`.
    """
    S = stoich.shape[1]
    rays = [tuple(int(i == j) for j in range(S)) for i in range(S)]
    for nu in {tuple(int(v) for v in row) for row in np.asarray(stoich)}:
        if not any(nu):
            continue
        value = [sum(a * b for a, b in zip(nu, r)) for r in rays]
        zeros = [frozenset(i for i, c in enumerate(r) if c == 0) for r in rays]
        kept = [r for r, v in zip(rays, value) if v == 0]
        pos = [k for k, v in enumerate(value) if v > 0]
        neg = [k for k, v in enumerate(value) if v < 0]
        for p in pos:
            for n in neg:
                common = zeros[p] & zeros[n]
                # adjacent: no third ray vanishes wherever both vanish
                if any(k != p and k != n and common <= zeros[k] for k in range(len(rays))):
                    continue
                c = [value[p] * b - value[n] * a for a, b in zip(rays[p], rays[n])]
                g = math.gcd(*c)
                kept.append(tuple(v // g for v in c))
        rays = sorted(set(kept))
        if len(rays) > max_rays:
            return None
    rays.sort(key=lambda r: (sum(1 for v in r if v), [-v for v in r]))
    return np.array(rays, dtype=np.int64).reshape(len(rays), S)


def _rank(rows: list) -> int:
    import sympy

    return sympy.Matrix(rows).rank() if rows else 0


def conservation_laws(stoich: np.ndarray) -> np.ndarray:
    """Integer basis (k, S) of the conservation laws, made of nonnegative laws where they span.

    The extreme rays (`extreme_rays`) are taken greedily while they are independent; the basis
    is completed, if the nonnegative cone does not span the law space, with vectors of
    `conservation_basis`.  The same class {x : laws @ x = laws @ x₀} as any basis.
    """
    basis = conservation_basis(stoich)
    k = basis.shape[0]
    rays = extreme_rays(stoich)
    chosen: list = []
    for r in ([] if rays is None else rays.tolist()) + basis.tolist():
        if len(chosen) == k:
            break
        if _rank(chosen + [r]) > len(chosen):
            chosen.append(r)
    return np.array(chosen, dtype=np.int64).reshape(k, stoich.shape[1])


def conservation_caps(rays: np.ndarray, x0: np.ndarray) -> np.ndarray:
    """Per species, ⌊min over rays r with r_s > 0 of r·x₀ / r_s⌋ (−1 where no ray bounds s)."""
    caps = np.full(rays.shape[1], -1, dtype=np.int64)
    for r in rays:
        total = int(r @ x0)
        for s in np.flatnonzero(r > 0):
            cap = total // int(r[s])
            caps[s] = cap if caps[s] < 0 else min(caps[s], cap)
    return caps
