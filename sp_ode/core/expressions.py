"""Rate expressions read as data: a grammar that builds sympy objects and evaluates nothing.

Every expression sp_ode reads from a user's text — reaction rates, SBML kinetic laws and
function definitions, Antimony, `sp-ode symbolic` files, numbers in a sweep config — goes
through this one grammar (docs/theory.md §9, "Inputs are parsed, never evaluated").  A
tokenizer and a recursive-descent parser build the sympy tree node by node; no text ever
reaches `eval`, `sympify` or `parse_expr`, so a model file cannot run code, and
anything outside the grammar is refused, before any sympy object is built, with an
[`ExpressionSyntaxError`][sp_ode.core.expressions.ExpressionSyntaxError] naming the offending token and its position:

    expr   := or
    or     := and ('||' and)*                    booleans: only as piecewise conditions
    and    := not ('&&' not)*
    not    := '!' not | cmp
    cmp    := sum (('<' | '<=' | '>' | '>=' | '==' | '!=') sum)?
    sum    := term (('+' | '-') term)*
    term   := unary (('*' | '/') unary)*
    unary  := ('+' | '-') unary | power
    power  := atom (('^' | '**') unary)?         right-associative: 2^3^2 = 2^9, -2^2 = -4
    atom   := NUMBER | NAME | NAME '(' expr (',' expr)* ')' | '(' expr ')'

`−`, `×`, `·` and `÷` are read as `-`, `*`, `*` and `/`.  A NAME followed by
`(` is a function of `FUNCTIONS`; any other NAME is a symbol (so species called
`E`, `S`, `I` or `exp` are never sympy's constants or functions).  The table:
`exp log ln log10 sqrt pow abs min max floor ceil sin cos tan sinh cosh tanh heaviside`
(with the aliases `Abs Min Max ceiling Heaviside`), the logical `and or not xor`,
`piecewise(v1, c1, v2, c2, …, otherwise)` (SBML's order), and two rate laws,
`michaelis_menten(S, Vmax, Km) = Vmax·S/(Km + S)` (SBO:0000029) and
`hill(S, Vmax, K, h) = Vmax·S^h/(K^h + S^h)` (SBO:0000192).  `log` is the natural
logarithm.

Limits that keep a hostile input from exhausting the machine instead, each a named constant
checked *before* sympy builds the object; every route (text, SBML MathML, substitution into a
function definition) goes through the same builders, so the guards hold for all of them (the
table is in docs/api/core.md): `MAX_NUMBER_CHARS` (a literal has at most 400 characters and
lies in the float64 range) and `MAX_DEPTH` (nesting at most 50 deep) here, and
`MAX_EXACT_BITS`, `MAX_TERMS`, `MAX_NODES`, `MAX_TREE_DEPTH` of `sp_ode.core.expression_size`
(the size of the exact numbers sympy would form — `10^(2000000001/2)`, `sqrt(2)^(10^11)`, a
product of 3000 copies of `10^2400` —, the operands of a sum or product, the nodes and depth
of the tree).  A value that is not a number is refused too: a division by zero or a pole
(`1/0`, `x/(A-A)`, `log(0)`: sympy's `zoo`, `nan`, `oo`).

sympy is imported inside the functions: `sp_ode.core` is imported by everything and must
stay light.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sp_ode.core.errors import Error
from sp_ode.core.expression_size import (
    MAX_EXACT_BITS,
    MAX_NODES,
    MAX_TERMS,
    MAX_TREE_DEPTH,
    expression_nodes,
    power_bits,
    product_bits,
    sum_bits,
    tree_depth,
)

__all__ = ["ExpressionSyntaxError", "FUNCTIONS", "parse_expression", "parse_number", "build_function",
           "build_operator", "build_number", "build_sum", "build_product", "substitute", "expression_nodes",
           "MAX_DEPTH", "MAX_NUMBER_CHARS", "MAX_EXACT_BITS", "MAX_TERMS", "MAX_NODES", "MAX_TREE_DEPTH"]

#: Nesting of parentheses, unary signs, calls and powers in one text expression.
MAX_DEPTH = 50
#: Characters of one number literal (a literal longer than this is not a rate constant).
MAX_NUMBER_CHARS = 400

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>\*\*|<=|>=|==|!=|&&|\|\||[-+*/^(),<>!−×·÷])
""", re.VERBOSE)
_UNICODE_OPS = {"−": "-", "×": "*", "·": "*", "÷": "/"}
_COMPARISONS = ("<", "<=", ">", ">=", "==", "!=")
_GRAMMAR = "names, numbers, + - * / ^, comparisons, parentheses and the functions of sp_ode.core.expressions"


