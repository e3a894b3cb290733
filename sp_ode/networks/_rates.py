"""Parse the plain-text reaction syntax of :class:`sp_ode.networks.network.ReactionNetwork`.

One reaction per ``;`` or line, optionally named::

    [name:] LHS -> RHS, rate      mass action: propensity = rate · Π_s C(x_s, ν_s)
    [name:] LHS => RHS, rate      rate is the whole propensity (any expression in counts)

LHS and RHS are ``0`` / ``∅`` / empty, or ``2 A + B`` (also ``2A``, ``2*A``).  The
rate is a sympy expression in species counts, parameters and slow variables
(``^`` means power).  Every identifier becomes a plain sympy Symbol, so species
named ``E``, ``S``, ``I`` or ``N`` are never taken for sympy's constants.
The propensity conventions are those of docs/theory.md §7.6 (the CME on the
lattice of copy numbers).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Reaction", "NetworkSyntaxError", "parse_reactions", "parse_rate"]

# Functions allowed in rate expressions; every other identifier is a symbol.
_FUNCTIONS = ("exp", "log", "sqrt", "Abs", "Min", "Max", "tanh", "sin", "cos", "Piecewise", "Heaviside",
              "floor", "ceiling")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
_TERM = re.compile(r"^\s*(?:(\d+)\s*\*?\s*)?([A-Za-z_][A-Za-z_0-9]*)\s*$")
_EMPTY = {"", "0", "∅", "Ø", "null", "NULL"}


class NetworkSyntaxError(ValueError):
    """A reaction string that cannot be parsed; the message names the reaction and the rule broken."""


@dataclass(frozen=True)
class Reaction:
    """One reaction: ``reactants -> products`` with a rate.

    Attributes
    ----------
    name : str
        Label used in error messages (``R1``, ``R2``, … unless given).
    reactants, products : tuple of (species, count)
        Stoichiometric coefficients (positive integers), species in order of appearance.
    rate : str
        The rate expression as written.
    mass_action : bool
        True for ``->`` (propensity = rate · Π_s C(x_s, ν_s)), False for ``=>``
        (rate is the propensity).
    """

    name: str
    reactants: tuple[tuple[str, int], ...]
    products: tuple[tuple[str, int], ...]
    rate: str
    mass_action: bool = True

    def __str__(self) -> str:
        side = lambda terms: " + ".join(f"{c} {s}" if c != 1 else s for s, c in terms) or "0"
        arrow = "->" if self.mass_action else "=>"
        return f"{self.name}: {side(self.reactants)} {arrow} {side(self.products)}, {self.rate}"


def _side(text: str, reaction: str) -> tuple[tuple[str, int], ...]:
    text = text.strip()
    if text in _EMPTY:
        return ()
    counts: dict[str, int] = {}
    for term in text.split("+"):
        m = _TERM.match(term)
        if m is None:
            raise NetworkSyntaxError(f"reaction {reaction!r}: cannot read the term {term.strip()!r} in {text!r}; "
                                     "write terms as `2 A`, `2*A` or `A`, joined by `+`.")
        coeff = int(m.group(1)) if m.group(1) else 1
        if coeff == 0:
            raise NetworkSyntaxError(f"reaction {reaction!r}: coefficient 0 for {m.group(2)!r}; drop the term.")
        counts[m.group(2)] = counts.get(m.group(2), 0) + coeff
    return tuple(counts.items())


def parse_reactions(text: str) -> list[Reaction]:
    """Split `text` into :class:`Reaction` objects (syntax in the module docstring).

    Raises
    ------
    TypeError
        `text` is not a string.
    NetworkSyntaxError
        A reaction without an arrow or rate, or an unreadable term; names the reaction.
    """
    if not isinstance(text, str):
        raise TypeError(f"`reactions` must be a string or a sequence of Reaction; got {type(text).__name__}.")
    out: list[Reaction] = []
    chunks = [c.strip() for c in re.split(r"[;\n]", text)]
    for chunk in chunks:
        if not chunk or chunk.startswith("#"):
            continue
        label = f"R{len(out) + 1}"
        name_match = re.match(r"^([A-Za-z_][A-Za-z_0-9]*)\s*:(?!=)", chunk)
        if name_match:
            label = name_match.group(1)
            chunk = chunk[name_match.end():].strip()
        if "->" in chunk:
            arrow, mass_action = "->", True
        elif "=>" in chunk:
            arrow, mass_action = "=>", False
        else:
            raise NetworkSyntaxError(f"reaction {label!r} ({chunk!r}) has no arrow; write `A -> B, rate` "
                                     "(mass action) or `A => B, propensity`.")
        lhs, rest = chunk.split(arrow, 1)
        if "," not in rest:
            raise NetworkSyntaxError(f"reaction {label!r} ({chunk!r}) has no rate; write `{lhs.strip()} {arrow} "
                                     f"{rest.strip()}, k`.")
        rhs, rate = rest.split(",", 1)
        if not rate.strip():
            raise NetworkSyntaxError(f"reaction {label!r} ({chunk!r}) has an empty rate.")
        if any(r.name == label for r in out):
            raise NetworkSyntaxError(f"reaction name {label!r} is used twice.")
        out.append(Reaction(label, _side(lhs, label), _side(rhs, label), rate.strip(), mass_action))
    if not out:
        raise NetworkSyntaxError("`reactions` contains no reaction; write e.g. `0 -> M, k; M -> 0, g`.")
    return out


def parse_rate(rate: str, where: str):
    """A sympy expression for `rate`, every identifier a plain Symbol (functions in ``_FUNCTIONS`` excepted).

    Raises
    ------
    NetworkSyntaxError
        The expression does not parse; the message names `where` (the reaction).
    """
    import sympy
    from sympy.parsing.sympy_parser import convert_xor, parse_expr, standard_transformations

    names = {m.group(0) for m in _IDENT.finditer(rate)}
    local = {name: sympy.Symbol(name) for name in names if name not in _FUNCTIONS}
    local.update({name: getattr(sympy, name) for name in names if name in _FUNCTIONS})
    local.update({name: fn for name, fn in (("ln", sympy.log), ("pow", sympy.Pow)) if name in names})  # SBML L3
    try:
        expr = parse_expr(rate, local_dict=local, global_dict={"Integer": sympy.Integer, "Float": sympy.Float,
                                                                 "Rational": sympy.Rational, "Symbol": sympy.Symbol},
                          transformations=standard_transformations + (convert_xor,))
    except Exception as exc:  # sympy raises SyntaxError, TypeError, TokenError …
        raise NetworkSyntaxError(f"{where}: cannot parse the rate {rate!r} ({type(exc).__name__}: {exc}).") from None
    if not isinstance(expr, sympy.Expr):
        raise NetworkSyntaxError(f"{where}: the rate {rate!r} is not a numeric expression.")
    return expr
