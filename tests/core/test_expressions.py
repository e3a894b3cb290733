"""sp_ode.core.expressions: the shared grammar builds the right trees and refuses everything else by token.

Expected values: arithmetic on numbers is compared with Python's own arithmetic on the
same literals (an independent evaluator); trees with symbols with sympy objects built by
hand.  Refusals name the offending token and its position.
"""
from __future__ import annotations

import math

import pytest
import sympy
from hypothesis import given, strategies as st

from sp_ode.core.expressions import (
    FUNCTIONS,
    ExpressionSyntaxError,
    parse_expression,
    parse_number,
)

x, y, K = sympy.symbols("x y K")


@pytest.mark.parametrize("text, python", [
    ("2^3^2", 2 ** 3 ** 2), ("-2^2", -2 ** 2), ("2**-1", 2 ** -1), ("1 - 2 - 3", 1 - 2 - 3),
    ("12/4/3", 12 / 4 / 3), ("-(3 + 4)*2", -(3 + 4) * 2), ("2*3^2", 2 * 3 ** 2), ("+-+5", +-+5),
    ("1.5e2 + .5", 1.5e2 + .5), ("7 − 2 × 3 ÷ 4", 7 - 2 * 3 / 4),
])
def test_precedence_and_associativity_match_python(text, python):
    assert float(parse_expression(text)) == pytest.approx(python, rel=1e-15)


def test_a_wrong_precedence_would_be_seen():
    # left-associative power would give (2^3)^2 = 64, not 512: the check above can fail
    assert float(parse_expression("2^3^2")) != (2 ** 3) ** 2


@given(st.lists(st.integers(1, 9), min_size=2, max_size=6), st.lists(st.sampled_from("+-*"), min_size=5, max_size=5))
def test_random_integer_arithmetic_matches_python(nums, ops):
    text = str(nums[0]) + "".join(f" {op} {n}" for op, n in zip(ops, nums[1:]))
    assert parse_expression(text) == eval(text, {"__builtins__": {}})  # test-only: digits and + - * only


def test_names_are_plain_symbols_and_calls_use_the_table():
    E, S, I, N, exp = sympy.symbols("E S I N exp")
    assert parse_expression("E + S*I - N") == E + S * I - N          # never sympy's E, S, I, N
    assert parse_expression("exp + exp(x)") == exp + sympy.exp(x)      # a name, and a call
    assert parse_expression("hill(x, 3, K, 2)") == 3 * x**2 / (K**2 + x**2)
    assert parse_expression("michaelis_menten(x, 3, K)") == 3 * x / (K + x)
    assert parse_expression("log(x) - ln(x)") == 0                     # log is natural
    assert parse_expression("pow(x, 2) + Max(x - 3, 0)") == x**2 + sympy.Max(x - 3, 0)


def test_piecewise_takes_sbml_order_and_conditions_stay_inside():
    pw = parse_expression("piecewise(1, x > 2 && y <= 3, 0)")
    assert pw == sympy.Piecewise((1, (x > 2) & (y <= 3)), (0, True))
    assert pw.subs({x: 3, y: 3}) == 1 and pw.subs({x: 1, y: 3}) == 0
    for text, rule in [("x > 2", "is a condition"), ("(x > 2)*3", "must be a number"),
                       ("piecewise(x > 1, 1)", "must be a number"), ("piecewise(1, x, 0)", "must be a condition"),
                       ("a < b < c", "do not chain")]:
        with pytest.raises(ExpressionSyntaxError, match=rule):
            parse_expression(text)


@pytest.mark.parametrize("text, token, position", [
    ("().__class__", ".", 2), ("k[0]", "[", 1), ("f('x')", "'", 2), ("lambda q: q", ":", 8),
    ("a; b", ";", 1), ("k @ x", "@", 2), ("2 3", "3", 2), ("x +", None, 3), ("(x", None, 2),
    ("foo(x)", "foo", 0), ("exp(x, y)", "exp", 0), ("__import__('os')", "'", 11),
])
def test_anything_outside_the_grammar_is_refused_naming_the_token(text, token, position):
    with pytest.raises(ExpressionSyntaxError) as exc:
        parse_expression(text, where="reaction 'R1'")
    assert exc.value.token == token and exc.value.position == position
    assert str(exc.value).startswith("reaction 'R1':")


@pytest.mark.parametrize("text, rule", [
    ("10^10^10", "exact power"), ("hill(10, 1, 2, 10^9)", "exact power"), ("pow(7, 10^8)", "exact power"), ("1e999999", "out of range"), ("9" * 500, "out of range"),
    ("(" * 60 + "x" + ")" * 60, "nesting deeper"), ("-" * 60 + "x", "nesting deeper"), ("", "empty"),
])
def test_inputs_that_would_exhaust_the_machine_are_refused(text, rule):
    with pytest.raises(ExpressionSyntaxError, match=rule):
        parse_expression(text)


def test_float_powers_and_modest_exact_powers_are_built():
    assert parse_expression("2^100") == 2**100
    assert float(parse_expression("10.0^300")) == 1e300


def test_exact_mode_keeps_decimals_rational():
    assert parse_expression("0.5*x + 1e-3", exact=True) == sympy.Rational(1, 2) * x + sympy.Rational(1, 1000)
    assert isinstance(parse_expression("0.5").evalf(), sympy.Float)


def test_symbol_factory_and_constants_are_the_callers():
    pos = {}
    expr = parse_expression("a*pi", symbol=lambda n: pos.setdefault(n, sympy.Symbol(n, positive=True)),
                            constants={"pi": sympy.pi})
    assert expr == pos["a"] * sympy.pi and pos["a"].is_positive