class ExpressionSyntaxError(Error, ValueError):
    """Text outside the expression grammar, or an expression too large to build safely.

    Attributes
    ----------
    token : str or None
        The offending token as written (None when the text ended early).
    position : int or None
        Its 0-based character offset in `text`.
    text : str or None
        The expression read.
    """

    def __init__(self, message: str, *, token: str | None = None, position: int | None = None,
                 text: str | None = None):
        super().__init__(message)
        self.token, self.position, self.text = token, position, text


def _short(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit - 3] + "...")


def _brief(x, limit: int = 40) -> str:
    text = str(x)
    return text if len(text) <= limit else text[:limit - 3] + "..."


@dataclass(frozen=True)
class _Tok:
    kind: str      # "number", "name", "op" or "end"
    text: str
    pos: int


def _tokens(text: str, where: str) -> list[_Tok]:
    out, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            bad = text[pos]
            raise ExpressionSyntaxError(
                f"{where}: {_short(text)} has {bad!r} at position {pos}, which is not part of an expression "
                f"({_GRAMMAR}); nothing was evaluated.", token=bad, position=pos, text=text)
        kind = m.lastgroup
        if kind != "space":
            tok = m.group()
            out.append(_Tok(kind, _UNICODE_OPS.get(tok, tok), pos))
        pos = m.end()
    out.append(_Tok("end", "", len(text)))
    return out


# ---------------------------------------------------------------------------------------------
# Node builders, shared by the text parser and the SBML MathML reader (sp_ode.networks).

def _sympy():
    import sympy

    return sympy


def build_number(text: str, *, exact: bool = False, where: str = "expression", position: int | None = None,
                 source: str | None = None):
    """A sympy number from a decimal literal: Integer, Float, or (`exact`) Rational.

    Raises
    ------
    ExpressionSyntaxError
        Longer than 400 characters, or outside the float64 range.
    """
    sympy = _sympy()
    if len(text) > MAX_NUMBER_CHARS or not math.isfinite(float(text)) or (
            "e" in text.lower() and abs(int(text.lower().split("e")[1])) > 400):
        raise ExpressionSyntaxError(f"{where}: the number {_short(text, 40)} is out of range (a literal must be a "
                                    "finite float64 of at most 400 characters).", token=text, position=position,
                                    text=source)
    if text.isdigit():
        return sympy.Integer(text)
    return sympy.Rational(text) if exact else sympy.Float(text)


def _need_number(value, what: str, where: str, token: str, position: int | None, source: str | None):
    sympy = _sympy()
    if not isinstance(value, sympy.Expr):
        raise ExpressionSyntaxError(f"{where}: {what} must be a number, not a condition ({value}); conditions go "
                                    "inside piecewise(value, condition, …).", token=token, position=position,
                                    text=source)
    return value


def _need_condition(value, what: str, where: str, token: str, position: int | None, source: str | None):
    sympy = _sympy()
    from sympy.logic.boolalg import BooleanAtom, BooleanFunction

    # a Symbol is a sympy Boolean too; a condition here is a comparison, a logical combination or true/false
    if not isinstance(value, (sympy.core.relational.Relational, BooleanFunction, BooleanAtom)):
        raise ExpressionSyntaxError(f"{where}: {what} must be a condition (a comparison such as x > 2), not "
                                    f"{value}.", token=token, position=position, text=source)
    return value


def _limit(where: str, rule: str, token, position, source):
    raise ExpressionSyntaxError(f"{where}: {rule}; nothing was built.", token=token, position=position, text=source)


