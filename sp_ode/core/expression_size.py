"""The size of a sympy expression, and the limits that keep the grammar's work bounded (docs/api/core.md).

sympy evaluates as it builds: `Pow(10, 2000000001/2)` computes 10¹⁰⁰⁰⁰⁰⁰⁰⁰⁰ before it returns,
`Mul` multiplies the exact numbers among its factors, `Add` adds (so the denominators
multiply).  The node builders of `sp_ode.core.expressions` therefore size every sum, product
and power *before* they build it, with the measures of this module, and refuse what exceeds:

* `MAX_EXACT_BITS` — bits of an exact number sympy is let form.  A power b^e with an exact
  exponent e (an integer or a fraction) costs |e| · max(1, bits(b)), where bits(b) counts the
  exact numbers sympy raises: b itself when b is a number (also one in disguise, `sqrt(2)`),
  the numeric factors of a product ((2x)^e = 2^e·x^e); a symbolic base counts 1, since an
  expansion of x^e or (x + 1)^e has about |e| terms.  A product: the bits of its exact
  factors add.  A sum: max bits of the numerators + 2·Σ bits of the denominators.
* `MAX_TERMS` — operands of one sum or one product.
* `MAX_NODES` — nodes of one expression counted as a tree: a DAG that shares subexpressions
  (nested `hill` calls, SBML function definitions) counts each repetition, as every later
  traversal (`free_symbols`, `xreplace`, `lambdify`, printing) pays it.
* `MAX_TREE_DEPTH` — levels of one expression tree (sympy's printers and `lambdify` recurse
  once per level).

A float exponent or a float base forms no exact number (mpmath's float arithmetic costs the
same at any magnitude) and is not limited.  sympy is never imported here: the functions take
sympy objects and use their attributes only.
"""
from __future__ import annotations

import functools

__all__ = ["MAX_EXACT_BITS", "MAX_TERMS", "MAX_NODES", "MAX_TREE_DEPTH", "expression_nodes", "tree_depth",
           "exact_bits", "power_bits", "sum_bits", "product_bits"]

#: Bits of any exact number sympy is let form (powers, products, sums: the module docstring).
MAX_EXACT_BITS = 10_000
#: Operands of one sum or one product.
MAX_TERMS = 1_000
#: Nodes of one expression counted as a tree (shared subexpressions with their repetitions).
MAX_NODES = 100_000
#: Depth of one expression tree (what recursive traversals — printing, lambdify — descend).
MAX_TREE_DEPTH = 200


@functools.lru_cache(maxsize=1 << 16)
def expression_nodes(expr) -> int:
    """Nodes of `expr` counted as a tree: 1 + the nodes of its arguments (memoised: a DAG costs its DAG size)."""
    return 1 + sum(expression_nodes(a) for a in getattr(expr, "args", ()))


@functools.lru_cache(maxsize=1 << 16)
def tree_depth(expr) -> int:
    """Levels of `expr` as a tree: 1 + the deepest argument (memoised)."""
    return 1 + max((tree_depth(a) for a in getattr(expr, "args", ())), default=0)


def _ceil_abs(r) -> int:
    """⌈|r|⌉ of a sympy Rational, as a Python int."""
    return -(-abs(int(r.p)) // int(r.q))


@functools.lru_cache(maxsize=1 << 16)
def exact_bits(x) -> int:
    """Bits of the exact number sympy may form from the numeric part of `x` (an upper estimate).

    A Rational p/q: bits(p) + bits(q) − 1; a power with an exact exponent e: ⌈|e|⌉·bits(base);
    a float: 0; anything else: the sum over its arguments.
    """
    if getattr(x, "is_Rational", False):
        return int(x.p).bit_length() + int(x.q).bit_length() - 1
    if getattr(x, "is_Pow", False) and x.exp.is_Rational:
        return _ceil_abs(x.exp) * exact_bits(x.base) + exact_bits(x.exp)
    if getattr(x, "is_Float", False) or not getattr(x, "args", ()):
        return 0
    return sum(exact_bits(a) for a in x.args)


def power_bits(base, exponent) -> int:
    """The cost |e| · max(1, bits of what sympy raises) of base^exponent; 0 when no exact number is formed."""
    if not exponent.is_Rational or base.is_Float or base in (0, 1, -1) or abs(exponent) <= 1:
        return 0
    if base.is_number:
        raised = exact_bits(base)
    elif base.is_Mul:          # (c·x)^e = c^e·x^e: the numeric factors are raised
        raised = sum(exact_bits(a) for a in base.args if a.is_number)
    else:                      # x^e, (x + 1)^e: no number is formed now; an expansion has ~|e| terms
        raised = 0
    return _ceil_abs(exponent) * max(1, raised)


def sum_bits(numbers) -> int:
    """Bits of the exact sum of `numbers`: max bits of the numerators + 2·Σ bits of the denominators + log₂ n."""
    numbers = list(numbers)
    num = max((int(t.p).bit_length() for t in numbers if t.is_Rational), default=0)
    den = sum(int(t.q).bit_length() - 1 if t.is_Rational else exact_bits(t) for t in numbers)
    return num + 2 * den + len(numbers).bit_length()


def product_bits(numbers) -> int:
    """Bits of the exact product of `numbers`: the sum of their bits."""
    return sum(exact_bits(t) for t in numbers)