def test_parse_number_reads_closed_expressions_and_refuses_names():
    assert parse_number("1/4096") == 2.0**-12 == parse_number("2^-12")
    assert parse_number("exp(-3)") == pytest.approx(math.exp(-3), rel=1e-15)
    for text, rule in [("k*2", "uses the name 'k'"), ("1/0", "division by zero"), ("sqrt(-1)", "not a finite real"),
                       ("10^400", "not a finite real")]:
        with pytest.raises(ExpressionSyntaxError, match=rule):
            parse_number(text)


def test_every_table_function_builds_with_its_arity():
    for name, (lo, _, _) in FUNCTIONS.items():
        if name in ("and", "or", "not", "xor"):   # conditions: used where a condition belongs
            text = f"piecewise(1, {name}({', '.join(['x > 1'] * lo)}), 0)"
        else:
            text = f"{name}({', '.join(['x'] * lo)})"
        assert isinstance(parse_expression(text), sympy.Expr), name
    with pytest.raises(ExpressionSyntaxError, match=r"exp\(\) takes 1"):
        parse_expression("exp()")


# --- bounded work for every input (issue 35, item 8) -------------------------------------------

@pytest.fixture
def hang_guard():
    """Turn a hang into a failure (a guard, not a timing assertion: the refusals below take milliseconds)."""
    import signal

    def stop(*_):
        raise TimeoutError("the input was not refused: it hung")

    old = signal.signal(signal.SIGALRM, stop)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("text, limit", [
    ("10^(2000000001/2)", "MAX_EXACT_BITS"),          # a fraction: sympy computes 10^1000000000·√10
    ("sqrt(2)^(10^11)", "MAX_EXACT_BITS"),            # a base that is a number in disguise: 2^(5·10^10)
    ("(2*x)^(10^6)", "MAX_EXACT_BITS"),               # a product base distributes: 2^(10^6)·x^(10^6)
    ("x^(10^6)", "MAX_EXACT_BITS"),                   # a symbolic power whose expansion is 10^6 terms
    ("*".join(["10^2400"] * 3000), "MAX_TERMS"),
    ("*".join(["10^2400"] * 30), "MAX_EXACT_BITS"),   # under MAX_TERMS: the numbers' bits add
    ("+".join(f"k{i}*A{i}" for i in range(4000)), "MAX_TERMS"),
    ("+".join(f"1/(10^2000 + {i})" for i in range(3)), "MAX_EXACT_BITS"),   # denominators multiply
    ("hill(" * 16 + "x" + ", 1, 2, 3)" * 16, "MAX_NODES"),   # each hill() uses its S twice: 2^16 copies
])
def test_inputs_that_grow_are_refused_naming_the_limit(text, limit, hang_guard):
    with pytest.raises(ExpressionSyntaxError, match=limit) as exc:
        parse_expression(text, where="reaction 'R1'")
    assert str(exc.value).startswith("reaction 'R1':")


def test_the_limits_are_documented_constants():
    import sp_ode.core.expression_size as size
    import sp_ode.core.expressions as ex

    for name in ("MAX_DEPTH", "MAX_NUMBER_CHARS", "MAX_EXACT_BITS", "MAX_TERMS", "MAX_NODES", "MAX_TREE_DEPTH"):
        assert isinstance(getattr(ex, name), int) and name in ex.__doc__ and name in ex.__all__
    for name in ("MAX_EXACT_BITS", "MAX_TERMS", "MAX_NODES", "MAX_TREE_DEPTH"):
        assert name in size.__doc__ and getattr(size, name) == getattr(ex, name)


def test_what_stays_under_the_limits_is_built_exactly():
    # negative controls of the guards above: the same forms, small, are built and exact
    assert parse_expression("10^(5/2)") == 100 * sympy.sqrt(10)
    assert parse_expression("sqrt(2)^20") == 1024
    assert parse_expression("(2*x)^10") == 1024 * x**10
    assert parse_expression("*".join(["10^2400"] * 1)) == sympy.Integer(10) ** 2400
    assert parse_expression("+".join(str(i) for i in range(1000))) == 999 * 1000 // 2   # 1000 terms: MAX_TERMS
    terms = "+".join(f"k{i}*A{i}" for i in range(1000))
    assert len(parse_expression(terms).args) == 1000
    assert parse_expression("hill(" * 3 + "x" + ", 1, 2, 3)" * 3).free_symbols == {x}
    assert float(parse_expression("10.0^(2000000001/2)")) == math.inf   # a float base: no exact number is formed


@pytest.mark.parametrize("text", ["1/0", "x/0", "k/(A - A)", "0^(-1)", "log(0)", "x^2/(x - x)"])
def test_division_by_zero_is_refused_as_such(text):
    with pytest.raises(ExpressionSyntaxError, match="division by zero") as exc:
        parse_expression(text, where="reaction 'R1'")
    assert str(exc.value).startswith("reaction 'R1':")


def test_substitute_goes_through_the_guards():
    from sp_ode.core.expressions import substitute

    k = sympy.Symbol("k")
    assert substitute(10**k + x, {k: sympy.Integer(3)}) == 1000 + x
    with pytest.raises(ExpressionSyntaxError, match="MAX_EXACT_BITS"):
        substitute(10**k, {k: sympy.Rational(2000000001, 2)})   # xreplace would compute 10^1000000000
    with pytest.raises(ExpressionSyntaxError, match="division by zero"):
        substitute(x / k, {k: sympy.Integer(0)})