def _checked(value, what, where: str, token, position, source):
    """`value`, refused when it is not a number (a division by zero, a pole) or beyond `MAX_TREE_DEPTH`/`MAX_NODES`.

    `what` names the value for the message: a string, or a callable making it (printing is
    left until a refusal, and a tree too deep is never printed).
    """
    sympy = _sympy()
    bad = (sympy.zoo, sympy.nan, sympy.oo, -sympy.oo)
    # every operand was checked when it was built, so a new zoo sits at the top or among the direct arguments
    if isinstance(value, sympy.Expr) and (value in bad or any(a in bad for a in value.args)):
        what = what() if callable(what) else what
        _limit(where, f"{what} is {value}, not a number (a division by zero or a pole)", token, position, source)
    # the arguments are checked (and cached) already: the depth of a new node is one recursion away
    depth = 1 + max((tree_depth(a) for a in getattr(value, "args", ())), default=0)
    if depth > MAX_TREE_DEPTH:
        what = "the expression" if callable(what) else what
        _limit(where, f"{what} nests {depth} levels deep as a tree (> MAX_TREE_DEPTH = {MAX_TREE_DEPTH} of "
                      "sp_ode.core.expressions)", token, position, source)
    n = expression_nodes(value)
    if n > MAX_NODES:
        what = "the expression" if callable(what) else what
        _limit(where, f"{what} has {n} nodes counted as a tree (> MAX_NODES = {MAX_NODES} of "
                      "sp_ode.core.expressions)", token, position, source)
    return value


def _power(base, exponent, where: str, token: str, position: int | None, source: str | None):
    sympy = _sympy()
    # sympy evaluates b^e at once when e is exact: the integer part of a fraction too, through a
    # base that is only a number in disguise (sqrt(2)) and through a product (2*x)^e = 2^e·x^e
    bits = power_bits(base, exponent)
    if bits > MAX_EXACT_BITS:
        _limit(where, f"the exact power ({_brief(base)})^({_brief(exponent)}) costs about {bits:.3g} bits (> "
                      f"MAX_EXACT_BITS = {MAX_EXACT_BITS} of sp_ode.core.expression_size); write the exponent as "
                      "a float (e.g. 2.5) if you mean it", token, position, source)
    if exponent.is_negative and base.is_zero:
        _limit(where, f"division by zero: ({_brief(base)})^({_brief(exponent)}) divides by 0", token, position,
               source)
    return _checked(sympy.Pow(base, exponent), lambda: f"({_brief(base)})^({_brief(exponent)})", where, token,
                    position, source)


def _operands(args, kind) -> list:
    """The operands sympy will flatten into one sum or product: nested ones are opened."""
    out = []
    for a in args:
        out.extend(a.args if getattr(a, kind) else (a,))
    return out


def build_sum(terms, *, where: str = "expression", position: int | None = None, source: str | None = None):
    """The sum of `terms` (sympy numbers) in one `Add`, guarded by `MAX_TERMS`, `MAX_EXACT_BITS` and `MAX_NODES`.

    Exact numeric terms are combined by sympy: the numerators' bits grow by one per term at
    most, the denominators multiply, so the estimate is max bits(p) + 2·Σ bits(q) + log₂(#terms).

    Raises
    ------
    ExpressionSyntaxError
        A condition as a term, or a limit (module docstring), naming `where` and the limit.
    """
    sympy = _sympy()
    terms = list(terms)
    ctx = (where, "+", position, source)
    for t in terms:
        _need_number(t, "a term of a sum", *ctx)
    flat = _operands(terms, "is_Add")
    if len(flat) > MAX_TERMS:
        _limit(where, f"a sum of {len(flat)} terms (> MAX_TERMS = {MAX_TERMS} of sp_ode.core.expression_size)", *ctx[1:])
    numbers = [t for t in flat if t.is_number]
    bits = sum_bits(numbers) if numbers else 0
    if bits > MAX_EXACT_BITS:
        _limit(where, f"the exact numbers of a sum of {len(numbers)} terms would take about {bits:.3g} bits "
                      f"(> MAX_EXACT_BITS = {MAX_EXACT_BITS} of sp_ode.core.expression_size)", *ctx[1:])
    return _checked(sympy.Add(*terms), "the sum", *ctx)


