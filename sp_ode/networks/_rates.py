"""Parse the plain-text reaction syntax of [`sp_ode.networks.network.ReactionNetwork`][sp_ode.networks.network.ReactionNetwork].

One reaction per `;` or line, optionally named:

    [name:] LHS -> RHS, rate      mass action: propensity = rate · Π_s C(x_s, ν_s)
    [name:] LHS => RHS, rate      rate is the whole propensity (any expression in counts)

LHS and RHS are `0` / `∅` / empty, or `2 A + B` (also `2A`, `2*A`).  The
rate is an expression in species counts, parameters and slow variables, read by
the grammar of `sp_ode.core.expressions` (`^` means power; a fixed table
of functions; nothing is evaluated, docs/theory.md §9).  Every other identifier
becomes a plain sympy Symbol, so species named `E`, `S`, `I` or `N` are
never taken for sympy's constants.  The propensity conventions are those of
docs/theory.md §7.6 (the CME on the lattice of copy numbers).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from sp_ode.core.expressions import ExpressionSyntaxError, parse_expression

__all__ = ["Reaction", "NetworkSyntaxError", "parse_reactions", "parse_rate", "check_rate_numbers"]

_TERM = re.compile(r"^\s*(?:(\d+)\s*\*?\s*)?([A-Za-z_][A-Za-z_0-9]*)\s*$")
_EMPTY = {"", "0", "∅", "Ø", "null", "NULL"}


class NetworkSyntaxError(ExpressionSyntaxError):
    """A reaction string or rate that cannot be parsed; the message names the reaction and the rule broken.

    `token` and `position` locate the offending token in a rate (None for the reaction
    syntax around it); `reaction` names the reaction (or None).
    """

    def __init__(self, message: str, *, reaction: str | None = None, **where):
        super().__init__(message, **where)
        self.reaction = reaction


@dataclass(frozen=True)
class Reaction:
    """One reaction: `reactants -> products` with a rate.

    Attributes
    ----------
    name : str
        Label used in error messages (`R1`, `R2`, … unless given).
    reactants, products : tuple of (species, count)
        Stoichiometric coefficients (positive integers), species in order of appearance.
    rate : str
        The rate expression as written.
    mass_action : bool
        True for `->` (propensity = rate · Π_s C(x_s, ν_s)), False for `=>`
        (rate is the propensity).
    expression : sympy.Expr or None
        The rate already built as a sympy tree (the SBML reader builds it from MathML);
        None: it is read from `rate` by the grammar.  `rate` is then for display only.
    """

    name: str
    reactants: tuple[tuple[str, int], ...]
    products: tuple[tuple[str, int], ...]
    rate: str
    mass_action: bool = True
    expression: object = field(default=None, compare=False, repr=False)

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
                                     "write terms as `2 A`, `2*A` or `A`, joined by `+`.", reaction=reaction)
        coeff = int(m.group(1)) if m.group(1) else 1
        if coeff == 0:
            raise NetworkSyntaxError(f"reaction {reaction!r}: coefficient 0 for {m.group(2)!r}; drop the term.",
                                     reaction=reaction)
        counts[m.group(2)] = counts.get(m.group(2), 0) + coeff
    return tuple(counts.items())


def parse_reactions(text: str) -> list[Reaction]:
    """Split `text` into [`Reaction`][sp_ode.networks.network.Reaction] objects (syntax in the module docstring).

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
                                     "(mass action) or `A => B, propensity`.", reaction=label)
        lhs, rest = chunk.split(arrow, 1)
        if "," not in rest:
            raise NetworkSyntaxError(f"reaction {label!r} ({chunk!r}) has no rate; write `{lhs.strip()} {arrow} "
                                     f"{rest.strip()}, k`.", reaction=label)
        rhs, rate = rest.split(",", 1)
        if not rate.strip():
            raise NetworkSyntaxError(f"reaction {label!r} ({chunk!r}) has an empty rate.", reaction=label)
        if any(r.name == label for r in out):
            raise NetworkSyntaxError(f"reaction name {label!r} is used twice.", reaction=label)
        out.append(Reaction(label, _side(lhs, label), _side(rhs, label), rate.strip(), mass_action))
    if not out:
        raise NetworkSyntaxError("`reactions` contains no reaction; write e.g. `0 -> M, k; M -> 0, g`.")
    return out


def parse_rate(rate: str, where: str, *, reaction: str | None = None):
    """The sympy expression of `rate` under the grammar of `sp_ode.core.expressions`.

    Every NAME not followed by `(` is a plain Symbol; nothing is evaluated.

    Raises
    ------
    NetworkSyntaxError
        The rate is outside the grammar; the message names `where` (the reaction) and the
        offending token, which `token` and `position` hold.
    """
    try:
        return parse_expression(rate, where=f"{where}: cannot parse the rate")
    except ExpressionSyntaxError as exc:
        raise NetworkSyntaxError(str(exc), reaction=reaction, token=exc.token, position=exc.position,
                                 text=exc.text) from None


def check_rate_numbers(rate, reaction: Reaction) -> None:
    """Refuse a rate holding a division by zero or an exact number beyond float64, naming the reaction.

    The grammar refuses both as it builds (`sp_ode.core.expressions`); a rate given as a sympy
    object (`Reaction.expression`) is checked here, so that neither surfaces later as an untyped
    `KeyError`/`OverflowError` from lambdify.
    """
    import sympy

    if rate.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise NetworkSyntaxError(f"reaction {reaction.name!r} ({reaction}): the rate {rate} divides by zero or has a "
                                 "pole; it is not a number.", reaction=reaction.name)
    for number in rate.atoms(sympy.Rational):
        if max(abs(int(number.p)), int(number.q)) > 2**1023:
            raise NetworkSyntaxError(f"reaction {reaction.name!r} ({reaction}): the exact number in its rate is "
                                     f"beyond the float64 range (about 10^{max(len(str(abs(number.p))), len(str(number.q))) - 1}); propensities "
                                     "are computed in float64.", reaction=reaction.name)
