"""Exact first and second moments of an affine CME, enclosed in certified intervals (docs/theory.md §7.10).

When every propensity is affine in the counts on the whole orthant, a_r(x) = c0_r + c_r·x, the moment
equations close (no FSP involved):

    m' = b + A m,                       b = Σ_r ν_r c0_r,   A = Σ_r ν_r c_rᵀ,
    Σ' = AΣ + ΣAᵀ + D(m),               D(m) = Σ_r ν_r ν_rᵀ (c0_r + c_r·m),

for the mean m and the covariance Σ (Σ = E[XXᵀ] − mmᵀ: the b mᵀ terms of the raw second moments cancel).
This is exact — the linear-noise approximation is exact for affine propensities.  *Valid* means the
affine expression is the chain's rate on every state: c0_r ≥ 0 and c_r ≥ 0 (so a_r ≥ 0), and a reaction
that lowers a count s (ν_rs < 0) has a_r = k x_s with ν_rs = −1 (its rate vanishes where x_s = 0, so the
stoichiometric guard never cuts it).  Then A is *Metzler* (A_ij ≥ 0 for i ≠ j: a rate that depends on
x_j ≠ x_i cannot consume i) and b ≥ 0.

**A certified enclosure without cancellation.**  z = (1, m, Σ⁺, Σ⁻) with Σ = Σ⁺ − Σ⁻, where D is split
into its positive and negative parts (an off-diagonal ν_ri ν_rj < 0, e.g. a conversion A → B) and Σ±
solve Σ±' = AΣ± + Σ±Aᵀ + D±(m): the whole system z' = M z has M Metzler and z(0) ≥ 0, so z(t) ≥ 0 and

    exp(ΔM) = e^{−ΛΔ} exp(ΔN),   N = M + ΛI ≥ 0,

is a nonnegative matrix.  It is enclosed entrywise by scaling and squaring in nonnegative interval
arithmetic: the Taylor sum of exp(hN), h = Δ/2^s with h‖N‖∞ ≤ 1/2, has only nonnegative terms (each
product of nonnegative matrices has a *componentwise relative* rounding error ≤ γ_d = d·u/(1 − d·u)),
its remainder is ≤ 2η^{K+1}/(K+1)! entrywise (η = h‖N‖∞), and squaring a nonnegative enclosure
[L, U] gives [L·L, U·U] — monotone, so no wrapping effect.  The rounding of M itself (the rate
constants' products) is covered by a relative margin of 1e-14 per entry.  The relative width of the
result grows like (K + s)·d·u + 1e-14·ΛΔ, i.e. ~1e-12 on ordinary networks at any horizon, where a
growth-rate bound grows like e^{βt}.  (Where D has negative entries *and* a conservation law gives A a
zero eigenvalue, Σ⁺ and Σ⁻ each grow linearly along the conserved direction while their difference
does not; the relative width of a variance then grows like 1e-14·(Λt)², still ~1e-6 at Λt = 2500.)
"""
from __future__ import annotations

import math
import weakref

import numpy as np

__all__ = ["ClosedMoments", "closed_moment_system"]

_U = 2.0**-53
_ENTRY_MARGIN = 1e-14      # relative error allowed for each entry of M (rates multiplied in floating point)
_TAYLOR_TERMS = 30         # η ≤ 1/2: remainder ≤ 2·2⁻³¹/31! ≈ 1e-43, absolute, entrywise
_TINY = 1e-300             # underflow: a subnormal product may round up by ≤ d·2⁻¹⁰⁷⁴ ≪ this
_MAX_DIM = 600             # moment systems above this size are not enclosed (d³ per product)


def _affine_reactions(network, y):
    """(c0 (R,), c (R, S)) when the moment equations close exactly (module docstring), else (None, reason)."""
    from sp_ode.networks.cme._moments import affine_coefficients

    subs = {network.symbols[p]: v for p, v in network.parameters.items()}
    subs.update({network.symbols[v]: float(val) for v, val in zip(network.slow, y)})
    species = [network.symbols[s] for s in network.species]
    S = len(species)
    c0 = np.zeros(len(network.reactions))
    c = np.zeros((len(network.reactions), S))
    for r, (rx, expr, nu) in enumerate(zip(network.reactions, network.propensity_exprs, network.stoichiometry)):
        coef = affine_coefficients(expr.subs(subs), species)
        if coef is None:
            return None, f"reaction {rx.name!r}: the propensity {expr} is not affine in the counts"
        c0[r], c[r] = coef
        if c0[r] < 0 or np.any(c[r] < 0):
            return None, f"reaction {rx.name!r}: the affine propensity has a negative coefficient"
        for s in np.flatnonzero(nu < 0):
            others = np.delete(c[r], s)
            if not (c0[r] == 0 and np.all(others == 0) and (nu[s] == -1 or c[r, s] == 0)):
                return None, (f"reaction {rx.name!r} lowers {network.species[s]!r} but its affine propensity does "
                              f"not vanish where {network.species[s]!r} is short (not of the form k·"
                              f"{network.species[s]} with one molecule consumed)")
    return (c0, c), ""


