"""Reaction networks and their chemical master equation on a finite state projection.

A [`ReactionNetwork`][sp_ode.networks.network.ReactionNetwork] holds species, reactions (stoichiometry and a
propensity a_r(x, y) in the copy numbers x, parameters and slow variables y),
parsed from a string (syntax: `sp_ode.networks._rates`):

    ReactionNetwork("G_off -> G_on, k_on*y; G_on -> G_off, k_off; "
                    "G_on -> G_on + M, k_m; M -> 0, g_m",
                    parameters={"k_on": 1, "k_off": 2, "k_m": 20, "g_m": 1}, slow=["y"])

Mass action (`->`) is stochastic mass action, a_r = c_r · Π_s C(x_s, ν_s)
(Gillespie's combinatorial convention); `=>` takes the rate as the whole
propensity.  Propensities are lambdified from sympy to NumPy (vectorised over
states) and to JAX.

**Finite state projection** (docs/theory.md §7.6).  [`ReactionNetwork.state_space`][sp_ode.networks.network.ReactionNetwork.state_space]
keeps the states of a box (per-species bounds) and/or a total-count bound, on the
conservation-law class of an initial state when the stoichiometry conserves
something.  On it [`generator`][sp_ode.networks.network.ReactionNetwork.generator] builds the *reflecting*
generator Q(y) (`scipy.sparse`, rows summing to zero; transitions out of the
projection dropped) and [`truncation`][sp_ode.networks.network.ReactionNetwork.truncation] reports what that
costs: the outflow rate Σ_i p_i·o_i(y), o_i the total propensity of the
reactions leaving the projection from state i (Munsky–Khammash's indicator for a
stationary law — an indicator, not a bound, §7.6), and, for transient use, the
sink-based bound: the mass that leaves the projection by time T when the
outflow is routed to an absorbing sink, which bounds ‖p(T) − p_J(T)‖₁ exactly
(§7.6).  Bad input raises a [`NetworkError`][sp_ode.networks.network.NetworkError] subclass naming the reaction
or species.
"""
from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import scipy.sparse as sp

from sp_ode.core.errors import Error, SpOdeWarning
from sp_ode.core.memory import check_memory
from sp_ode.core.validation import did_you_mean, hint
from sp_ode.markov.generator import check_generator
from sp_ode.networks._rates import NetworkSyntaxError, Reaction, check_rate_numbers, parse_rate, parse_reactions
from sp_ode.networks.conservation import conservation_caps, conservation_laws, extreme_rays
from sp_ode.networks.state_space import StateSpace, TruncationReport, enumerate_states, enumeration_size

__all__ = ["ReactionNetwork", "Reaction", "parse_rate", "NetworkError", "NetworkSyntaxError",
           "UnknownSymbolError", "NegativeCountError", "PropensityError", "TruncationError",
           "UnusedSlowVariableError", "NetworkWarning", "StateLabels", "DEFAULT_CONVENTION"]

# Codes decoded before the conservation / total filter (the box, or on a conservation class the
# box of the free species): a bound on enumeration *time* (memory is estimated separately,
# sp_ode.networks.state_space).
_MAX_BOX = 2 * 10**9
_MAX_DENSE_JAX = 4096      # the JAX generator is dense: n² float64


#: The propensity convention of the reaction grammar (`sp_ode.networks._rates`), printed by `summary()`.
DEFAULT_CONVENTION = ("sp_ode's: `->` is stochastic mass action a = c·Π_s C(x_s, ν_s) (Gillespie 1977: "
                      "`2 A -> B, c` has a = c·A·(A-1)/2), `=>` takes the rate as the whole propensity")


class NetworkError(Error, ValueError):
    """Invalid reaction network or projection; `reaction` / `species` name the culprit (or None)."""

    def __init__(self, message: str, *, reaction: str | None = None, species: str | None = None):
        super().__init__(message)
        self.reaction = reaction
        self.species = species


class UnknownSymbolError(NetworkError):
    """A rate uses a name that is not a species, parameter or slow variable."""


class NegativeCountError(NetworkError):
    """A reaction with positive propensity would make a copy number negative."""


class PropensityError(NetworkError):
    """A propensity is negative or not finite at some state."""


class TruncationError(NetworkError):
    """The projection leaks more mass than the requested tolerance; `leaked` holds the amount."""

    def __init__(self, message: str, *, leaked: float, **kw):
        super().__init__(message, **kw)
        self.leaked = leaked


class UnusedSlowVariableError(NetworkError):
    """A declared slow variable appears in no rate."""


class NetworkWarning(SpOdeWarning):
    """A reaction network that is valid but looks like a typo (a species used once, one that only grows)."""


