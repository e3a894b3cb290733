"""sp_ode.networks.network: parsing, propensities, the FSP state space and generator, truncation, bad input."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import poisson

import sp_ode
from sp_ode.networks.network import (
    NegativeCountError,
    NetworkError,
    NetworkSyntaxError,
    NetworkWarning,
    PropensityError,
    ReactionNetwork,
    TruncationError,
    UnknownSymbolError,
    UnusedSlowVariableError,
)
from tests.checkers import assert_stationary

TELEGRAPH = "G_off -> G_on, k_on*y; G_on -> G_off, k_off; G_on -> G_on + M, k_m; M -> 0, g_m"
TP = {"k_on": 1.0, "k_off": 2.0, "k_m": 20.0, "g_m": 1.0}


def _reference_generator(net, space, y):
    """Readable loop builder: one state and one reaction at a time, propensities by hand (mass action)."""
    idx = {tuple(s): i for i, s in enumerate(space.states.tolist())}
    n = space.n
    Q = np.zeros((n, n))
    for i, x in enumerate(space.states.tolist()):
        env = dict(zip(net.species, x)) | dict(zip(net.slow, np.ravel(y))) | net.parameters
        for r, rx in enumerate(net.reactions):
            a = eval(rx.rate.replace("^", "**"), {"__builtins__": {}}, env)  # test-only: trusted literal
            if rx.mass_action:
                for s, c in rx.reactants:
                    a *= math.comb(x[net.species.index(s)], c)
            target = tuple(np.add(x, net.stoichiometry[r]).tolist())
            if a > 0 and target in idx and target != tuple(x):
                Q[i, idx[target]] += a
        Q[i, i] = -Q[i].sum()
    return Q


def test_parse_species_stoichiometry_and_mass_action():
    net = ReactionNetwork("dimer: 2 A + B -> C, k; C => 0, v*C/(K + C); 0 -> A, 3", parameters={"k": 2.0, "v": 1.0,
                                                                                               "K": 4.0})
    assert net.species == ("A", "B", "C")
    assert net.stoichiometry.tolist() == [[-2, -1, 1], [0, 0, -1], [1, 0, 0]]
    assert [r.name for r in net.reactions] == ["dimer", "R2", "R3"]
    a = net.propensities([[3, 2, 5]])
    # Gillespie mass action: k·C(3,2)·C(2,1) = 2·3·2; `=>` is the propensity itself; constant inflow.
    np.testing.assert_allclose(a[:, 0], [12.0, 5 / 9, 3.0], rtol=1e-15)


def test_species_named_like_sympy_constants_are_symbols():
    net = ReactionNetwork("E + S -> C, k; C -> E + S, 1; I -> N, 2", parameters={"k": 1.0})
    assert net.propensities([[2, 3, 0, 1, 0]])[:, 0].tolist() == [6.0, 0.0, 2.0]


@pytest.mark.parametrize("text, bounds, initial, y", [
    (TELEGRAPH, {"M": 12}, {"G_off": 1}, [0.7]),
    ("0 -> A, a*y; A -> 0, 1; A + B -> C, 0.5; C -> A + B, 2; 0 -> B, 3; B -> 0, 1", {"A": 4, "B": 4, "C": 3}, None,
     [1.3]),
    ("2 A -> B, c; B -> 2 A, 1; 0 -> A, y^2; A -> 0, 0.3", {"A": 6, "B": 3}, None, [2.0]),
])
def test_generator_matches_loop_reference(text, bounds, initial, y):
    params = dict(TP) | {"a": 2.0, "c": 0.4}
    used = {k: v for k, v in params.items() if k in text}
    net = ReactionNetwork(text, parameters=used, slow=["y"])
    space = net.state_space(bounds, initial=initial)
    Q = net.generator(space, y)
    assert isinstance(Q, sp.csr_array) and Q.dtype == np.float64
    np.testing.assert_allclose(Q.toarray(), _reference_generator(net, space, y), rtol=1e-14, atol=1e-14)
    sp_ode.check_generator(Q)


def test_generator_reference_detects_a_wrong_rate():
    net = ReactionNetwork(TELEGRAPH, parameters=TP, slow=["y"])
    space = net.state_space({"M": 6}, initial={"G_off": 1})
    wrong = net.with_parameters(k_m=21.0)
    assert np.abs(wrong.generator(space, [1.0]).toarray() - _reference_generator(net, space, [1.0])).max() > 0.5


def test_toggle_generator_equals_independent_cme_builder():
    net = ReactionNetwork("0 => A, a/(1 + (B/K)^h); A -> 0, 1; 0 => B, a/(1 + (A/K)^h); B -> 0, 1",
                          parameters={"a": 6.0, "K": 3.0, "h": 2.0})
    space = net.state_space({"A": 9, "B": 9})
    Q = net.generator(space)
    ref = sp_ode.cme_two_species(10, production=6.0, repression=(3.0, 2.0))
    assert abs(Q - ref).max() == 0.0
    assert abs(net.with_parameters(h=1.0).generator(space) - ref).max() > 0.1


def test_state_space_conservation_total_and_lookup():
    net = ReactionNetwork(TELEGRAPH, parameters=TP, slow=["y"])
    assert net.conservation_laws().tolist() == [[1, 1, 0]]
    space = net.state_space({"M": 10}, initial={"G_on": 1})
    assert space.n == 22 and np.all(space.states[:, 0] + space.states[:, 1] == 1)
    assert np.array_equal(space.index(space.states), np.arange(space.n))
    assert not space.contains(np.array([[1, 1, 0], [0, 1, 11]])).any()
    tri = ReactionNetwork("0 -> A, 1; A -> B, 1; B -> 0, 1").state_space(total=5)
    assert tri.n == 21 and tri.states.sum(axis=1).max() == 5          # C(5 + 2, 2) states


def test_birth_death_stationary_is_truncated_poisson_and_truncation_is_reported():
    net = ReactionNetwork("0 -> M, k*y; M -> 0, g", parameters={"k": 4.0, "g": 1.0}, slow=["y"])
    for N in (20, 8):
        space = net.state_space({"M": N})
        Q = net.generator(space, [2.0])
        p = sp_ode.stationary_distribution(Q.toarray())
        assert_stationary(Q, p)
        ref = poisson.pmf(np.arange(N + 1), 8.0)
        np.testing.assert_allclose(p, ref / ref.sum(), rtol=1e-13)
        rep = net.truncation(space, p, [2.0], horizon=1.0)
        # outflow rate = p_N · k·y exactly (only the birth at N leaves the box)
        assert rep.outflow_rate == pytest.approx(p[-1] * 8.0, rel=1e-14)
        assert rep.leaked_mass <= rep.outflow_rate * 1.0 * (1 + 1e-9)   # leak rate never exceeds its start
    with pytest.raises(TruncationError, match=r"leaked mass by T = 1: .* raise it") as exc:
        net.truncation(space, p, [2.0], horizon=1.0, tol=1e-3)
    assert exc.value.species == "M" and exc.value.leaked > 1e-3


def test_sink_leak_matches_closed_form_for_pure_death():
    """Sink bound against a closed form: from δ₃ on J = {0…3}, with no death inside J, the only move
    is the birth 3 → 4 (rate k·y = 0.5) that leaves J, so the mass leaked by T = 2 is 1 − e^{−1}."""
    net = ReactionNetwork("0 -> M, k*y; M => 0, g*Max(M - 3, 0)", parameters={"k": 0.5, "g": 1.0}, slow=["y"])
    space = net.state_space({"M": 3})
    p0 = np.zeros(4)
    p0[3] = 1.0
    rep = net.truncation(space, p0, [1.0], horizon=2.0)
    assert rep.leaked_mass == pytest.approx(1 - math.exp(-1.0), rel=1e-12)


def test_generator_jax_matches_sparse(x64):
    import jax

    net = ReactionNetwork(TELEGRAPH, parameters=TP, slow=["y"])
    space = net.state_space({"M": 15}, initial={"G_off": 1})
    Q_of_y = net.generator_jax(space)
    np.testing.assert_allclose(np.asarray(Q_of_y(np.array([0.8]))), net.generator(space, [0.8]).toarray(),
                               rtol=1e-14, atol=1e-14)
    dQ = jax.jacfwd(Q_of_y)(np.array([0.8]))[..., 0]      # ∂Q/∂y = k_on on G_off → G_on moves
    assert float(np.abs(dQ).sum()) == pytest.approx(2 * 16 * 1.0)


# --- bad input: typed errors naming the reaction or species -------------------------------------

def test_unknown_species_in_rate():
    with pytest.raises(UnknownSymbolError, match=r"reaction 'R2' .*unknown species 'P'") as exc:
        ReactionNetwork("0 -> A, k; A -> 0, g*P", parameters={"k": 1.0, "g": 1.0})
    assert exc.value.reaction == "R2" and exc.value.species == "P"


def test_stoichiometry_that_makes_counts_negative():
    net = ReactionNetwork("0 -> A, 1; leak: A => 0, 0.5", parameters={})
    with pytest.raises(NegativeCountError, match=r"'leak'.*state \{A=0\}.*'A' negative") as exc:
        net.generator(net.state_space({"A": 5}))
    assert exc.value.reaction == "leak" and exc.value.species == "A"
    ReactionNetwork("0 -> A, 1; leak: A -> 0, 0.5").generator(net.state_space({"A": 5}))  # mass action: fine


@pytest.mark.parametrize("rate, match", [("2 - A", r"propensity -1\.0 at state \{A=3\}"),
                                         ("1/(A - 2)^2", r"propensity inf at state \{A=2\}")])
def test_negative_or_nonfinite_propensity(rate, match):
    net = ReactionNetwork(f"prod: 0 => A, {rate}; A -> 0, 1")
    with pytest.raises(PropensityError, match=match) as exc:
        net.generator(net.state_space({"A": 5}))
    assert exc.value.reaction == "prod"


def test_slow_variable_no_reaction_uses():
    with pytest.raises(UnusedSlowVariableError, match=r"'z' appears in no rate") as exc:
        ReactionNetwork("0 -> A, y; A -> 0, 1", slow=["y", "z"])
    assert exc.value.species == "z"


def test_conservation_without_initial_and_other_projection_errors():
    net = ReactionNetwork(TELEGRAPH, parameters=TP, slow=["y"])
    with pytest.raises(NetworkError, match=r"conserve G_off \+ G_on; pass `initial=`"):
        net.state_space({"M": 5, "G_on": 1, "G_off": 1})
    with pytest.raises(NetworkError, match=r"species 'M' has no bound"):
        net.state_space(initial={"G_off": 1})
    with pytest.raises(NetworkError, match=r"`bounds` names 'X'"):
        net.state_space({"X": 3}, initial={"G_off": 1})


@pytest.mark.parametrize("text, match", [("A B, k", "has no arrow"), ("A -> B", "has no rate"),
                                         ("A -> 2 $, k", "cannot read the term"), ("A -> B, k +* 2", "cannot parse")])
def test_syntax_errors_name_the_reaction(text, match):
    with pytest.raises(NetworkSyntaxError, match=match):
        ReactionNetwork(text, parameters={"k": 1.0})


# --- issue 25: a reaction string checked for typos; the one-screen summary -------------------------

GENE = "G_off -> G_on, k_on*y; G_on -> G_off, k_off; G_on -> G_on + M, k_m; M -> 0, g_m"
GENE_PARAMS = {"k_on": 1.0, "k_off": 2.0, "k_m": 20.0, "g_m": 1.0}


def test_misspelt_species_is_warned_about_naming_the_reaction():
    # before: "G_of" silently became a fourth species; it surfaced later as a reducible chain
    typo = GENE.replace("G_on -> G_off, k_off", "G_on -> G_of, k_off")
    with pytest.warns(NetworkWarning) as record:
        net = ReactionNetwork(typo, parameters=GENE_PARAMS, slow=["y"])
    messages = [str(w.message) for w in record]
    assert any("'G_of' appears in only one reaction, 'R2'" in m and "did you mean 'G_off'" in m for m in messages)
    assert net.species == ("G_off", "G_on", "G_of", "M")
    with warnings.catch_warnings():                   # negative control: the intended network is quiet
        warnings.simplefilter("error")
        ReactionNetwork(GENE, parameters=GENE_PARAMS, slow=["y"])


def test_a_final_product_is_not_a_typo_but_a_case_slip_is_named():
    # the textbook Michaelis–Menten network: P is made once and never used, which is what a product is
    mm = "S + E -> C, kf; C -> S + E, kb; C -> E + P, kcat"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ReactionNetwork(mm, parameters={"kf": 1.0, "kb": 1.0, "kcat": 1.0})
    # a product misspelt by case (Gp for GP) is still caught, and the suggestion is GP, not P or G
    slip = "0 -> G, k; G -> 0, g; G -> G + GP, k; GP -> 0, g; G -> G + Gp, k"
    with pytest.warns(NetworkWarning, match=r"'Gp' appears in only one reaction.*did you mean 'GP'\?"):
        ReactionNetwork(slip, parameters={"k": 1.0, "g": 1.0})


def test_a_misspelt_parameter_gets_a_suggestion():
    from sp_ode.networks.network import UnknownSymbolError
    with pytest.raises(UnknownSymbolError, match=r"unknown name 'kpp'.*did you mean 'kp'\?"):
        ReactionNetwork("0 -> A, kpp; A -> 0, g", parameters={"kp": 1.0, "g": 1.0})


def test_did_you_mean_is_case_aware():
    from sp_ode.core.validation import did_you_mean
    assert did_you_mean("Gp", ["P", "G", "GP"]) == "GP"          # before: difflib offered 'P' and 'G'
    assert did_you_mean("kpp", ["kp", "g"]) == "kp"
    assert did_you_mean("xyz", ["kp", "g"]) is None               # nothing close: no guess
    assert did_you_mean("kp", ["kp"]) is None                     # a valid name is not a typo


def test_species_only_consumed_or_only_produced_is_warned_about():
    with pytest.warns(NetworkWarning, match=r"'M' is produced \(by 'R1'\) but consumed by no reaction"):
        ReactionNetwork("0 -> M, k; M -> M + P, k; P -> 0, g", parameters={"k": 1.0, "g": 1.0})
    with pytest.warns(NetworkWarning, match=r"'A' is consumed \(by 'R1'\) but produced by no reaction"):
        ReactionNetwork("A -> B, k; A + B -> A + C, k; C -> B, k; B -> 0, k", parameters={"k": 1.0})


def test_summary_lists_species_reactions_laws_and_size():
    net = ReactionNetwork(GENE, parameters=GENE_PARAMS, slow=["y"], name="gene")
    text = net.summary(bounds={"M": 30}, initial={"G_off": 1})
    assert "reaction network 'gene': 3 species, 4 reactions" in text
    assert "species: G_off, G_on, M" in text and "slow variables: y" in text
    assert "G_off + G_on = const" in text
    # states: G_off + G_on = 1 (2 gene states) × M ∈ {0 … 30}: 62
    assert "state space: 62 states" in text and "R3: G_on -> G_on + M, k_m" in text
    assert "give bounds=" in net.summary() and "possible typos" not in text
    assert len(text.splitlines()) <= 20                                   # one screen
    # initial= alone cannot bound M (no conservation law holds it): the summary says what to pass, no raise
    unbounded = net.summary(initial={"G_off": 1})
    assert "state space: not sized by what was given" in unbounded and "give bounds=" in unbounded


def test_a_misspelt_name_in_an_observable_gets_a_suggestion():
    from sp_ode.networks.network import UnknownSymbolError
    with pytest.raises(UnknownSymbolError, match=r"observable 'total' uses 'Gp'.*did you mean 'GP'\?"):
        ReactionNetwork("0 -> GP, k; GP -> 0, g", parameters={"k": 1.0, "g": 1.0}, observables={"total": "2*Gp"})
