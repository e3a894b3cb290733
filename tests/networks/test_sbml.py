"""sp_ode.networks.sbml: SBML and Antimony import of small models written for the tests."""
from __future__ import annotations

import numpy as np
import pytest
import sympy

import sp_ode
from sp_ode.networks.network import NetworkError, NetworkWarning, ReactionNetwork

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
    ('<listOfRules><algebraicRule><math xmlns="http://www.w3.org/1998/Math/MathML"><apply><minus/><ci>g</ci>'
     '<cn>2</cn></apply></math></algebraicRule></listOfRules>', "algebraic rule"),
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

def test_concentration_species_are_count_over_volume_in_the_laws():
    # hasOnlySubstanceUnits="false": the symbol M in g*M is a concentration, M_count / V (SBML L3 §4.6.5);
    # the law is an extent per time, so the death propensity is g·M/V = M/2 in a compartment of size 2.
    conc = _sbml().replace('<compartment id="cell" size="1"', '<compartment id="cell" size="2"').replace(
        'hasOnlySubstanceUnits="true"', 'hasOnlySubstanceUnits="false"')
    net, initial = from_sbml(conc, slow=["y"])
    assert initial == {"M": 3} and net.parameters["cell"] == 2.0
    Q = net.generator(net.state_space({"M": 5}), [1.0]).toarray()
    np.testing.assert_allclose(np.diag(Q, 1), 4.0)                   # k·y: no species in the law, no scaling
    np.testing.assert_allclose(np.diag(Q, -1), np.arange(1, 6) / 2.0)


@pytest.mark.filterwarnings("ignore:visit_Num is deprecated:DeprecationWarning")   # inside GillesPy2 1.8.3
def test_gillespy2_export_pattern_is_warned_about_naming_species_and_volume(tmp_path):
    # GillesPy2 exports species as concentrations with initial amounts and writes its laws in counts
    # (k·A·(A−1)/vol): read by the SBML rules at volume 300 that is another model, so it must not pass silently
    gillespy2 = pytest.importorskip("gillespy2")
    m = gillespy2.Model(name="dimer", volume=300)
    m.add_parameter([gillespy2.Parameter(name="k", expression=3.0), gillespy2.Parameter(name="kd", expression=0.1)])
    m.add_species([gillespy2.Species(name="A", initial_value=30), gillespy2.Species(name="B", initial_value=0)])
    m.add_reaction([gillespy2.Reaction(name="dim", reactants={"A": 2}, products={"B": 1}, rate="k"),
                    gillespy2.Reaction(name="split", reactants={"B": 1}, products={"A": 2}, rate="kd")])
    path = tmp_path / "dimer.xml"
    gillespy2.export_SBML(m, filename=str(path))
    with pytest.warns(NetworkWarning, match=r"species 'A', 'B' are declared as concentrations .* compartment "
                                            r"'vol' of size 300.*'dim', 'split'.*sp_ode.from_gillespy2"):
        from_sbml(path)