class StateLabels(Sequence):
    """The states of a projection named by their copy numbers, `"{G_on=1, M=3}"`, built on demand.

    A sequence of n strings for `states=` labels (messages, legends, tables) that costs nothing
    until a label is read, so it can stand for 10⁶ states.
    """

    def __init__(self, species: Sequence[str], states: np.ndarray):
        self.species, self.states = tuple(species), states

    def __len__(self) -> int:
        return int(self.states.shape[0])

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        row = self.states[int(i)]
        return "{" + ", ".join(f"{s}={int(c)}" for s, c in zip(self.species, row)) + "}"


# ---------------------------------------------------------------------------------------------
# The network

class ReactionNetwork:
    """Species, reactions and propensities; the CME generator on a finite state projection.

    Parameters
    ----------
    reactions : str or sequence of [`Reaction`][sp_ode.networks.network.Reaction]
        The network (string syntax in the module docstring).
    parameters : mapping str -> float, optional
        Values of the parameters named in the rates.
    slow : sequence of str, optional
        Names of the slow variables y (order = the order of the vector y).
    species : sequence of str, optional
        Species order (default: order of first appearance); may add species that
        no reaction changes.
    name : str, optional
    observables : mapping str -> sympy.Expr or str, optional
        Named quantities that are functions of the counts, not states of the chain (an SBML
        species set by an assignment rule, a boundary species' constant amount); read with
        [`observable`][sp_ode.networks.network.ReactionNetwork.observable].
    convention : str, optional
        The propensity convention the reactions were written in, as one sentence for
        [`summary`][sp_ode.networks.network.ReactionNetwork.summary] (default: sp_ode's own, `DEFAULT_CONVENTION`;
        [`sp_ode.from_gillespy2`][sp_ode.networks.gillespy2.from_gillespy2] names GillesPy2's).

    Raises
    ------
    NetworkSyntaxError
        Unreadable reaction string (names the reaction).
    UnknownSymbolError
        A rate uses a name that is not a species, parameter or slow variable
        (names the reaction and the symbol).
    UnusedSlowVariableError
        A slow variable appears in no rate (names it).
    TypeError, ValueError
        Non-numeric or non-finite parameter values; a name used both as a species and
        a parameter or slow variable.

    Examples
    --------
    A birth–death process, its propensities in counts and its stationary mean:

    >>> import sp_ode
    >>> net = sp_ode.ReactionNetwork("make: 0 -> M, k; decay: M -> 0, g", parameters={"k": 10.0, "g": 1.0})
    >>> net.propensities([[3]])[:, 0]           # k, and g·M at M = 3
    array([10.,  3.])
    >>> space = net.state_space({"M": 60})      # the projection M ∈ {0, …, 60}
    >>> p = sp_ode.stationary_distribution(net.generator(space))
    >>> round(float(p @ space.states[:, 0]), 9) # Poisson(k/g): E[M] = 10
    10.0

    Mass action counts distinct reactant pairs (Gillespie 1977): `2 A -> B, c` has propensity c·A(A−1)/2.

    >>> sp_ode.ReactionNetwork("2 A -> B, c; B -> 2 A, d", parameters={"c": 1.0, "d": 1.0}).propensities([[4, 0]])[0]
    array([6.])
    """

    def __init__(self, reactions: str | Sequence[Reaction], *, parameters: Mapping | None = None,
                 slow: Sequence[str] = (),
                 species: Sequence[str] | None = None, name: str | None = None, observables: Mapping | None = None,
                 convention: str | None = None) -> None:
        import sympy

        rxns = parse_reactions(reactions) if isinstance(reactions, str) else list(reactions)
        if not rxns or not all(isinstance(r, Reaction) for r in rxns):
            raise TypeError("`reactions` must be a string or a non-empty sequence of Reaction.")
        order: list[str] = list(species) if species is not None else []
        for r in rxns:
            for s, _ in (*r.reactants, *r.products):
                if s not in order:
                    if species is not None:
                        raise UnknownSymbolError(f"reaction {r.name!r} ({r}) uses species {s!r}, which is not in "
                                                 f"`species` {tuple(species)}.", reaction=r.name, species=s)
                    order.append(s)
        self.species = tuple(order)
        self.reactions = tuple(rxns)
        self.slow = tuple(str(v) for v in slow)
        if isinstance(slow, str):
            raise TypeError(f"`slow` must be a sequence of names; got the string {slow!r} (write [{slow!r}]).")
        params = {} if parameters is None else dict(parameters)
        for k, v in params.items():
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"parameter {k!r} must be a real number; got {type(v).__name__}.")
            if not np.isfinite(v):
                raise ValueError(f"parameter {k!r} must be finite; got {v}.")
        self.parameters = {k: float(v) for k, v in params.items()}
        for clash in set(self.species) & (set(self.parameters) | set(self.slow)):
            raise ValueError(f"{clash!r} is both a species and a parameter/slow variable; rename one.")
        for clash in set(self.parameters) & set(self.slow):
            raise ValueError(f"{clash!r} is both a parameter and a slow variable; rename one.")
        self.name = name or "network"
        if convention is not None and not isinstance(convention, str):
            raise TypeError(f"`convention` must be a string (one sentence); got {type(convention).__name__}.")
        self.convention = convention or DEFAULT_CONVENTION

        S = len(self.species)
        idx = {s: i for i, s in enumerate(self.species)}
        self.stoichiometry = np.zeros((len(rxns), S), dtype=np.int64)   # ν_r = products − reactants
        self._reactant = np.zeros((len(rxns), S), dtype=np.int64)
        for k, r in enumerate(rxns):
            for s, c in r.reactants:
                self.stoichiometry[k, idx[s]] -= c
                self._reactant[k, idx[s]] += c
            for s, c in r.products:
                self.stoichiometry[k, idx[s]] += c

        self.symbols = {n: sympy.Symbol(n) for n in (*self.species, *self.slow, *self.parameters)}
        known = set(self.symbols)
        exprs = []
        for r in rxns:
            rate = r.expression if r.expression is not None else parse_rate(r.rate, f"reaction {r.name!r}",
                                                                             reaction=r.name)
            unknown = sorted(str(s) for s in rate.free_symbols if str(s) not in known)
            if unknown:
                what = "species" if unknown[0][:1].isupper() else "name"
                raise UnknownSymbolError(
                    f"reaction {r.name!r} ({r}): unknown {what} {unknown[0]!r} in the rate — not a species "
                    f"{self.species}, a parameter {tuple(self.parameters)} or a slow variable {self.slow}"
                    f"{hint(unknown[0], known)}.", reaction=r.name, species=unknown[0])
            rate = rate.subs({s: self.symbols[str(s)] for s in rate.free_symbols})
            check_rate_numbers(rate, r)
            if r.mass_action:
                for s, c in r.reactants:
                    X = self.symbols[s]
                    rate = rate * sympy.Mul(*[X - j for j in range(c)]) / sympy.factorial(c)
            exprs.append(rate)
        self.propensity_exprs = tuple(exprs)
        used = {str(s) for e in exprs for s in e.free_symbols}
        for v in self.slow:
            if v not in used:
                raise UnusedSlowVariableError(f"slow variable {v!r} appears in no rate; the fast chain would not "
                                              "depend on it — drop it or use it in a rate.", species=v)
        self.observables = {}
        for oname, oexpr in dict(observables or {}).items():
            e = parse_rate(oexpr, f"observable {oname!r}") if isinstance(oexpr, str) else sympy.sympify(oexpr)
            unknown = sorted(str(x) for x in e.free_symbols if str(x) not in known)
            if unknown:
                raise UnknownSymbolError(f"observable {oname!r} uses {unknown[0]!r}, which is not a species, parameter "
                                         f"or slow variable{hint(unknown[0], known)}.", species=unknown[0])
            if oname in self.species:
                raise ValueError(f"observable {oname!r} has the name of a species; rename one.")
            self.observables[str(oname)] = e.subs({x: self.symbols[str(x)] for x in e.free_symbols})
        self._fns: dict = {}
        self._laws = self._rays = None
        if isinstance(reactions, str):  # a hand-written string: a misspelt name silently makes a new species
            for message in self.typo_warnings():
                warnings.warn(message, NetworkWarning, stacklevel=2)

    # --- checks for typos ----------------------------------------------------------------------
    def _appearances(self) -> dict[str, list[int]]:
        """Species -> the reactions (indices) that name it: as reactant, product, or in the rate."""
        seen: dict[str, list[int]] = {s: [] for s in self.species}
        for k, (r, e) in enumerate(zip(self.reactions, self.propensity_exprs)):
            names = {s for s, _ in (*r.reactants, *r.products)} | {str(x) for x in e.free_symbols}
            for s in self.species:
                if s in names:
                    seen[s].append(k)
        return seen

    def typo_warnings(self) -> list[str]:
        """What looks like a typo in the reactions, one sentence each naming the species and reaction(s).

        * a species named in only one reaction (a misspelt name creates a new species, which later
          surfaces as a reducible chain or a conservation law nobody meant), with the closest other
          species name when there is one;
        * a species consumed by some reaction but produced by none (it can only run out), or
          produced but consumed by none (it can only grow, so every projection truncates it).

        Species declared in `species` that no reaction names are not reported (they were asked for).
        """
        out = []
        seen = self._appearances()
        for s, where in seen.items():
            if len(where) == 1:
                r = self.reactions[where[0]]
                close = did_you_mean(s, self.species)
                only_made = s not in dict(r.reactants)
                if only_made and close is None:
                    continue      # a final product (C -> E + P): made once and never used is no typo
                hint = f" — did you mean {close!r}?" if close else ""
                out.append(f"species {s!r} appears in only one reaction, {r.name!r} ({r}){hint} A species that "
                           "no other reaction makes or uses is often a misspelt name.")
        for j, s in enumerate(self.species):
            col = self.stoichiometry[:, j]
            consumed, produced = np.flatnonzero(col < 0), np.flatnonzero(col > 0)
            names = lambda idx: ", ".join(repr(self.reactions[k].name) for k in idx[:3]) + (" …" if idx.size > 3 else "")
            if consumed.size and not produced.size and len(seen[s]) > 1:
                out.append(f"species {s!r} is consumed (by {names(consumed)}) but produced by no reaction: its count "
                           "can only fall. Is a production reaction missing or misspelt?")
            if produced.size and not consumed.size and len(seen[s]) > 1:
                out.append(f"species {s!r} is produced (by {names(produced)}) but consumed by no reaction: its count "
                           "can only grow, so every finite projection truncates it. Is a degradation missing or "
                           "misspelt?")
        return out

    def summary(self, bounds: Mapping[str, int] | None = None, *, total: int | None = None,
                initial: Mapping[str, int] | None = None) -> str:
        """A one-screen description: species, reactions, conservation laws, slow variables, state-space size.

        With `bounds`/`total`/`initial` (as for [`state_space`][sp_ode.networks.network.ReactionNetwork.state_space]) the size of that projection is
        counted; without them the size is given when the conservation laws alone bound every species
        (they need `initial`), else the line says what to pass.  Typo warnings are listed last.
        """
        lines = [f"reaction network {self.name!r}: {len(self.species)} species, {len(self.reactions)} reactions"]
        lines.append("  species: " + ", ".join(self.species))
        if self.slow:
            lines.append("  slow variables: " + ", ".join(self.slow))
        if self.parameters:
            lines.append("  parameters: " + ", ".join(f"{k} = {v:g}" for k, v in self.parameters.items()))
        lines.append(f"  propensity convention: {self.convention}")
        lines.append("  reactions, each with its propensity a(x) in copy numbers:")
        width = max(len(str(r)) for r in self.reactions)
        lines += [f"    {str(r):<{width}}   a = {e}" for r, e in zip(self.reactions, self.propensity_exprs)]
        laws = self.conservation_laws()
        if len(laws):
            lines.append("  conservation laws:")
            for law in laws:
                lines.append("    " + " + ".join(f"{c}*{sp_}" if c != 1 else sp_
                                                 for c, sp_ in zip(law, self.species) if c) + " = const")
        else:
            lines.append("  conservation laws: none")
        if bounds is None and total is None and initial is None:
            lines.append("  state space: give bounds=, total= or initial= (summary(...) or state_space(...)) to "
                         "size the projection")
        else:
            try:
                space = self.state_space(bounds, total=total, initial=initial)
            except NetworkError as exc:   # a summary says what to pass instead of raising (its docstring's promise)
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                lines.append(f"  state space: not sized by what was given ({first}); give bounds= for the species "
                             "the conservation laws leave unbounded")
            else:
                lines.append(f"  state space: {space.n} states (the projection of bounds={dict(bounds or {})}, "
                             f"total={total}, initial={dict(initial) if initial else None})")
        warns = self.typo_warnings()
        if warns:
            lines.append("  possible typos:")
            lines += [f"    - {w}" for w in warns]
        return "\n".join(lines)

    # --- presentation ------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"ReactionNetwork({self.name!r}, species={self.species}, reactions={len(self.reactions)}, "
                f"slow={self.slow})")

    def with_parameters(self, **values) -> ReactionNetwork:
        """A copy with some parameter values replaced (names must exist)."""
        for k in values:
            if k not in self.parameters:
                raise ValueError(f"unknown parameter {k!r}; parameters are {tuple(self.parameters)}.")
        return ReactionNetwork(self.reactions, parameters={**self.parameters, **values}, slow=self.slow,
                               species=self.species, name=self.name, observables=self.observables,
                               convention=self.convention)

    def observable(self, name: str, states, y=None) -> np.ndarray:
        """Values (m,) of the observable `name` at the rows of `states` (m, S).

        Raises
        ------
        ValueError
            `name` is neither an observable nor a species.
        """
        import sympy

        states = np.asarray(states, dtype=np.int64).reshape(-1, len(self.species))
        if name in self.species:
            return states[:, self.species.index(name)].astype(np.float64)
        if name not in self.observables:
            raise ValueError(f"`name` must be a species {self.species} or an observable {tuple(self.observables)}; "
                             f"got {name!r}.")
        args = [self.symbols[n] for n in (*self.species, *self.slow, *self.parameters)]
        fn = sympy.lambdify(args, self.observables[name], modules="numpy")
        return self._call([fn], states, self._y(y))[0]

    def _y(self, y) -> np.ndarray:
        y = np.zeros(0) if y is None and not self.slow else y
        if y is None:
            raise TypeError(f"network {self.name!r} has slow variables {self.slow}: pass `y`.")
        y = np.atleast_1d(np.asarray(y, dtype=np.float64))
        if y.shape != (len(self.slow),):
            raise ValueError(f"`y` must have shape ({len(self.slow)},) for slow variables {self.slow}; got {y.shape}.")
        if not np.all(np.isfinite(y)):
            raise ValueError(f"`y` must be finite; got {y}.")
        return y

    # --- propensities --------------------------------------------------------------------------
    def _lambdified(self, kind: str):
        """Lambdified propensities (kind 'numpy' or 'jax') and their y-derivatives ('dnumpy')."""
        if kind not in self._fns:
            import sympy

            args = [self.symbols[n] for n in (*self.species, *self.slow, *self.parameters)]
            if kind == "dnumpy":
                exprs = [[sympy.diff(e, self.symbols[v]) for v in self.slow] for e in self.propensity_exprs]
                self._fns[kind] = [[sympy.lambdify(args, d, modules="numpy") for d in row] for row in exprs]
            else:
                self._fns[kind] = [sympy.lambdify(args, e, modules=kind) for e in self.propensity_exprs]
        return self._fns[kind]

    def _call(self, fns, states: np.ndarray, y: np.ndarray) -> np.ndarray:
        cols = [states[:, s].astype(np.float64) for s in range(states.shape[1])]
        pvals = list(self.parameters.values())
        with np.errstate(all="ignore"):
            return np.stack([np.broadcast_to(np.asarray(f(*cols, *y, *pvals), dtype=np.float64), (states.shape[0],))
                             for f in fns])

    def propensities(self, states, y=None) -> np.ndarray:
        """Propensities a_r(x, y), shape (R, m), at the rows of `states` (m, S). Unchecked."""
        states = np.asarray(states, dtype=np.int64).reshape(-1, len(self.species))
        return self._call(self._lambdified("numpy"), states, self._y(y))

    def propensity_derivatives(self, states, y=None) -> np.ndarray:
        """∂a_r/∂y_j, shape (d, R, m) (exact, from the sympy expressions)."""
        states = np.asarray(states, dtype=np.int64).reshape(-1, len(self.species))
        y = self._y(y)
        return np.stack([self._call([row[j] for row in self._lambdified("dnumpy")], states, y)
                         for j in range(len(self.slow))]) if self.slow else np.zeros((0, len(self.reactions),
                                                                                      states.shape[0]))

    def negative_targets(self, space: StateSpace) -> list[np.ndarray]:
        """Per reaction, the states of J from which it would make some count negative."""
        return [np.flatnonzero(np.any(space.states + nu < 0, axis=1)) for nu in self.stoichiometry]

    def check_propensities(self, a: np.ndarray, space: StateSpace, y: np.ndarray,
                           negative_targets: list[np.ndarray] | None = None) -> None:
        """Raise [`PropensityError`][sp_ode.networks.network.PropensityError] / [`NegativeCountError`][sp_ode.networks.network.NegativeCountError] naming the reaction and the state.

        `a` (R, n) are the propensities at the states of `space`; `negative_targets` is
        [`negative_targets`][sp_ode.networks.network.ReactionNetwork.negative_targets] (computed when omitted).
        """
        bad = ~np.isfinite(a) | (a < 0)
        if bad.any():
            r, i = np.argwhere(bad)[0]
            raise PropensityError(
                f"reaction {self.reactions[r].name!r} ({self.reactions[r]}) has propensity {float(a[r, i])!r} at state "
                f"{self._fmt(space.states[i])}, y = {y.tolist()}: propensities must be finite and >= 0.",
                reaction=self.reactions[r].name)
        negative_targets = self.negative_targets(space) if negative_targets is None else negative_targets
        for r, idx in enumerate(negative_targets):
            neg = idx[a[r, idx] > 0]
            if neg.size:
                i = int(neg[0])
                target = space.states[i] + self.stoichiometry[r]
                s = self.species[int(np.flatnonzero(target < 0)[0])]
                raise NegativeCountError(
                    f"reaction {self.reactions[r].name!r} ({self.reactions[r]}) has propensity {a[r, i]:.3g} > 0 at "
                    f"state {self._fmt(space.states[i])} but would make {s!r} negative; its propensity must vanish "
                    f"when {s!r} is short (use `->` mass action, or a factor of {s!r} in the rate).",
                    reaction=self.reactions[r].name, species=s)

    def state_labels(self, space: StateSpace) -> StateLabels:
        """The states of `space` named by their copy numbers (`"{G_on=1, M=3}"`), for `states=` labels."""
        return StateLabels(self.species, space.states)

    def _fmt(self, state) -> str:
        return "{" + ", ".join(f"{s}={int(c)}" for s, c in zip(self.species, state)) + "}"

    # --- finite state projection ---------------------------------------------------------------
    def conservation_laws(self) -> np.ndarray:
        """Integer basis (k, S) of the conserved combinations c·x (c ν_r = 0 for every reaction).

        Made of nonnegative laws (extreme rays of the cone of nonnegative laws) as far as they span
        the law space (`sp_ode.networks.conservation.conservation_laws`).
        """
        if self._laws is None:   # exact (sympy, double description): computed once per network
            self._laws = conservation_laws(self.stoichiometry)
        return self._laws.copy()

    def nonnegative_conservation_laws(self) -> np.ndarray:
        """The extreme rays (m, S) of the cone {c ≥ 0 : c ν_r = 0 ∀r}: every nonnegative conservation law.

        Each ray c with c_s > 0 bounds s on a class: x_s ≤ ⌊c·x₀ / c_s⌋, and the rays give the
        tightest such bounds (`sp_ode.networks.conservation`).  Empty (0, S) when the double
        description exceeds `sp_ode.networks.conservation.MAX_RAYS`; then the nonnegative rows of
        `conservation_laws` are used.
        """
        if self._rays is None:
            rays = extreme_rays(self.stoichiometry)
            laws = self.conservation_laws()
            self._rays = rays if rays is not None else laws[np.all(laws >= 0, axis=1)]
        return self._rays.copy()

    def state_space(self, bounds: Mapping[str, int] | None = None, *, total: int | None = None,
                    initial: Mapping[str, int] | None = None) -> StateSpace:
        """The finite state projection J: a box and/or total-count bound, on one conservation class.

        Parameters
        ----------
        bounds : mapping species -> int, optional
            Maximum count (inclusive) per species.  A species without a bound gets `total`, or
            the bound implied by the nonnegative conservation laws and `initial` (the extreme
            rays, [`nonnegative_conservation_laws`][sp_ode.networks.network.ReactionNetwork.nonnegative_conservation_laws],
            whatever the signs of a basis: E + S ⇌ C → E + P bounds S, C and P by S + C + P).
            A bound looser than such a cap is lowered to it (the same states, a smaller box).
        total : int, optional
            Bound on Σ_s x_s.
        initial : mapping species -> int, optional
            A state fixing the conserved quantities (required when the stoichiometry
            conserves something, e.g. G_off + G_on = 1); missing species count 0.

        Raises
        ------
        NetworkError
            A species has neither a bound nor `total` (names it); a conservation law
            exists but `initial` is missing; `initial` lies outside the bounds;
            the enumeration would decode more than 2·10⁹ codes (the box, or on a conservation
            class the box of the species the laws leave free); J is empty.
        MemoryBudgetError
            The states would not fit in memory (estimated before they are allocated;
            `sp_ode.networks.state_space.enumerate_states`).
        """
        bounds = {} if bounds is None else dict(bounds)
        for s in bounds:
            if s not in self.species:
                raise NetworkError(f"`bounds` names {s!r}, which is not a species of {self.species}.", species=s)
        if total is not None and (isinstance(total, bool) or not isinstance(total, (int, np.integer)) or total < 0):
            raise ValueError(f"`total` must be a nonnegative integer; got {total!r}.")
        laws = self.conservation_laws()
        if initial is not None:
            for s in initial:
                if s not in self.species:
                    raise NetworkError(f"`initial` names {s!r}, which is not a species of {self.species}.", species=s)
            x0 = np.array([int(initial.get(s, 0)) for s in self.species], dtype=np.int64)
        b = []
        caps = conservation_caps(self.nonnegative_conservation_laws(), x0) if initial is not None else None
        for k, s in enumerate(self.species):
            v = bounds.get(s, total)
            if v is None and caps is not None and caps[k] >= 0:   # a nonnegative conservation law bounds s
                v = int(caps[k])
            if v is None:
                raise NetworkError(f"species {s!r} has no bound: give `bounds[{s!r}]` or `total`.", species=s)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"`bounds[{s!r}]` must be a nonnegative integer; got {v!r}.")
            if caps is not None and 0 <= caps[k] < v:   # no state of the class exceeds the cap: a smaller box
                v = int(caps[k])
            b.append(int(v) if total is None else min(int(v), int(total)))
        b = np.array(b, dtype=np.int64)
        work = enumeration_size(b, laws if initial is not None else None)
        if work > _MAX_BOX:
            what = "states" if initial is None or not len(laws) else "codes of the species its conservation laws leave free"
            raise NetworkError(f"the box {dict(zip(self.species, b.tolist()))} has {work:.3g} {what} (> 2e9); "
                               "tighten `bounds`/`total` or give `initial` with conservation laws.")
        if initial is None and len(laws):
            law = " + ".join(f"{c}*{s}" if c != 1 else s for c, s in zip(laws[0], self.species) if c)
            raise NetworkError(f"the reactions conserve {law}; pass `initial=` (a state) to fix its value, or the "
                               "projection holds several closed classes.", species=self.species[int(np.flatnonzero(laws[0])[0])])
        space = enumerate_states(self.species, b, total=None if total is None else int(total),
                                 laws=laws if initial is not None else None,
                                 x0=x0 if initial is not None else None, name=self.name)
        if space.n == 0:
            raise NetworkError("the projection is empty: no state satisfies the bounds and conservation laws.")
        if initial is not None and not space.contains(x0[None])[0]:
            raise NetworkError(f"`initial` {self._fmt(x0)} lies outside the projection (bounds "
                               f"{dict(zip(self.species, b.tolist()))}, total {total}).")
        return space

    def transitions(self, space: StateSpace) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per reaction: (src, dst, exit_src) — moves inside J, and states whose move leaves J (counts ≥ 0)."""
        out = []
        for r in range(len(self.reactions)):
            target = space.states + self.stoichiometry[r]
            inside = space.contains(target)
            nonneg = np.all(target >= 0, axis=1)
            moves = inside & np.any(self.stoichiometry[r] != 0)
            if self.reactions[r].mass_action:  # propensity ∝ Π C(x_s, ν_s): structurally 0 without reactants
                moves &= np.all(space.states >= self._reactant[r], axis=1)
            src = np.flatnonzero(moves)
            out.append((src, space.index(target[src]), np.flatnonzero(~inside & nonneg)))
        return out

    def generator_nbytes(self, space: StateSpace) -> int:
        """Estimated peak bytes of building Q on `space`: propensities, transitions, COO and CSR arrays.

        Per state and reaction: the propensity (8), the source/target lists (16) and their
        concatenated COO copies and CSR (about 72); per state, the shifted targets (8·S) and the
        diagonal (32).  An upper estimate, for `sp_ode.core.memory.check_memory`: 432 B/state
        for the 4-reaction cascade, whose measured peak at n = 10⁶ is 325 B/state (Q itself 64).
        """
        return int(space.n) * (96 * len(self.reactions) + 8 * len(self.species) + 32)

    def generator(self, space: StateSpace, y=None):
        """The reflecting FSP generator Q(y) on J as `scipy.sparse.csr_array`, validated.

        `Q[i, j]` is the total propensity of reactions moving state i to j inside J;
        moves that leave J are dropped (docs/theory.md §7.6), so Q is a generator and
        [`truncation`][sp_ode.networks.network.ReactionNetwork.truncation] reports the suppressed flux.

        Raises
        ------
        PropensityError, NegativeCountError
            Named reaction and state.
        MemoryBudgetError
            The estimate of [`generator_nbytes`][sp_ode.networks.network.ReactionNetwork.generator_nbytes] exceeds the memory budget.
        """

        check_memory(self.generator_nbytes(space), what=f"the generator of {self.name!r} on {space.n} states")
        y = self._y(y)
        a = self.propensities(space.states, y)
        self.check_propensities(a, space, y)
        rows, cols, vals = [], [], []
        for r, (src, dst, _) in enumerate(self.transitions(space)):
            rows.append(src)
            cols.append(dst)
            vals.append(a[r, src])
        # int32 indices while they fit: 64 instead of 88 bytes per state for a 5-point CME (docs/cme_memory.md)
        idx = np.int32 if (len(self.reactions) + 1) * space.n < 2**31 - 1 else np.int64
        rows, cols = (np.concatenate(v).astype(idx) for v in (rows, cols))
        vals = np.concatenate(vals)
        out = np.bincount(rows, weights=vals, minlength=space.n)
        diag = np.arange(space.n, dtype=idx)
        Q = sp.csr_array((np.concatenate([vals, -out]), (np.concatenate([rows, diag]), np.concatenate([cols, diag]))),
                         shape=(space.n, space.n))
        Q.sum_duplicates()
        Q.eliminate_zeros()
        return check_generator(Q, name=f"generator of {self.name!r}")

    def outflow(self, space: StateSpace, y=None) -> np.ndarray:
        """o_i(y), shape (n,): total propensity of the reactions that leave J from state i."""
        y = self._y(y)
        a = self.propensities(space.states, y)
        o = np.zeros(space.n)
        for r, (_, _, ex) in enumerate(self.transitions(space)):
            o[ex] += a[r, ex]
        return o

    def truncation(self, space: StateSpace, p, y=None, *, horizon: float | None = None,
                   tol: float | None = None) -> TruncationReport:
        """The FSP truncation error of a distribution p on J (docs/theory.md §7.6).

        Parameters
        ----------
        p : array (n,)
            A distribution on J (e.g. the stationary law of [`generator`][sp_ode.networks.network.ReactionNetwork.generator]).
        horizon : float, optional
            T for the sink-based bound: the mass that leaves J by time T starting
            from p with outflow routed to an absorbing sink (`expm_multiply`).
        tol : float, optional
            Raise [`TruncationError`][sp_ode.networks.network.TruncationError] when the leaked mass (or, without
            `horizon`, the outflow rate over one unit of time) exceeds it.

        Raises
        ------
        TruncationError
            Says the leaked mass and the species whose bound is hit most.
        """
        y = self._y(y)
        p = np.asarray(p, dtype=np.float64)
        if p.shape != (space.n,):
            raise ValueError(f"`p` must have shape (n,) = ({space.n},); got {p.shape}.")
        o = self.outflow(space, y)
        rate = float(p @ o)
        leaked = None
        if horizon is not None:
            from scipy.sparse.linalg import expm_multiply

            # Sink FSP: J plus one absorbing state collecting the outflow; its mass at T is the leak
            # (read directly, not as 1 − Σp_J, so that it is not lost to cancellation).
            Q = self.generator(space, y)
            G = sp.block_array([[Q - sp.diags_array(o), sp.csr_array(o[:, None])],
                                [sp.csr_array((1, space.n)), None]], format="csr")
            pT = expm_multiply((G.T * float(horizon)).tocsr(), np.append(p, 0.0))
            leaked = float(max(0.0, pT[-1]))
        report = TruncationReport(rate, leaked, None if horizon is None else float(horizon),
                                  float(p[o > 0].sum()))
        measured = leaked if leaked is not None else rate
        if tol is not None and measured > tol:
            hit = self._most_hit(space, p, y)
            what = f"leaked mass by T = {horizon:g}" if leaked is not None else "outflow rate (per unit time)"
            raise TruncationError(f"the projection of {self.name!r} is too small: {what}: {measured:.3e} > tol "
                                  f"{tol:.1e}; most mass leaves through the bound of {hit!r} — raise it.",
                                  leaked=measured, species=hit)
        return report

    def _most_hit(self, space: StateSpace, p: np.ndarray, y: np.ndarray) -> str:
        a = self.propensities(space.states, y)
        flux = np.zeros(len(self.species))
        for r, (_, _, ex) in enumerate(self.transitions(space)):
            target = space.states[ex] + self.stoichiometry[r]
            over = target > space.bounds
            if space.total is not None:
                over |= (target.sum(axis=1) > space.total)[:, None] & (self.stoichiometry[r] > 0)
            flux += (p[ex] * a[r, ex]) @ over
        return self.species[int(np.argmax(flux))]

    def generator_jax(self, space: StateSpace):
        """Q(y) as a dense JAX function of y (n ≤ 4096): `Q_of_y(y) -> (n, n)` float64.

        For [`sp_ode.MasterEquationSystem`][sp_ode.systems.system.MasterEquationSystem] on small projections; differentiable in y.
        """
        if space.n > _MAX_DENSE_JAX:
            raise ValueError(f"the dense JAX generator needs n ≤ {_MAX_DENSE_JAX}; J has n = {space.n} — use the "
                             "sparse generator (`generator`) or sp_ode.systems.network.")
        import jax.numpy as jnp

        fns = self._lambdified("jax")
        trans = self.transitions(space)
        src_all = np.concatenate([src for src, _, _ in trans])
        dst_all = np.concatenate([dst for _, dst, _ in trans])
        cols = [[space.states[src, s].astype(np.float64) for s in range(len(self.species))] for src, _, _ in trans]
        pvals = list(self.parameters.values())
        n = space.n

        def Q_of_y(y):
            y = jnp.atleast_1d(jnp.asarray(y))
            ys = [y[j] for j in range(y.shape[0])]
            a = jnp.concatenate([jnp.broadcast_to(jnp.asarray(f(*c, *ys, *pvals), dtype=y.dtype), (src.shape[0],))
                                 for f, c, (src, _, _) in zip(fns, cols, trans)])
            Q = jnp.zeros((n, n), dtype=y.dtype).at[src_all, dst_all].add(a)   # one scatter for all reactions
            return Q - jnp.diag(Q.sum(axis=1))

        return Q_of_y
