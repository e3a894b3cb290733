"""Reaction networks from GillesPy2 models, with GillesPy2's own propensities (docs/theory.md §7.11).

Optional: `pip install 'sp-ode[gillespy2]'`.  A `gillespy2.Model` holds species with initial
counts, parameters, a volume `vol` and reactions, each either *mass action* (a rate constant
k) or *customized* (a `propensity_function` string).  GillesPy2's stochastic mass action is
not the combinatorial convention of sp_ode's `->` (Gillespie 1977, a = c·Π_s C(x_s, ν_s)):

| reaction        | GillesPy2's propensity | sp_ode's `->` with constant c |
| --------------- | ---------------------- | ----------------------------- |
| 0 → A           | k·vol                  | c                             |
| A → …           | k·A                    | c·A                           |
| A + B → …       | k·A·B / vol            | c·A·B                         |
| 2 A → …         | k·A·(A − 1) / vol      | c·A·(A − 1) / 2               |

so a hand transcription `2 A -> B, k` of GillesPy2's dimerisation halves that propensity.
This reader never re-derives the convention: the propensity of every reaction is the
string GillesPy2 itself built and evaluates in its SSA (`Reaction.propensity_function`, e.g.
`((k*A)*(A-1))/vol`), read by sp_ode's grammar (`sp_ode.core.expressions`, nothing is
evaluated), with `vol` a parameter holding the model's volume.  A mass-action reaction is
kept in sp_ode's mass-action form with the constant c = k·Π_s ν_s!·vol^(1 − Σ_s ν_s) only
after checking symbolically that c·Π_s C(x_s, ν_s) *is* GillesPy2's string; otherwise (and for
every customized reaction) the string is the whole propensity (`=>`).  The network's
`summary()` prints each propensity as a formula in counts and names the convention.

**Refused, each by name** ([`GillesPy2FeatureError`][sp_ode.networks.gillespy2.GillesPy2FeatureError]): events, rate and assignment
rules, function definitions, a model in concentration units, continuous species (the CME
lives on counts), species that may go negative, and the TauHybridSolver's `constant` and
`boundary_condition` species.  Nothing is silently dropped.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sp_ode.networks._rates import parse_rate
from sp_ode.networks.network import NetworkError, Reaction, ReactionNetwork

if TYPE_CHECKING:
    import gillespy2

__all__ = ["from_gillespy2", "GillesPy2FeatureError", "GILLESPY2_CONVENTION"]

#: The sentence `ReactionNetwork.summary()` prints for a network read from GillesPy2.
GILLESPY2_CONVENTION = ("GillesPy2's (volume vol = {vol:g}): mass action k·vol for 0 -> …, k·A for A -> …, "
                        "k·A·B/vol for A + B -> …, k·A·(A-1)/vol for 2 A -> … (no 1/2, unlike Gillespie 1977 and "
                        "sp_ode's `->`); customized propensity_function strings as written")


class GillesPy2FeatureError(NetworkError):
    """The GillesPy2 model uses a feature the CME builder cannot honour; `features` names each one."""

    def __init__(self, message: str, features: list[str]):
        super().__init__(message)
        self.features = features


def _gillespy2():
    try:
        import gillespy2
    except ImportError:
        raise ImportError("reading a GillesPy2 model needs the gillespy2 package: pip install 'sp-ode[gillespy2]'.",
                          name="gillespy2") from None
    return gillespy2


def _name(obj) -> str:
    """A species or parameter given as an object (`.name`) or by name."""
    return obj if isinstance(obj, str) else str(obj.name)


def _unsupported(model) -> list[str]:
    found = []
    for kind, items in (("event", "listOfEvents"), ("rate rule", "listOfRateRules"),
                        ("assignment rule", "listOfAssignmentRules"),
                        ("function definition", "listOfFunctionDefinitions")):
        found += [f"{kind} {name!r}" for name in getattr(model, items, {})]
    if getattr(model, "units", "population") != "population":
        found.append(f"units {model.units!r} (the CME needs population counts)")
    for sname, s in model.listOfSpecies.items():
        if s.mode == "continuous":
            found.append(f"continuous species {sname!r}")
        if s.allow_negative_populations:
            found.append(f"species {sname!r} with allow_negative_populations=True")
        if s.constant:
            found.append(f"constant species {sname!r} (TauHybridSolver only)")
        if s.boundary_condition:
            found.append(f"boundary-condition species {sname!r} (TauHybridSolver only)")
    return found


def _mass_action_constant(reaction, reactants: tuple[tuple[str, int], ...], propensity, symbols: dict):
    """c with c·Π_s C(x_s, ν_s) equal to GillesPy2's own mass-action string `propensity`, or None."""
    import sympy

    rate = reaction.marate
    k = parse_rate(_name(rate) if not isinstance(rate, (int, float)) else repr(float(rate)),
                   f"reaction {reaction.name!r}", reaction=reaction.name)
    k = k.xreplace({s: symbols.get(str(s), s) for s in k.free_symbols})
    order = sum(nu for _, nu in reactants)
    c = k * math.prod(math.factorial(nu) for _, nu in reactants) * symbols["vol"] ** (1 - order)
    ours = c * sympy.Mul(*[sympy.Mul(*[symbols[s] - j for j in range(nu)]) / sympy.factorial(nu)
                           for s, nu in reactants])
    return c if sympy.expand(ours - propensity) == 0 else None


