"""SBML MathML to sympy, node by node: kinetic laws and function definitions read as data.

libsbml parses the MathML of a model into an `ASTNode` tree; this module walks that tree
and builds the sympy expression with the node builders of `sp_ode.core.expressions`
(the grammar every other input route uses, docs/theory.md §9).  No formula is ever turned
into text and parsed back, so whatever a `<ci>` element holds — libsbml accepts any text
there — is at most a name: one that is not an SBML identifier is refused, naming the
reaction and the text, before anything is built.

Read: numbers (`cn` of every type), names, `plus minus times divide power root exp ln
log abs floor ceiling` and the trigonometric functions, `min`/`max`, `piecewise` with
relational and logical conditions, the constants `pi`, `exponentiale`, `true`,
`false`, `avogadro`, and calls of the model's function definitions (expanded in place:
a definition's body may use only its own arguments, SBML L3 §4.3).  Each definition is
expanded once, its arguments as placeholders, and a call substitutes its arguments into that
expansion through the guarded builders (`sp_ode.core.expressions.substitute`): a chain of
definitions each calling the previous one twice costs one expansion per definition, not 2^depth,
and an expansion whose tree would exceed `sp_ode.core.expressions.MAX_NODES` is refused, naming
the reaction and the limit.  Refused by name:
`time` and `delay` (a propensity of the CME does not depend on t), `rateOf`,
`factorial`, `quotient`, `rem`, `implies`, infinities and NaN, and anything else.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping

from sp_ode.core.expressions import (
    ExpressionSyntaxError,
    build_function,
    build_number,
    build_operator,
    build_product,
    build_sum,
    substitute,
)
from sp_ode.networks._rates import NetworkSyntaxError

__all__ = ["MathReader"]

_SID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")     # SBML's SId (L3 §3.1.7)
#: MathML nesting of one formula (one level per `<apply>`).
MAX_AST_DEPTH = 200
#: Function definitions calling function definitions, this deep at most.
MAX_CALL_DEPTH = 32


def _short(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


class MathReader:
    """Converts the `ASTNode` trees of one SBML model, with its function definitions.

    Parameters
    ----------
    libsbml : module
    function_definitions : iterable of libsbml FunctionDefinition
    """

    def __init__(self, libsbml, function_definitions):
        self.libsbml = libsbml
        self.type_names = {getattr(libsbml, n): n for n in dir(libsbml)
                           if n.startswith("AST_") and isinstance(getattr(libsbml, n), int)}
        self.functions = {}
        self._expanded: dict = {}          # name -> (placeholders, body): each definition expanded once
        self._expanding: set = set()
        for fd in function_definitions:
            args = [fd.getArgument(i).getName() for i in range(fd.getNumArguments())]
            self.functions[fd.getId()] = (args, fd.getBody())
        L = libsbml
        self.unary = {L.AST_FUNCTION_EXP: "exp", L.AST_FUNCTION_LN: "ln", L.AST_FUNCTION_ABS: "abs",
                      L.AST_FUNCTION_FLOOR: "floor", L.AST_FUNCTION_CEILING: "ceil", L.AST_FUNCTION_SIN: "sin",
                      L.AST_FUNCTION_COS: "cos", L.AST_FUNCTION_TAN: "tan", L.AST_FUNCTION_SINH: "sinh",
                      L.AST_FUNCTION_COSH: "cosh", L.AST_FUNCTION_TANH: "tanh"}
        self.nary = {L.AST_FUNCTION_MAX: "max", L.AST_FUNCTION_MIN: "min", L.AST_FUNCTION_PIECEWISE: "piecewise",
                     L.AST_LOGICAL_AND: "and", L.AST_LOGICAL_OR: "or", L.AST_LOGICAL_XOR: "xor",
                     L.AST_LOGICAL_NOT: "not"}
        self.relations = {L.AST_RELATIONAL_EQ: "==", L.AST_RELATIONAL_NEQ: "!=", L.AST_RELATIONAL_GT: ">",
                          L.AST_RELATIONAL_GEQ: ">=", L.AST_RELATIONAL_LT: "<", L.AST_RELATIONAL_LEQ: "<="}
        self.refused = {L.AST_NAME_TIME: "the time symbol (a CME propensity cannot depend on t)",
                        L.AST_FUNCTION_DELAY: "delay", L.AST_FUNCTION_RATE_OF: "rateOf",
                        L.AST_FUNCTION_FACTORIAL: "factorial", L.AST_FUNCTION_QUOTIENT: "quotient",
                        L.AST_FUNCTION_REM: "rem", L.AST_LOGICAL_IMPLIES: "implies", L.AST_LAMBDA: "a lambda"}

    # --- entry point --------------------------------------------------------------------------
    def expression(self, node, *, resolve: Callable[[str], object], where: str, reaction: str | None = None):
        """The sympy expression of `node`; each name goes through `resolve` (local scope first, then global).

        Raises
        ------
        NetworkSyntaxError
            A name that is not an SBML identifier, a refused or unknown element, an unknown
            function, wrong arguments, a condition where a number belongs, or nesting too deep;
            the message names `where` and the offending element.
        """
        import sympy

        if node is None:
            raise NetworkSyntaxError(f"{where}: the kinetic law has no math.", reaction=reaction)
        self.where, self.reaction = where, reaction
        try:
            value = self._node(node, resolve, 0, 0)
        except ExpressionSyntaxError as exc:
            if isinstance(exc, NetworkSyntaxError):
                raise
            raise NetworkSyntaxError(str(exc), reaction=reaction, token=exc.token) from None
        if not isinstance(value, sympy.Expr):
            raise NetworkSyntaxError(f"{where}: the kinetic law is a condition ({value}), not a rate.",
                                     reaction=reaction)
        return value

    # --- the walk -----------------------------------------------------------------------------
    def _refuse(self, rule: str, token: str | None = None):
        raise NetworkSyntaxError(f"{self.where}: {rule}; nothing was evaluated.", reaction=self.reaction,
                                 token=token)

    def _node(self, node, resolve, depth: int, calls: int):
        import sympy

        if depth > MAX_AST_DEPTH:
            self._refuse(f"the MathML nests deeper than {MAX_AST_DEPTH} levels")
        L, t = self.libsbml, node.getType()
        where = self.where
        kids = lambda: [self._node(node.getChild(i), resolve, depth + 1, calls) for i in range(node.getNumChildren())]
        if t == L.AST_INTEGER:
            return sympy.Integer(node.getInteger())
        if t in (L.AST_REAL, L.AST_REAL_E):
            value = node.getReal()
            if not math.isfinite(value):
                self._refuse(f"the number {value} is not finite", str(value))
            return build_number(repr(float(value)), where=where)
        if t == L.AST_RATIONAL:
            return sympy.Rational(node.getNumerator(), node.getDenominator())
        if t == L.AST_CONSTANT_PI:
            return sympy.pi
        if t == L.AST_CONSTANT_E:
            return sympy.E
        if t in (L.AST_CONSTANT_TRUE, L.AST_CONSTANT_FALSE):
            return sympy.true if t == L.AST_CONSTANT_TRUE else sympy.false
        if t == L.AST_NAME_AVOGADRO:
            return build_number(repr(float(node.getReal())), where=where)
        if t == L.AST_NAME:
            name = node.getName() or ""
            if not _SID.match(name):
                self._refuse(f"a <ci> element holds {_short(name)}, which is not an SBML identifier "
                             "(letters, digits, _)", name)
            return resolve(name)
        if t in self.refused:
            self._refuse(f"the kinetic law uses {self.refused[t]}, which the CME builder does not support",
                         node.getName() or self.type_names.get(t))
        if t == L.AST_PLUS:
            return build_sum([self._number(a) for a in kids()], where=where)
        if t == L.AST_TIMES:
            return build_product([self._number(a) for a in kids()], where=where)
        if t in (L.AST_MINUS, L.AST_DIVIDE, L.AST_POWER, L.AST_FUNCTION_POWER):
            args = kids()
            op = {L.AST_MINUS: "-", L.AST_DIVIDE: "/"}.get(t, "^")
            if not (len(args) == 2 or (op == "-" and len(args) == 1)):
                self._refuse(f"<{node.getName() or op}> has {len(args)} arguments", op)
            return build_operator(op, *args, where=where)
        if t == L.AST_FUNCTION_ROOT:
            args = kids()
            if len(args) == 1:
                return build_function("sqrt", args, where=where)
            return build_operator("^", args[1], build_operator("/", sympy.Integer(1), args[0], where=where),
                                  where=where)
        if t == L.AST_FUNCTION_LOG:   # MathML <log/>: base 10 unless a <logbase> (the first child) is given
            args = kids()
            if len(args) == 1:
                return build_function("log10", args, where=where)
            base, x = args
            return build_operator("/", build_function("ln", [x], where=where),
                                  build_function("ln", [base], where=where), where=where)
        if t in self.unary:
            return build_function(self.unary[t], kids(), where=where)
        if t in self.nary:
            return build_function(self.nary[t], kids(), where=where)
        if t in self.relations:   # MathML relations are n-ary: a < b < c means a < b and b < c
            args = kids()
            if len(args) < 2:
                self._refuse(f"a relation needs two operands; got {len(args)}", self.relations[t])
            pairs = [build_operator(self.relations[t], a, b, where=where) for a, b in zip(args, args[1:])]
            return pairs[0] if len(pairs) == 1 else build_function("and", pairs, where=where)
        if t == L.AST_FUNCTION:
            return self._call(node, resolve, depth, calls)
        self._refuse(f"the MathML element {node.getName() or self.type_names.get(t, t)!r} "
                     f"({self.type_names.get(t, t)}) is not supported in a kinetic law",
                     node.getName() or self.type_names.get(t))

    def _number(self, value):
        import sympy

        if not isinstance(value, sympy.Expr):
            self._refuse(f"a condition ({value}) is used as a number; conditions belong in piecewise")
        return value

    def _call(self, node, resolve, depth: int, calls: int):
        name = node.getName() or ""
        if name not in self.functions:
            self._refuse(f"the kinetic law calls {_short(name)}, which is not a function definition of the model "
                         f"({', '.join(sorted(self.functions)) or 'none'})", name)
        params, body = self.functions[name]
        args = [self._node(node.getChild(i), resolve, depth + 1, calls) for i in range(node.getNumChildren())]
        if len(args) != len(params):
            self._refuse(f"function {name!r} takes {len(params)} argument(s); the call gives {len(args)}", name)
        placeholders, expansion = self._expansion(name, calls)
        return substitute(expansion, dict(zip(placeholders, args)), where=self.where)

    def _expansion(self, name: str, calls: int):
        """(placeholder symbols, body) of function definition `name`, expanded once and kept."""
        import sympy

        if name in self._expanded:
            return self._expanded[name]
        if name in self._expanding or calls >= MAX_CALL_DEPTH:
            self._refuse(f"function definitions call each other more than {MAX_CALL_DEPTH} deep, or in a cycle "
                         f"(MAX_CALL_DEPTH of sp_ode.networks._sbml_math; recursion is not allowed in SBML)", name)
        params, body = self.functions[name]
        if body is None:
            self._refuse(f"function definition {name!r} has no body", name)
        placeholders = [sympy.Dummy(p) for p in params]
        bound: Mapping[str, object] = dict(zip(params, placeholders))

        def inner(arg: str):
            if arg not in bound:
                self._refuse(f"the body of function {name!r} uses {arg!r}, which is not one of its arguments "
                             f"{tuple(params)} (SBML function definitions see only their arguments)", arg)
            return bound[arg]

        self._expanding.add(name)
        try:
            expansion = self._node(body, inner, 0, calls + 1)
        finally:
            self._expanding.discard(name)
        self._expanded[name] = (placeholders, expansion)
        return self._expanded[name]
