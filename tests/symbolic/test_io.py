"""sp_ode.symbolic.io: generator and claim files are read by the shared grammar, never evaluated."""
from __future__ import annotations

import json

import pytest
import sympy

from sp_ode.symbolic.io import GeneratorFileError, read_claim, read_generator
from tests.payloads import assert_not_run, payload


@pytest.mark.parametrize("suffix", [".txt", ".json"])
def test_symbolic_file_payload_is_refused(tmp_path, suffix):
    marker = tmp_path / "marker"
    path = tmp_path / f"Q{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps({"rates": [[0, 1, "a"], [1, 0, payload(marker)]]}))
    else:
        path.write_text(f"0 -> 1 : a\n1 -> 0 : {payload(marker)}\n")
    with pytest.raises(GeneratorFileError, match=r"not a valid expression.*'\['"):
        read_generator(path)
    assert_not_run(marker)


@pytest.mark.parametrize("rate", ["b.subs(b, a)", "a.func", "a.evalf()"])
def test_attribute_access_is_refused_not_evaluated(tmp_path, rate):
    # these pass a character whitelist of letters, digits and ". ( ) ," but are method calls, i.e. code
    path = tmp_path / "Q.txt"
    path.write_text(f"0 -> 1 : a\n1 -> 0 : {rate}\n")
    with pytest.raises(GeneratorFileError, match=r"line 2.*'\.'"):
        read_generator(path)


def test_rates_stay_exact_with_positive_symbols(tmp_path):
    path = tmp_path / "Q.txt"
    path.write_text("real: y\n0 -> 1 : 0.5*k*exp(y)\n1 -> 0 : Rational(1, 3)*pi\n")
    gen = read_generator(path)
    k, y = gen.symbols["k"], gen.symbols["y"]
    assert k.is_positive and y.is_real and not y.is_positive
    assert gen.Q[0, 1] == sympy.Rational(1, 2) * k * sympy.exp(y) and gen.Q[1, 0] == sympy.pi / 3
    claim = tmp_path / "c.json"
    claim.write_text(json.dumps([payload(tmp_path / "m2"), "1"]))
    with pytest.raises(GeneratorFileError, match="entry 0"):
        read_claim(claim, gen)
    assert_not_run(tmp_path / "m2")