class ClosedMoments:
    """The closed moment system z' = Mz of an affine network and its certified propagation (module docstring)."""

    def __init__(self, network, y):
        self.reason = ""
        self.M = None
        if len(network.species) == 0:
            self.reason = "no species"
            return
        res, why = _affine_reactions(network, y)
        if res is None:
            self.reason = why
            return
        c0, c = res
        nu = network.stoichiometry.astype(np.float64)
        S = nu.shape[1]
        pairs = [(i, j) for i in range(S) for j in range(i, S)]
        P = len(pairs)
        d = 1 + S + 2 * P
        if d > _MAX_DIM:
            self.reason = f"the moment system has {d} unknowns (> {_MAX_DIM}): not enclosed"
            return
        pidx = {}
        for k, (i, j) in enumerate(pairs):
            pidx[(i, j)] = pidx[(j, i)] = k
        A = nu.T @ c                     # (S, S)
        b = nu.T @ c0                    # (S,)
        M = np.zeros((d, d))
        M[1:1 + S, 0] = b
        M[1:1 + S, 1:1 + S] = A
        K = np.zeros((P, P))
        F = np.zeros((P, 1 + S))         # D_ij = F[p, 0]·1 + F[p, 1:]·m
        for p, (i, j) in enumerate(pairs):
            for k in range(S):
                K[p, pidx[(k, j)]] += A[i, k]
                K[p, pidx[(i, k)]] += A[j, k]
            w = nu[:, i] * nu[:, j]
            F[p, 0] = float(w @ c0)
            F[p, 1:] = w @ c
        o = 1 + S
        for blk, Fs in ((0, np.maximum(F, 0.0)), (1, np.maximum(-F, 0.0))):
            rows = slice(o + blk * P, o + (blk + 1) * P)
            M[rows, :o] = Fs
            M[rows, rows] = K
        off = M - np.diag(np.diag(M))
        if off.min() < 0:
            self.reason = "the closed moment system is not Metzler (a rate depends on a species it does not consume)"
            return
        self.M, self.S, self.P, self.pairs, self.pidx, self.d = M, S, P, pairs, pidx, d
        self._cache: dict[float, tuple[np.ndarray, np.ndarray]] = {}

    @property
    def available(self) -> bool:
        return self.M is not None

    def _expm_enclosure(self, dt: float) -> tuple[np.ndarray, np.ndarray]:
        """[L, U] ∋ exp(dt·M) entrywise (module docstring), cached per dt."""
        if dt in self._cache:
            return self._cache[dt]
        M, d = self.M, self.d
        gamma = (d + 2) * _U * 1.01
        M_lo, M_hi = M - _ENTRY_MARGIN * np.abs(M), M + _ENTRY_MARGIN * np.abs(M)
        lam = max(0.0, float(np.max(-np.diag(M_lo))))
        N_lo, N_hi = M_lo.copy(), M_hi.copy()
        np.fill_diagonal(N_lo, np.maximum((np.diag(M_lo) + lam) * (1 - 2 * _U), 0.0))
        np.fill_diagonal(N_hi, (np.diag(M_hi) + lam) * (1 + 2 * _U))
        N_lo = np.maximum(N_lo, 0.0)
        norm = float(np.max(N_hi.sum(axis=1))) * (1 + d * _U)
        s = max(0, math.ceil(math.log2(max(2.0 * dt * norm, 1.0))))
        h = dt * 2.0**-s                                        # exact: a power-of-two scaling
        eta = h * norm * (1 + 2 * _U)
        remainder = 2 * eta ** (_TAYLOR_TERMS + 1) / math.factorial(_TAYLOR_TERMS + 1)

        def taylor(N):
            hN = N * h
            T, term = np.eye(d), np.eye(d)
            for k in range(1, _TAYLOR_TERMS + 1):
                term = (term @ hN) / k
                T = T + term
            return T

        rel = (_TAYLOR_TERMS + 1) * (gamma + 3 * _U)           # the products, the divisions, the sums
        x = lam * h
        e_lo, e_hi = math.exp(-x) * (1 - 3 * _U) * (1 - x * _U), math.exp(-x) * (1 + 3 * _U) * (1 + x * _U)
        L = np.maximum(taylor(N_lo) * (1 - rel) * e_lo - _TINY, 0.0)
        U = (taylor(N_hi) * (1 + rel) + remainder) * e_hi + _TINY
        with np.errstate(over="ignore", invalid="ignore"):
            for _ in range(s):
                L = np.maximum((L @ L) * (1 - gamma) - _TINY, 0.0)
                U = (U @ U) * (1 + gamma) + _TINY
        U = np.where(np.isnan(U), np.inf, U)
        if len(self._cache) >= 64:          # bounded memory: (d × d) × 2 per distinct step
            self._cache.clear()
        self._cache[dt] = (L, U)
        return L, U

    def initial(self, states: np.ndarray, p0: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[z_lo, z_hi] at t = 0 from a law p0 on `states` (n, S): nonnegative sums, relative error ≤ n·u."""
        X = states.astype(np.float64)
        n = max(int(np.count_nonzero(p0)), 1)
        r = (n + 4) * _U * 1.01
        m = p0 @ X
        E2 = X.T @ (X * p0[:, None])
        m_lo, m_hi = m * (1 - r), m * (1 + r)
        cov_lo = E2 * (1 - r) - np.outer(m_hi, m_hi) * (1 + 2 * _U)
        cov_hi = E2 * (1 + r) - np.outer(m_lo, m_lo) * (1 - 2 * _U)
        o, P = 1 + self.S, self.P
        z_lo, z_hi = np.zeros(self.d), np.zeros(self.d)
        z_lo[0] = z_hi[0] = 1.0
        z_lo[1:o], z_hi[1:o] = m_lo, m_hi
        for p, (i, j) in enumerate(self.pairs):
            z_lo[o + p], z_hi[o + p] = max(cov_lo[i, j], 0.0), max(cov_hi[i, j], 0.0)
            z_lo[o + P + p], z_hi[o + P + p] = max(-cov_hi[i, j], 0.0), max(-cov_lo[i, j], 0.0)
        return z_lo, z_hi

    def propagate(self, z0: tuple[np.ndarray, np.ndarray], times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """[z_lo, z_hi] (T, d) at `times` (nondecreasing, ≥ 0) from the enclosure z0 at t = 0."""
        gamma = (self.d + 2) * _U * 1.01
        lo, hi = z0[0].copy(), z0[1].copy()
        t_prev = 0.0
        out_lo, out_hi = [], []
        with np.errstate(over="ignore", invalid="ignore"):
            for t in np.asarray(times, dtype=np.float64):
                if t > t_prev:
                    L, U = self._expm_enclosure(float(t) - t_prev)
                    lo = np.maximum((L @ lo) * (1 - gamma) - _TINY, 0.0)
                    hi = (U @ hi) * (1 + gamma) + _TINY
                    hi = np.where(np.isnan(hi), np.inf, hi)
                    t_prev = float(t)
                out_lo.append(lo.copy())
                out_hi.append(hi.copy())
        return np.array(out_lo), np.array(out_hi)

    def observable(self, z_lo: np.ndarray, z_hi: np.ndarray, a: np.ndarray, b: float):
        """((mean lo, hi), (variance lo, hi)) (T,) of f = a·x + b from the enclosures of z."""
        S, P, o = self.S, self.P, 1 + self.S
        m_lo, m_hi = z_lo[:, 1:o], z_hi[:, 1:o]
        ap, an = np.maximum(a, 0.0), np.maximum(-a, 0.0)
        r = (S + 2) * _U * 1.01
        mean_lo = (m_lo @ ap - m_hi @ an) + b
        mean_hi = (m_hi @ ap - m_lo @ an) + b
        scale = (m_hi @ np.abs(a)) + abs(b)
        mean_lo, mean_hi = mean_lo - r * scale, mean_hi + r * scale
        # Σ_ij ∈ [Σ⁺_lo − Σ⁻_hi, Σ⁺_hi − Σ⁻_lo]; Var f = Σ_ij a_i a_j Σ_ij
        var_lo = np.zeros(z_lo.shape[0])
        var_hi = np.zeros(z_lo.shape[0])
        mag = np.zeros(z_lo.shape[0])
        for p, (i, j) in enumerate(self.pairs):
            w = a[i] * a[j] * (1.0 if i == j else 2.0)
            if w == 0:
                continue
            s_lo = z_lo[:, o + p] - z_hi[:, o + P + p]
            s_hi = z_hi[:, o + p] - z_lo[:, o + P + p]
            var_lo += np.minimum(w * s_lo, w * s_hi)
            var_hi += np.maximum(w * s_lo, w * s_hi)
            mag += abs(w) * (z_hi[:, o + p] + z_hi[:, o + P + p])
        r2 = (2 * P + 4) * _U * 1.01
        with np.errstate(invalid="ignore"):
            var_lo, var_hi = np.maximum(var_lo - r2 * mag, 0.0), var_hi + r2 * mag
        return (mean_lo, mean_hi), (var_lo, var_hi)


def closed_moment_system(network, y) -> ClosedMoments:
    """The closed moment system of `network` at slow variables `y` (`available` False, with `reason`, otherwise).

    Built once per network (weakly held), parameter values and y, so the projections of an adaptive FSP
    share it and its cache of exp(ΔM) enclosures."""
    key = (tuple(sorted(network.parameters.items())), tuple(np.asarray(y, dtype=np.float64).ravel().tolist()))
    per = _SYSTEMS.setdefault(network, {})
    if key not in per:
        per[key] = ClosedMoments(network, y)
    return per[key]


_SYSTEMS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
