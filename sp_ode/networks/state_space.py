"""The states of a finite state projection, how they are enumerated, and what the projection costs.

A finite state projection J (docs/theory.md §7.6) of a chemical master equation keeps the
states of a box of per-species bounds, optionally below a total-count bound and on one
conservation-law class.  `enumerate_states` builds J *in blocks*: the box is decoded
code by code (its mixed-radix index) a bounded block at a time and filtered as it goes, so a
box of 10⁹ states filtered down to 10⁵ never holds more than one block.  On a conservation
class only the *free* species are enumerated: k independent laws L x = L x₀ fix k pivot
species as affine functions of the others, x_P = L_P⁻¹(L x₀ − L_F x_F), so the work is the box
of the free species, not of all (Michaelis–Menten with 301 substrate and 120 enzyme
molecules: 3.7·10⁴ codes instead of 1.3·10⁹; the pivots are the species with the largest
bounds, chosen greedily — a matroid, so the greedy choice minimises the free box).  The
memory of what is kept is estimated before each block is stored, and a projection that would not fit is
refused with [`sp_ode.core.memory.MemoryBudgetError`][sp_ode.core.memory.MemoryBudgetError] before it is allocated.
[`TruncationReport`][sp_ode.networks.state_space.TruncationReport] is what the projection costs a distribution on J (§7.6).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sp_ode.core.memory import check_memory
from sp_ode.core.summary import Summarised, number

__all__ = ["StateSpace", "TruncationReport", "CertifiedMarginal", "enumerate_states", "state_space_nbytes",
           "enumeration_size"]

# Temporaries of one block: the codes, S decoded columns and the stacked block, the masks and
# the conservation products — about 8·(2S + k + 4) bytes per code; 64 MB of them at a time.
_BLOCK_BYTES = 64 * 2**20


@dataclass(frozen=True, eq=False)
class StateSpace:
    """The states J of a finite state projection and the transitions between them.

    Attributes
    ----------
    species : tuple of str
    states : ndarray (n, S) int64
        Copy numbers, one row per state, in lexicographic order (last species fastest).
    bounds : ndarray (S,) int64
        Per-species maximum counts (inclusive) of the enclosing box.
    total : int or None
        Bound on Σ_s x_s, if one was given.
    codes : ndarray (n,) int64 or None
        Mixed-radix codes of the states (sorted); None when J is the whole box (index = code).
    """

    species: tuple[str, ...]
    states: np.ndarray
    bounds: np.ndarray
    total: int | None
    codes: np.ndarray | None

    @property
    def n(self) -> int:
        return int(self.states.shape[0])

    @property
    def strides(self) -> np.ndarray:
        return _strides(self.bounds)

    def contains(self, x: np.ndarray) -> np.ndarray:
        """Boolean mask (m,) for rows of x (m, S) that lie in J."""
        ok = np.all((x >= 0) & (x <= self.bounds), axis=1)
        if self.total is not None:
            ok &= x.sum(axis=1) <= self.total
        if self.codes is not None:
            code = np.where(ok, x @ self.strides, 0)
            pos = np.minimum(np.searchsorted(self.codes, code), self.n - 1)
            ok &= self.codes[pos] == code
        return ok

    def index(self, x: np.ndarray) -> np.ndarray:
        """Indices (m,) of rows of x (m, S), which must lie in J."""
        code = np.asarray(x, dtype=np.int64) @ self.strides
        return code if self.codes is None else np.searchsorted(self.codes, code)

    def marginal(self, p: np.ndarray, species: str) -> np.ndarray:
        """Marginal law of one species' count under p (n,): array of length bound + 1."""
        s = self.species.index(species)
        return np.bincount(self.states[:, s], weights=p, minlength=int(self.bounds[s]) + 1)

    def certified_marginal(self, p: np.ndarray, species: str, info: dict) -> CertifiedMarginal:
        """The marginal of `species` under p with the error bound its solve certified (docs/theory.md §7.9).

        `info` is the `return_info` dict of [`sp_ode.stationary_distribution`][sp_ode.markov.stationary.stationary_distribution] for p.  A
        componentwise bound κ (GTH, or a refined sparse answer) bounds every entry of the
        marginal relatively (its entries are sums of nonnegative p_i); a normwise ℓ1 bound β bounds
        each entry only absolutely, so entries not above 2β are marked uncertified.

        Raises
        ------
        ValueError
            `species` unknown; `info` carries neither bound.
        """
        if species not in self.species:
            raise ValueError(f"`species` must be one of {self.species}; got {species!r}.")
        values = self.marginal(np.asarray(p, dtype=np.float64), species)
        kappa, beta = info.get("componentwise_bound"), info.get("bound")
        if kappa is not None and np.isfinite(kappa):
            err = kappa * values
            return CertifiedMarginal(species, values, np.maximum(values - err, 0.0), values + err,
                                     np.full(values.shape, kappa < 0.5), "componentwise", float(kappa), 0.0)
        if beta is None or not np.isfinite(beta):
            raise ValueError("`info` carries no finite bound (neither `componentwise_bound` nor `bound`).")
        return CertifiedMarginal(species, values, np.maximum(values - beta, 0.0), values + beta, values > 2 * beta,
                                 "normwise", float(beta), 2.0 * float(beta))


