"""Events of a reaction network: state assignments x ↦ f(x) fired at a time or on entering a trigger set.

The finite state projection represents both kinds exactly (docs/theory.md §7.14):

* **time-triggered** (`Event(time=t_e)`, SBML's `t >= t_e`): p is integrated to t_e, then the
  deterministic jump map f is applied to the law, p'(y) = Σ_{x: f(x) = y} p(x) — a permutation and
  merging of the mass in the projection J, with the mass whose image leaves J routed to the sink of
  the bound it crosses — and the integration continues from p'.  At an output time equal to t_e the
  law is the one after the jump (`inclusive=True`, `t >= t_e`) or before it (`inclusive=False`,
  `t > t_e`).  Mass that had left J before t_e sits at unknown states; when f is *constant* (every
  species assigned a number, as DSMTS's resets X := 50) its image is known, so that mass is put back
  at f's value — the leaked mass after t_e counts only what leaves afterwards.  Otherwise it stays
  in the sinks, and no moment bound covers it past t_e (the intervals are refused by name).
* **state-triggered** (`Event(trigger=...)`): SBML fires an event when its trigger goes from false to
  true.  The chain never rests in the trigger set T_e: a reaction x → x + ν with x + ν ∈ T_e is
  redirected to f_e(x + ν) (and, if that enters another event's trigger set, on to that event's image,
  at most `MAX_CASCADE` times).  So the generator is the CME's with those moves redirected; the
  states of T_e receive no mass.  An image inside its own event's trigger set would leave the trigger
  true (SBML does not fire it again), a state the CME cannot represent without the trigger's memory:
  refused, as are two events firing at once (their order is SBML-undefined).  The moment-growth
  bound of the leaked mass does not cover the jumps, so intervals need a projection that leaks
  nothing (a conservation class closed under the events, as DSMTS 00033's).

The jump maps and the redirected generator are exact integer maps; the certified bounds of
`sp_ode.networks.cme.transient` stay exact through them: merging k masses rounds each merged entry by at
most (k − 1)·u relative, which enters the componentwise rounding bound.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import scipy.sparse as sp

from sp_ode.core.memory import check_memory
from sp_ode.markov.generator import check_generator
from sp_ode.networks.network import NetworkError, ReactionNetwork
from sp_ode.networks.state_space import StateSpace

__all__ = ["Event", "EventError", "EventMaps", "MAX_CASCADE", "check_events", "event_sink_generator",
           "integrate_with_events"]

#: State-triggered events firing one after another (an image entering another trigger set) at most
MAX_CASCADE = 32
_U = 2.0**-53


class EventError(NetworkError):
    """An event the exact FSP representation cannot honour (names the event and the state)."""


def _read(value, where: str, *, condition: bool = False):
    """A sympy expression (or condition) from a number, a sympy object or a string of the expression grammar."""
    import sympy

    from sp_ode.core.expressions import parse_expression

    if isinstance(value, bool):
        raise TypeError(f"{where} must be an expression; got the bool {value!r}.")
    if isinstance(value, (int, float, np.integer, np.floating)) and not condition:
        if not math.isfinite(float(value)):
            raise ValueError(f"{where} must be finite; got {value!r}.")
        return sympy.Integer(int(value)) if float(value).is_integer() else sympy.Float(float(value))
    if isinstance(value, str):
        if not condition:
            return parse_expression(value, where=where)
        # the grammar admits a condition only inside piecewise: read it there and take it back out
        pw = parse_expression(f"piecewise(1, {value}, 0)", where=where)
        return pw.args[0].cond if isinstance(pw, sympy.Piecewise) else sympy.true if pw == 1 else sympy.false
    if condition and isinstance(value, (sympy.logic.boolalg.Boolean, sympy.core.relational.Relational)):
        return value
    if not condition and isinstance(value, sympy.Expr):
        return value
    kind = "a condition (str or sympy relational)" if condition else "an expression (str, number or sympy.Expr)"
    raise TypeError(f"{where} must be {kind}; got {type(value).__name__}.")


@dataclass(frozen=True)
class Event:
    """An assignment of copy numbers fired at a time or when a condition on the counts becomes true.

    Parameters
    ----------
    name : str
    assignments : mapping species -> expression
        The new count of each assigned species as an expression of the counts *before* the event
        (str in the expression grammar, a number, or a sympy expression; parameters and slow
        variables of the network may appear).  It must evaluate to a nonnegative integer.
        Unassigned species keep their counts.
    time : float, optional
        A time trigger: the event fires once, at `time` > 0.
    trigger : str or sympy condition, optional
        A state trigger (e.g. `"P2 > 30"`): the event fires whenever the condition goes from false to true.
    inclusive : bool
        Time trigger only: the law at an output time equal to `time` is the one after the jump
        (SBML `t >= time`; default) or before it (`t > time`).
    initial_value : bool
        State trigger only, SBML's `initialValue`: True means a trigger already true at t = 0 does not
        fire (refused then: the chain cannot start inside a trigger set), False that it fires at t = 0.

    Raises
    ------
    TypeError, ValueError
        Wrong kinds; neither or both of `time` and `trigger`; `time` not finite and > 0; no assignment.
    """

    name: str
    assignments: Mapping[str, object]
    time: float | None = None
    trigger: object = None
    inclusive: bool = True
    initial_value: bool = True

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"`name` must be a non-empty string; got {self.name!r}.")
        where = f"event {self.name!r}"
        if not isinstance(self.assignments, Mapping) or not self.assignments:
            raise ValueError(f"{where}: `assignments` must be a non-empty mapping species -> expression; "
                             f"got {self.assignments!r}.")
        exprs = {}
        for s, e in self.assignments.items():
            if not isinstance(s, str):
                raise TypeError(f"{where}: assignment keys must be species names; got {s!r}.")
            exprs[s] = _read(e, f"{where}, the assignment to {s!r}")
        object.__setattr__(self, "assignments", MappingProxyType(exprs))
        if (self.time is None) == (self.trigger is None):
            raise ValueError(f"{where}: give exactly one of `time` (a time trigger) and `trigger` (a condition); "
                             f"got time={self.time!r}, trigger={self.trigger!r}.")
        if self.time is not None:
            if isinstance(self.time, bool) or not isinstance(self.time, (int, float, np.integer, np.floating)):
                raise TypeError(f"{where}: `time` must be a real number; got {type(self.time).__name__}.")
            if not (math.isfinite(float(self.time)) and self.time > 0):
                raise ValueError(f"{where}: `time` must be finite and > 0; got {self.time!r}.")
            object.__setattr__(self, "time", float(self.time))
        else:
            object.__setattr__(self, "trigger", _read(self.trigger, f"{where}, the trigger", condition=True))
        for flag in ("inclusive", "initial_value"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{where}: `{flag}` must be a bool; got {getattr(self, flag)!r}.")


def check_events(events) -> tuple[Event, ...]:
    """`events` as a tuple of Event (one Event, or any iterable of them); TypeError naming what was seen."""
    if isinstance(events, Event):
        return (events,)
    try:
        out = tuple(events)
    except TypeError:
        raise TypeError(f"`events` must be a sequence of sp_ode.networks.events.Event; got "
                        f"{type(events).__name__}.") from None
    bad = [type(e).__name__ for e in out if not isinstance(e, Event)]
    if bad:
        raise TypeError(f"`events` must be a sequence of sp_ode.networks.events.Event; got an item of type {bad[0]}.")
    return out


class EventMaps:
    """The events of a network compiled to integer maps on copy-number vectors (module docstring).

    Parameters
    ----------
    network : ReactionNetwork
    events : sequence of Event
    y : array (d,)
        The slow variables (held fixed), validated by the caller.

    Raises
    ------
    TypeError
        `events` is not a sequence of Event.
    EventError
        Two events with one name or one time; an assignment to a name that is not a species; an
        expression using a name that is not a species, parameter or slow variable.
    """

    def __init__(self, network: ReactionNetwork, events: Sequence[Event], y: np.ndarray):
        import sympy

        events = list(check_events(events))
        names = [e.name for e in events]
        if len(set(names)) != len(names):
            raise EventError(f"`events` has two events named {next(n for n in names if names.count(n) > 1)!r}.")
        known = {*network.species, *network.slow, *network.parameters}
        args = [network.symbols[n] for n in (*network.species, *network.slow, *network.parameters)]
        self.species = network.species
        self._values = [*y.tolist(), *network.parameters.values()]
        compile_ = lambda e: sympy.lambdify(args, e.subs({x: network.symbols[str(x)] for x in e.free_symbols}),
                                            modules="numpy")
        self.events, self._assign, self._trigger, self.constant = events, [], [], []
        for ev in events:
            for s in ev.assignments:
                if s not in network.species:
                    raise EventError(f"event {ev.name!r} assigns {s!r}, which is not a species of {network.species}.",
                                     species=s)
            exprs = list(ev.assignments.values()) + ([ev.trigger] if ev.trigger is not None else [])
            for e in exprs:
                unknown = sorted(str(x) for x in e.free_symbols if str(x) not in known)
                if unknown:
                    raise EventError(f"event {ev.name!r} uses {unknown[0]!r}, which is not a species, parameter or "
                                     "slow variable of the network.", species=unknown[0])
            self._assign.append({network.species.index(s): compile_(e) for s, e in ev.assignments.items()})
            self._trigger.append(None if ev.trigger is None else compile_(ev.trigger))
            # a constant map: every species assigned an expression free of the counts
            free = {str(x) for e in ev.assignments.values() for x in e.free_symbols}
            self.constant.append(set(ev.assignments) == set(network.species) and not free & set(network.species))
        self.timed = sorted((k for k, e in enumerate(events) if e.time is not None), key=lambda k: events[k].time)
        for a, b in zip(self.timed, self.timed[1:]):
            if events[a].time == events[b].time:
                raise EventError(f"events {events[a].name!r} and {events[b].name!r} fire at the same time "
                                 f"{events[a].time:g}; their order is undefined (merge them into one event).")
        self.stated = [k for k, e in enumerate(events) if e.trigger is not None]

    # --- evaluation on states ------------------------------------------------------------------
    def _eval(self, fn: Callable, states: np.ndarray) -> np.ndarray:
        cols = [states[:, s].astype(np.float64) for s in range(states.shape[1])]
        with np.errstate(all="ignore"):
            return np.broadcast_to(np.asarray(fn(*cols, *self._values)), (states.shape[0],))

    def _fmt(self, x) -> str:
        return "{" + ", ".join(f"{s}={int(c)}" for s, c in zip(self.species, x)) + "}"

    def triggered(self, states: np.ndarray) -> np.ndarray:
        """(E_state, m) bool: which state triggers are true at the rows of `states`."""
        if not self.stated:
            return np.zeros((0, states.shape[0]), dtype=bool)
        return np.stack([self._eval(self._trigger[k], states).astype(bool) for k in self.stated])

    def assign(self, k: int, states: np.ndarray) -> np.ndarray:
        """The images (m, S) of the rows of `states` under event k's assignments (checked: integers ≥ 0)."""
        out = states.copy()
        for s, fn in self._assign[k].items():
            v = self._eval(fn, states).astype(np.float64)
            r = np.rint(v)
            bad = ~np.isfinite(v) | (np.abs(v - r) > 1e-9 * np.maximum(1.0, np.abs(v))) | (r < 0)
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise EventError(f"event {self.events[k].name!r} assigns {self.species[s]!r} = {v[i]!r} at state "
                                 f"{self._fmt(states[i])}: an event must set a count to an integer ≥ 0.",
                                 species=self.species[s])
            out[:, s] = r.astype(np.int64)
        return out

    def settle(self, states: np.ndarray, *, at_start: bool = False) -> np.ndarray:
        """The states (m, S) the chain is in once the state events that `states` trigger have fired (module docstring).

        `at_start`: `states` are initial states (a trigger true there fires only when its
        `initial_value` is False)."""
        x = np.array(states, dtype=np.int64, copy=True)
        if not self.stated or x.shape[0] == 0:
            return x
        active = np.arange(x.shape[0])
        last = np.full(x.shape[0], -1)            # the event (row of `stated`) that just fired there
        for step in range(MAX_CASCADE + 1):
            T = self.triggered(x[active])           # (E, m_active)
            has = last[active] >= 0
            if has.any():
                still = T[last[active][has], np.flatnonzero(has)]
                if still.any():
                    i = active[np.flatnonzero(has)[np.flatnonzero(still)[0]]]
                    ev = self.events[self.stated[last[i]]]
                    raise EventError(f"event {ev.name!r} maps the chain to {self._fmt(x[i])}, inside its own trigger "
                                     "set: SBML would not fire it again and the chain would rest there with the "
                                     "trigger true, which the CME's states cannot record.")
            if at_start and step == 0:
                for row, k in enumerate(self.stated):
                    if self.events[k].initial_value and T[row].any():
                        i = active[int(np.flatnonzero(T[row])[0])]
                        raise EventError(f"the initial state {self._fmt(x[i])} lies in the trigger set of event "
                                         f"{self.events[k].name!r}, whose trigger's initial value is true (it does "
                                         "not fire): the chain cannot start inside a trigger set.")
            fires = T.sum(axis=0)
            if np.any(fires > 1):
                j = int(np.flatnonzero(fires > 1)[0])
                both = [self.events[self.stated[r]].name for r in np.flatnonzero(T[:, j])]
                raise EventError(f"events {both} fire together at {self._fmt(x[active[j]])}; their order is undefined "
                                 "in SBML (merge them into one event).")
            go = fires == 1
            if not go.any():
                return x
            if step == MAX_CASCADE:
                raise EventError(f"state-triggered events still fire after {MAX_CASCADE} cascading assignments from "
                                 f"{self._fmt(states[active[np.flatnonzero(go)[0]]])} (MAX_CASCADE).")
            which = np.argmax(T, axis=0)
            last[active] = -1
            for row, k in enumerate(self.stated):
                sel = active[go & (which == row)]
                if sel.size:
                    x[sel] = self.assign(k, x[sel])
                    last[sel] = row
            active = active[go]
        return x  # pragma: no cover - the loop returns or raises

    def in_trigger_set(self, states: np.ndarray) -> np.ndarray:
        """(m,) bool: rows inside some state trigger set."""
        return self.triggered(states).any(axis=0)


