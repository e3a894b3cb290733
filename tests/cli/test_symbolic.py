"""`sp-ode symbolic FILE`: a user's symbolic generator, a claimed formula, reversibility, bad files.

Provenance of the expected p_st: the 3-state enzyme cycle E → ES → EP → E with ES → E
(E + S ⇌ ES → EP → E + P, substrate s held fixed), derived by hand from Qᵀp = 0:

    balance of EP:  k3 p_EP = k2 p_ES            ⇒ p_EP / p_ES = k2 / k3
    balance of ES:  (km1 + k2) p_ES = k1 s p_E   ⇒ p_ES / p_E  = k1 s / (km1 + k2)

so p ∝ (k3 (km1 + k2), k1 k3 s, k1 k2 s), D = the sum of the three.
"""
from __future__ import annotations

import json

import pytest
import sympy

from sp_ode.cli import main
from sp_ode.symbolic.io import GeneratorFileError, read_claim, read_generator

ENZYME = """\
# enzyme: E + S <-> ES -> EP -> E + P, substrate s fixed
states: E ES EP
E  -> ES : k1*s
ES -> E  : km1
ES -> EP : k2
EP -> E  : k3
"""
k1, km1, k2, k3, s = sympy.symbols("k1 km1 k2 k3 s", positive=True)
HAND = [k3 * (km1 + k2), k1 * k3 * s, k1 * k2 * s]  # the derivation above
D = sum(HAND)


@pytest.fixture
def enzyme(tmp_path):
    path = tmp_path / "enzyme.txt"
    path.write_text(ENZYME)
    return path


def _json(capsys):
    return json.loads(capsys.readouterr().out)


def test_reader_builds_the_generator(enzyme):
    gen = read_generator(enzyme)
    assert gen.states == ("E", "ES", "EP")
    expected = sympy.Matrix([[-k1 * s, k1 * s, 0], [km1, -km1 - k2, k2], [k3, 0, -k3]])
    assert sympy.simplify(gen.Q - expected) == sympy.zeros(3, 3)


def test_p_st_matches_the_hand_derivation(enzyme, capsys, tmp_path):
    assert main(["symbolic", str(enzyme), "--json", "--out", str(tmp_path / "o")]) == 0
    out = _json(capsys)
    assert out["passed"] and out["verdict"] == "pass" and out["states"] == ["E", "ES", "EP"]
    local = {str(x): x for x in (k1, km1, k2, k3, s)}
    for r in range(3):  # `p` entries are sympy-parsable strings
        got = sympy.sympify(out["p"][r], locals=local)
        assert sympy.simplify(got - HAND[r] / D) == 0
    assert sympy.expand(sympy.sympify(out["denominator"], locals=local) - D) == 0
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["p"] == out["p"]
    assert (tmp_path / "o" / "p_st.tex").read_text().count("D &=") == 1


