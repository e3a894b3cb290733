"""The stationary law of a CME on a box in tensor-train form, certified (docs/theory.md §7.16).

On a box J = ∏_s {0, …, b_s} the reflecting FSP generator of a network whose propensities are
*separable*, a_r(x) = c_r ∏_s h_{r,s}(x_s) (mass action always is), is a sum of Kronecker
products and never needs to be stored as a sparse matrix: with g_{r,s}(x_s) = h_{r,s}(x_s)·1[0 ≤ x_s + ν_{r,s} ≤ b_s]
(the move stays in J),

    Q = Σ_r c_r ( ⊗_s S_{ν_{r,s}} diag(g_{r,s}) − ⊗_s diag(g_{r,s}) ),      (S_ν: the shift by ν)

a TT operator of rank ≤ 2R before rounding (Kazeev, Khammash, Nip & Schwab 2014).  The stationary law
is the TT solution of the bordered system (Qᵀ + u𝟙ᵀ)p = u, u = 𝟙/n — nonsingular for an irreducible Q,
and solved by AMEn (Dolgov & Savostyanov 2014, through `torchtt`).

Certified as the sparse route is (§7.1), and not from the solver's own residual:

* q = max(p̃, 0) — TT rounding can make entries negative; the clipped mass is reported and q is what
  is certified (‖p̃ − q‖₁ is that mass);
* ‖Qᵀq‖₁ is evaluated on the full grid by the Kronecker stencil (one shifted array per reaction, in
  extended precision, with the rounding of every sum bounded: the floor is q's own residual);
* H ≥ max_i E_i[τ_k] comes from a candidate ĥ of the pinned system Gh = 𝟙 (G = −Q without the
  mode k), solved in TT by AMEn and *checked* entrywise on the grid: G is an M-matrix, so a computed
  min Gĥ ≥ m > 0 (rounding included) gives H ≤ max ĥ/m — one-sided, as AMEn's componentwise error is
  erratic and an overshoot of Gĥ above 1 costs nothing;
* ‖q − p_J‖₁ ≤ |Σq − 1| + 2uΣq + 2H‖Qᵀq‖₁/Σq.

The check expands the grid: about 93 bytes per state at its peak (11.6 GiB at 1.3·10⁸ states measured),
against ~1 kB per state for the sparse route's solve (docs/scale_out.md).  Marginals
and means are contractions of the TT cores, never of the full tensor.  Networks whose propensities
do not factor over the species (a Hill term in a sum of two species, say) are refused with
[`NotSeparableError`][sp_ode.networks.cme.tensor_train.NotSeparableError], naming the reaction.
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from sp_ode.core.memory import DEFAULT_FRACTION, available_memory, check_memory
from sp_ode.networks.network import NegativeCountError, NetworkError, PropensityError, ReactionNetwork

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float

__all__ = ["NotSeparableError", "SeparableGenerator", "TTDistribution", "qtt_box", "rank_cap", "tt_stationary",
           "tt_available"]

_LOG = logging.getLogger(__name__)
_U = 2.0**-53
# Extended precision for the residual's sums, as in sp_ode.markov.bounds.residual_l1_bound.
_U_LD = float(np.finfo(np.longdouble).eps) / 2
# Bytes per state of the certificate's grid arrays at their peak: the full tensor torchtt returns and q,
# the two extended-precision accumulators of the residual, then ĥ, its shift, Gĥ, |G|ĥ and the rates of
# the hitting-time check — measured 92.7 B/state (peak RSS 11.6 GiB) at 1.3·10⁸ states.
_CHECK_BYTES_PER_STATE = 100
# AMEn tolerances tried in turn for the hitting-time candidate (its check, not these, decides).
# (1e-3 passed the check at 2·10⁶ states but not at 1.3·10⁸, where 1e-5 gives H within 5 % of 1e-6's.)
_H_LADDER = (1e-5, 1e-7)
# AMEn's rank enrichment per step (torchtt's default); its rank limit is the cap less this.
_KICK = 4
# AMEn's local GMRES: torchtt's default (40 iterations, 2 restarts) leaves the bordered system at a relative
# residual of 5e-8 on 1.7·10⁷ states where 100 × 4 reaches 2e-10 (the ℓ1 residual 4.8e-9 → 1.4e-10).
_LOCAL = {"local_iterations": 100, "resets": 4}
# (AMEn tolerance, rounding, local solver) for p̃, tried in turn while the certified bound is above the
# target; p̃ is rounded before it is certified (AMEn's enrichment leaves ranks far above the solution's own).
_P_LADDER = ((1e-10, 1e-12, _LOCAL), (1e-11, 1e-14, {"local_iterations": 200, "resets": 8}))


class NotSeparableError(NetworkError):
    """A propensity does not factor as c·∏_s h_s(x_s): the network has no low-rank TT generator here."""


def tt_available() -> bool:
    """Whether `torchtt` (the TT arithmetic and AMEn solver) is installed."""
    try:
        import torchtt  # noqa: F401
    except ImportError:
        return False
    return True


def _gamma(m: int, u: float) -> float:
    return m * u / (1 - m * u)


@dataclass(frozen=True)
class _Term:
    nu: np.ndarray                # (S,) stoichiometry
    coeff: float                  # c_r ≥ 0
    inside: list[np.ndarray]      # g_{r,s}: the factor, 0 where the move leaves the box
    factor: list[np.ndarray]      # h_{r,s}: the factor on the whole side (for the outflow)


class SeparableGenerator:
    """The reflecting FSP generator of a separable network on a box, in Kronecker form (module docstring).

    Parameters
    ----------
    network : ReactionNetwork
    bounds : sequence of int
        b_s per species (inclusive), in `network.species` order.
    y : array (d,), optional
        Slow variables, held fixed.

    Raises
    ------
    NotSeparableError
        A propensity does not factor over the species (the reaction is named).
    PropensityError, NegativeCountError
        A factor is negative or not finite, or a reaction would make a count negative.
    """

    def __init__(self, network: ReactionNetwork, bounds: Sequence[int], y: Float[ArrayLike, " d"] | None = None):
        import sympy

        self.network = network
        self.species = tuple(network.species)
        self.bounds = np.asarray([int(b) for b in bounds], dtype=np.int64)
        self.shape = tuple(int(b) + 1 for b in self.bounds)
        self.n = int(np.prod(np.asarray(self.shape, dtype=object)))
        yv = network._y(y)
        subs = {network.symbols[k]: v for k, v in network.parameters.items()}
        subs.update({network.symbols[v]: float(yv[i]) for i, v in enumerate(network.slow)})
        xs = [network.symbols[s] for s in self.species]
        self.terms: list[_Term] = []
        for r, expr in enumerate(network.propensity_exprs):
            rxn = network.reactions[r]
            nu = network.stoichiometry[r]
            if not np.any(nu):
                continue
            e = sympy.sympify(expr).subs(subs)
            sep = None if e.has(sympy.Piecewise) else sympy.separatevars(e, symbols=xs, dict=True)
            if sep is None:
                raise NotSeparableError(f"reaction {rxn.name!r} ({rxn}): its propensity {e} does not factor as "
                                        "c·∏ h_s(x_s) over the species, so its generator term has no rank-1 TT form; "
                                        "use the sparse route (method=None).", reaction=rxn.name)
            coeff = float(sep.pop("coeff"))
            factors = []
            for s, x in enumerate(xs):
                grid = np.arange(self.shape[s], dtype=np.float64)
                f = sep.get(x, sympy.Integer(1))
                with np.errstate(all="ignore"):
                    vals = np.broadcast_to(np.asarray(sympy.lambdify(x, f, modules="numpy")(grid), dtype=np.float64),
                                           grid.shape).copy()
                if coeff < 0:   # the sign may sit in the coefficient or in one factor: keep c ≥ 0
                    vals, coeff = -vals, -coeff
                bad = ~np.isfinite(vals) | (vals < 0)
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    raise PropensityError(f"reaction {rxn.name!r} ({rxn}): its factor {f} in {self.species[s]!r} is "
                                          f"{vals[i]!r} at {self.species[s]} = {i}; propensities must be finite and "
                                          ">= 0.", reaction=rxn.name)
                if nu[s] < 0 and np.any(vals[: min(-int(nu[s]), vals.size)] > 0) and coeff > 0:
                    i = int(np.flatnonzero(vals[: -int(nu[s])] > 0)[0])
                    raise NegativeCountError(f"reaction {rxn.name!r} ({rxn}) has a positive propensity at "
                                             f"{self.species[s]} = {i} but would make it negative; its propensity "
                                             f"must vanish when {self.species[s]!r} is short.", reaction=rxn.name,
                                             species=self.species[s])
                factors.append(vals)
            if coeff == 0.0:
                continue
            inside = []
            for s, vals in enumerate(factors):
                target = np.arange(self.shape[s]) + nu[s]
                inside.append(np.where((target >= 0) & (target <= self.bounds[s]), vals, 0.0))
            self.terms.append(_Term(nu.copy(), coeff, inside, factors))

    # --- TT operator --------------------------------------------------------------------------
    def tt_operator(self, *, transpose: bool = False, eps: float = 1e-14):
        """Q (or Qᵀ) as a `torchtt` TT matrix, rounded to relative accuracy `eps` (exact sums of rank-1 terms)."""
        import torch
        import torchtt as tt

        total = None
        for t in self.terms:
            c = t.coeff ** (1.0 / len(self.shape))
            off, dia = [], []
            for s, g in enumerate(t.inside):
                m = self.shape[s]
                D = np.diag(g) * c
                S = np.zeros((m, m))
                i = np.flatnonzero(g)
                S[i, i + t.nu[s]] = g[i] * c            # Q[x, x + ν] = a(x) on the kept moves
                off.append(S.T if transpose else S)
                dia.append(D)
            term = (tt.TT([torch.tensor(a[None, :, :, None]) for a in off])
                    - tt.TT([torch.tensor(a[None, :, :, None]) for a in dia]))
            total = term if total is None else (total + term).round(eps)
        if total is None:
            raise NetworkError(f"network {self.network.name!r} has no reaction that changes a count.")
        return total

    # --- the grid -----------------------------------------------------------------------------
    def _rate(self, t: _Term, which: str) -> np.ndarray:
        """c·∏_s f_s on the full grid (f = g inside, or h), float64."""
        fs = t.inside if which == "inside" else t.factor
        out = t.coeff * fs[0]
        for f in fs[1:]:
            out = np.multiply.outer(out, f)
        return out.reshape(self.shape)

    def _shift(self, a: np.ndarray, nu: np.ndarray) -> np.ndarray:
        """b[x + ν] = a[x] where both lie in the grid, 0 elsewhere."""
        b = np.zeros_like(a)
        src, dst = [], []
        for s, v in enumerate(nu):
            m = self.shape[s]
            src.append(slice(max(0, -v), min(m, m - v)))
            dst.append(slice(max(0, v), min(m, m + v)))
        b[tuple(dst)] = a[tuple(src)]
        return b

    def residual_l1_bound(self, q: np.ndarray) -> float:
        """An upper bound on ‖Qᵀq‖₁ for q ≥ 0 on the grid (rates as the floats c·∏g; sums in extended precision)."""
        inflow = np.zeros(self.shape, dtype=np.longdouble)
        out = np.zeros(self.shape, dtype=np.longdouble)
        for t in self.terms:
            F = self._rate(t, "inside").astype(np.longdouble) * q
            out += F
            inflow += self._shift(F, t.nu)
        m = len(self.terms) + 1
        r = (np.abs(inflow - out).sum() * (1 + self.n * _U_LD)
             + _gamma(m + 1, _U_LD) * (inflow.sum() + out.sum()) * (1 + self.n * _U_LD))
        return float(r) * (1 + 4 * _U)

    def hitting_time_bound(self, k: tuple, h: np.ndarray) -> float:
        """Certified max_i E_i[τ_k] on the box from a candidate ĥ ≈ G⁻¹𝟙 (inf when the check fails).

        One-sided: G (−Q without row and column k) is an M-matrix, so G⁻¹ ≥ 0 and Gĥ ≥ m𝟙 with m > 0 gives
        ĥ = G⁻¹Gĥ ≥ m·G⁻¹𝟙 = m·h, i.e. H ≤ max ĥ/m — an overshoot of Gĥ above 1 costs nothing, only
        where Gĥ comes near 0 does the bound weaken (m is the computed minimum less its rounding bound).
        """
        # Q𝟙 = 0, so ĥ − ĥ_k𝟙 is as good a candidate on the rows i ≠ k (AMEn fixes the constant only
        # through the single row k); clipping at 0 keeps ĥ_k = 0 the least entry
        h = np.asarray(h, dtype=np.float64)
        h = np.maximum(h - h[k], 0.0)
        h[k] = 0.0
        if not np.all(np.isfinite(h)):
            return math.inf
        Gh = np.zeros(self.shape)      # −(Qĥ)
        aGh = np.zeros(self.shape)     # (|G|ĥ)
        for t in self.terms:
            a = self._rate(t, "inside")
            hs = self._shift(h, -t.nu)          # ĥ(x + ν)
            Gh += a * (h - hs)
            aGh += a * (h + hs)
        low = Gh - 2 * _gamma(len(self.terms) + 2, _U) * aGh
        low[k] = math.inf
        m = float(low.min()) * (1 - 4 * _U)
        if not m > 0.0:
            return math.inf
        return float(h.max()) / m * (1 + 4 * _U)

    def log_flux_peak(self, weights: np.ndarray, theta: float) -> tuple[float, bool]:
        """(max over J of log o(x) − θ w·x, whether any move leaves J): o is the outflow of the truncation."""
        o = np.zeros(self.shape)
        for t in self.terms:
            o += self._rate(t, "all") - self._rate(t, "inside")
        hot = o > 0
        if not hot.any():
            return -math.inf, False
        u = np.zeros(self.shape)
        for s in range(len(self.shape)):
            shape = [1] * len(self.shape)
            shape[s] = self.shape[s]
            u = u + (weights[s] * np.arange(self.shape[s])).reshape(shape)
        return float(np.max(np.log(o[hot]) - theta * u[hot])), True


@dataclass(repr=False)
class TTDistribution:
    """A distribution on a box in tensor-train form: marginals and moments by contracting cores.

    Attributes
    ----------
    cores : list of ndarray (r_{s−1}, b_s + 1, r_s)
    species : tuple of str
    negative_mass : float
        Σ max(−p̃, 0) of the TT tensor p̃; the certified law is max(p̃, 0), within this of p̃ in ℓ1.
    """

    cores: list
    species: tuple
    negative_mass: float = 0.0

    @property
    def shape(self) -> tuple:
        return tuple(c.shape[1] for c in self.cores)

    @property
    def ranks(self) -> list[int]:
        return [1] + [int(c.shape[2]) for c in self.cores]

    @property
    def n(self) -> int:
        return int(np.prod(np.asarray(self.shape, dtype=object)))

    def marginal(self, species: str) -> np.ndarray:
        """Marginal law of one species (sums of p̃ over the others, from the cores)."""
        if species not in self.species:
            raise ValueError(f"`species` must be one of {self.species}; got {species!r}.")
        s = self.species.index(species)
        left = np.ones(1)
        for c in self.cores[:s]:
            left = left @ c.sum(axis=1)
        right = np.ones(1)
        for c in reversed(self.cores[s + 1:]):
            right = c.sum(axis=1) @ right
        return np.einsum("a,aib,b->i", left, self.cores[s], right)

    def mean(self, species: str) -> float:
        m = self.marginal(species)
        return float(np.arange(m.size) @ m)

    def full(self) -> np.ndarray:
        """The whole tensor (n floats: mind the memory)."""
        check_memory(8 * self.n, what=f"the full tensor of {self.n} states")
        out = self.cores[0]
        for c in self.cores[1:]:
            out = np.tensordot(out, c, axes=([-1], [0]))
        return out.reshape(self.shape)


def _unit_tt(shape, k, torch, tt, matrix: bool):
    cores = []
    for m, i in zip(shape, k):
        e = np.zeros((m, m)) if matrix else np.zeros(m)
        if matrix:
            e[i, i] = 1.0
            cores.append(torch.tensor(e[None, :, :, None]))
        else:
            e[i] = 1.0
            cores.append(torch.tensor(e[None, :, None]))
    return tt.TT(cores)


def qtt_box(bounds: Sequence[int]) -> list[int]:
    """Each side b_s raised to 2^L − 1 (at least 1): the quantised TT splits a side of 2^L states into L binary modes."""
    return [max(2, 1 << int(math.ceil(math.log2(int(b) + 1)))) - 1 for b in bounds]


def tt_stationary(gen: SeparableGenerator, *, target: float = 0.0) -> tuple[TTDistribution, dict]:
    """p_J by AMEn in quantised TT, certified on the grid (module docstring). Returns (distribution, info).

    The box's sides must be 2^L − 1 ([`qtt_box`][sp_ode.networks.cme.tensor_train.qtt_box]): every side is split
    into L binary modes (Oseledets 2010; Kazeev et al. 2014), where shifts and polynomial diagonals have
    ranks ≤ 3 and the mode singularity of the hitting times stays of moderate rank.  The solve for p is
    repeated with a tighter AMEn tolerance while the certified bound is above `target`.

    `info` carries `bound` (≥ ‖max(p̃,0) − p_J‖₁, inf when the hitting-time check failed), `hitting_time`,
    `residual`, the QTT `ranks` of p̃, ĥ and Q, `negative_mass`, `method` "tt" and the memory the check needed.

    Raises
    ------
    ImportError
        torchtt is not installed.
    ValueError
        A side of the box is not 2^L − 1.
    MemoryBudgetError
        The grid check would not fit (estimated before allocating).
    """
    import torch
    import torchtt as tt

    shape = list(gen.shape)
    if any(m & (m - 1) or m < 2 for m in shape):
        raise ValueError(f"every side of the box must hold 2^L states (bounds 2^L − 1, `qtt_box`); got {shape}.")
    check_memory(_CHECK_BYTES_PER_STATE * gen.n, what=f"the TT certificate's grid of {gen.n} states")
    n = gen.n
    L = int(sum(int(math.log2(m)) for m in shape))
    QT = gen.tt_operator(transpose=True).to_qtt(eps=1e-14)
    # Bordered system (Qᵀ + u𝟙ᵀ)p = u, u = 𝟙/n: the rank-1 border has norm 1 in every direction of 𝟙.
    half = [torch.full((1, 2, 2, 1), 0.5, dtype=torch.float64) for _ in range(L)]
    u = tt.TT([torch.full((1, 2, 1), 0.5, dtype=torch.float64) for _ in range(L)])
    A = (QT + tt.TT(half)).round(1e-14)
    cap = rank_cap(L, max(A.R))
    attempts = []
    for eps, rnd, local in _P_LADDER:
        # the central Jacobi preconditioner is what makes AMEn converge on these nonsymmetric systems
        # (without it the pinned solve below stalls at a relative residual of order 1)
        t0 = time.perf_counter()
        p = tt.solvers.amen_solve(A, u, x0=u, eps=eps, nswp=40, rmax=cap - _KICK, kickrank=_KICK, verbose=False,
                                  preconditioner="c", **local).round(rnd)
        _LOG.info("p: AMEn at %.0e in %.1f s, QTT ranks ≤ %d", eps, time.perf_counter() - t0, max(p.R))
        full = p.full().numpy().reshape(shape)
        neg = float(-full[full < 0].sum())
        q = np.maximum(full, 0.0)
        del full
        total = math.fsum(q.ravel())   # exact to within u·Σq
        t0 = time.perf_counter()
        res = gen.residual_l1_bound(q)
        _LOG.info("residual ‖Qᵀq‖₁ ≤ %.3g on %d states in %.1f s", res, n, time.perf_counter() - t0)
        if not attempts:
            k = tuple(int(i) for i in np.unravel_index(int(np.argmax(q)), gen.shape))
            H, hh, h_attempts = _hitting_time(gen, k, torch, tt, cap)
        bound = ((abs(total - 1.0) + 2 * _U * total + 2.0 * H * res / total * (1 + 8 * _U)) if math.isfinite(H)
                 else math.inf)
        attempts.append({"amen_eps": eps, "round": rnd, "residual": float(res), "bound": float(bound),
                         "ranks_max": int(max(p.R))})
        # a tighter AMEn tolerance gains about two orders in the residual: escalate only when that can reach
        # the target (on a nearly decoupled chain AMEn stalls far above it, and a retry only costs time)
        if bound <= target or not math.isfinite(H) or bound > 1e4 * target:
            break
    del q
    ptt = p.qtt_to_tens(shape).round(rnd)
    cores = [c.numpy().copy() for c in ptt.cores]
    dist = TTDistribution(cores, gen.species, neg)
    info = {"method": "tt", "bound": float(bound), "bound_kind": "a-posteriori ℓ1: 2·max E[τ_k]·‖Qᵀq‖₁ on the grid "
            "(§7.16)", "hitting_time": float(H), "residual": float(res), "ranks": [int(r) for r in p.R],
            "box_ranks": dist.ranks, "hitting_time_ranks": [int(r) for r in hh.R],
            "operator_ranks": [int(r) for r in QT.R], "negative_mass": neg, "mode": list(k), "n": n,
            "check_bytes": int(_CHECK_BYTES_PER_STATE * n), "attempts": attempts, "hitting_time_attempts": h_attempts, "rank_cap": cap,
            "rank_cap_reached": bool(max(p.R) >= cap or max(hh.R) >= cap)}
    if not math.isfinite(H):
        info["reason"] = ("the TT candidate for the hitting times failed the entrywise check min Gĥ > 0: no "
                          "bound on the linear algebra")
    return dist, info


def rank_cap(modes: int, operator_rank: int) -> int:
    """The largest QTT rank AMEn may reach within the memory budget (estimated before the solve).

    AMEn holds, per binary mode, the solution core (2r² floats) and the two interfaces of the local
    system (r²·R_A each), about three copies of each: 8·L·r²·(2 + 2R_A)·3 bytes.  A solve that reaches
    the cap is not refused (its certificate says what it is worth) but `info["rank_cap_reached"]` says so.
    """
    avail = available_memory()
    budget = DEFAULT_FRACTION * avail[0] if avail is not None else 8 * 2**30
    return max(2 * _KICK, int(math.sqrt(budget / (8 * modes * (2 + 2 * operator_rank) * 3))))


def _hitting_time(gen: SeparableGenerator, k: tuple, torch, tt, cap: int):
    """(certified H, the QTT candidate ĥ, the attempts) for A_h ĥ = 𝟙 − e_k, A_h = −(I − E_k)Q + q_k E_k.

    The solve is tightened along `_H_LADDER` until the one-sided check gives H ≤ 2 max ĥ (m ≥ 1/2).
    """
    shape = list(gen.shape)
    Q = gen.tt_operator().to_qtt(eps=1e-14)
    Ek = _unit_tt(shape, k, torch, tt, matrix=True).to_qtt()
    ek = _unit_tt(shape, k, torch, tt, matrix=False).to_qtt()
    # row k scaled like the others (the exit rate at k), so the pin is not lost in AMEn's residual
    qk = sum(t.coeff * math.prod(float(g[i]) for g, i in zip(t.inside, k)) for t in gen.terms)
    Ah = (-1.0 * Q + Ek @ Q + max(qk, 1e-300) * Ek).round(1e-14)
    ones = tt.ones(Q.N, dtype=torch.float64)
    bh = (ones - ek).round(1e-14)
    best: tuple = (math.inf, None)
    tried = []
    for eps in _H_LADDER:
        hh = tt.solvers.amen_solve(Ah, bh, x0=ones, eps=eps, nswp=40, rmax=cap - _KICK, kickrank=_KICK,
                                   verbose=False, preconditioner="c", **_LOCAL)
        full = hh.full().numpy().reshape(shape)
        H = gen.hitting_time_bound(k, full)
        _LOG.info("hitting times: AMEn at %.0e, QTT ranks ≤ %d, certified H ≤ %.4g", eps, max(hh.R), H)
        tried.append({"amen_eps": eps, "bound": H, "ranks_max": int(max(hh.R))})
        if H < best[0] or best[1] is None:
            best = (H, hh)
        # max ĥ/m is within a factor 2 of max ĥ once m ≥ 1/2: a tighter solve cannot gain more
        if math.isfinite(H) and H <= 2.0 * float(np.max(full - full[k])) * (1 + 1e-12):
            break
    return best[0], best[1], tried
