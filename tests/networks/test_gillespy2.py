"""`sp_ode.from_gillespy2`: GillesPy2 models keep GillesPy2's own propensities.

The dimerisation and Michaelis–Menten models are GillesPy2's example models through their builders in
`bench.networks.gillespy2_examples` (the benchmark's; other rates, counts and volumes here), the birth–death
process and the custom `propensity_function` written here in the same form.  Provenance of the expected numbers:
(a) propensities: GillesPy2's mass-action convention computed by hand (k·vol, k·A, k·A·B/vol,
k·A·(A − 1)/vol; gillespy2/core/reaction.py, `_create_mass_action`); (b) means: an independent
method, GillesPy2's own NumPySSASolver (a few thousand trajectories, fixed seed), against sp_ode's
certified transient or stationary law, |z| ≤ 4.  The negative control transcribes the
dimerisation by hand into sp_ode's grammar (`2 A -> B, k/vol`, the ½ of Gillespie's convention
kept) and the same z-test rejects it.
"""
from __future__ import annotations

import sys

import numpy as np
import pytest

import sp_ode
from bench.networks.gillespy2_examples import dimerization, michaelis_menten as gillespy2_michaelis_menten
from sp_ode.networks.gillespy2 import GillesPy2FeatureError
from sp_ode.networks.network import NetworkSyntaxError, ReactionNetwork

gillespy2 = pytest.importorskip("gillespy2")
# GillesPy2 1.8.3 walks propensity strings with ast's deprecated visit_Num (its warning, not ours)
pytestmark = pytest.mark.filterwarnings("ignore:visit_Num is deprecated:DeprecationWarning")

N_TRAJ = 2000
Z_MAX = 4.0


def dimerisation():
    """GillesPy2's Dimerization example at a larger rate and volume (k_c = 3, k_d = 0.1, vol = 300)."""
    return dimerization(k_c=3.0, k_d=0.1, volume=300.0)


def michaelis_menten():
    """GillesPy2's Michaelis_Menten example, smaller: A 30, enzyme B 10, rates 0.17, 0.1, 0.1, volume 10."""
    return gillespy2_michaelis_menten(rate1=0.17, rate2=0.1, rate3=0.1, A=30, B=10, volume=10.0)


def birth_death():
    """0 -> X at k_b (GillesPy2: k_b·vol), X -> 0 at k_d: stationary Poisson(k_b·vol/k_d) = Poisson(8)."""
    m = gillespy2.Model(name="birth_death", volume=4.0)
    m.add_parameter([gillespy2.Parameter(name="k_b", expression=2.0), gillespy2.Parameter(name="k_d", expression=1.0)])
    m.add_species(gillespy2.Species(name="X", initial_value=8))
    m.add_reaction([gillespy2.Reaction(name="birth", reactants={}, products={"X": 1}, rate="k_b"),
                    gillespy2.Reaction(name="death", reactants={"X": 1}, products={}, rate="k_d")])
    return m


def repressed_gene():
    """A self-repressing gene: production with a custom propensity_function (`^` as GillesPy2 allows), decay."""
    m = gillespy2.Model(name="repressed_gene", volume=1.0)
    m.add_parameter([gillespy2.Parameter(name="alpha", expression=20.0), gillespy2.Parameter(name="K", expression=5.0),
                     gillespy2.Parameter(name="gamma", expression=1.0)])
    m.add_species(gillespy2.Species(name="P", initial_value=6))
    m.add_reaction([gillespy2.Reaction(name="make", reactants={}, products={"P": 1},
                                       propensity_function="alpha/(1 + (P/K)^2)"),
                    gillespy2.Reaction(name="decay", reactants={"P": 1}, products={}, rate="gamma")])
    return m


def ssa_final(model, t: float, seed: int) -> dict[str, np.ndarray]:
    """Species -> counts (N_TRAJ,) at time t from GillesPy2's NumPySSASolver."""
    model.timespan(gillespy2.TimeSpan([0.0, t]))
    res = gillespy2.NumPySSASolver(model=model).run(number_of_trajectories=N_TRAJ, seed=seed)
    return {s: np.array([traj[s][-1] for traj in res]) for s in model.listOfSpecies}


