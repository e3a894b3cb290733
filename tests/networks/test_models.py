"""sp_ode.networks.models: each catalogue model against an answer computed independently."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import beta as beta_dist, binom, poisson

import sp_ode
from sp_ode.networks.models import NETWORK_MODELS, get_network_model, poisson_beta_pmf
from tests.checkers import assert_stationary


def _stationary(model, y):
    space = model.space()
    Q = model.network.generator(space, y)
    p = sp_ode.stationary_distribution(Q.toarray())     # dense GTH: componentwise accurate (§7.2)
    assert_stationary(Q, p)
    return space, p


def _poisson_beta_quad(m: int, a: float, b: float, lam: float) -> float:
    """P(M = m) by numerical integration of the beta mixture ∫ Poi(m; λu) Beta(u; a, b) du (scipy quad)."""
    f = lambda u: poisson.pmf(m, lam * u) * beta_dist.pdf(u, a, b)
    return integrate.quad(f, 0.0, 1.0, epsabs=0.0, epsrel=1e-12, limit=200, points=[min(1.0, m / lam)])[0]


@pytest.mark.parametrize("y", [0.5, 1.0, 3.0])
def test_telegraph_mrna_law_is_the_poisson_beta_mixture(y):
    model = get_network_model("telegraph", N=80)
    space, p = _stationary(model, [y])
    marg = space.marginal(p, "M")
    quad = np.array([_poisson_beta_quad(m, 1.0 * y, 2.0, 20.0) for m in range(45)])
    np.testing.assert_allclose(marg[:45], quad, rtol=1e-8, atol=1e-14)
    # the library's closed form (₁F₁ series) agrees with the quadrature too
    np.testing.assert_allclose(poisson_beta_pmf(np.arange(45), y, 2.0, 20.0), quad, rtol=1e-8, atol=1e-14)


def test_telegraph_tail_through_the_readme_route_is_the_poisson_beta_law():
    # Issue 26's case: 242 states (k_on 0.7, k_off 1.9, k_m 23, mRNA bound 120) through the README route
    # state_space → generator → stationary_distribution(Q) with the *sparse* Q.  Before the default route
    # took GTH the marginal's tail was wrong by up to 4.6e3 relative while the answer reported an ℓ1 bound
    # of 8e-14.  Reference: the Poisson–beta law (₁F₁ series, checked against quadrature above).
    model = get_network_model("telegraph", N=120, k_on=0.7, k_off=1.9, k_m=23.0)
    J = model.space()
    Q = model.network.generator(J, [1.0])
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    exact = poisson_beta_pmf(np.arange(121), 0.7, 1.9, 23.0)
    marg = J.marginal(p, "M")
    big = exact > 1e-30
    assert big.sum() == 92                                         # m = 0 … 91: the tail on a log plot
    assert np.max(np.abs(marg[big] - exact[big]) / exact[big]) <= 1e-8
    assert info["componentwise_bound"] is not None and info["componentwise_bound"] <= 1e-6
    cm = J.certified_marginal(p, "M", info)
    assert cm.kind == "componentwise" and cm.certified.all()
    assert np.all((cm.lower[big] <= exact[big] * (1 + 1e-12)) & (exact[big] <= cm.upper[big] * (1 + 1e-12)))
    # the same Q through the normwise sparse solve: its tail is wrong and its marginal marks it uncertified
    q, qinfo = sp_ode.stationary_distribution(Q, method="sparse", componentwise=False, return_info=True)
    qm = J.certified_marginal(q, "M", qinfo)
    assert qm.kind == "normwise" and qm.uncertified_below == pytest.approx(2 * qinfo["bound"])
    assert np.max(np.abs(J.marginal(q, "M")[big] - exact[big]) / exact[big]) > 1.0
    assert not qm.certified[big].all() and np.all(qm.certified == (qm.values > 2 * qinfo["bound"]))


def test_telegraph_check_fails_on_a_wrong_switching_rate():
    space, p = _stationary(get_network_model("telegraph", N=80, k_off=2.5), [1.0])
    quad = np.array([_poisson_beta_quad(m, 1.0, 2.0, 20.0) for m in range(30)])
    assert np.max(np.abs(space.marginal(p, "M")[:30] - quad)) > 1e-3


def test_birth_death_is_poisson():
    model = get_network_model("birth_death", N=60)
    space, p = _stationary(model, [1.5])
    ref = poisson.pmf(np.arange(61), 15.0)
    np.testing.assert_allclose(p, ref / ref.sum(), rtol=1e-12)
    assert np.max(np.abs(p - poisson.pmf(np.arange(61), 14.0))) > 1e-3   # a wrong mean is caught


@pytest.mark.parametrize("E_T", [1, 3, 6])
def test_michaelis_menten_enzymes_binomial_and_rao_arkin_rate(E_T):
    model = get_network_model("michaelis_menten", E_T=E_T, k_f=2.0, k_b=1.0, k_cat=0.5)
    y = 0.9
    space, p = _stationary(model, [y])
    K_M = (1.0 + 0.5) / 2.0
    np.testing.assert_allclose(space.marginal(p, "C"), binom.pmf(np.arange(E_T + 1), E_T, y / (y + K_M)),
                               rtol=1e-13, atol=1e-16)
    # reduced substrate flow k_cat E[C] = the stochastic QSSA propensity k_cat E_T y/(K_M + y) (Rao & Arkin 2003)
    mean_C = space.marginal(p, "C") @ np.arange(E_T + 1)
    assert 0.5 * mean_C == pytest.approx(0.5 * E_T * y / (K_M + y), rel=1e-13)
    assert 0.5 * mean_C != pytest.approx(0.5 * E_T * y / (1.0 / 2.0 + y), rel=1e-3)   # K_M without k_cat is wrong


def test_toggle_switch_is_the_cme_builder_symmetric_and_bimodal():
    model = get_network_model("toggle_switch", N=40)
    space = model.space()
    Q = model.network.generator(space, [1.0])
    assert abs(Q - sp_ode.cme_two_species(**model.closed_form["cme_two_species kwargs at y = 1"]())).max() == 0
    p = sp_ode.stationary_distribution(Q.toarray())
    P = p.reshape(40, 40)
    np.testing.assert_allclose(P, P.T, rtol=1e-10, atol=1e-300)       # A ↔ B symmetry at y = 1
    mA = space.marginal(p, "A")
    padded = np.concatenate([[-1.0], mA, [-1.0]])
    peaks = [i for i in range(40) if padded[i + 1] > padded[i] and padded[i + 1] > padded[i + 2]]
    assert len(peaks) == 2, peaks                                     # bistable: two modes
    P2 = sp_ode.stationary_distribution(model.network.generator(space, [1.3]).toarray()).reshape(40, 40)
    assert np.max(np.abs(P2 - P2.T)) > 1e-3                            # the inducer breaks the symmetry


def test_cascade_means_match_the_linear_moment_equations():
    model = get_network_model("cascade", N=48)
    space = model.space()
    Q = model.network.generator(space, [0.5])
    p = sp_ode.stationary_distribution(Q.toarray())
    rep = model.network.truncation(space, p, [0.5], horizon=1.0)
    assert rep.leaked_mass < 1e-9
    for s in ("A", "B"):
        mean = space.marginal(p, s) @ np.arange(48)
        # E[A] = E[B] = N(0.1 + 0.2y) exactly on the lattice; the projection moves them by ≲ N·(leak)
        assert mean == pytest.approx(48 * 0.2, abs=1e-7)
        assert mean != pytest.approx(48 * (0.1 + 0.2 * 0.6), abs=1e-2)   # the mean at another y is told apart


def test_catalogue_names_and_unknown_name():
    assert set(NETWORK_MODELS) == {"telegraph", "birth_death", "michaelis_menten", "toggle_switch", "cascade"}
    with pytest.raises(ValueError, match="telegraph"):
        get_network_model("telegraf")
