"""sp_ode.symbolic.io: generator and claim files in their three formats, exact entries, and errors that name the
file, the line or field, and the rule.

Provenance: the 2-state switch Q = [[-a, a], [b, -b]] has p_st = (b, a)/(a + b) (docs/theory.md §6); the same
generator written as rate lines, as a matrix and as JSON must give the same exact matrix.
"""
from __future__ import annotations

import json

import pytest
import sympy

from sp_ode.symbolic.io import GeneratorFileError, read_claim, read_generator
from sp_ode.symbolic.stationary import symbolic_stationary

a, b = sympy.symbols("a b", positive=True)
SWITCH = sympy.Matrix([[-a, a], [b, -b]])


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("name, text", [
    ("rates.txt", "# a switch\nstates: 0 1\n0 -> 1 : a\n1 -> 0 : b\n"),
    ("matrix.txt", "*, a\nb, *\n"),
    ("rates.json", json.dumps({"rates": [[0, 1, "a"], [1, 0, "b"]]})),
    ("matrix.json", json.dumps({"Q": [["-a", "a"], ["b", "-b"]]})),
])
def test_three_formats_give_the_same_exact_generator(tmp_path, name, text):
    g = read_generator(_write(tmp_path, name, text))
    assert sympy.simplify(sympy.Matrix(g.Q) - SWITCH.subs({sympy.Symbol("a"): a})) == sympy.zeros(2, 2)
    p = symbolic_stationary(g.Q).p
    assert sympy.simplify(p[0] - b / (a + b)) == 0 and sympy.simplify(p[1] - a / (a + b)) == 0


def test_decimals_stay_exact_and_repeated_pairs_add(tmp_path):
    g = read_generator(_write(tmp_path, "q.txt", "0 -> 1 : 0.5\n0 -> 1 : k\n1 -> 0 : 1\n"))
    k = g.symbols["k"]
    assert sympy.simplify(g.Q[0, 1] - (sympy.Rational(1, 2) + k)) == 0
    assert k.is_positive                                    # every rate symbol is positive ...
    r = read_generator(_write(tmp_path, "r.txt", "real: y\n0 -> 1 : exp(y)\n1 -> 0 : 1\n"))
    assert r.symbols["y"].is_real and r.symbols["y"].is_positive is None     # ... unless declared real


def test_a_claim_is_read_with_the_generators_symbols(tmp_path):
    g = read_generator(_write(tmp_path, "q.txt", "0 -> 1 : a\n1 -> 0 : b\n"))
    claim = read_claim(_write(tmp_path, "claim.txt", "0 : b/(a + b)\n1 : a/(a + b)\n"), g)
    assert [str(c) for c in claim] == [str(g.symbols["b"] / (g.symbols["a"] + g.symbols["b"])),
                                       str(g.symbols["a"] / (g.symbols["a"] + g.symbols["b"]))]
    with pytest.raises(GeneratorFileError, match="n = 2 entries"):
        read_claim(_write(tmp_path, "short.txt", "b/(a + b)\n"), g)


@pytest.mark.parametrize("name, text, words", [
    ("bad.txt", "0 -> 1 a\n", ["line 1", "i -> j : rate"]),
    ("mixed.txt", "0 -> 1 : a\n1, 2\n", ["line 2", "not both"]),
    ("names.txt", "states: a a\n0 -> 1 : a\n", ["line 1", "distinct"]),
    ("label.txt", "x-y -> 1 : a\n", ["line 1", "name or an integer"]),
    ("code.txt", "0 -> 1 : __import__('os')\n1 -> 0 : 1\n", ["line 1"]),
    ("float.json", json.dumps({"Q": [[-0.5, 0.5], [1, -1]]}), ["floats are not exact"]),
    ("field.json", json.dumps({"rates": [[0, 1, "a"]], "extra": 1}), ["unknown field", "extra"]),
    ("broken.json", "{", ["not valid JSON"]),
])
def test_errors_name_the_file_the_place_and_the_rule(tmp_path, name, text, words):
    path = _write(tmp_path, name, text)
    with pytest.raises(GeneratorFileError) as info:
        read_generator(path)
    message = str(info.value)
    assert str(path) in message
    for w in words:
        assert w in message, (w, message)


def test_missing_file_and_directory_are_named(tmp_path):
    with pytest.raises(GeneratorFileError, match="does not exist"):
        read_generator(tmp_path / "none.txt")
    with pytest.raises(GeneratorFileError, match="directory"):
        read_generator(tmp_path)


@pytest.mark.parametrize("rate, rule", [("10^(2000000001/2)", "MAX_EXACT_BITS"), ("a/(b - b)", "division by zero")])
def test_rates_that_grow_or_divide_by_zero_are_refused_with_the_line(tmp_path, rate, rule):
    path = _write(tmp_path, "rates.txt", f"0 -> 1 : a\n1 -> 0 : {rate}\n")
    with pytest.raises(GeneratorFileError, match=rule):
        read_generator(path)