@dataclass(frozen=True)
class CertifiedMarginal:
    """A marginal law with the bound its stationary solve certified ([`StateSpace.certified_marginal`][sp_ode.networks.state_space.StateSpace.certified_marginal]).

    Attributes
    ----------
    species : str
    values, lower, upper : ndarray (bound + 1,)
        The marginal and a certified interval per entry
    certified : ndarray of bool
        Entries whose relative error is below 1/2
    kind : "componentwise" or "normwise"
    bound : float
        Κ (relative, every entry) or β (absolute, ℓ1)
    uncertified_below : float
        0 for componentwise; 2β for normwise (entries below carry no relative accuracy)
    """

    species: str
    values: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    certified: np.ndarray
    kind: str
    bound: float
    uncertified_below: float

    def as_dict(self) -> dict:
        return {"species": self.species, "values": self.values, "lower": self.lower, "upper": self.upper,
                "certified": self.certified, "kind": self.kind, "bound": self.bound,
                "uncertified_below": self.uncertified_below}


@dataclass(frozen=True, repr=False)
class TruncationReport(Summarised):
    """What the finite state projection costs (docs/theory.md §7.6).

    Attributes
    ----------
    outflow_rate : float
        Σ_i p_i·o_i: probability per unit time that the reflecting truncation suppresses
        (an indicator of the stationary truncation error, not a bound).
    leaked_mass : float or None
        Sink-based bound for transient use: mass that leaves J by time `horizon` when
        started from p (‖p(T) − p_J(T)‖₁ exactly, §7.6).  None if not requested.  When p is
        the stationary law of the reflecting generator, leaked_mass ≤ horizon·outflow_rate:
        v = p − p_sink(t) solves v' = Q_subᵀv + o∘p ≥ 0 from v(0) = 0 with Q_subᵀ Metzler, so
        p_sink(t) ≤ p entrywise and the leak rate oᵀp_sink(t) never exceeds oᵀp.
    horizon : float or None
    boundary_mass : float
        Mass of p on states from which some reaction leaves J.
    """

    outflow_rate: float
    leaked_mass: float | None
    horizon: float | None
    boundary_mass: float

    def as_dict(self) -> dict:
        return {"outflow_rate": self.outflow_rate, "leaked_mass": self.leaked_mass, "horizon": self.horizon,
                "boundary_mass": self.boundary_mass,
                "kind": "outflow rate is an indicator (reflecting FSP); leaked mass is the sink-based bound"}

    def _summary_rows(self) -> list[tuple[str, str]]:
        leaked = ("not requested" if self.leaked_mass is None else
                  f"{number(self.leaked_mass)} by t = {number(self.horizon)} (sink bound)")
        return [("outflow rate", f"{number(self.outflow_rate)} (an indicator, not a bound)"),
                ("leaked mass", leaked), ("boundary mass", number(self.boundary_mass))]


def _strides(bounds: np.ndarray) -> np.ndarray:
    radix = np.asarray(bounds, dtype=np.int64) + 1
    return np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]]).astype(np.int64)


def state_space_nbytes(n: int, S: int, *, coded: bool) -> int:
    """Bytes of a [`StateSpace`][sp_ode.networks.state_space.StateSpace] of `n` states and `S` species (states, and codes when `coded`)."""
    return 8 * int(n) * (int(S) + (1 if coded else 0))