def build_product(factors, *, where: str = "expression", position: int | None = None, source: str | None = None):
    """The product of `factors` (sympy numbers) in one `Mul`, guarded by `MAX_TERMS`, `MAX_EXACT_BITS` and `MAX_NODES`.

    sympy multiplies the exact numbers among the factors (and combines powers of one base), so
    the bits of those numbers add: Σ bits ≤ `MAX_EXACT_BITS`.

    Raises
    ------
    ExpressionSyntaxError
        A condition as a factor, a division by zero, or a limit, naming `where` and the limit.
    """
    sympy = _sympy()
    factors = list(factors)
    ctx = (where, "*", position, source)
    for f in factors:
        _need_number(f, "a factor of a product", *ctx)
    flat = _operands(factors, "is_Mul")
    if len(flat) > MAX_TERMS:
        _limit(where, f"a product of {len(flat)} factors (> MAX_TERMS = {MAX_TERMS} of sp_ode.core.expression_size)",
               *ctx[1:])
    bits = product_bits(f for f in flat if f.is_number)
    if bits > MAX_EXACT_BITS:
        _limit(where, f"the exact numbers of a product of {len(flat)} factors would take about {bits:.3g} bits "
                      f"(> MAX_EXACT_BITS = {MAX_EXACT_BITS} of sp_ode.core.expression_size)", *ctx[1:])
    return _checked(sympy.Mul(*factors), "the product", *ctx)


def substitute(expr, mapping: Mapping, *, where: str = "expression"):
    """`expr` with the symbols of `mapping` replaced, rebuilt bottom-up through the guarded builders.

    sympy's `xreplace`/`subs` re-evaluate every node they rebuild, so substituting an exact
    number into `10^k` would compute the power unguarded; here each rebuilt sum, product and
    power is checked as the parser checks it (module docstring), and each shared subexpression
    is rebuilt once.

    Raises
    ------
    ExpressionSyntaxError
        A limit of the module docstring or a division by zero, naming `where`.
    """
    sympy = _sympy()
    mapping = {k: v for k, v in mapping.items() if k != v}
    if not mapping:
        return expr
    done: dict = {}

    def walk(e):
        if e in done:
            return done[e]
        if e in mapping:
            out = mapping[e]
        elif not e.args:
            out = e
        else:
            args = [walk(a) for a in e.args]
            if all(a is b for a, b in zip(args, e.args)):
                out = e
            elif e.is_Add:
                out = build_sum(args, where=where)
            elif e.is_Mul:
                out = build_product(args, where=where)
            elif e.is_Pow:
                out = _power(args[0], args[1], where, "^", None, None)
            elif isinstance(e, sympy.Piecewise):
                out = sympy.Piecewise(*args)
            else:
                out = _checked(e.func(*args), lambda: f"{e.func.__name__}({', '.join(_brief(a, 20) for a in args)})",
                           where, None, None, None)
        done[e] = out
        return out

    return _checked(walk(expr), "the substituted expression", where, None, None, None)


def build_operator(op: str, left, right=None, *, where: str = "expression", position: int | None = None,
                   source: str | None = None):
    """`left op right` (or the unary `op left` when `right` is None) as a sympy object.

    `op` is one of `+ - * / ^` (`**`), a comparison `< <= > >= == !=`, or `&& || !`.

    Raises
    ------
    ExpressionSyntaxError
        A condition where a number belongs or the reverse; an exact power too large to build.
    """
    sympy = _sympy()
    ctx = (where, op, position, source)
    if op in ("&&", "||", "!"):
        args = [_need_condition(a, f"the operand of {op!r}", *ctx) for a in (left, right) if a is not None]
        return {"&&": sympy.And, "||": sympy.Or, "!": sympy.Not}[op](*args)
    args = [_need_number(a, f"the operand of {op!r}", *ctx) for a in (left, right) if a is not None]
    if len(args) == 1:
        if op not in "+-":
            raise ExpressionSyntaxError(f"{where}: {op!r} needs two operands.", token=op, position=position,
                                        text=source)
        return build_product([sympy.Integer(-1), args[0]], where=where, position=position, source=source) \
            if op == "-" else args[0]
    a, b = args
    if op in _COMPARISONS:
        return {"<": sympy.Lt, "<=": sympy.Le, ">": sympy.Gt, ">=": sympy.Ge, "==": sympy.Eq, "!=": sympy.Ne}[op](a, b)
    if op in ("^", "**"):
        return _power(a, b, *ctx)
    kw = {"where": where, "position": position, "source": source}
    if op == "+":
        return build_sum([a, b], **kw)
    if op == "-":
        return build_sum([a, build_product([sympy.Integer(-1), b], **kw)], **kw)
    if op == "*":
        return build_product([a, b], **kw)
    return build_product([a, _power(b, sympy.Integer(-1), *ctx)], **kw)


