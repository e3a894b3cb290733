"""sp_ode.networks.sbml: SBML and Antimony import of small models written for the tests."""
from __future__ import annotations

import numpy as np
import pytest

import sp_ode
from sp_ode.networks.network import NetworkError, ReactionNetwork

libsbml = pytest.importorskip("libsbml")      # installed with the `sbml` and `test` extras
antimony = pytest.importorskip("antimony")

from sp_ode.networks.sbml import SBMLFeatureError, from_antimony, from_sbml  # noqa: E402

TELEGRAPH_ANT = """
model telegraph
  on:   G_off -> G_on;     k_on*y*G_off
  off:  G_on -> G_off;     k_off*G_on
  tx:   G_on -> G_on + M;  k_m*G_on
  deg:  M -> ;             g_m*M
  k_on = 1; k_off = 2; k_m = 20; g_m = 1; y = 1
  G_off = 1; G_on = 0; M = 0
end
"""


def _sbml(extra: str = "", reaction: str | None = None) -> str:
    """A hand-written SBML L3 birth–death model (and optional extra elements)."""
    reaction = reaction or """
      <reaction id="death" reversible="false">
        <listOfReactants><speciesReference species="M" stoichiometry="1" constant="true"/></listOfReactants>
        <kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">
          <apply><times/><ci>g</ci><ci>M</ci></apply></math></kineticLaw>
      </reaction>"""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version2/core" level="3" version="2">
  <model id="bd">
    <listOfCompartments><compartment id="cell" size="1" constant="true"/></listOfCompartments>
    <listOfSpecies><species id="M" compartment="cell" initialAmount="3" hasOnlySubstanceUnits="true"
      boundaryCondition="false" constant="false"/></listOfSpecies>
    <listOfParameters><parameter id="k" value="4" constant="true"/><parameter id="g" value="1" constant="true"/>
      <parameter id="y" value="1" constant="true"/></listOfParameters>
    <listOfReactions>
      <reaction id="birth" reversible="false">
        <listOfProducts><speciesReference species="M" stoichiometry="1" constant="true"/></listOfProducts>
        <kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">
          <apply><times/><ci>k</ci><ci>y</ci></apply></math></kineticLaw>
      </reaction>{reaction}
    </listOfReactions>{extra}
  </model>