def _count_below_total(radix: np.ndarray, total: int) -> int:
    """#{x in the box : Σx ≤ total}, exactly: the coefficients of Π_s (1 + z + … + z^{b_s}) up to z^total."""
    counts = [1] + [0] * total                    # polynomial coefficients, Python ints (no overflow)
    for r in radix.tolist():
        prefix = [0]
        for c in counts:
            prefix.append(prefix[-1] + c)
        counts = [prefix[k + 1] - prefix[max(0, k + 1 - r)] for k in range(total + 1)]
    return sum(counts)


def _class_map(laws: np.ndarray, bounds: np.ndarray):
    """(pivots, free) species and the integer map D·x_P = a − B·x_F of L x = L x₀ (a still to be formed)."""
    import sympy

    k, S = laws.shape
    pivots: list[int] = []
    for s in sorted(range(S), key=lambda s: -int(bounds[s])):   # largest bounds first: the smallest free box
        if len(pivots) < k and sympy.Matrix(laws[:, pivots + [s]].tolist()).rank() > len(pivots):
            pivots.append(s)
    free = [s for s in range(S) if s not in pivots]
    inv = sympy.Matrix(laws[:, pivots].tolist()).inv()
    D = math.lcm(*[int(sympy.fraction(e)[1]) for e in inv])
    A = [[int(e * D) for e in inv.row(i)] for i in range(k)]            # D·L_P⁻¹, exact integers
    B = [[sum(A[i][j] * int(laws[j, f]) for j in range(k)) for f in free] for i in range(k)]
    return pivots, free, D, A, B


def enumeration_size(bounds: np.ndarray, laws: np.ndarray | None = None) -> int:
    """Codes `enumerate_states` decodes: the box of `bounds`, or on a class of `laws` the box of the free species."""
    bounds = np.asarray(bounds, dtype=np.int64)
    if laws is None or len(laws) == 0:
        return int(np.prod(bounds + 1, dtype=object))
    _, free, *_ = _class_map(np.asarray(laws, dtype=np.int64), bounds)
    return int(np.prod(bounds[free] + 1, dtype=object))


