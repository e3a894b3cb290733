"""SBML `<listOfEvents>` read into [`Event`][sp_ode.networks.events.Event]s (docs/theory.md §7.14).

A trigger is read as a **time trigger** when it is `t >= c`, `c <= t` (the law at t = c is the one
after the jump) or `t > c`, `c < t` (before it), with c a number or an expression of constant
parameters, c > 0; otherwise as a **state trigger**, a condition on the counts (through the model's
own `MathReader`, so its MathML is parsed as data like a kinetic law's).  A trigger that mixes `time`
with anything else, a `delay`, an assignment to a name that is not a state species, and a time
threshold ≤ 0 are refused by name.  Parameter values (after `parameters=` overrides) are substituted
into triggers and assignments: SBML events may only change what they assign, and assignments to
parameters are refused, so the values are constants.  A species in concentration units reads as
count / V in the math (as in the laws), and an assignment to it sets count = value·V.
Without delays, `useValuesFromTriggerTime` and `persistent` do not change the semantics; simultaneous
events are refused when they happen (`sp_ode.networks.events`), so `priority` is not needed.
"""
from __future__ import annotations

from sp_ode.core.expressions import substitute as guarded_substitute
from sp_ode.networks.events import Event

__all__ = ["read_events", "unsupported_events"]


def _time_threshold(libsbml, node):
    """(threshold AST node, inclusive) when `node` is `t >= c`, `c <= t`, `t > c` or `c < t`; else None."""
    L = libsbml
    if node is None or node.getNumChildren() != 2:
        return None
    a, b = node.getChild(0), node.getChild(1)
    is_t = lambda n: n.getType() == L.AST_NAME_TIME
    t = node.getType()
    if is_t(a) and not is_t(b) and t in (L.AST_RELATIONAL_GEQ, L.AST_RELATIONAL_GT):
        return b, t == L.AST_RELATIONAL_GEQ
    if is_t(b) and not is_t(a) and t in (L.AST_RELATIONAL_LEQ, L.AST_RELATIONAL_LT):
        return a, t == L.AST_RELATIONAL_LEQ
    return None


def _uses_time(libsbml, node) -> bool:
    if node is None:
        return False
    if node.getType() == libsbml.AST_NAME_TIME:
        return True
    return any(_uses_time(libsbml, node.getChild(i)) for i in range(node.getNumChildren()))


def unsupported_events(libsbml, model) -> list[str]:
    """The features of the model's events that `read_events` cannot honour, each named."""
    found = []
    species = {s.getId(): s for s in model.getListOfSpecies()}
    assigned = {r.getVariable() for r in model.getListOfRules()}
    for e in model.getListOfEvents():
        eid = e.getId() or "(unnamed)"
        if e.isSetDelay():
            found.append(f"delay of event {eid!r}")
        trig = e.getTrigger()
        math = None if trig is None else trig.getMath()
        if math is None:
            found.append(f"event {eid!r} without a trigger")
        elif _uses_time(libsbml, math):
            hit = _time_threshold(libsbml, math)
            if hit is None or _uses_time(libsbml, hit[0]):
                found.append(f"trigger {libsbml.formulaToL3String(math)!r} of event {eid!r} (time enters other "
                             "than as t >= c or t > c)")
        for ea in e.getListOfEventAssignments():
            var = ea.getVariable()
            s = species.get(var)
            if s is None or s.getBoundaryCondition() or s.getConstant() or var in assigned:
                found.append(f"event {eid!r} assigns {var!r}, which is not a species state of the chain")
    return found


def read_events(libsbml, model, reader, substitute: dict, params: dict, concentration: dict, *, error: type) -> list:
    """The model's events as [`Event`][sp_ode.networks.events.Event]s (module docstring).

    `substitute` maps a global symbol to its meaning (count / V, assignment rules), `params` holds the
    parameter values, `concentration` the compartment of each concentration species, `error` the
    importer's `SBMLFeatureError` (message, features).  Events with no assignment change nothing and
    are left out.

    Raises
    ------
    SBMLFeatureError
        A time threshold that is not a positive number.
    NetworkSyntaxError
        Trigger or assignment math outside what `MathReader` reads (names the event).
    """
    import sympy

    values = {sympy.Symbol(k): v for k, v in params.items()}

    def read(node, where: str):
        e = reader.expression(node, where=where, resolve=sympy.Symbol)
        # through the grammar's guarded substitution, as the kinetic laws are (a size limit names `where`)
        e = guarded_substitute(e, {k: v for k, v in substitute.items() if k in e.free_symbols}, where=where)
        return e.xreplace(values)

    out = []
    for e in model.getListOfEvents():
        eid = e.getId() or f"event{len(out)}"
        assignments = {}
        for ea in e.getListOfEventAssignments():
            var = ea.getVariable()
            value = read(ea.getMath(), f"the assignment to {var!r} of event {eid!r}")
            if var in concentration:
                value = value * params.get(concentration[var], 1.0)
            assignments[var] = value
        if not assignments:
            continue
        trig = e.getTrigger()
        math = trig.getMath()
        initial_value = trig.getInitialValue() if trig.isSetInitialValue() else True
        hit = _time_threshold(libsbml, math)
        if hit is not None:
            c = read(hit[0], f"the time threshold of event {eid!r}")
            if not c.is_number or not bool(c > 0):
                raise error(f"event {eid!r}: the time threshold {c} is not a number > 0.",
                                       [f"time threshold {c} of event {eid!r}"])
            out.append(Event(eid, assignments, time=float(c), inclusive=hit[1]))
            continue
        # a condition is admitted by the reader inside piecewise only: read piecewise(1, trigger, 0)
        pw = libsbml.ASTNode(libsbml.AST_FUNCTION_PIECEWISE)
        for child in (1, math, 0):
            if isinstance(child, int):
                leaf = libsbml.ASTNode(libsbml.AST_INTEGER)
                leaf.setValue(child)
                pw.addChild(leaf)
            else:
                pw.addChild(child.deepCopy())
        value = read(pw, f"the trigger of event {eid!r}")
        cond = value.args[0].cond if isinstance(value, sympy.Piecewise) else sympy.true if value == 1 else sympy.false
        out.append(Event(eid, assignments, trigger=cond, initial_value=bool(initial_value)))
    return out