</sbml>"""


def test_antimony_telegraph_equals_the_string_network(tmp_path):
    net, initial = from_antimony(TELEGRAPH_ANT, slow=["y"])
    assert initial == {"G_off": 1, "G_on": 0, "M": 0}
    ref = ReactionNetwork("G_off -> G_on, k_on*y; G_on -> G_off, k_off; G_on -> G_on + M, k_m; M -> 0, g_m",
                          parameters={"k_on": 1, "k_off": 2, "k_m": 20, "g_m": 1}, slow=["y"])
    space = net.state_space({"M": 30}, initial=initial)
    assert space.species == ref.species
    for y in (0.5, 2.0):
        assert abs(net.generator(space, [y]) - ref.generator(space, [y])).max() <= 1e-13


def test_sbml_file_and_string_birth_death(tmp_path):
    path = tmp_path / "bd.xml"
    path.write_text(_sbml())
    for src in (path, _sbml()):
        net, initial = from_sbml(src, slow=["y"])
        assert initial == {"M": 3} and net.slow == ("y",)
        space = net.state_space({"M": 5})
        Q = net.generator(space, [2.0]).toarray()
        np.testing.assert_allclose(np.diag(Q, 1), 8.0)             # k·y births
        np.testing.assert_allclose(np.diag(Q, -1), np.arange(1, 6))  # g·M deaths


@pytest.mark.parametrize("extra, named", [
    ('<listOfEvents><event id="kick" useValuesFromTriggerTime="true"><trigger initialValue="true" '
     'persistent="true"><math xmlns="http://www.w3.org/1998/Math/MathML"><apply><gt/><ci>M</ci><cn>5</cn>'
     '</apply></math></trigger></event></listOfEvents>', "event 'kick'"),
    ('<listOfRules><assignmentRule variable="g"><math xmlns="http://www.w3.org/1998/Math/MathML"><cn>2</cn>'
     '</math></assignmentRule></listOfRules>', "assignment rule for 'g'"),
])
def test_sbml_features_the_builder_cannot_honour_are_named(extra, named):
    doc = _sbml(extra).replace('<parameter id="g" value="1" constant="true"/>',
                               '<parameter id="g" value="1" constant="false"/>')
    with pytest.raises(SBMLFeatureError, match=named) as exc:
        from_sbml(doc, slow=["y"])
    assert any(named in f for f in exc.value.features)


def test_antimony_rate_rule_and_bad_inputs():
    with pytest.raises(SBMLFeatureError, match="rate rule for 'y'"):
        from_antimony("model m\n J0: -> M; k*y\n y' = -y\n k = 1; y = 1; M = 0\nend")
    with pytest.raises(NetworkError, match="Antimony cannot parse"):
        from_antimony("model m\n J0: -> M; k k k\nend")
    with pytest.raises(NetworkError, match="slow variable 'z' is not a parameter"):
        from_sbml(_sbml(), slow=["z"])
    conc = _sbml().replace('<compartment id="cell" size="1"', '<compartment id="cell" size="2"').replace(
        'hasOnlySubstanceUnits="true"', 'hasOnlySubstanceUnits="false"')
    with pytest.raises(NetworkError, match="species 'M' is in concentration units"):
        from_sbml(conc, slow=["y"])


# --- files are parsed, never evaluated ------------------------------------------------------

def _law(math: str, functions: str = "") -> str:
    """`_sbml()` with the birth law replaced by `math` (MathML inside <math>) and optional function definitions."""
    doc = _sbml().replace("<apply><times/><ci>k</ci><ci>y</ci></apply>", math)
    return doc.replace("<listOfCompartments>", functions + "<listOfCompartments>") if functions else doc


def _function(body: str, fid: str = "f") -> str:
    return (f'<listOfFunctionDefinitions><functionDefinition id="{fid}"><math xmlns="http://www.w3.org/1998/Math/'
            f'MathML"><lambda><bvar><ci>x</ci></bvar>{body}</lambda></math></functionDefinition>'
            "</listOfFunctionDefinitions>")


def test_sbml_ci_payload_is_refused_naming_the_reaction(tmp_path):
    from sp_ode.networks.network import NetworkSyntaxError
    from tests.payloads import assert_not_run, payload

    marker = tmp_path / "marker"
    with pytest.raises(NetworkSyntaxError) as exc:
        from_sbml(_law(f"<ci>{payload(marker)}</ci>"), slow=["y"])
    assert exc.value.reaction == "birth" and "not an SBML identifier" in str(exc.value)
    assert exc.value.token.startswith("[c for c")
    assert_not_run(marker)


@pytest.mark.parametrize("where", ["body", "call"])
def test_sbml_function_definition_payload_is_refused(tmp_path, where):
    from sp_ode.networks.network import NetworkSyntaxError
    from tests.payloads import assert_not_run, payload

    marker = tmp_path / "marker"
    if where == "body":   # the lambda's body holds the payload; the law calls f(k)
        doc = _law("<apply><ci>f</ci><ci>k</ci></apply>", _function(f"<ci>{payload(marker)}</ci>"))
    else:                 # the law calls a "function" whose name is the payload
        doc = _law(f"<apply><ci>{payload(marker)}</ci><ci>k</ci></apply>", _function("<ci>x</ci>"))
    with pytest.raises(NetworkSyntaxError, match="reaction 'birth'"):
        from_sbml(doc, slow=["y"])
    assert_not_run(marker)


def test_antimony_payload_is_refused(tmp_path):
    from tests.payloads import assert_not_run, payload

    marker = tmp_path / "marker"
    with pytest.raises(NetworkError):
        from_antimony(f"model m\n J0: -> M; {payload(marker)}\n J1: M -> ; M\n M = 0\nend")
    assert_not_run(marker)


def test_function_definitions_are_expanded_from_the_mathml():
    # a Hill activation written as an SBML function definition (SBO:0000192 shape), via Antimony
    net, _ = from_antimony("""
    function hill_act(S, V, K, h)
      V*S^h/(K^h + S^h)
    end
    model m
      J0: -> M; hill_act(A, v, K, 2)
      J1: M -> ; g*M
      J2: A -> ; 0*A
      v = 10; K = 2; g = 1; M = 0; A = 3
    end""")
    space = net.state_space({"M": 3, "A": 4})
    a = net.propensities(space.states)
    A = space.states[:, net.species.index("A")]
    np.testing.assert_allclose(a[0], 10 * A**2 / (4 + A**2), rtol=1e-14)


@pytest.mark.parametrize("math, named", [
    ('<apply><times/><ci>k</ci><csymbol encoding="text" definitionURL="http://www.sbml.org/sbml/symbols/time">'
     "t</csymbol></apply>", "time symbol"),
    ("<apply><factorial/><ci>k</ci></apply>", "factorial"),
    ("<apply><ci>g2</ci><ci>k</ci></apply>", "not a function definition"),
    ("<apply><gt/><ci>k</ci><cn>1</cn></apply>", "condition"),
])
def test_mathml_the_cme_cannot_use_is_refused_by_name(math, named):
    from sp_ode.networks.network import NetworkSyntaxError

    with pytest.raises(NetworkSyntaxError, match=named):
        from_sbml(_law(math), slow=["y"])


def test_sbml_piecewise_log_and_root_follow_mathml():
    math = ("<apply><plus/><piecewise><piece><ci>k</ci><apply><lt/><ci>M</ci><cn>2</cn></apply></piece>"
            "<otherwise><cn>0</cn></otherwise></piecewise><apply><log/><cn>100</cn></apply>"
            "<apply><root/><degree><cn>3</cn></degree><cn>27</cn></apply></apply>")
    net, _ = from_sbml(_law(math))
    a = net.propensities([[0], [1], [2], [3]])[0]
    np.testing.assert_allclose(a, [4 + 2 + 3, 4 + 2 + 3, 5, 5], rtol=1e-14)   # <log/> is base 10


# --- local parameters are scoped to their reaction (SBML L3 §4.11.5) ------------------------
# The models mirror the SBML test suite's stochastic cases 00022 (dsmts-002-03, a local
# shadowing a global) and 00027 (dsmts-002-08, the same local id in two reactions); their
# published means are analytic: immigration at rate α, death at μ per molecule, from X = 0,
# E[X](t) = (α/μ)(1 − e^{−μt}), stationary mean α/μ.

def _immigration_death(birth_law: str, death_law: str, birth_locals: str, death_locals: str,
                       globals_: str) -> str:
    def law(math, locals_):
        lp = f"<listOfLocalParameters>{locals_}</listOfLocalParameters>" if locals_ else ""
        return f'<kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">{math}</math>{lp}</kineticLaw>'
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version2/core" level="3" version="2">
  <model id="immigration_death">
    <listOfCompartments><compartment id="Cell" size="1" constant="true"/></listOfCompartments>
    <listOfSpecies><species id="X" compartment="Cell" initialAmount="0" hasOnlySubstanceUnits="true"
      boundaryCondition="false" constant="false"/></listOfSpecies>
    <listOfParameters>{globals_}</listOfParameters>
    <listOfReactions>
      <reaction id="Immigration" reversible="false">
        <listOfProducts><speciesReference species="X" stoichiometry="1" constant="true"/></listOfProducts>
        {law(birth_law, birth_locals)}
      </reaction>
      <reaction id="Death" reversible="false">
        <listOfReactants><speciesReference species="X" stoichiometry="1" constant="true"/></listOfReactants>
        {law(death_law, death_locals)}
      </reaction>
    </listOfReactions>
  </model>
</sbml>"""