def from_gillespy2(model: gillespy2.Model, *, slow: Sequence[str] = (), parameters: Mapping[str, float] | None = None,
                   name: str | None = None) -> tuple[ReactionNetwork, dict[str, int]]:
    """A [`ReactionNetwork`][sp_ode.networks.network.ReactionNetwork] with exactly the propensities of a `gillespy2.Model`.

    Each reaction's propensity a_r(x) in copy numbers x is GillesPy2's own (module docstring):
    for mass action k·vol, k·A, k·A·B/vol and k·A·(A − 1)/vol for 0 →, A →, A + B → and 2 A →,
    with vol the model's volume (a parameter `"vol"` of the network); a customized reaction's
    `propensity_function` as written.  So the chemical master equation of the network is the
    one GillesPy2's SSA samples.

    Parameters
    ----------
    model : gillespy2.Model
        A population model: species with integer initial values, parameters, reactions.
    slow : sequence of str
        Parameters of the model to treat as slow variables y.
    parameters : mapping, optional
        Values overriding the model's (its parameter names, or `"vol"`).
    name : str, optional
        Default: the model's name.

    Returns
    -------
    network : ReactionNetwork
        Its `summary()` prints every propensity in counts and names GillesPy2's convention.
    initial : dict species -> int
        The initial copy numbers (for `state_space(initial=...)`, `transient_distribution`).

    Raises
    ------
    ImportError
        gillespy2 is not installed (the message names the extra `sp-ode[gillespy2]`).
    TypeError
        `model` is not a `gillespy2.Model`.
    GillesPy2FeatureError
        Features the CME builder cannot honour, each named (module docstring).
    NetworkSyntaxError
        A propensity string outside sp_ode's expression grammar (names the reaction and token).
    NetworkError
        GillesPy2 cannot resolve the model (its message is included); a slow variable or a
        `parameters` key that is not a parameter of the model.

    Examples
    --------
    GillesPy2's dimerisation 2 A → B at volume 300 has propensity k·A·(A − 1)/vol:

    >>> import gillespy2, sp_ode
    >>> model = gillespy2.Model(name="dimer", volume=300)
    >>> _ = model.add_parameter([gillespy2.Parameter(name="k", expression=0.6),
    ...                          gillespy2.Parameter(name="kd", expression=1.0)])
    >>> _ = model.add_species([gillespy2.Species(name="A", initial_value=30),
    ...                        gillespy2.Species(name="B", initial_value=0)])
    >>> _ = model.add_reaction([gillespy2.Reaction(name="dim", reactants={"A": 2}, products={"B": 1}, rate="k"),
    ...                         gillespy2.Reaction(name="split", reactants={"B": 1}, products={"A": 2}, rate="kd")])
    >>> net, initial = sp_ode.from_gillespy2(model)
    >>> initial
    {'A': 30, 'B': 0}
    >>> net.propensities([[30, 0]])[:, 0]          # 0.6·30·29/300 and 1.0·0
    array([1.74, 0.  ])
    """
    gillespy2 = _gillespy2()
    if not isinstance(model, gillespy2.Model):
        raise TypeError(f"`model` must be a gillespy2.Model; got {type(model).__name__}.")
    import sympy

    features = _unsupported(model)
    if features:
        raise GillesPy2FeatureError(f"GillesPy2 model {model.name!r} uses features the CME builder cannot honour: "
                                    + ", ".join(features) + ".", features)
    try:
        model.compile_prep()            # GillesPy2 evaluates parameter expressions and resolves the reactions
    except Exception as exc:            # GillesPy2 raises its own error classes (ModelError, ReactionError, …)
        raise NetworkError(f"GillesPy2 cannot resolve model {model.name!r}: {exc}") from None

    values = {"vol": float(model.volume)}
    for pname, p in model.listOfParameters.items():
        values[pname] = float(p.value)
    species = [str(s) for s in model.listOfSpecies]
    initial = {s: int(model.listOfSpecies[s].initial_value) for s in species}
    symbols = {n: sympy.Symbol(n) for n in (*species, *values)}

    reactions = []
    for rname, r in model.listOfReactions.items():
        sides = tuple(tuple((_name(s), int(nu)) for s, nu in side.items()) for side in (r.reactants, r.products))
        shown = str(r.propensity_function)       # the string GillesPy2's SSA evaluates
        where = f"reaction {rname!r} (GillesPy2 propensity {shown!r})"
        expr = parse_rate(shown, where, reaction=rname)
        expr = expr.xreplace({s: symbols.get(str(s), s) for s in expr.free_symbols})
        c = _mass_action_constant(r, sides[0], expr, symbols) if r.massaction else None
        if c is not None:
            reactions.append(Reaction(rname, sides[0], sides[1], str(c), mass_action=True, expression=c))
        else:
            reactions.append(Reaction(rname, sides[0], sides[1], shown, mass_action=False, expression=expr))

    for v in slow:
        if v not in values:
            raise NetworkError(f"slow variable {v!r} is not a parameter of GillesPy2 model {model.name!r} "
                               f"(parameters: {tuple(values)}).", species=v)
    params = {k: v for k, v in values.items() if k not in slow}
    for k, v in (parameters or {}).items():
        if k not in params:
            why = "a slow variable" if k in slow else f"not a parameter of GillesPy2 model {model.name!r}"
            raise NetworkError(f"`parameters` sets {k!r}, which is {why} (parameters: {tuple(params)}).", species=k)
        params[k] = float(v)
    convention = GILLESPY2_CONVENTION.format(vol=params.get("vol", values["vol"]))
    used = {str(x) for r in reactions for x in r.expression.free_symbols}
    params = {k: v for k, v in params.items() if k in used}
    net = ReactionNetwork(reactions, parameters=params, slow=list(slow), species=species,
                          name=name or model.name or "gillespy2", convention=convention)
    return net, initial
