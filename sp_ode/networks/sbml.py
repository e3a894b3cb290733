"""Reaction networks from SBML (python-libsbml) and Antimony (the `antimony` package).

Optional: `pip install sp-ode[sbml]`.  The importer reads species, global and
kinetic-law-local parameters, compartments (as parameters holding their size), function
definitions and reactions, and builds a [`ReactionNetwork`][sp_ode.networks.network.ReactionNetwork]
for the chemical master equation on a finite state projection (docs/theory.md §7.6).

**Files are parsed, never evaluated.**  Each kinetic law is built as a sympy tree directly
from libsbml's MathML tree (`sp_ode.networks._sbml_math`), never through a formula
string; a `<ci>` that is not an SBML identifier, or any element outside the supported
set, is refused with [`NetworkSyntaxError`][sp_ode.networks.network.NetworkSyntaxError] naming the
reaction, before anything is built (docs/theory.md §9).

**Scoping (SBML L3 §4.11.5).**  A local parameter is visible only in its own reaction's law
and shadows a global of the same id there.  In the network it is the parameter
`"<reaction>.<id>"` (the SBML test suite's notation, and no SBML id contains a dot), so
two reactions with the same local id, or a local shadowing a global, keep their own values;
`parameters=` overrides take the same names.

**Semantics** (docs/theory.md §7.11).  Each kinetic law is the reaction's extent per unit time,
taken as its *propensity* in molecule counts (the `=>` form of the string syntax), the
convention of stochastic simulators.  Where a species has `hasOnlySubstanceUnits="false"` its
symbol in a formula is a *concentration*: it is replaced by count / V, V the size of its
compartment (the compartment stays a parameter holding its size), so a law `k*X` in a
compartment of size 2 has propensity k·X/2 — the propensity scaling of BioModels-style files.
**Assignment rules** x = f(…) are substituted into every law (and into each other, in
dependency order); a species set by a rule is no state of the chain but an *observable*
(`network.observables`, its amount as an expression in the counts).  A boundary-condition
species keeps its initial amount: it is a constant of the laws (a parameter holding its amount,
or concentration where so declared) and an observable, and the reactions do not change it.
Parameters listed in `slow` become slow variables y.

**Events** (`with_events=True`; docs/theory.md §7.14) are read into
[`Event`][sp_ode.networks.events.Event]s by `sp_ode.networks._sbml_events`: triggers `t >= c` or
`t > c` (a time event) or a condition on the counts (a state event), assignments to species; without
`with_events` a model with events is refused, naming them.

**Refused, each by name:** events (without `with_events`; with it: delays, assignments to
non-species, triggers mixing time and counts), rate and algebraic rules, assignment rules to a
stoichiometry or to a species a reaction changes, constraints, initial assignments, constant
species that a reaction changes (without boundary condition), conversion factors, fast
reactions, `stoichiometryMath`, non-integer stoichiometry, a model without reactions,
reactions without a kinetic law, rules that depend on each other in a cycle, MathML the CME
cannot use (`time`, `delay`, `rateOf`; the list in `sp_ode.networks._sbml_math`), and
any SBML error the reader reports.  Nothing is silently dropped.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sp_ode.core.expressions import ExpressionSyntaxError, substitute
from sp_ode.networks._rates import NetworkSyntaxError
from sp_ode.networks._sbml_events import read_events, unsupported_events
from sp_ode.networks._sbml_math import MathReader
from sp_ode.networks.network import NetworkError, Reaction, ReactionNetwork

if TYPE_CHECKING:
    from sp_ode.networks.events import Event

__all__ = ["from_sbml", "from_antimony", "SBMLFeatureError"]


class SBMLFeatureError(NetworkError):
    """The SBML model uses a feature the CME builder cannot honour; `features` names each one."""

    def __init__(self, message: str, features: list[str]):
        super().__init__(message)
        self.features = features


def _libsbml():
    try:
        import libsbml
    except ImportError:  # pragma: no cover - the `sbml` extra is part of the test set
        raise ImportError("SBML import needs python-libsbml: pip install 'sp-ode[sbml]'.") from None
    return libsbml


def _unsupported(model) -> list[str]:
    libsbml = _libsbml()
    found = []
    changed = {ref.getSpecies() for r in model.getListOfReactions()
               for ref in (*r.getListOfReactants(), *r.getListOfProducts())}
    boundary = {s.getId() for s in model.getListOfSpecies() if s.getBoundaryCondition()}
    refs = {ref.getId() for r in model.getListOfReactions()
            for ref in (*r.getListOfReactants(), *r.getListOfProducts()) if ref.isSetId()}
    for r in model.getListOfRules():
        kind = {libsbml.SBML_ASSIGNMENT_RULE: "assignment rule", libsbml.SBML_RATE_RULE: "rate rule",
                libsbml.SBML_ALGEBRAIC_RULE: "algebraic rule"}.get(r.getTypeCode(), "rule")
        var = r.getVariable()
        if kind == "assignment rule":
            if var in refs:
                found.append(f"assignment rule for the stoichiometry {var!r}")
            elif var in changed and var not in boundary:
                found.append(f"assignment rule for {var!r}, a species that a reaction changes")
            continue                               # supported: substituted (module docstring)
        found.append(f"{kind} for {var!r}" if var else kind)
    for c in model.getListOfConstraints():
        found.append(f"constraint {libsbml.formulaToL3String(c.getMath())!r}")
    for a in model.getListOfInitialAssignments():
        found.append(f"initial assignment to {a.getSymbol()!r}")
    if model.isSetConversionFactor():
        found.append(f"model conversion factor {model.getConversionFactor()!r}")
    for s in model.getListOfSpecies():
        if not s.getBoundaryCondition() and s.getConstant() and s.getId() in changed:
            found.append(f"constant species {s.getId()!r} changed by a reaction")
        if s.isSetConversionFactor():
            found.append(f"conversion factor {s.getConversionFactor()!r} of species {s.getId()!r}")
    for r in model.getListOfReactions():
        if r.isSetFast() and r.getFast():
            found.append(f"fast reaction {r.getId()!r}")
        for ref in (*r.getListOfReactants(), *r.getListOfProducts()):
            if ref.isSetStoichiometryMath():
                found.append(f"stoichiometryMath of {ref.getSpecies()!r} in reaction {r.getId()!r}")
    return found


def from_sbml(source: str | Path, *, slow: Sequence[str] = (), parameters: Mapping[str, float] | None = None,
              name: str | None = None, with_events: bool = False,
              ) -> tuple[ReactionNetwork, dict[str, int]] | tuple[ReactionNetwork, dict[str, int], list[Event]]:
    """A [`ReactionNetwork`][sp_ode.networks.network.ReactionNetwork] from an SBML file or string.

    Parameters
    ----------
    source : str or Path
        A path to an SBML file, or the SBML document itself (a string starting with `<`).
    slow : sequence of str
        Parameters of the model to treat as slow variables y.
    parameters : mapping, optional
        Values overriding the model's: global ids, or `"<reaction>.<id>"` for a local parameter.
    name : str, optional
        Default: the model id.
    with_events : bool
        Read the model's events (`sp_ode.networks._sbml_events`: time triggers `t >= c` / `t > c`, triggers on the
        counts, assignments to species) and return them as a third item, for
        `transient_distribution(..., events=...)`.  Default False: a model with events is refused
        (an event silently dropped would change the answer).

    Returns
    -------
    network : ReactionNetwork
    initial : dict species -> int
        Initial copy numbers (rounded amounts; for `state_space(initial=...)`).
    events : list of Event
        Only with `with_events=True` ([`Event`][sp_ode.networks.events.Event]).

    Raises
    ------
    ImportError
        python-libsbml missing.
    SBMLFeatureError
        Unsupported features, each named (module docstring).
    NetworkSyntaxError
        A kinetic law or function definition outside what can be read (module docstring;
        names the reaction and the offending element); nothing is evaluated.
    NetworkError
        SBML read errors, a reaction without kinetic law or with bad stoichiometry (named),
        a species in concentration units in a compartment of size ≠ 1 (named), a slow
        variable that is not a parameter of the model, a `parameters` key that is not one.

    Warns
    -----
    NetworkWarning
        Species declared as concentrations with initial amounts whose kinetic laws look written in
        counts (GillesPy2's export): read by the SBML rules as count/V, another model when V ≠ 1.

    Examples
    --------
    A birth–death model as SBML text (here written by Antimony; a file path works the same):

    >>> import antimony, sp_ode
    >>> _ = antimony.loadAntimonyString("model bd\\n birth: -> M; k\\n death: M -> ; g*M\\n"
    ...                                 " k = 10; g = 1; M = 0\\nend")
    >>> net, initial = sp_ode.from_sbml(antimony.getSBMLString("bd"))
    >>> initial
    {'M': 0}
    >>> [str(r) for r in net.reactions]          # each kinetic law is the whole propensity (`=>`)
    ['birth: 0 => M, k', 'death: M => 0, g * M']
    >>> space = net.state_space({"M": 60})
    >>> p = sp_ode.stationary_distribution(net.generator(space))
    >>> round(float(p @ space.states[:, 0]), 9)  # Poisson(k/g): E[M] = 10
    10.0
    """
    libsbml = _libsbml()
    text = str(source)
    doc = (libsbml.readSBMLFromString(text) if text.lstrip().startswith("<")
           else libsbml.readSBMLFromFile(text))
    errors = [doc.getError(i) for i in range(doc.getNumErrors())
              if doc.getError(i).getSeverity() >= libsbml.LIBSBML_SEV_ERROR]
    if errors or doc.getModel() is None:
        msg = "; ".join(e.getMessage().strip() for e in errors[:3]) or "no model in the document"
        raise NetworkError(f"cannot read SBML: {msg}")
    model = doc.getModel()
    features = _unsupported(model)
    if not isinstance(with_events, bool):
        raise TypeError(f"`with_events` must be a bool; got {with_events!r}.")
    note = ""
    if with_events:
        features += unsupported_events(libsbml, model)
    elif model.getNumEvents():          # an event silently dropped would change the answer
        features = [f"event {e.getId() or '(unnamed)'!r}" for e in model.getListOfEvents()] + features
        note = (" (events: read them with `from_sbml(..., with_events=True)` and pass them to "
                "`transient_distribution(..., events=...)`)")
    if features:
        raise SBMLFeatureError(f"SBML model {model.getId()!r} uses features the CME builder cannot honour: "
                               + ", ".join(features) + "." + note, features)

    import sympy

    values: dict[str, float] = {}     # the global scope: compartments (their size) and parameters
    for c in model.getListOfCompartments():
        values[c.getId()] = c.getSize() if c.isSetSize() else 1.0
    rules = {r.getVariable(): r for r in model.getListOfRules()}      # assignment rules only (others refused)
    for p in model.getListOfParameters():
        if p.getId() in rules:
            continue
        if not p.isSetValue():
            raise NetworkError(f"parameter {p.getId()!r} has no value; set it in the model or pass `parameters`.")
        values[p.getId()] = p.getValue()
    initial: dict[str, int] = {}
    species, concentration, boundary, assigned = [], {}, {}, []
    for s in model.getListOfSpecies():
        sid = s.getId()
        size = values.get(s.getCompartment(), 1.0)
        if not s.getHasOnlySubstanceUnits():
            concentration[sid] = s.getCompartment()       # its symbol is count / V (module docstring)
        if sid in rules:
            assigned.append(sid)
            continue
        amount = s.getInitialAmount() if s.isSetInitialAmount() else s.getInitialConcentration() * size
        if s.getBoundaryCondition():
            boundary[sid] = float(amount) if amount == amount else 0.0
            continue
        species.append(sid)
        initial[sid] = int(round(amount)) if amount == amount else 0

    for r in model.getListOfReactions():   # L3: a speciesReference id names its (constant) stoichiometry
        for ref in (*r.getListOfReactants(), *r.getListOfProducts()):
            if ref.isSetId():
                values[ref.getId()] = ref.getStoichiometry() if ref.isSetStoichiometry() else 1.0
    if model.getNumReactions() == 0:
        raise NetworkError(f"SBML model {model.getId()!r} has no reactions: there is no chemical master equation.")
    reader = MathReader(libsbml, model.getListOfFunctionDefinitions())
    sym = sympy.Symbol
    # What a global name means in a formula: a concentration species is count / V; a boundary species
    # is a constant amount (a parameter named after it); everything else is itself.
    for sid, amount in boundary.items():
        values[sid] = amount / values.get(model.getSpecies(sid).getCompartment(), 1.0) if sid in concentration \
            else amount
    meaning = {sym(sid): sym(sid) / sym(comp) for sid, comp in concentration.items() if sid not in boundary
               and sid not in rules}
    rule_exprs = _assignment_rules(reader, rules, meaning)
    meanings = {**meaning, **{sym(v): e for v, e in rule_exprs.items()}}

    def resolve_global(name: str):
        return sym(name)

    reactions = []
    for r in model.getListOfReactions():
        rid = r.getId()
        law = r.getKineticLaw()
        if law is None or law.getMath() is None:
            raise NetworkError(f"reaction {rid!r} has no kinetic law.", reaction=rid)
        local: dict[str, sympy.Symbol] = {}   # this law's scope, seen before the global one
        for lp in list(law.getListOfLocalParameters()) + list(law.getListOfParameters()):
            if not lp.isSetValue():
                raise NetworkError(f"local parameter {lp.getId()!r} of reaction {rid!r} has no value.", reaction=rid)
            scoped = f"{rid}.{lp.getId()}"
            values[scoped] = lp.getValue()
            local[lp.getId()] = sym(scoped)
        sides = []
        for refs in (r.getListOfReactants(), r.getListOfProducts()):
            terms = []
            for ref in refs:
                if ref.getSpecies() in boundary:       # a boundary species: the reaction does not change it
                    continue
                nu = ref.getStoichiometry() if ref.isSetStoichiometry() else 1.0
                # constant="false" is harmless here: only rules, events and initial assignments (all
                # refused above) could change a stoichiometry
                if not float(nu).is_integer() or nu <= 0:
                    raise NetworkError(f"reaction {rid!r}: stoichiometry {nu!r} of {ref.getSpecies()!r} must be a "
                                       "constant positive integer for a CME.", reaction=rid, species=ref.getSpecies())
                terms.append((ref.getSpecies(), int(nu)))
            sides.append(tuple(terms))
        expr = reader.expression(law.getMath(), where=f"reaction {rid!r}", reaction=rid,
                                 resolve=lambda name, local=local: local[name] if name in local else resolve_global(name))
        # globals (not the law's own locals, which are named '<reaction>.<id>') take their meaning
        expr = _substituted(expr, meanings, f"reaction {rid!r}", rid)
        # the formula string is for messages only: the rate is `expr`, built from the MathML tree
        shown = libsbml.formulaToL3String(law.getMath())
        reactions.append(Reaction(rid, sides[0], sides[1], shown, mass_action=False, expression=expr))

    for v in slow:
        if v not in values:
            raise NetworkError(f"slow variable {v!r} is not a parameter of SBML model {model.getId()!r} "
                               f"(parameters: {tuple(values)}).", species=v)
    params = {k: float(v) for k, v in values.items() if k not in slow}
    for k, v in (parameters or {}).items():
        if k not in params:
            why = "a slow variable" if k in slow else f"not a parameter of SBML model {model.getId()!r}"
            raise NetworkError(f"`parameters` sets {k!r}, which is {why} (parameters: {tuple(params)}; a local "
                               "parameter is named '<reaction>.<id>').", species=k)
        params[k] = float(v)
    # observables: assigned species (their amount) and boundary species (a constant amount)
    observables = {}
    for sid in assigned:
        e = rule_exprs[sid]
        comp = model.getSpecies(sid).getCompartment()
        observables[sid] = e * sym(comp) if sid in concentration else e
    for sid, amount in boundary.items():
        observables[sid] = sympy.Float(amount)
    events = read_events(libsbml, model, reader, meanings, params, concentration, error=SBMLFeatureError) \
        if with_events else None
    used = {str(x) for r in reactions for x in r.expression.free_symbols}
    used |= {str(x) for e in observables.values() for x in e.free_symbols}
    params = {k: v for k, v in params.items() if k in used}
    net = ReactionNetwork(reactions, parameters=params, slow=list(slow), species=species,
                          name=name or model.getId() or "sbml", observables=observables)
    _warn_counts_read_as_concentrations(model, reader, [s for s in species if s in concentration], values)
    return (net, initial) if events is None else (net, initial, events)


def _warn_counts_read_as_concentrations(model, reader, species: list[str], values: dict) -> None:
    """Warn when concentration species look like counts: GillesPy2's export pattern (docs/theory.md §7.11).

    GillesPy2 writes each species with `hasOnlySubstanceUnits="false"` and an `initialAmount`, in a
    compartment `vol`, and its kinetic laws in counts: k·A·(A−1)/vol, k·A·B/vol, k·B, k·vol.  A law in
    concentrations is an extent per time, V·f([X]): it never divides by V.  So a law naming such species
    that divides by its compartment (any id), or is not multiplied by a compartment named `vol` (GillesPy2's
    id), is read as counts written where the SBML rules read count/V — another model when V ≠ 1.  A
    unimolecular law `k*X` elsewhere is left alone: the SBML test suite (DSMTS 001-11) means exactly that.
    """
    import warnings

    import sympy

    from sp_ode.networks.network import NetworkWarning

    suspects: dict[str, list[str]] = {}          # compartment -> its concentration species declared by amount
    for sid in species:
        s = model.getSpecies(sid)
        if s.isSetInitialAmount() and values.get(s.getCompartment(), 1.0) != 1.0:
            suspects.setdefault(s.getCompartment(), []).append(sid)
    for comp, names in suspects.items():
        V, laws = sympy.Symbol(comp), []
        for r in model.getListOfReactions():
            e = reader.expression(r.getKineticLaw().getMath(), where=f"reaction {r.getId()!r}", reaction=r.getId(),
                                  resolve=sympy.Symbol)
            if not {str(x) for x in e.free_symbols} & set(names):
                continue
            num, den = sympy.fraction(sympy.together(e))
            try:
                power = sympy.degree(num, V) - sympy.degree(den, V)
            except sympy.PolynomialError:     # V inside a function: no reading either way
                continue
            if power < 0 or (power == 0 and comp == "vol"):
                laws.append(r.getId())
        if laws:
            shown = ", ".join(repr(n) for n in names)
            warnings.warn(
                f"SBML model {model.getId() or model.getName()!r}: species {shown} are declared as concentrations "
                f"(hasOnlySubstanceUnits=\"false\") in compartment {comp!r} of size {values[comp]:g}, with initial "
                f"amounts, but the kinetic laws of {', '.join(repr(r) for r in laws[:4])} look written in counts "
                f"(divided by {comp!r}, or not multiplied by it, as GillesPy2's export writes them).  By the SBML "
                f"rules each of these species is read as count/{values[comp]:g}, so the propensities differ from the "
                "exporting simulator's.  If the laws are in counts, declare the species "
                "hasOnlySubstanceUnits=\"true\", or read the GillesPy2 model itself with sp_ode.from_gillespy2.",
                NetworkWarning, stacklevel=3)


def _substituted(expr, mapping: dict, where: str, reaction: str | None):
    """`expr` with `mapping` substituted through the grammar's guarded builders (a size limit names `where`)."""
    try:
        return substitute(expr, {k: v for k, v in mapping.items() if k in expr.free_symbols}, where=where)
    except ExpressionSyntaxError as exc:
        raise NetworkSyntaxError(str(exc), reaction=reaction, token=exc.token) from None


def _assignment_rules(reader, rules: dict, meaning: dict) -> dict:
    """{variable: sympy expression} of the assignment rules, each substituted into the others (a DAG)."""
    import sympy

    raw = {}
    for var, rule in rules.items():
        e = reader.expression(rule.getMath(), where=f"the assignment rule for {var!r}", resolve=sympy.Symbol)
        raw[var] = _substituted(e, meaning, f"the assignment rule for {var!r}", None)
    done: dict = {}

    def expand(var: str, path: tuple):
        if var in done:
            return done[var]
        if var in path:
            raise SBMLFeatureError(f"assignment rules depend on each other in a cycle: {' -> '.join(path + (var,))}.",
                                   [f"cyclic assignment rules {path + (var,)}"])
        e = raw[var]
        deps = {x: expand(str(x), path + (var,)) for x in e.free_symbols if str(x) in raw}
        done[var] = _substituted(e, deps, f"the assignment rule for {var!r}", None) if deps else e
        return done[var]

    for var in raw:
        expand(var, ())
    return done


def from_antimony(text: str, *, slow: Sequence[str] = (), parameters: Mapping[str, float] | None = None,
                  name: str | None = None, with_events: bool = False,
                  ) -> tuple[ReactionNetwork, dict[str, int]] | tuple[ReactionNetwork, dict[str, int], list[Event]]:
    """A [`ReactionNetwork`][sp_ode.networks.network.ReactionNetwork] from an Antimony model string (via its SBML); see [`from_sbml`][sp_ode.networks.sbml.from_sbml].

    Raises
    ------
    ImportError
        The `antimony` package is missing.
    NetworkError
        Antimony cannot parse the text (its message is included); everything [`from_sbml`][sp_ode.networks.sbml.from_sbml] raises.
    """
    try:
        import antimony
    except ImportError:  # pragma: no cover - the `sbml` extra is part of the test set
        raise ImportError("Antimony import needs the antimony package: pip install 'sp-ode[sbml]'.") from None
    if not isinstance(text, str):
        raise TypeError(f"`text` must be an Antimony model string; got {type(text).__name__}.")
    if not isinstance(with_events, bool):
        raise TypeError(f"`with_events` must be a bool; got {with_events!r}.")
    antimony.clearPreviousLoads()
    if antimony.loadAntimonyString(text) < 0:
        raise NetworkError(f"Antimony cannot parse the model: {antimony.getLastError().strip()}")
    sbml = antimony.getSBMLString(antimony.getMainModuleName())
    return from_sbml(sbml, slow=slow, parameters=parameters, name=name, with_events=with_events)