def _means(net, initial, times, bound=200):
    from scipy.sparse.linalg import expm_multiply

    space = net.state_space({"X": bound})
    Q = net.generator(space)
    p = sp_ode.stationary_distribution(Q.toarray())
    x = space.states[:, 0]
    p0 = np.zeros(space.n)
    p0[space.index(np.array([[initial["X"]]]))] = 1.0
    pt = [expm_multiply(Q.T * t, p0) for t in times]
    return float(p @ x), [float(q @ x) for q in pt]


K_X = '<apply><times/><ci>k</ci><ci>X</ci></apply>'


def test_same_local_id_in_two_reactions_keeps_each_value():
    # case 00027: global k = 2 (used by neither law), Immigration.k = 1, Death.k = 0.1
    doc = _immigration_death("<ci>k</ci>", K_X, '<localParameter id="k" value="1"/>',
                             '<localParameter id="k" value="0.1"/>', '<parameter id="k" value="2" constant="true"/>')
    net, initial = from_sbml(doc)
    assert net.parameters == {"Immigration.k": 1.0, "Death.k": 0.1}
    stationary, (m10, m50) = _means(net, initial, (10.0, 50.0))
    assert stationary == pytest.approx(1 / 0.1, rel=1e-10)            # α/μ = 10 (merged ids gave 1)
    assert abs(m10 - 6.321206) <= 5e-7 and abs(m50 - 9.93262) <= 5e-6   # dsmts-002-08-mean.csv, t = 10, 50