def _piecewise(args, ctx):
    sympy = _sympy()
    pieces = []
    for k in range(0, len(args) - 1, 2):
        pieces.append((_need_number(args[k], f"piecewise value {k // 2 + 1}", *ctx),
                       _need_condition(args[k + 1], f"piecewise condition {k // 2 + 1}", *ctx)))
    if len(args) % 2:
        pieces.append((_need_number(args[-1], "the piecewise otherwise-value", *ctx), True))
    return sympy.Piecewise(*pieces)


def _numeric(fn: Callable) -> Callable:
    """A builder whose arguments must all be numbers."""
    def build(args, ctx):
        return fn(_sympy(), *[_need_number(a, f"argument {k + 1}", *ctx) for k, a in enumerate(args)])
    return build


def _logical(name: str) -> Callable:
    def build(args, ctx):
        sympy = _sympy()
        conds = [_need_condition(a, f"argument {k + 1}", *ctx) for k, a in enumerate(args)]
        return {"and": sympy.And, "or": sympy.Or, "not": sympy.Not, "xor": sympy.Xor}[name](*conds)
    return build


def _pow(args, ctx):
    return _power(_need_number(args[0], "argument 1", *ctx), _need_number(args[1], "argument 2", *ctx), *ctx)


def _ratio(numerator: list, denominator: list, ctx):
    """Π numerator / Σ denominator through the guarded builders."""
    sympy = _sympy()
    kw = {"where": ctx[0], "position": ctx[2], "source": ctx[3]}
    return build_product([*numerator, _power(build_sum(denominator, **kw), sympy.Integer(-1), *ctx)], **kw)


def _hill(args, ctx):
    s, vmax, k, h = (_need_number(a, f"argument {i + 1}", *ctx) for i, a in enumerate(args))
    sh = _power(s, h, *ctx)                                                    # the guarded power
    return _ratio([vmax, sh], [_power(k, h, *ctx), sh], ctx)


def _michaelis_menten(args, ctx):
    s, vmax, km = (_need_number(a, f"argument {i + 1}", *ctx) for i, a in enumerate(args))
    return _ratio([vmax, s], [km, s], ctx)


#: name -> (fewest arguments, most arguments or None for any, builder(args, ctx)).
FUNCTIONS: dict[str, tuple[int, int | None, Callable]] = {
    "exp": (1, 1, _numeric(lambda sp, x: sp.exp(x))),
    "log": (1, 1, _numeric(lambda sp, x: sp.log(x))),
    "ln": (1, 1, _numeric(lambda sp, x: sp.log(x))),
    "log10": (1, 1, _numeric(lambda sp, x: sp.log(x, 10))),
    "sqrt": (1, 1, _numeric(lambda sp, x: sp.sqrt(x))),
    "pow": (2, 2, _pow),
    "abs": (1, 1, _numeric(lambda sp, x: sp.Abs(x))),
    "min": (1, None, _numeric(lambda sp, *x: sp.Min(*x))),
    "max": (1, None, _numeric(lambda sp, *x: sp.Max(*x))),
    "floor": (1, 1, _numeric(lambda sp, x: sp.floor(x))),
    "ceil": (1, 1, _numeric(lambda sp, x: sp.ceiling(x))),
    "sin": (1, 1, _numeric(lambda sp, x: sp.sin(x))),
    "cos": (1, 1, _numeric(lambda sp, x: sp.cos(x))),
    "tan": (1, 1, _numeric(lambda sp, x: sp.tan(x))),
    "sinh": (1, 1, _numeric(lambda sp, x: sp.sinh(x))),
    "cosh": (1, 1, _numeric(lambda sp, x: sp.cosh(x))),
    "tanh": (1, 1, _numeric(lambda sp, x: sp.tanh(x))),
    "heaviside": (1, 1, _numeric(lambda sp, x: sp.Heaviside(x))),
    "piecewise": (1, None, _piecewise),
    "and": (1, None, _logical("and")),
    "or": (1, None, _logical("or")),
    "not": (1, 1, _logical("not")),
    "xor": (1, None, _logical("xor")),
    "michaelis_menten": (3, 3, _michaelis_menten),
    "hill": (4, 4, _hill),
}
for _alias, _name in (("Abs", "abs"), ("Min", "min"), ("Max", "max"), ("ceiling", "ceil"),
                      ("Heaviside", "heaviside")):
    FUNCTIONS[_alias] = FUNCTIONS[_name]
del _alias, _name


