"""sp_ode.networks.sbml: SBML and Antimony import of small models written for the tests."""
from __future__ import annotations

import numpy as np
import pytest

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