def counts(net, **columns) -> np.ndarray:
    """States (m, S) in the network's species order from one count array per species."""
    return np.stack([columns[s] for s in net.species], axis=1)


def z_scores(samples: dict, moments: dict) -> np.ndarray:
    """(SSA mean − exact mean) / (exact SD / √N) per species."""
    return np.array([(x.mean() - moments[s][0]) / (moments[s][1] / np.sqrt(x.size)) for s, x in samples.items()])


def transient_moments(net, initial, t) -> dict[str, tuple[float, float]]:
    """Species -> (certified mean, SD) of the CME law at time t (sp_ode.transient_distribution)."""
    res = sp_ode.transient_distribution(net, initial, [t], tol=1e-10)
    out, sds = {}, res.sds()
    for s in net.species:
        (lo, hi), _ = res.intervals(s)
        assert hi[-1] - lo[-1] < 1e-6          # certified: the interval is far narrower than the SSA's error
        out[s] = (0.5 * (lo[-1] + hi[-1]), sds[s][-1])
    return out


# --- (a) the propensities are GillesPy2's, exactly ---------------------------------------------------------

def test_mass_action_propensities_follow_gillespy2s_convention():
    net, initial = sp_ode.from_gillespy2(dimerisation())
    assert initial == {"monomer": 30, "dimer": 0} and net.parameters["vol"] == 300.0
    M, D = np.array([30, 1, 2, 0]), np.array([0, 14, 5, 15])
    a = dict(zip([r.name for r in net.reactions], net.propensities(counts(net, monomer=M, dimer=D))))
    np.testing.assert_allclose(a["r_creation"], 3.0 * M * (M - 1) / 300.0, rtol=1e-15)   # k·A(A−1)/vol, no ½
    np.testing.assert_allclose(a["r_dissociation"], 0.1 * D, rtol=1e-15)                # k·A
    assert a["r_creation"][0] == pytest.approx(3.0 * 30 * 29 / 300)                     # 8.7

    net, _ = sp_ode.from_gillespy2(michaelis_menten())
    A, B, C = np.array([30, 7]), np.array([10, 3]), np.array([0, 2])
    a = dict(zip([r.name for r in net.reactions], net.propensities(counts(net, A=A, B=B, C=C, D=np.array([0, 11])))))
    np.testing.assert_allclose(a["r1"], 0.17 * A * B / 10.0, rtol=1e-15)                # k·A·B/vol
    np.testing.assert_allclose([a["r2"], a["r3"]], [0.1 * C, 0.1 * C], rtol=1e-15)

    net, _ = sp_ode.from_gillespy2(birth_death())
    assert [r.name for r in net.reactions] == ["birth", "death"]
    np.testing.assert_allclose(net.propensities([[0], [5]]), [[8.0, 8.0], [0.0, 5.0]], rtol=1e-15)  # k·vol; k·X


def test_custom_propensity_function_is_the_whole_propensity():
    net, _ = sp_ode.from_gillespy2(repressed_gene())
    make = [r.name for r in net.reactions].index("make")
    assert not net.reactions[make].mass_action                 # `=>`: the string is the propensity
    P = np.array([0, 5, 10])
    np.testing.assert_allclose(net.propensities(P[:, None])[make], 20.0 / (1 + (P / 5.0) ** 2), rtol=1e-15)


def test_summary_prints_propensities_in_counts_and_names_the_convention():
    net, initial = sp_ode.from_gillespy2(dimerisation())
    text = net.summary(initial=initial)
    assert "propensity convention: GillesPy2's (volume vol = 300)" in text and "no 1/2" in text
    assert "a = k_c*monomer*(monomer - 1)/vol" in text and "a = dimer*k_d" in text
    assert "state space: 16 states" in text                     # monomer + 2·dimer = 30: dimer ∈ {0 … 15}
    own = ReactionNetwork("2 A -> B, c; B -> 2 A, d", parameters={"c": 1.0, "d": 1.0}).summary()
    assert "sp_ode's: `->` is stochastic mass action" in own and "a = A*c*(A - 1)/2" in own