# --- the FSP with events ------------------------------------------------------------------------

def _sink_of(space: StateSpace, targets: np.ndarray) -> np.ndarray:
    """For rows of `targets` outside J: the sink (species index, or S for the total bound) whose bound they cross."""
    over = targets > space.bounds
    which = np.where(over.any(axis=1), np.argmax(over, axis=1), len(space.species))
    off = ~over.any(axis=1) & (np.ones(len(targets), bool) if space.total is None else targets.sum(axis=1) <= space.total)
    if off.any():
        raise EventError(f"an event maps the chain to {dict(zip(space.species, targets[off][0].tolist()))}, off the "
                         "conservation class of the projection: the events change a conserved quantity, which a "
                         "projection on one class cannot follow.")
    return which


def event_sink_generator(network: ReactionNetwork, space: StateSpace, y: np.ndarray, weights: np.ndarray,
                         maps: EventMaps):
    """The FSP sink generator with every move into a trigger set redirected to its image (module docstring).

    Returns (Q_J: CSR of the moves inside J, exits (m, n): rate of each state into each sink, sink names,
    V_exit: the largest V_w = Σ_s w_s x_s (`weights` (S,), 0 on capped species) of a state that a move out
    of J reaches), as
    `sp_ode.networks.cme.transient`'s own.  A move whose redirected image is its source is no move (dropped);
    the states of the trigger sets, which never hold mass, have no moves.

    Raises
    ------
    PropensityError, NegativeCountError, MemoryBudgetError
        As `ReactionNetwork.generator`.
    EventError
        From the assignments (module docstring).
    """
    check_memory(network.generator_nbytes(space), what=f"the generator of {network.name!r} on {space.n} states")
    a = network.propensities(space.states, y)
    network.check_propensities(a, space, y)
    names = list(space.species) + (["total"] if space.total is not None else [])
    exits = np.zeros((len(names), space.n))
    rows, cols, vals = [], [], []
    v_exit = 0.0
    # states inside a trigger set never hold mass (every move into them is redirected): no moves from them
    occupied = ~maps.in_trigger_set(space.states)
    for r, nu in enumerate(network.stoichiometry):
        src = np.flatnonzero((a[r] > 0) & occupied) if np.any(nu != 0) else np.zeros(0, dtype=np.int64)
        target = maps.settle(space.states[src] + nu)
        inside = space.contains(target)
        dst = space.index(target[inside])
        move = src[inside] != dst
        rows.append(src[inside][move])
        cols.append(dst[move])
        vals.append(a[r, src[inside][move]])
        ex = src[~inside]
        if ex.size:
            np.add.at(exits, (_sink_of(space, target[~inside]), ex), a[r, ex])
            v_exit = max(v_exit, float((target[~inside] @ weights).max(initial=0.0)) * (1 + 1e-15))
    rows, cols, vals = (np.concatenate(v) for v in (rows, cols, vals))
    out = np.bincount(rows, weights=vals, minlength=space.n)
    diag = np.arange(space.n)
    Q = sp.csr_array((np.concatenate([vals, -out]), (np.concatenate([rows, diag]), np.concatenate([cols, diag]))),
                     shape=(space.n, space.n))
    Q.sum_duplicates()
    Q.eliminate_zeros()
    return check_generator(Q, name=f"event-redirected generator of {network.name!r}"), exits, names, v_exit