def build_function(name: str, args: list, *, where: str = "expression", position: int | None = None,
                   source: str | None = None, functions: Mapping = FUNCTIONS):
    """`name(*args)` from the table `functions` (default `FUNCTIONS`) as a sympy object.

    Raises
    ------
    ExpressionSyntaxError
        `name` is not in the table (the message lists it), or the wrong number or kind of arguments.
    """
    if name not in functions:
        raise ExpressionSyntaxError(f"{where}: {name!r} is not a known function; functions are "
                                    f"{', '.join(sorted(functions))}.", token=name, position=position, text=source)
    lo, hi, build = functions[name]
    if len(args) < lo or (hi is not None and len(args) > hi):
        want = f"{lo}" if lo == hi else f"at least {lo}" if hi is None else f"{lo} to {hi}"
        raise ExpressionSyntaxError(f"{where}: {name}() takes {want} argument(s); got {len(args)}.", token=name,
                                    position=position, text=source)
    return _checked(build(list(args), (where, name, position, source)),
                    lambda: f"{name}({', '.join(_brief(a, 20) for a in args)})", where, name, position, source)


# ---------------------------------------------------------------------------------------------
# The text parser

class _Parser:
    def __init__(self, text, where, symbol, exact, functions, constants):
        self.text, self.where, self.symbol = text, where, symbol
        self.exact, self.functions, self.constants = exact, functions, constants
        self.toks = _tokens(text, where)
        self.i = 0
        self.depth = 0

    def error(self, tok: _Tok, rule: str):
        shown = "the end of the text" if tok.kind == "end" else f"{tok.text!r} at position {tok.pos}"
        raise ExpressionSyntaxError(f"{self.where}: {_short(self.text)}: {rule}; found {shown}.",
                                    token=tok.text or None, position=tok.pos, text=self.text)

    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def take(self, *ops: str) -> _Tok | None:
        t = self.tok
        if t.kind == "op" and t.text in ops:
            self.i += 1
            return t
        return None

    def deeper(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.error(self.tok, f"nesting deeper than {MAX_DEPTH} levels")

    def build(self, op, tok, left, right=None):
        return build_operator(op, left, right, where=self.where, position=tok.pos, source=self.text)

    def parse(self):
        value = self.or_()
        if self.tok.kind != "end":
            self.error(self.tok, "expected an operator or the end of the expression")
        return value

    def or_(self):
        value = self.and_()
        while (t := self.take("||")) is not None:
            value = self.build("||", t, value, self.and_())
        return value

    def and_(self):
        value = self.not_()
        while (t := self.take("&&")) is not None:
            value = self.build("&&", t, value, self.not_())
        return value

    def not_(self):
        if (t := self.take("!")) is not None:
            self.deeper()
            value = self.build("!", t, self.not_())
            self.depth -= 1
            return value
        return self.cmp()

    def cmp(self):
        value = self.sum()
        if (t := self.take(*_COMPARISONS)) is not None:
            value = self.build(t.text, t, value, self.sum())
            if self.tok.kind == "op" and self.tok.text in _COMPARISONS:
                self.error(self.tok, "comparisons do not chain; join them with &&")
        return value

    # A sum and a product are built in one call (sympy flattens a pairwise-built chain again at
    # every step: quadratic in its length), and sized as a whole before they are built.
    def sum(self):
        first = self.tok
        terms = [self.term()]
        while (t := self.take("+", "-")) is not None:
            term = self.term()
            terms.append(term if t.text == "+" else self.build("-", t, term))
            if len(terms) > MAX_TERMS:
                self.error(t, f"a sum of more than MAX_TERMS = {MAX_TERMS} terms (sp_ode.core.expression_size)")
        if len(terms) == 1:
            return terms[0]
        return build_sum(terms, where=self.where, position=first.pos, source=self.text)

    def term(self):
        first = self.tok
        factors = [self.unary()]
        while (t := self.take("*", "/")) is not None:
            factor = self.unary()
            if t.text == "/":
                if getattr(factor, "is_zero", False):
                    self.error(t, "division by zero (the divisor is 0)")
                factor = _power(_need_number(factor, "the divisor", self.where, "/", t.pos, self.text),
                                _sympy().Integer(-1), self.where, "/", t.pos, self.text)
            factors.append(factor)
            if len(factors) > MAX_TERMS:
                self.error(t, f"a product of more than MAX_TERMS = {MAX_TERMS} factors (sp_ode.core.expression_size)")
        if len(factors) == 1:
            return factors[0]
        return build_product(factors, where=self.where, position=first.pos, source=self.text)

    def unary(self):
        if (t := self.take("+", "-")) is not None:
            self.deeper()
            value = self.build(t.text, t, self.unary())
            self.depth -= 1
            return value
        return self.power()

    def power(self):
        base = self.atom()
        if (t := self.take("^", "**")) is not None:
            self.deeper()
            value = self.build("^", t, base, self.unary())
            self.depth -= 1
            return value
        return base

    def atom(self):
        t = self.tok
        if t.kind == "number":
            self.i += 1
            return build_number(t.text, exact=self.exact, where=self.where, position=t.pos, source=self.text)
        if t.kind == "name":
            self.i += 1
            if self.take("("):
                self.deeper()
                args = [] if self.tok.kind == "op" and self.tok.text == ")" else [self.or_()]
                while self.take(","):
                    args.append(self.or_())
                if not self.take(")"):
                    self.error(self.tok, f"expected ',' or ')' in the arguments of {t.text}()")
                self.depth -= 1
                return build_function(t.text, args, where=self.where, position=t.pos, source=self.text,
                                      functions=self.functions)
            if t.text in self.constants:
                return self.constants[t.text]
            return self.symbol(t.text)
        if self.take("("):
            self.deeper()
            value = self.or_()
            if not self.take(")"):
                self.error(self.tok, "expected ')'")
            self.depth -= 1
            return value
        self.error(t, "expected a number, a name or '('")


def parse_expression(text: str, *, where: str = "expression", symbol: Callable[[str], object] | None = None,
                     exact: bool = False, functions: Mapping = FUNCTIONS, constants: Mapping | None = None):
    """The sympy expression of `text` under the grammar of this module's docstring; nothing is evaluated.

    Parameters
    ----------
    text : str
    where : str
        What is being read, for messages (`"reaction 'R1'"`, `"rates.txt, line 3"`).
    symbol : callable name -> sympy.Symbol, optional
        Makes the symbol of a NAME (default `sympy.Symbol(name)`); it may raise to refuse a name.
    exact : bool
        Decimal literals as exact Rationals (`0.5` -> 1/2) instead of Floats.
    functions : mapping, optional
        The function table (default `FUNCTIONS`).
    constants : mapping name -> sympy object, optional
        Names read as constants instead of symbols (e.g. `{"pi": sympy.pi}`).

    Returns
    -------
    sympy.Expr

    Raises
    ------
    TypeError
        `text` is not a string.
    ExpressionSyntaxError
        A character or token outside the grammar, an unknown function, a condition outside
        piecewise, or a size limit (module docstring); the message names the token and position.
    """
    if not isinstance(text, str):
        raise TypeError(f"{where}: an expression must be a string; got {type(text).__name__}.")
    sympy = _sympy()
    if not text.strip():
        raise ExpressionSyntaxError(f"{where}: the expression is empty.", text=text)
    parser = _Parser(text, where, symbol or sympy.Symbol, exact, functions, dict(constants or {}))
    value = parser.parse()
    if not isinstance(value, sympy.Expr):
        raise ExpressionSyntaxError(f"{where}: {_short(text)} is a condition, not a number; use it inside "
                                    "piecewise(value, condition, …).", text=text)
    return value


def parse_number(text, *, where: str = "value") -> float:
    """A float from a number or a closed arithmetic expression (`"1/4096"`, `"2^-12"`, `"exp(-3)"`).

    Names are refused: the expression must not depend on anything.

    Raises
    ------
    ExpressionSyntaxError
        Outside the grammar, a name, or not a finite real number.
    """
    if not isinstance(text, str):
        raise TypeError(f"{where}: expected a number or a string; got {type(text).__name__}.")

    def refuse(name):
        pos = text.find(name)
        raise ExpressionSyntaxError(f"{where}: {_short(text)} uses the name {name!r} (position {pos}); a number "
                                    "may use digits, + - * / ^, parentheses and functions only.", token=name,
                                    position=pos, text=text)

    expr = parse_expression(text, where=where, symbol=refuse)
    try:
        value = complex(expr.evalf())
    except (TypeError, ValueError, OverflowError):   # zoo, nan, or an exact value beyond float64
        value = complex(math.nan)
    if value.imag != 0 or not math.isfinite(value.real):
        raise ExpressionSyntaxError(f"{where}: {_short(text)} is not a finite real number ({value}).", text=text)
    return value.real
