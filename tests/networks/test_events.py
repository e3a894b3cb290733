"""Events on the finite state projection (sp_ode.networks.events, docs/theory.md §7.14) against closed forms.

Provenance of every expected number:
* immigration–death 0 → X (α), X → 0 (μX) from X(0) = 0, reset X := 50 at t = 25 (DSMTS 00028): before the
  reset X_t ~ Poisson(α/μ·(1 − e^{−μt})); after it, with s = t − 25 and q = e^{−μs}, the 50 molecules
  survive independently, X_t ~ Binomial(50, q) ⊕ Poisson(α/μ·(1 − q)) (the law is a convolution: closed form);
* pure birth 0 → X (λ) with the state trigger X ≥ 5 → X := 0: the chain is the counting process taken modulo 5,
  P(X_t = k) = Σ_j Pois(5j + k; λt) (closed form);
* DSMTS 00028's published rows at t = 25, 26 (sbml-test-suite cases/stochastic/00028, analytic).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sp_ode.networks.cme.transient import transient_distribution
from sp_ode.networks.events import MAX_CASCADE, Event, EventError
from sp_ode.networks.network import ReactionNetwork

ALPHA, MU = 1.0, 0.1


def _imm_death() -> ReactionNetwork:
    return ReactionNetwork("0 -> X, alpha; X -> 0, mu", parameters={"alpha": ALPHA, "mu": MU})


def _reset_law(t: float, x0: int = 50, te: float = 25.0, kmax: int = 200) -> np.ndarray:
    """Law of X_t on {0 … kmax} for the immigration–death process reset to x0 at te (module docstring)."""
    k = np.arange(kmax + 1)
    if t < te:
        return stats.poisson.pmf(k, ALPHA / MU * (1 - np.exp(-MU * t)))
    q = np.exp(-MU * (t - te))
    return np.convolve(stats.binom.pmf(k, x0, q), stats.poisson.pmf(k, ALPHA / MU * (1 - q)))[: kmax + 1]


def test_time_reset_matches_the_binomial_poisson_closed_form_and_dsmts_00028():
    times = np.array([0.0, 10.0, 24.0, 25.0, 26.0, 30.0, 50.0])
    res = transient_distribution(_imm_death(), {"X": 0}, times, tol=1e-12, moment_tol=1e-9,
                                 events=[Event("reset", {"X": 50}, time=25.0)])
    assert res.method == "uniformization" and res.moment_bound_reason == ""
    for i, t in enumerate(times):
        pm, err = res.marginal("X", i)
        exact = _reset_law(t)[: pm.size]
        assert np.abs(pm - exact).sum() <= err + 1e-12, t         # ℓ1 within the certified FSP + integration bound
    # the reset is constant: the mass that had left the box before t = 25 is put back at X = 50
    assert res.leaked[3] == 0.0 and res.leaked[2] > 0
    (mlo, mhi), (slo, shi) = res.intervals("X")
    q = np.exp(-MU * np.maximum(times - 25, 0))
    mean = np.where(times >= 25, 50 * q + ALPHA / MU * (1 - q), ALPHA / MU * (1 - np.exp(-MU * times)))
    var = np.where(times >= 25, 50 * q * (1 - q) + ALPHA / MU * (1 - q), mean)
    assert np.all(mlo <= mean + 1e-12) and np.all(mean <= mhi + 1e-12)
    assert np.all(slo <= np.sqrt(var) + 1e-9) and np.all(np.sqrt(var) <= shi + 1e-9)
    assert np.max(mhi - mlo) < 1e-8
    # DSMTS 00028 published (analytic): t = 25 → mean 50.0, SD 0.0; t = 26 → 46.1934967214, SD 2.29280593761
    assert mlo[3] <= 50.0 <= mhi[3] and slo[3] == 0.0
    assert abs(res.mean("X")[4] - 46.1934967214) < 1e-9 and abs(res.sds()["X"][4] - 2.29280593761) < 1e-9


def test_time_reset_inclusive_decides_the_law_at_the_event_time():
    net = _imm_death()
    t = [24.0, 25.0]
    after = transient_distribution(net, {"X": 0}, t, tol=1e-12, events=[Event("r", {"X": 50}, time=25.0)])
    before = transient_distribution(net, {"X": 0}, t, tol=1e-12,
                                    events=[Event("r", {"X": 50}, time=25.0, inclusive=False)])
    assert after.mean("X")[1] == pytest.approx(50.0, abs=1e-9)
    assert before.mean("X")[1] == pytest.approx(ALPHA / MU * (1 - np.exp(-MU * 25)), abs=1e-9)


def test_negative_control_a_wrong_reset_misses_the_closed_form():
    # the same network reset to 49 instead of 50: the certified law excludes the closed form of the reset to 50
    res = transient_distribution(_imm_death(), {"X": 0}, [26.0], tol=1e-12,
                                 events=[Event("reset", {"X": 49}, time=25.0)])
    pm, err = res.marginal("X", 0)
    assert np.abs(pm - _reset_law(26.0)[: pm.size]).sum() > 100 * (err + 1e-12)
    (mlo, mhi), _ = res.intervals("X")
    assert not mlo[0] <= 50 * np.exp(-MU) + ALPHA / MU * (1 - np.exp(-MU)) <= mhi[0]


@pytest.mark.filterwarnings("ignore::sp_ode.networks.network.NetworkWarning")
def test_state_trigger_on_a_pure_birth_process_is_the_counting_process_modulo_5():
    lam = 2.0
    net = ReactionNetwork("0 -> X, lam", parameters={"lam": lam})
    times = np.array([0.5, 2.0, 7.0])
    res = transient_distribution(net, {"X": 0}, times, tol=1e-12, events=[Event("wrap", {"X": 0}, trigger="X >= 5")])
    assert res.leaked.max() == 0.0            # the trigger set closes the chain: nothing leaves {0 … 4}
    j = np.arange(60)
    for i, t in enumerate(times):
        exact = np.array([stats.poisson.pmf(5 * j + k, lam * t).sum() for k in range(5)])
        pm, err = res.marginal("X", i)
        assert np.abs(pm[:5] - exact).sum() <= err + 1e-13 and pm[5:].sum() == 0.0
    # no moment bound covers the jumps, but nothing leaked: the intervals hold the exact mean
    (mlo, mhi), _ = res.intervals("X")
    mean = [sum(k * stats.poisson.pmf(5 * j + k, lam * t).sum() for k in range(5)) for t in times]
    assert np.all(mlo <= np.array(mean) + 1e-12) and np.all(np.array(mean) <= mhi + 1e-12)


@pytest.mark.filterwarnings("ignore::sp_ode.networks.network.NetworkWarning")
def test_a_state_trigger_with_a_non_constant_map_on_a_pure_birth_process():
    # X ≥ 20 ↦ X − 10: X_t = N_t for N_t < 20, else 10 + (N_t − 10) mod 10 (N_t ~ Poisson(λt)).  States ≥ 20 of
    # the box are never occupied, so moves from them (whose images would re-enter the trigger set) do not count.
    lam, t = 3.0, 6.0
    net = ReactionNetwork("0 -> X, lam", parameters={"lam": lam})
    res = transient_distribution(net, {"X": 0}, [t], tol=1e-12, bounds={"X": 40},
                                 events=[Event("down", {"X": "X - 10"}, trigger="X >= 20")])
    k = np.arange(20)
    exact = np.where(k < 10, stats.poisson.pmf(k, lam * t),
                     [stats.poisson.pmf(kk + 10 * np.arange(40), lam * t).sum() for kk in k])
    pm, err = res.marginal("X", 0)
    assert res.leaked[0] == 0.0 and pm[20:].sum() == 0.0
    assert np.abs(pm[:20] - exact).sum() <= err + 1e-13


@pytest.mark.filterwarnings("ignore::sp_ode.networks.network.NetworkWarning")
def test_state_trigger_with_a_leaking_box_has_no_moment_bound_and_says_why():
    net = ReactionNetwork("0 -> X, 1; 0 -> Y, 1")
    res = transient_distribution(net, {}, [3.0], tol=1e-6, events=[Event("wrap", {"X": 0}, trigger="X >= 3")])
    assert res.leaked[0] > 0 and res.intervals("Y") is None
    assert "state-triggered events ['wrap']" in res.moment_bound_reason


def test_refusals_are_typed_and_named():
    net = _imm_death()
    with pytest.raises(EventError, match="inside its own trigger set"):
        transient_distribution(net, {"X": 0}, [1.0], events=[Event("e", {"X": 5}, trigger="X >= 3")])
    with pytest.raises(EventError, match="fire together"):
        transient_distribution(net, {"X": 0}, [1.0], events=[Event("a", {"X": 0}, trigger="X >= 3"),
                                                             Event("b", {"X": 1}, trigger="X > 2")])
    with pytest.raises(EventError, match="same time"):
        transient_distribution(net, {"X": 0}, [1.0], events=[Event("a", {"X": 0}, time=0.5),
                                                             Event("b", {"X": 1}, time=0.5)])
    with pytest.raises(EventError, match="integer"):
        transient_distribution(net, {"X": 0}, [1.0], events=[Event("h", {"X": "X/2"}, time=0.5)])
    with pytest.raises(EventError, match="not a species"):
        transient_distribution(net, {"X": 0}, [1.0], events=[Event("p", {"alpha": 2}, time=0.5)])
    with pytest.raises(EventError, match="initial state"):
        transient_distribution(net, {"X": 4}, [1.0], events=[Event("s", {"X": 0}, trigger="X >= 3")])
    with pytest.raises(EventError, match=f"after {MAX_CASCADE}"):    # two events sending each other back and forth
        transient_distribution(net, {"X": 0}, [1.0], events=[Event("up", {"X": 7}, trigger="X == 3"),
                                                             Event("down", {"X": 3}, trigger="X == 7")])
    with pytest.raises(ValueError, match="exactly one of `time`"):
        Event("bad", {"X": 1})
    with pytest.raises(ValueError, match="finite and > 0"):
        Event("bad", {"X": 1}, time=0.0)
    with pytest.raises(TypeError, match="sequence of sp_ode.networks.events.Event; got an item of type dict"):
        transient_distribution(net, {"X": 0}, [1.0], events=[{"X": 1}])
    with pytest.raises(TypeError, match="got int"):
        transient_distribution(net, {"X": 0}, [1.0], events=3)


def test_one_event_or_a_generator_of_events_is_accepted():
    ev = Event("reset", {"X": 50}, time=25.0)
    one = transient_distribution(_imm_death(), {"X": 0}, [26.0], tol=1e-10, events=ev)
    gen = transient_distribution(_imm_death(), {"X": 0}, [26.0], tol=1e-10, events=(e for e in [ev]))
    assert one.mean("X")[0] == gen.mean("X")[0] == pytest.approx(46.1934967214, abs=1e-8)


def test_initial_value_false_fires_at_the_start():
    # SBML initialValue="false": a trigger already true at t = 0 fires then
    res = transient_distribution(_imm_death(), {"X": 4}, [0.0], tol=1e-12,
                                 events=[Event("s", {"X": 0}, trigger="X >= 3", initial_value=False)])
    assert res.mean("X")[0] == 0.0


def test_a_non_constant_reset_keeps_the_leak_and_refuses_moments_when_mass_had_left():
    # X := X // 2 would not be an integer map in the grammar; use X := max(X - 5, 0), not constant
    res = transient_distribution(_imm_death(), {"X": 0}, [5.0, 10.0], tol=1e-3, bounds={"X": 8},
                                 events=[Event("cut", {"X": "max(X - 5, 0)"}, time=5.0)])
    assert res.leaked[1] >= res.leaked[0] > 0
    assert "not a constant state" in res.moment_bound_reason and res.intervals("X") is None


# --- SBML <listOfEvents> ------------------------------------------------------------------------

def _sbml(trigger: str, assignments: str, extra: str = "") -> str:
    """Dimerisation 2P -> P2, P2 -> 2P (DSMTS 003) with one event (the form of the suite's 00032/00033 files)."""
    law = lambda body: f'<kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML">{body}</math></kineticLaw>'
    ref = lambda s, n: f'<speciesReference species="{s}" stoichiometry="{n}" constant="true"/>'
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version2/core" level="3" version="2"><model id="Dimerisation04">
<listOfCompartments><compartment id="Cell" size="1" constant="true"/></listOfCompartments>
<listOfSpecies>
<species id="P" compartment="Cell" initialAmount="100" hasOnlySubstanceUnits="true" boundaryCondition="false" constant="false"/>
<species id="P2" compartment="Cell" initialAmount="0" hasOnlySubstanceUnits="true" boundaryCondition="false" constant="false"/>
</listOfSpecies>
<listOfParameters><parameter id="k1" value="0.001" constant="true"/><parameter id="k2" value="0.01" constant="true"/>
<parameter id="cut" value="30" constant="true"/></listOfParameters>
<listOfReactions>
<reaction id="Dimerisation" reversible="false"><listOfReactants>{ref("P", 2)}</listOfReactants>
<listOfProducts>{ref("P2", 1)}</listOfProducts>
{law("<apply><divide/><apply><times/><ci>k1</ci><ci>P</ci><apply><minus/><ci>P</ci><cn>1</cn></apply></apply><cn>2</cn></apply>")}
</reaction>
<reaction id="Disassociation" reversible="false"><listOfReactants>{ref("P2", 1)}</listOfReactants>
<listOfProducts>{ref("P", 2)}</listOfProducts>{law("<apply><times/><ci>k2</ci><ci>P2</ci></apply>")}</reaction>
</listOfReactions>
<listOfEvents><event id="reset" useValuesFromTriggerTime="true">{extra}
<trigger initialValue="false" persistent="true"><math xmlns="http://www.w3.org/1998/Math/MathML">{trigger}</math></trigger>
<listOfEventAssignments>{assignments}</listOfEventAssignments></event></listOfEvents>
</model></sbml>"""


_T = '<csymbol encoding="text" definitionURL="http://www.sbml.org/sbml/symbols/time"> t </csymbol>'
_RESET = ('<eventAssignment variable="P"><math xmlns="http://www.w3.org/1998/Math/MathML"><cn>100</cn></math>'
          '</eventAssignment><eventAssignment variable="P2"><math xmlns="http://www.w3.org/1998/Math/MathML">'
          '<cn>0</cn></math></eventAssignment>')


def test_sbml_events_are_read_as_time_and_state_triggers():
    pytest.importorskip("libsbml")
    from sp_ode.networks.sbml import SBMLFeatureError, from_sbml

    state = _sbml("<apply><gt/><ci>P2</ci><ci>cut</ci></apply>", _RESET)
    with pytest.raises(SBMLFeatureError, match=r"event 'reset'.*with_events=True"):
        from_sbml(state)                             # an event silently dropped would change the answer
    net, initial, (ev,) = from_sbml(state, with_events=True)
    assert ev.name == "reset" and ev.time is None and not ev.initial_value
    P2 = next(iter(ev.trigger.free_symbols))          # P2 > cut, with the parameter's value 30
    assert str(P2) == "P2" and bool(ev.trigger.subs(P2, 31)) and not bool(ev.trigger.subs(P2, 30))
    assert {k: float(v) for k, v in ev.assignments.items()} == {"P": 100.0, "P2": 0.0}
    # the state-triggered reset closes the conservation class P + 2 P2 = 100: p(t) is exact (no leak)
    res = transient_distribution(net, initial, [5.0], tol=1e-12, events=[ev])
    assert res.leaked[0] == 0.0 and res.space.states[:, 1].max() <= 50
    assert res.p[0][res.space.states[:, 1] > 30].sum() == 0.0       # the trigger set holds no mass
    (ev_t,) = from_sbml(_sbml(f"<apply><geq/>{_T}<cn>25</cn></apply>", _RESET), with_events=True)[2]
    assert ev_t.time == 25.0 and ev_t.inclusive
    (ev_lt,) = from_sbml(_sbml(f"<apply><lt/><cn>25</cn>{_T}</apply>", _RESET), with_events=True)[2]
    assert ev_lt.time == 25.0 and not ev_lt.inclusive


def test_sbml_event_features_the_fsp_cannot_honour_are_refused_by_name():
    pytest.importorskip("libsbml")
    from sp_ode.networks.sbml import SBMLFeatureError, from_sbml

    mixed = f"<apply><and/><apply><gt/>{_T}<cn>5</cn></apply><apply><gt/><ci>P2</ci><cn>3</cn></apply></apply>"
    with pytest.raises(SBMLFeatureError, match="time enters other than"):
        from_sbml(_sbml(mixed, _RESET), with_events=True)
    delay = '<delay><math xmlns="http://www.w3.org/1998/Math/MathML"><cn>1</cn></math></delay>'
    with pytest.raises(SBMLFeatureError, match="delay of event 'reset'"):
        from_sbml(_sbml(f"<apply><geq/>{_T}<cn>25</cn></apply>", _RESET, delay), with_events=True)
    to_k = '<eventAssignment variable="k1"><math xmlns="http://www.w3.org/1998/Math/MathML"><cn>1</cn></math></eventAssignment>'
    with pytest.raises(SBMLFeatureError, match="assigns 'k1', which is not a species state"):
        from_sbml(_sbml(f"<apply><geq/>{_T}<cn>25</cn></apply>", to_k), with_events=True)
    with pytest.raises(SBMLFeatureError, match="not a number > 0"):
        from_sbml(_sbml(f"<apply><geq/>{_T}<cn>0</cn></apply>", _RESET), with_events=True)