# --- (b) the same chemical master equation as GillesPy2's SSA ---------------------------------------------

@pytest.fixture(scope="module")
def dimer_ssa():
    return ssa_final(dimerisation(), 1.0, seed=11)


def test_dimerisation_agrees_with_gillespy2_ssa(dimer_ssa):
    net, initial = sp_ode.from_gillespy2(dimerisation())
    assert np.all(np.abs(z_scores(dimer_ssa, transient_moments(net, initial, 1.0))) <= Z_MAX)


def test_naive_transcription_of_the_dimerisation_is_caught(dimer_ssa):
    # negative control: GillesPy2's k_c copied into sp_ode's `->` (which divides by 2!) halves the rate
    naive = ReactionNetwork("2 monomer -> dimer, k_c/vol; dimer -> 2 monomer, k_d",
                            parameters={"k_c": 3.0, "k_d": 0.1, "vol": 300.0})
    assert np.max(np.abs(z_scores(dimer_ssa, transient_moments(naive, {"monomer": 30}, 1.0)))) > 10 * Z_MAX  # z ≈ 60


def test_michaelis_menten_agrees_with_gillespy2_ssa():
    model = michaelis_menten()
    net, initial = sp_ode.from_gillespy2(model)
    assert np.all(np.abs(z_scores(ssa_final(model, 5.0, seed=12), transient_moments(net, initial, 5.0))) <= Z_MAX)


@pytest.mark.parametrize("build, bound", [(birth_death, 60), (repressed_gene, 60)])
def test_stationary_means_agree_with_gillespy2_ssa(build, bound):
    model = build()
    net, initial = sp_ode.from_gillespy2(model)
    (s,) = net.species
    space = net.state_space({s: bound})
    Q = net.generator(space)
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    x = space.states[:, 0].astype(float)
    assert info["bound"] * bound < 1e-6 and net.truncation(space, p).outflow_rate < 1e-12
    mean, sd = p @ x, np.sqrt(p @ x**2 - (p @ x) ** 2)
    if build is birth_death:
        assert mean == pytest.approx(8.0, rel=1e-9)                      # Poisson(k_b·vol/k_d)
    # started at (birth–death) or near (repression) the mean, which relaxes like e^{-t} or faster: by t = 4 the
    # offset left is below 2 % of |x0 − mean| < 1, a tenth of the SSA's standard error (sd/√N ≈ 0.06)
    assert abs(z_scores(ssa_final(model, 4.0, seed=13), {s: (mean, sd)})[0]) <= Z_MAX


# --- refusals --------------------------------------------------------------------------------------------

def test_missing_gillespy2_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "gillespy2", None)              # `import gillespy2` now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'sp-ode\[gillespy2\]'"):
        sp_ode.from_gillespy2(object())


def test_not_a_model_and_unsupported_features_are_refused_by_name():
    with pytest.raises(TypeError, match="`model` must be a gillespy2.Model; got str"):
        sp_ode.from_gillespy2("dimerisation")
    m = birth_death()
    m.add_event(gillespy2.Event(name="kick", trigger=gillespy2.EventTrigger(expression="t > 1"),
                                assignments=[gillespy2.EventAssignment(variable="X", expression="0")]))
    with pytest.raises(GillesPy2FeatureError, match="event 'kick'") as info:
        sp_ode.from_gillespy2(m)
    assert info.value.features == ["event 'kick'"]


def test_propensity_outside_the_grammar_is_refused_naming_the_reaction():
    m = repressed_gene()
    m.add_reaction(gillespy2.Reaction(name="odd", reactants={"P": 1}, products={}, propensity_function="factorial(P)"))
    with pytest.raises(NetworkSyntaxError, match="reaction 'odd'") as info:
        sp_ode.from_gillespy2(m)
    assert info.value.reaction == "odd"