def test_laws_in_concentrations_or_unit_volume_are_not_warned_about():
    import warnings

    # negative controls: laws multiplied by the compartment (an extent per time in concentrations), V = 1, and
    # the unimolecular k*X of DSMTS 001-11 (concentrations, V = 2: its published means read X as count/V)
    species = _sp("X", 5, substance=False)
    dimer = _rx("Dimer", [("X", 2)], [], f"<apply><divide/>{_times('<ci>Mu</ci>', _times('<ci>X</ci>', '<ci>X</ci>'))}"
                                         "<ci>Cell</ci></apply>")                  # Mu·X²/Cell: a law in counts
    in_conc = _rx("Dimer", [("X", 2)], [], _times("<ci>Cell</ci>", _times("<ci>Mu</ci>", _times("<ci>X</ci>",
                                                                                             "<ci>X</ci>"))))
    pars = _par("Lambda", 0.1) + _par("Mu", 0.2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", NetworkWarning)
        from_sbml(_doc(species, _BIRTH_DEATH + in_conc, pars, size=300.0))
        from_sbml(_doc(species, _BIRTH_DEATH + dimer, pars, size=1.0))
    with pytest.warns(NetworkWarning, match=r"species 'X' .* 'Cell' of size 300.* of 'Dimer' look written in counts"):
        from_sbml(_doc(species, _BIRTH_DEATH + dimer, pars, size=300.0))


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


# --- assignment rules, boundary species, and the DSMTS cases mirrored at small size ----------------------

_MATH = '<math xmlns="http://www.w3.org/1998/Math/MathML">{}</math>'


def _doc(species: str, reactions: str, parameters: str = "", rules: str = "", size: float = 1.0) -> str:
    """A small SBML L3V2 model in compartment `Cell` (species, reactions and rules given as XML)."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version2/core" level="3" version="2">
  <model id="m">
    <listOfCompartments><compartment id="Cell" size="{size}" constant="true"/></listOfCompartments>
    <listOfSpecies>{species}</listOfSpecies>
    <listOfParameters>{parameters}</listOfParameters>
    {f"<listOfRules>{rules}</listOfRules>" if rules else ""}
    <listOfReactions>{reactions}</listOfReactions>
  </model>
</sbml>"""


def _sp(sid, amount, *, substance=True, boundary=False, constant=False):
    return (f'<species id="{sid}" compartment="Cell" initialAmount="{amount}" hasOnlySubstanceUnits='
            f'"{str(substance).lower()}" boundaryCondition="{str(boundary).lower()}" constant="{str(constant).lower()}"/>')


def _par(pid, value, constant=True):
    return f'<parameter id="{pid}" value="{value}" constant="{str(constant).lower()}"/>'


def _rx(rid, reactants, products, law):
    side = lambda refs: "".join(f'<speciesReference species="{s}" stoichiometry="{n}" constant="true"/>'
                                for s, n in refs)
    return (f'<reaction id="{rid}" reversible="false">'
            + (f"<listOfReactants>{side(reactants)}</listOfReactants>" if reactants else "")
            + (f"<listOfProducts>{side(products)}</listOfProducts>" if products else "")
            + f"<kineticLaw>{_MATH.format(law)}</kineticLaw></reaction>")


def _times(a, b):
    return f"<apply><times/>{a}{b}</apply>"


_BIRTH_DEATH = (_rx("Birth", [("X", 1)], [("X", 2)], _times("<ci>Lambda</ci>", "<ci>X</ci>"))
                + _rx("Death", [("X", 1)], [], _times("<ci>Mu</ci>", "<ci>X</ci>")))


def test_assignment_rules_are_substituted_and_assigned_species_are_observables():
    rules = (f'<assignmentRule variable="Mu">{_MATH.format(_times("<cn>2</cn>", "<ci>half_mu</ci>"))}'
             '</assignmentRule>'
             f'<assignmentRule variable="y">{_MATH.format(_times("<cn>2</cn>", "<ci>X</ci>"))}</assignmentRule>')
    doc = _doc(_sp("X", 10) + _sp("y", 0), _BIRTH_DEATH,
               _par("Lambda", 0.1) + _par("half_mu", 0.055) + _par("Mu", 0, constant=False), rules)
    net, initial = from_sbml(doc)
    assert net.species == ("X",) and initial == {"X": 10} and "Mu" not in net.parameters
    assert net.propensity_exprs[1].equals(2 * net.symbols["X"] * net.symbols["half_mu"])
    states = np.array([[0], [3], [7]])
    np.testing.assert_allclose(net.observable("y", states), [0.0, 6.0, 14.0])
    np.testing.assert_allclose(net.propensities(states)[1], 0.11 * states[:, 0])
    cyclic = (f'<assignmentRule variable="a">{_MATH.format("<ci>b</ci>")}</assignmentRule>'
              f'<assignmentRule variable="b">{_MATH.format("<ci>a</ci>")}</assignmentRule>')
    bad = _doc(_sp("X", 1), _BIRTH_DEATH, _par("Lambda", 0.1) + _par("Mu", 0.1) + _par("a", 1, False)
               + _par("b", 1, False), cyclic)
    with pytest.raises(SBMLFeatureError, match="cycle: a -> b -> a|cycle: b -> a -> b"):
        from_sbml(bad)
    on_changed = f'<assignmentRule variable="X">{_MATH.format("<cn>3</cn>")}</assignmentRule>'
    with pytest.raises(SBMLFeatureError, match="assignment rule for 'X', a species that a reaction changes"):
        from_sbml(_doc(_sp("X", 1), _BIRTH_DEATH, _par("Lambda", 0.1) + _par("Mu", 0.1), on_changed))


def test_boundary_species_are_constants_of_the_laws():
    # Source -> X at Alpha·Source/… : a boundary species is not changed by the reactions (SBML L3 §4.6.6)
    reactions = (_rx("Immigration", [("Source", 1)], [("X", 1)], _times("<ci>Alpha</ci>", "<ci>Source</ci>"))
                 + _rx("Death", [("X", 1)], [("Sink", 1)], _times("<ci>Mu</ci>", "<ci>X</ci>")))
    doc = _doc(_sp("X", 0) + _sp("Source", 2, boundary=True) + _sp("Sink", 0, boundary=True), reactions,
               _par("Alpha", 5.0) + _par("Mu", 0.1))
    net, initial = from_sbml(doc)
    assert net.species == ("X",) and initial == {"X": 0}
    assert net.parameters["Source"] == 2.0 and float(net.observables["Sink"]) == 0.0
    Q = net.generator(net.state_space({"X": 3})).toarray()
    np.testing.assert_allclose(np.diag(Q, 1), 10.0)                 # Alpha·Source
    assert net.stoichiometry.tolist() == [[1], [-1]]                # Source and Sink untouched


def _published_inside(res, net, name, times, means, sds, places):
    """Every published value within the certified interval ± its rounding (half a unit of `places` digits)."""
    (mlo, mhi), (slo, shi) = res.intervals(name)
    k = np.searchsorted(res.times, times)
    unit = 0.5 * 10.0**-places
    scale = 2.0 if name == "y" else 1.0            # y = 2X is published as 2 × the rounded X
    for lo, hi, want in ((mlo, mhi, means), (slo, shi, sds)):
        want = np.asarray(want, dtype=float)
        tol = np.maximum(unit * scale, 1e-6 * np.abs(want))
        assert np.all((lo[k] - tol <= want) & (want <= hi[k] + tol)), (name, lo[k], hi[k], want)


# Published values: sbml-test-suite cases/stochastic, files dsmts-001-01, -001-11, -001-19, -002-05 and
# -003-01 (-mean.csv / -sd.csv), rows t = 0, 1, 2, 9, 10 — the DSMTS's analytic solutions.
_T = np.array([0.0, 1.0, 2.0, 9.0, 10.0])


@pytest.mark.parametrize("case", ["00001", "00011", "00019"])
def test_dsmts_birth_death_cases_mirrored(case):
    """00001: X → 2X (0.1 X), X → ∅ (0.11 X), X(0) = 100; 00011: the same in concentration units in a
    compartment of size 2 (propensities halve); 00019: plus an assignment rule y = 2X."""
    rules = (f'<assignmentRule variable="y">{_MATH.format(_times("<cn>2</cn>", "<ci>X</ci>"))}</assignmentRule>'
             if case == "00019" else "")
    species = _sp("X", 100, substance=case != "00011") + (_sp("y", 0) if case == "00019" else "")
    doc = _doc(species, _BIRTH_DEATH, _par("Lambda", 0.1) + _par("Mu", 0.11), rules,
               size=2.0 if case == "00011" else 1.0)
    net, initial = from_sbml(doc)
    res = sp_ode.transient_distribution(net, initial, _T, tol=1e-12, moment_tol=1e-9)
    if case == "00011":
        _published_inside(res, net, "X", _T, [100, 99.50125, 99.00498, 95.59975, 95.12294],
                          [0, 3.228244105, 4.548344754, 9.398894616, 9.87031965], 5)
    else:
        _published_inside(res, net, "X", _T, [100, 99.00498, 98.01987, 91.39312, 90.48374],
                          [0, 4.54834, 6.38431, 12.85255, 13.44708], 5)
    if case == "00019":
        _published_inside(res, net, "y", _T, [200, 198.00996, 196.03974, 182.78624, 180.96748],
                          [0, 9.09668, 12.76862, 25.70510, 26.89416], 5)


def test_dsmts_immigration_death_with_boundary_species_and_dimerisation_mirrored():
    # 00024: Source → X (Alpha = 10), X → Sink (Mu = 0.1 X), Source and Sink boundary species (constant 0)
    reactions = (_rx("Immigration", [("Source", 1)], [("X", 1)], "<ci>Alpha</ci>")
                 + _rx("Death", [("X", 1)], [("Sink", 1)], _times("<ci>Mu</ci>", "<ci>X</ci>")))
    doc = _doc(_sp("X", 0) + _sp("Source", 0, boundary=True) + _sp("Sink", 0, boundary=True), reactions,
               _par("Alpha", 10.0) + _par("Mu", 0.1))
    net, initial = from_sbml(doc)
    res = sp_ode.transient_distribution(net, initial, _T, tol=1e-12, moment_tol=1e-9)
    _published_inside(res, net, "X", _T, [0, 9.51626, 18.12692, 59.34303, 63.21206],
                      [0, 3.084843594, 4.257572078, 7.703442737, 7.950601235], 5)
    _published_inside(res, net, "Sink", _T, [0] * 5, [0] * 5, 0)
    # 00030: 2P → P2 (k1 P(P − 1)/2), P2 → 2P (k2 P2), P(0) = 100: a closed class of 51 states, no leak
    law = "<apply><divide/><apply><times/><ci>k1</ci><ci>P</ci><apply><minus/><ci>P</ci><cn>1</cn></apply></apply><cn>2</cn></apply>"
    reactions = (_rx("Dimerisation", [("P", 2)], [("P2", 1)], law)
                 + _rx("Disassociation", [("P2", 1)], [("P", 2)], _times("<ci>k2</ci>", "<ci>P2</ci>")))
    net, initial = from_sbml(_doc(_sp("P", 100) + _sp("P2", 0), reactions, _par("k1", 0.001) + _par("k2", 0.01)))
    res = sp_ode.transient_distribution(net, initial, _T, tol=1e-12)
    assert res.space.n == 51 and res.leaked[-1] == 0.0
    _published_inside(res, net, "P", _T, [100, 91.031766, 83.61694, 54.574231, 52.214271],
                      [0, 3.862504, 4.815194, 5.558298, 5.51176], 6)
    _published_inside(res, net, "P2", _T, [0, 4.484117, 8.19153, 22.712885, 23.892864],
                      [0, 1.931252, 2.407597, 2.779149, 2.75588], 6)
    # negative control: a published value nudged by 1e-4 falls outside
    with pytest.raises(AssertionError):
        _published_inside(res, net, "P", _T, [100, 91.031866, 83.61694, 54.574231, 52.214271],
                          [0, 3.862504, 4.815194, 5.558298, 5.51176], 6)


# --- bounded work: function definitions expanded once, sizes guarded (issue 35, item 8) --------

_MATHML = 'xmlns="http://www.w3.org/1998/Math/MathML"'


def _chain(levels: int, f0: str, body) -> str:
    """`_law` whose birth law is y·f_levels(k), f_j(x) = body(j) calling f_{j-1} twice, f_0(x) = f0."""
    fds = [f'<functionDefinition id="f0"><math {_MATHML}><lambda><bvar><ci>x</ci></bvar>{f0}</lambda></math>'
           "</functionDefinition>"]
    fds += [f'<functionDefinition id="f{j}"><math {_MATHML}><lambda><bvar><ci>x</ci></bvar>{body(j)}</lambda>'
            "</math></functionDefinition>" for j in range(1, levels + 1)]
    return _law(f"<apply><times/><ci>y</ci><apply><ci>f{levels}</ci><ci>k</ci></apply></apply>",
                "<listOfFunctionDefinitions>" + "".join(fds) + "</listOfFunctionDefinitions>")


def _twice(op: str, shifted: bool = False):
    """f_j(x) = f_{j-1}(x) op f_{j-1}(x + 2^j) (shifted: 2^j distinct terms) or f_{j-1}(x) op f_{j-1}(x)."""
    def body(j: int) -> str:
        second = f"<apply><plus/><ci>x</ci><cn>{2**j}</cn></apply>" if shifted else "<ci>x</ci>"
        return f"<apply><{op}/><apply><ci>f{j - 1}</ci><ci>x</ci></apply><apply><ci>f{j - 1}</ci>{second}</apply></apply>"
    return body


def _composed(j: int) -> str:
    return f"<apply><ci>f{j - 1}</ci><apply><ci>f{j - 1}</ci><ci>x</ci></apply></apply>"


def test_a_chain_of_function_definitions_is_expanded_once_per_definition():
    # f_j(x) = f_{j-1}(x) + f_{j-1}(x): 2^20 calls when re-expanded at every call (> 30 s); one expansion each here
    net, _ = from_sbml(_chain(20, "<ci>x</ci>", _twice("plus")), slow=["y"])
    k, y = sympy.symbols("k y")
    assert net.propensity_exprs[0] == 2**20 * k * y        # closed form: f_20(x) = 2^20·x
    # composition f_j = f_{j-1}∘f_{j-1} of x + 1: f_20(x) = x + 2^20
    net, _ = from_sbml(_chain(20, "<apply><plus/><ci>x</ci><cn>1</cn></apply>", _composed), slow=["y"])
    assert sympy.simplify(net.propensity_exprs[0] - y * (k + 2**20)) == 0


@pytest.mark.parametrize("f0, body, limit", [
    ("<apply><exp/><ci>x</ci></apply>", _composed, "MAX_TREE_DEPTH"),                 # exp∘exp∘…: 2^20 deep
    ("<apply><power/><ci>x</ci><cn>2</cn></apply>", _twice("plus", shifted=True), "MAX_TERMS"),  # 2^20 squares
    ("<apply><times/><ci>x</ci><ci>x</ci></apply>", _composed, "MAX_EXACT_BITS"),     # x^(2^(2^20))
    ("<ci>x</ci>", _twice("times", shifted=True), "MAX_TERMS"),                       # 2^20 distinct factors
])
def test_function_definitions_that_grow_are_refused_naming_the_reaction_and_limit(f0, body, limit):
    from sp_ode.networks.network import NetworkSyntaxError

    with pytest.raises(NetworkSyntaxError, match=limit) as exc:
        from_sbml(_chain(20, f0, body), slow=["y"])
    assert exc.value.reaction == "birth" and "reaction 'birth'" in str(exc.value)


def test_a_recursive_function_definition_is_refused():
    from sp_ode.networks.network import NetworkSyntaxError

    doc = _law("<apply><ci>f</ci><ci>k</ci></apply>", _function("<apply><ci>f</ci><ci>x</ci></apply>"))
    with pytest.raises(NetworkSyntaxError, match="MAX_CALL_DEPTH"):
        from_sbml(doc)


@pytest.mark.parametrize("law, rule", [("10^(2000000001/2)", "MAX_EXACT_BITS"), ("k/0", "division by zero"),
                                       ("sqrt(2)^(10^11)", "MAX_EXACT_BITS")])
def test_antimony_rates_that_grow_or_divide_by_zero_are_refused(law, rule):
    from sp_ode.networks.network import NetworkSyntaxError

    with pytest.raises(NetworkSyntaxError, match=rule) as exc:
        from_antimony(f"model m\n J0: -> M; {law}\n J1: M -> ; M\n M = 0; k = 1\nend")
    assert exc.value.reaction == "J0"


# --- GillesPy2's own example models, as its SBML export writes them (issue 35, item 3) ---------

def _gillespy2_sbml(name: str, species: dict, parameters: dict, reactions: list, volume: float = 1.0) -> str:
    """SBML written call for call as GillesPy2's `gillespy2.sbml.SBMLexport.export` writes it (GillesPy2 1.8).

    An L3V2 document with a model that has a name but no id; one compartment `vol`; species
    with `initDefaults()` (so hasOnlySubstanceUnits = false: concentrations, in a compartment of
    size 1) and an initial *amount*; parameters with `initDefaults()` and a value; each reaction
    with `initDefaults()`, constant species references, and as kinetic law the reaction's
    *propensity function* in counts, parsed by `libsbml.parseL3Formula` — for a mass-action
    reaction GillesPy2 writes `rate * X * Y / vol` (Reaction._create_mass_action).
    """
    doc = libsbml.SBMLDocument(3, 2)
    model = doc.createModel()
    model.setName(name)
    comp = model.createCompartment()
    comp.setId("vol")
    comp.setConstant(True)
    comp.setSize(volume)
    comp.setSpatialDimensions(3)
    for sid, amount in species.items():
        s = model.createSpecies()
        s.initDefaults()
        s.setCompartment("vol")
        s.setId(sid)
        s.setInitialAmount(amount)
    for pid, value in parameters.items():
        p = model.createParameter()
        p.initDefaults()
        p.setId(pid)
        p.setValue(value)
    for rid, reactants, products, propensity in reactions:
        r = model.createReaction()
        r.initDefaults()
        r.setId(rid)
        for refs, create in ((reactants, r.createReactant), (products, r.createProduct)):
            for sid, nu in refs.items():
                ref = create()
                ref.setConstant(True)
                ref.setSpecies(sid)
                ref.setStoichiometry(nu)
        r.createKineticLaw().setMath(libsbml.parseL3Formula(propensity))
    return libsbml.SBMLWriter().writeSBMLToString(doc)


def _michaelis_menten_gillespy2(A=301, B=120):
    """gillespy2 test/example_models.py create_michaelis_menten: substrate A, enzyme B, complex C, product D."""
    return _gillespy2_sbml("Michaelis_Menten", {"A": A, "B": B, "C": 0, "D": 0},
                           {"rate1": 0.0017, "rate2": 0.5, "rate3": 0.1},
                           [("r1", {"A": 1, "B": 1}, {"C": 1}, "rate1 * A * B / vol"),
                            ("r2", {"C": 1}, {"A": 1, "B": 1}, "rate2 * C"),
                            ("r3", {"C": 1}, {"B": 1, "D": 1}, "rate3 * C")])


def _schlogl_gillespy2(n=300):
    """gillespy2 test/example_models.py create_schlogl: A + X -> 2X (k1), B + X -> C (k2), all counts 300."""
    return _gillespy2_sbml("Schlogl", {"A": n, "B": n, "C": n, "X": n}, {"k1": 1.0, "k2": 1.0},
                           [("j1", {"A": 1, "X": 1}, {"X": 2}, "k1 * A * X / vol"),
                            ("j2", {"B": 1, "X": 1}, {"C": 1}, "k2 * B * X / vol")])


def _dense_reference(x0, stoich, propensity, t):
    """p(t) by brute force: every state reachable from x0 by breadth-first search, a dense Q, scipy's expm.

    Independent of sp_ode's conservation laws, state enumeration and uniformisation.
    """
    from scipy.linalg import expm

    x0 = tuple(x0)
    index, order, frontier = {x0: 0}, [x0], [x0]
    while frontier:
        nxt = []
        for x in frontier:
            for nu, a in zip(stoich, propensity(np.array(x))):
                y = tuple(int(v) for v in np.array(x) + nu)
                if a > 0 and y not in index:
                    index[y] = len(order)
                    order.append(y)
                    nxt.append(y)
        frontier = nxt
    Q = np.zeros((len(order), len(order)))
    for i, x in enumerate(order):
        for nu, a in zip(stoich, propensity(np.array(x))):
            if a > 0:
                Q[i, index[tuple(int(v) for v in np.array(x) + nu)]] += a
                Q[i, i] -= a
    p0 = np.zeros(len(order))
    p0[0] = 1.0
    return np.array(order), p0 @ expm(Q * t)


def test_gillespy2_michaelis_menten_laws_of_mixed_signs_are_found():
    net, initial = from_sbml(_michaelis_menten_gillespy2())
    assert net.name == "sbml" and initial == {"A": 301, "B": 120, "C": 0, "D": 0}
    # elimination gives a basis with mixed signs; the extreme rays are the enzyme and the substrate
    assert net.nonnegative_conservation_laws().tolist() == [[0, 1, 1, 0], [1, 0, 1, 1]]
    assert np.all(net.conservation_laws() >= 0)
    space = net.state_space(initial=initial)         # no bounds needed: the laws bound every species
    assert space.bounds.tolist() == [301, 120, 120, 301]
    # the class: C = 0…120 and D = 0…301 − C (then A = 301 − C − D, B = 120 − C): Σ_C (302 − C) states
    assert space.n == sum(302 - c for c in range(121))


@pytest.mark.parametrize("model, x0, stoich, rates, t", [
    (lambda: _michaelis_menten_gillespy2(A=12, B=3), [12, 3, 0, 0],
     [[-1, -1, 1, 0], [1, 1, -1, 0], [0, 1, -1, 1]],
     lambda x: [0.0017 * x[0] * x[1], 0.5 * x[2], 0.1 * x[2]], 20.0),
    (lambda: _schlogl_gillespy2(n=6), [6, 6, 6, 6], [[-1, 0, 0, 1], [0, -1, 1, -1]],
     lambda x: [x[0] * x[3], x[1] * x[3]], 0.2),
])
def test_gillespy2_models_from_sbml_agree_with_a_dense_solve_of_the_reachable_chain(model, x0, stoich, rates, t):
    net, initial = from_sbml(model())
    res = sp_ode.transient_distribution(net, initial, [t], tol=1e-12)
    assert res.leaked[-1] == 0.0                       # the class is finite: nothing leaves it
    states, ref = _dense_reference(x0, np.array(stoich), lambda x: np.array(rates(x)), t)
    inside = res.space.contains(states)
    assert inside.all()                                # every reachable state is in the projection
    p = res.p[-1][res.space.index(states)]
    np.testing.assert_allclose(p, ref, atol=1e-12)
    assert abs(res.p[-1].sum() - 1.0) < 1e-12 and abs(p.sum() - 1.0) < 1e-12   # no mass off the reachable set
    # negative control: the same check fails on the law of a later time
    _, later = _dense_reference(x0, np.array(stoich), lambda x: np.array(rates(x)), 1.5 * t)
    assert np.abs(p - later).max() > 1e-3


def test_gillespy2_michaelis_menten_at_full_size_agrees_with_the_chain_reduced_by_hand():
    # GillesPy2's counts (A = 301 substrate, B = 120 enzyme): refused before (a box of 1.3e9 states scanned
    # for 7.5 min); the reference removes the conserved A and B by hand, A = 301 − C − D, B = 120 − C
    net, initial = from_sbml(_michaelis_menten_gillespy2())
    res = sp_ode.transient_distribution(net, initial, [10.0], tol=1e-10)
    assert res.space.n == 29282 and res.leaked[-1] == 0.0
    with pytest.warns(NetworkWarning, match="'D' is produced"):   # D only grows: so it does
        reduced = ReactionNetwork("r1: 0 => C, rate1*(301 - C - D)*(120 - C); r2: C => 0, rate2*C; "
                                  "r3: C => D, rate3*C", parameters={"rate1": 0.0017, "rate2": 0.5, "rate3": 0.1})
    ref = sp_ode.transient_distribution(reduced, {"C": 0, "D": 0}, [10.0], bounds={"C": 120}, total=301, tol=1e-10)
    for s in ("C", "D"):   # two projections, two generators: the same law within both certified ℓ1 bounds
        (pa, ea), (pb, eb) = res.marginal(s), ref.marginal(s)
        n = max(len(pa), len(pb))
        gap = np.abs(np.pad(pa, (0, n - len(pa))) - np.pad(pb, (0, n - len(pb)))).sum()
        assert gap <= ea + eb + 1e-12 and ea + eb < 1e-8
    np.testing.assert_allclose(res.mean("A")[-1], 301 - ref.mean("C")[-1] - ref.mean("D")[-1], rtol=1e-9)
    np.testing.assert_allclose(res.mean("B")[-1], 120 - ref.mean("C")[-1], rtol=1e-9)


def test_gillespy2_schlogl_at_full_size_is_projected_on_its_class():
    # refused before at once (a box of 1.3e11 states): the laws B + C = 600 and A + C + X = 900 (mixed signs
    # in a basis) bound every species, and only the free species C, X are enumerated
    net, initial = from_sbml(_schlogl_gillespy2())
    assert net.nonnegative_conservation_laws().tolist() == [[0, 1, 1, 0], [1, 0, 1, 1]]
    space = net.state_space(initial=initial)
    # the class: C = 0…600, X = 0…900 − C (A = 900 − C − X ≥ 0, B = 600 − C): Σ_C (901 − C) states
    assert space.n == sum(901 - c for c in range(601)) == 361201
    x = space.states
    assert np.all(x[:, 1] + x[:, 2] == 600) and np.all(x[:, 0] + x[:, 2] + x[:, 3] == 900)