def _jump(maps: EventMaps, k: int, space: StateSpace, v: np.ndarray, sinks: np.ndarray, weights: np.ndarray):
    """Event k applied to (p_J, sinks): (p_J', sinks', largest merge multiplicity, V of an image outside J,
    whether leaked mass went to unknown states)."""
    live = np.flatnonzero(v > 0)
    images = maps.settle(maps.assign(k, space.states[live]))
    inside = space.contains(images)
    out_v, out_s = np.zeros_like(v), np.zeros_like(sinks)
    dst = space.index(images[inside])
    np.add.at(out_v, dst, v[live[inside]])
    v_far = 0.0
    if (~inside).any():
        np.add.at(out_s, _sink_of(space, images[~inside]), v[live[~inside]])
        v_far = float((images[~inside] @ weights).max()) * (1 + 1e-15)
    merged = int(np.bincount(dst).max(initial=1)) if dst.size else 1
    unknown = False
    if sinks.sum() > 0 and maps.constant[k]:
        # every path that had left J is at f's value now, wherever it was: that mass is put back there
        img = maps.settle(maps.assign(k, space.states[:1]))
        if space.contains(img)[0]:
            out_v[space.index(img)[0]] += sinks.sum()
            merged += sinks.size
        else:
            out_s[_sink_of(space, img)[0]] += sinks.sum()
            v_far = max(v_far, float(img[0] @ weights) * (1 + 1e-15))
    elif sinks.sum() > 0:
        out_s += sinks          # where that mass is now is unknown: it stays leaked
        unknown = True
    return out_v, out_s, merged, v_far, unknown