def test_local_shadowing_a_global_leaves_the_global_to_the_other_reactions():
    # a local k = 2 in Immigration shadows the global k = 1 that Death uses: mean 2/1 (replacing gave 1)
    doc = _immigration_death("<ci>k</ci>", K_X, '<localParameter id="k" value="2"/>', "",
                             '<parameter id="k" value="1" constant="true"/>')
    net, _ = from_sbml(doc)
    assert net.parameters == {"k": 1.0, "Immigration.k": 2.0}
    assert _means(net, {"X": 0}, ())[0] == pytest.approx(2.0, rel=1e-10)
    # case 00022: local Alpha = 5 shadows the global Alpha = 10; Mu = 0.1 global
    doc = _immigration_death("<ci>Alpha</ci>", '<apply><times/><ci>Mu</ci><ci>X</ci></apply>',
                             '<localParameter id="Alpha" value="5"/>', "",
                             '<parameter id="Alpha" value="10" constant="true"/>'
                             '<parameter id="Mu" value="0.1" constant="true"/>')
    net, initial = from_sbml(doc)
    stationary, (m10, m50) = _means(net, initial, (10.0, 50.0))
    assert stationary == pytest.approx(50.0, rel=1e-10)
    assert abs(m10 - 31.60603) <= 5e-6 and abs(m50 - 49.6631) <= 5e-5    # dsmts-002-03-mean.csv


def test_parameter_overrides_use_scoped_names_and_unknown_ones_are_refused():
    doc = _immigration_death("<ci>k</ci>", K_X, '<localParameter id="k" value="2"/>', "",
                             '<parameter id="k" value="1" constant="true"/>')
    net, _ = from_sbml(doc, parameters={"Immigration.k": 4.0})
    assert net.parameters == {"k": 1.0, "Immigration.k": 4.0}
    with pytest.raises(NetworkError, match="sets 'Death.k', which is not a parameter"):
        from_sbml(doc, parameters={"Death.k": 4.0})


def test_features_that_would_change_the_numbers_silently_are_refused():
    # each was imported with wrong rates before (SBML test suite cases 01648–01650: conversion factors)
    cf = _sbml().replace('<model id="bd">', '<model id="bd" conversionFactor="g">')
    with pytest.raises(SBMLFeatureError, match="model conversion factor 'g'"):
        from_sbml(cf, slow=["y"])
    const = _sbml().replace('boundaryCondition="false" constant="false"', 'boundaryCondition="false" constant="true"')
    with pytest.raises(SBMLFeatureError, match="constant species 'M' changed by a reaction"):
        from_sbml(const, slow=["y"])
    empty = _sbml().split("<listOfReactions>")[0] + "</model></sbml>"
    with pytest.raises(NetworkError, match="has no reactions"):
        from_sbml(empty)


def test_stoichiometry_ids_and_non_constant_references_follow_sbml():
    # DSMTS files mark speciesReferences constant="false"; nothing can change them once rules are refused
    doc = _sbml().replace('species="M" stoichiometry="1" constant="true"/></listOfReactants>',
                          'species="M" id="sM" stoichiometry="1" constant="false"/></listOfReactants>')
    doc = doc.replace("<apply><times/><ci>g</ci><ci>M</ci></apply>", "<apply><times/><ci>sM</ci><ci>g</ci><ci>M</ci>"
                      "</apply>")
    net, _ = from_sbml(doc, slow=["y"])
    assert net.parameters["sM"] == 1.0
    np.testing.assert_allclose(net.propensities([[3]], [1.0])[:, 0], [4.0, 3.0])