def _enumerate_class(species, bounds, total, laws, x0, name, kw, remedy) -> StateSpace | None:
    """The states of the class L x = L x₀ in the box, by enumerating the free species only (module docstring).

    None when the integer map could overflow int64 (the caller scans the box instead).
    """
    S = len(species)
    pivots, free, D, A, B = _class_map(laws, bounds)
    c = [int(v) for v in laws @ x0]
    a = [sum(A[i][j] * c[j] for j in range(len(c))) for i in range(len(pivots))]
    reach = max((abs(a[i]) + sum(abs(B[i][f]) * int(bounds[free[f]]) for f in range(len(free)))
                 for i in range(len(pivots))), default=0)
    if reach >= 2**62:
        return None
    a_np, B_np = np.array(a, dtype=np.int64), np.array(B, dtype=np.int64).reshape(len(pivots), len(free))
    shape = tuple((bounds[free] + 1).tolist())
    box = int(np.prod(bounds[free] + 1, dtype=object))
    block = max(1024, _BLOCK_BYTES // (8 * (2 * S + 2 * len(pivots) + 4)))
    strides = _strides(bounds)
    kept_states, kept, kept_codes = [], 0, []
    for lo in range(0, box, block):
        codes = np.arange(lo, min(box, lo + block), dtype=np.int64)
        xf = np.stack(np.unravel_index(codes, shape), axis=1) if free else np.zeros((codes.size, 0), np.int64)
        num = a_np - xf @ B_np.T                                    # D·x_P
        keep = np.all(num % D == 0, axis=1)
        xp = num // D
        keep &= np.all((xp >= 0) & (xp <= bounds[pivots]), axis=1)
        rows = np.empty((codes.size, S), dtype=np.int64)
        rows[:, free], rows[:, pivots] = xf, xp
        if total is not None:
            keep &= rows.sum(axis=1) <= total
        m = int(np.count_nonzero(keep))
        if m == 0:
            continue
        check_memory(2 * state_space_nbytes(kept + m, S, coded=True), remedy=remedy,
                     what=f"the projection of {name!r} (at least {kept + m:.3g} states × {S} species after "
                          f"{100.0 * (lo + codes.size) / box:.3g}% of the {box:.3g} codes of its free species)", **kw)
        kept_states.append(rows[keep])
        kept_codes.append(rows[keep] @ strides)
        kept += m
    states = np.concatenate(kept_states) if kept_states else np.zeros((0, S), dtype=np.int64)
    codes = np.concatenate(kept_codes) if kept_codes else np.zeros(0, dtype=np.int64)
    order = np.argsort(codes, kind="stable")                          # lexicographic, as the box scan gives
    states, codes = states[order], codes[order]
    full = int(np.prod(bounds + 1, dtype=object))
    return StateSpace(tuple(species), states, bounds, None if total is None else int(total),
                      None if states.shape[0] == full else codes)


def enumerate_states(species: tuple[str, ...], bounds: np.ndarray, *, total: int | None = None,
                     laws: np.ndarray | None = None, x0: np.ndarray | None = None, name: str = "network",
                     fraction: float | None = None) -> StateSpace:
    """The states of the box `0 ≤ x ≤ bounds` with Σx ≤ `total` and `laws @ x = laws @ x0`, in blocks.

    Parameters
    ----------
    species : tuple of str
    bounds : ndarray (S,) int64
        Per-species maximum counts, already checked.
    total : int, optional
    laws : ndarray (k, S), optional
        Conservation laws; with `x0` they fix the class.
    x0 : ndarray (S,), optional
    name : str
        The network, for messages.
    fraction : float, optional
        Share of the available memory the projection may take (default
        `sp_ode.core.memory.DEFAULT_FRACTION`).

    Returns
    -------
    StateSpace
        Possibly empty (the caller decides what an empty J means).

    Raises
    ------
    MemoryBudgetError
        The states would not fit: raised before the whole box (no filter), the counted
        states (a total bound only) or the next kept block (conservation laws) is allocated.
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    radix = bounds + 1
    S = len(species)
    box = int(np.prod(radix, dtype=object))
    classed = laws is not None and x0 is not None and len(laws) > 0
    filtered = total is not None or classed
    kw = {} if fraction is None else {"fraction": fraction}
    remedy = "Tighten `bounds`/`total`, or give `initial` with conservation laws."
    if not classed:
        # the size of J is known before enumerating: the box, or its part below `total`
        n = box if total is None else _count_below_total(radix, int(total))
        # a filtered J is kept in blocks and concatenated at the end: twice its size at the peak
        check_memory((2 if filtered else 1) * state_space_nbytes(n, S, coded=filtered), remedy=remedy,
                     what=f"the projection of {name!r} ({n:.4g} states × {S} species)", **kw)
    if classed:
        space = _enumerate_class(species, bounds, total, np.asarray(laws, dtype=np.int64),
                                 np.asarray(x0, dtype=np.int64), name, kw, remedy)
        if space is not None:
            return space
    per_code = 8 * (2 * S + (0 if laws is None else len(laws)) + 4)
    block = max(1024, _BLOCK_BYTES // per_code)
    shape = tuple(radix.tolist())
    target = None if not classed else laws @ x0
    if not filtered:
        # the whole box: each column is its range broadcast over the others, written in place
        states = np.empty((box, S), dtype=np.int64)
        grid = states.reshape(*shape, S)
        for s in range(S):
            grid[..., s] = np.arange(shape[s]).reshape([-1 if k == s else 1 for k in range(S)])
        return StateSpace(tuple(species), states, bounds, None, None)
    kept_states, kept_codes, kept = [], [], 0
    for lo in range(0, box, block):
        codes = np.arange(lo, min(box, lo + block), dtype=np.int64)
        rows = np.stack(np.unravel_index(codes, shape), axis=1)
        keep = np.ones(codes.size, dtype=bool)
        if total is not None:
            keep &= rows.sum(axis=1) <= total
        if classed:
            keep &= np.all(rows @ laws.T == target, axis=1)
        m = int(np.count_nonzero(keep))
        if m == 0:
            continue
        if classed:   # the size of J is known only as it is found: check before storing each block
            # kept blocks plus their concatenation at the end
            check_memory(2 * state_space_nbytes(kept + m, S, coded=True), remedy=remedy,
                         what=f"the projection of {name!r} (at least {kept + m:.3g} states × {S} species after "
                              f"{100.0 * (lo + codes.size) / box:.3g}% of its {box:.3g}-state box)", **kw)
        kept_states.append(rows[keep])
        kept_codes.append(codes[keep])
        kept += m
    states = np.concatenate(kept_states) if kept_states else np.zeros((0, S), dtype=np.int64)
    codes = np.concatenate(kept_codes) if kept_codes else np.zeros(0, dtype=np.int64)
    if states.shape[0] == box:
        return StateSpace(tuple(species), states, bounds, None if total is None else int(total), None)
    return StateSpace(tuple(species), states, bounds, None if total is None else int(total), codes)