def integrate_with_events(integrate: Callable, maps: EventMaps, space: StateSpace, p0: np.ndarray, grid: np.ndarray,
                          weights: np.ndarray, n_sinks: int):
    """p_J and the sinks at the times `grid` (from grid[0] = 0) with the time events' jumps between (module docstring).

    `integrate(v0, times)` returns (P (T, n), L (T, m) from empty sinks, ℓ1 error, relative rounding, method)
    on one span (the relative part 0 for "collocation", whose error is two-sided).  Returns (P, L, err, rel, method, V of an image outside J, reason no moment bound
    covers the leak or '').
    """
    T = len(grid)
    ev = maps.events
    fired = np.array([sum(1 for k in maps.timed if ev[k].time < t or (ev[k].time == t and ev[k].inclusive))
                      for t in grid])
    P, L = np.zeros((T, space.n)), np.zeros((T, n_sinks))
    err, rel = np.zeros(T), np.zeros(T)
    methods = set()
    v, s = p0.astype(np.float64), np.zeros(n_sinks)
    if maps.stated and v.sum() > 0:           # an initial state inside a trigger set (SBML initialValue)
        live = np.flatnonzero(v > 0)
        images = maps.settle(space.states[live], at_start=True)
        moved = np.any(images != space.states[live], axis=1)
        if moved.any():
            inside = space.contains(images)
            nv = np.zeros_like(v)
            np.add.at(nv, space.index(images[inside]), v[live[inside]])
            np.add.at(s, _sink_of(space, images[~inside]), v[live[~inside]])
            v = nv
    tails, rho, v_far, why = 0.0, 0.0, 0.0, ""
    start = 0.0
    for seg in range(len(maps.timed) + 1):
        idx = np.flatnonzero(fired == seg)
        end = ev[maps.timed[seg]].time if seg < len(maps.timed) else None
        if end is not None and end > grid[-1]:
            end = None
        times = np.concatenate([[start], grid[idx], [] if end is None else [end]])
        Pk, Lk, ek, rk, method = integrate(v, times)
        methods.add(method)
        for j, i in enumerate(idx, start=1):
            P[i], L[i] = Pk[j], s + Lk[j]
            rel[i] = (1 + rho) * (1 + rk[j]) - 1
            err[i] = tails + (ek[j] - rk[j]) + rel[i]
        if end is None:
            break
        k = maps.timed[seg]
        tails += float(ek[-1] - rk[-1])
        rho = (1 + rho) * (1 + rk[-1]) - 1
        v, s, merged, far, unknown = _jump(maps, k, space, Pk[-1], s + Lk[-1], weights)
        rho = (1 + rho) * (1 + (merged - 1) * _U) - 1      # merging k nonnegative masses: (k − 1)u relative
        v_far = max(v_far, far)
        if unknown and not why:
            why = (f"event {ev[k].name!r} (t = {ev[k].time:g}) moves mass that had left the projection to states the "
                   "FSP does not know (its assignment is not a constant state); no moment bound covers it")
        start = ev[k].time
    # one collocation span makes the whole error two-sided (its jump maps are ℓ1 contractions: errors add)
    method = "uniformization" if methods == {"uniformization"} else "collocation"
    return P, L, err, rel, method, v_far, why