def test_text_and_latex_write_the_denominator_once(enzyme, capsys, tmp_path):
    assert main(["symbolic", str(enzyme), "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    assert text.count("/ D") == 3 and text.count("k1*k2*s + k1*k3*s + k2*k3 + k3*km1") == 1
    assert "verdict (p_st exact): PASS" in text
    assert main(["symbolic", str(enzyme), "--latex", "--out", str(tmp_path / "p.tex")]) == 0
    latex = capsys.readouterr().out
    assert latex.count("{D}") == 3 and "\\begin{aligned}" in latex and "D &= " in latex
    assert (tmp_path / "p.tex").read_text().count("\\frac") == 3


def test_true_claim_passes(enzyme, capsys, tmp_path):
    claim = tmp_path / "claim.json"
    claim.write_text(json.dumps([str(w / D) for w in HAND]))
    assert main(["symbolic", str(enzyme), "--claim", str(claim), "--json", "--out", str(tmp_path / "o")]) == 0
    assert _json(capsys)["claim"]["passed"]


def test_false_claim_prints_its_leftover(enzyme, capsys, tmp_path):
    # k3 dropped from the ES entry: the claim is p_ES = k1 s / D instead of k1 k3 s / D.
    claim = tmp_path / "claim.txt"
    claim.write_text(f"E : {HAND[0] / D}\nES : k1*s/({D})\nEP = {HAND[2] / D}\n")
    assert main(["symbolic", str(enzyme), "--claim", str(claim), "--out", str(tmp_path / "o")]) == 1
    text = capsys.readouterr().out
    assert "FALSE" in text and "verdict (p_st exact and the claim): FAIL" in text
    # the one wrong entry is named, with its exact value; the two right ones are not
    assert "differs from p_st at state ES: claimed" in text
    assert "at state E:" not in text and "at state EP:" not in text
    # Leftover of row EP: k2 p_ES - k3 p_EP = k1 k2 s (1 - k3) / D, derived from the claim by hand.
    assert main(["symbolic", str(enzyme), "--claim", str(claim), "--json", "--out", str(tmp_path / "o2")]) == 1
    leftover = {x["identity"]: x["leftover"] for x in _json(capsys)["claim"]["leftover"]}
    local = {str(x): x for x in (k1, km1, k2, k3, s)}
    got = sympy.sympify(leftover["(Q^T p)_EP"], locals=local)   # the leftover names its state
    assert sympy.simplify(got - k1 * k2 * s * (1 - k3) / D) == 0


def test_reversibility_of_a_birth_death_chain(tmp_path, capsys):
    path = tmp_path / "bd.json"  # a birth–death chain is reversible (docs/theory.md §6)
    path.write_text(json.dumps({"rates": [[0, 1, "a"], [1, 0, "b"], [1, 2, "c"], [2, 1, "d"]]}))
    assert main(["symbolic", str(path), "--reversibility", "--json", "--out", str(tmp_path / "o")]) == 0
    rev = _json(capsys)["reversibility"]
    assert rev["reversible"] and rev["kolmogorov"]["holds"]


def test_enzyme_cycle_is_not_reversible(enzyme, capsys, tmp_path):
    assert main(["symbolic", str(enzyme), "--reversibility", "--out", str(tmp_path / "o")]) == 0
    text = capsys.readouterr().out
    # worded as a property that cannot be read as a failed check next to "verdict: PASS"
    assert "reversible: no (a property of the chain, not a check" in text
    assert "detailed balance does not hold" in text and "one-way edge" in text and "fails" not in text
    assert "verdict (p_st exact): PASS" in text


def test_matrix_format_with_star_diagonal(tmp_path, capsys):
    path = tmp_path / "Q.txt"
    path.write_text("*, a, 0\n0, *, b\nc, 0, *\n")  # a 3-cycle: p ∝ (bc, ac, ab)
    assert main(["symbolic", str(path), "--json", "--out", str(tmp_path / "o")]) == 0
    a, b, c = sympy.symbols("a b c", positive=True)
    p0 = sympy.sympify(_json(capsys)["p"][0], locals={"a": a, "b": b, "c": c})
    assert sympy.simplify(p0 - b * c / (a * b + a * c + b * c)) == 0


@pytest.mark.parametrize("text, where, rule", [
    ("0 -> 1 : a\n1 -> 0 : b +\n", "line 2", "not a valid expression"),
    ("0 -> 1 : a\n1 -> 0\n", "line 2", "`i -> j : rate`"),
    ("0 -> 1 : a\n1 -> 0 : __import__('os')\n", "line 2", "names, numbers"),
    ("0 -> 0 : a\n", "line 1", "two different states"),
    ("a, b\nc\n", "line 2", "square"),
    ("", "enzyme", "no transitions"),
])
def test_bad_text_files_name_the_line_and_rule(tmp_path, capsys, text, where, rule):
    path = tmp_path / "enzyme.txt"
    path.write_text(text)
    assert main(["symbolic", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sp-ode symbolic: error:") and "\n" not in err
    assert str(path) in err and where in err and rule in err


def test_bad_json_and_semantic_errors(tmp_path, capsys):
    cases = {
        "g.json": ("{\"rates\": [[0, 1]]}", "rates[0]"),
        "h.json": ("[[\"-a\", 1.5], [\"b\", \"-b\"]]", "floats are not exact"),
        "i.json": ("{\"rates\": [[0, 1, \"a\"]]}", "irreducible"),
        "j.txt": ("0 -> 1 : a - b\n1 -> 0 : b\n", "cannot decide the sign"),
    }
    for name, (text, rule) in cases.items():
        path = tmp_path / name
        path.write_text(text)
        assert main(["symbolic", str(path), "--out", str(tmp_path / "o")]) == 2, name
        err = capsys.readouterr().err
        assert str(path) in err and rule in err, err


def test_claim_errors(enzyme, tmp_path):
    gen = read_generator(enzyme)
    bad = tmp_path / "c.json"
    bad.write_text(json.dumps(["1", "2"]))
    with pytest.raises(GeneratorFileError, match=r"n = 3 entries"):
        read_claim(bad, gen)
    bad.write_text(json.dumps(["Km", "0", "0"]))
    with pytest.raises(GeneratorFileError, match=r"entry 0: 'Km' is not a symbol of the generator"):
        read_claim(bad, gen)


def test_missing_file_and_directory(tmp_path, capsys):
    assert main(["symbolic", str(tmp_path / "nope.txt")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["symbolic", str(tmp_path)]) == 2
    assert "got a directory" in capsys.readouterr().err


# --- issue 25: nothing overwritten silently, bounded work, claims right up to normalisation --------

def test_existing_report_is_refused_without_overwrite(enzyme, tmp_path, capsys):
    out = tmp_path / "o"
    assert main(["symbolic", str(enzyme), "--out", str(out)]) == 0
    first = (out / "report.json").read_text()
    capsys.readouterr()
    assert main(["symbolic", str(enzyme), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "already exists" in err and "--overwrite" in err and err.count("\n") == 1
    assert (out / "report.json").read_text() == first                # untouched
    assert main(["symbolic", str(enzyme), "--out", str(out), "--overwrite"]) == 0
    single = tmp_path / "r.json"
    single.write_text("{}")
    assert main(["symbolic", str(enzyme), "--out", str(single)]) == 2 and single.read_text() == "{}"


def test_claim_right_up_to_normalisation_is_reported_with_c(enzyme, tmp_path, capsys):
    claim = tmp_path / "twice.txt"
    claim.write_text("".join(f"{st} : 2*({w})/({D})\n" for st, w in zip(["E", "ES", "EP"], HAND)))
    assert main(["symbolic", str(enzyme), "--claim", str(claim), "--out", str(tmp_path / "o")]) == 1
    text = capsys.readouterr().out
    assert "proportional to p_st (normalisation c = 2)" in text and "FALSE" not in text
    record = json.loads((tmp_path / "o" / "report.json").read_text())["claim"]
    assert record["proportional"] is True and record["normalisation"] == "2"


def test_timeout_ends_with_one_line_saying_where(enzyme, tmp_path, capsys):
    assert main(["symbolic", str(enzyme), "--timeout", "1e-9", "--out", str(tmp_path / "o")]) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stopped after" in err[0] and "(--timeout 1e-09)" in err[0] and " at " in err[0]
    assert not (tmp_path / "o").exists()                               # nothing half-written
    assert main(["symbolic", str(enzyme), "--timeout", "0", "--out", str(tmp_path / "o")]) == 2


def test_rate_beyond_the_float_range_is_a_usage_error(tmp_path, capsys):
    # issue 25 item 11: `1e999999` once died on Python's integer-string limit
    path = tmp_path / "big.txt"
    path.write_text("a -> b : 1e999999\nb -> a : 1\n")
    assert main(["symbolic", str(path), "--out", str(tmp_path / "o")]) == 2
    assert "out of range" in capsys.readouterr().err
