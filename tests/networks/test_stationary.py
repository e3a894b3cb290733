"""sp_ode.networks.cme.stationary: p_st of the infinite CME with the truncation bounded (docs/theory.md §7.15).

References: the product of two immigration–death laws (Poisson marginals, exact), and a birth–death
chain with a dimer decay 2M -> M whose law is the detailed-balance product p_n ∝ Π k/μ_i.
"""
import math

import numpy as np
import pytest
from scipy.stats import poisson

from sp_ode.networks.cme.stationary import cme_stationary
from sp_ode.networks.network import NetworkError, ReactionNetwork

K1, G1, K2, G2 = 4.0, 2.0, 1.5, 1.0


@pytest.fixture(scope="module")
def product():
    return ReactionNetwork("0 -> A, k1; A -> 0, g1; 0 -> B, k2; B -> 0, g2",
                           parameters={"k1": K1, "g1": G1, "k2": K2, "g2": G2})


def _poisson_pi(space):
    return poisson.pmf(space.states[:, 0], K1 / G1) * poisson.pmf(space.states[:, 1], K2 / G2)


def _exact_l1(res, pi_on_J):
    # ‖p − π‖₁ over the whole lattice: on J, plus π's mass outside J (p is 0 there)
    return float(np.abs(res.p - pi_on_J).sum() + (1.0 - pi_on_J.sum()))


def test_product_of_poissons_bound_holds_and_is_split_into_its_two_parts(product):
    res = cme_stationary(product, tol=1e-6)
    assert res.status == "certified" and res.bound <= 1e-6
    la, tr = res.info["linear_algebra"], res.info["truncation"]
    assert res.bound == pytest.approx(la["l1_bound"] + tr["bound"], rel=1e-12)
    pi = _poisson_pi(res.space)
    assert _exact_l1(res, pi) <= res.bound
    assert 1.0 - pi.sum() <= tr["mass_outside"]                # π(S∖J) ≤ ε, against the closed form
    assert tr["hitting_time"] > 0 and math.isfinite(tr["boundary_flux"])
    assert "linear algebra" in res.message and "truncation" in res.message
    assert res.info["lyapunov"]["found"] and res.info["expansions"][-1]["total"] <= 1e-6


def test_a_box_too_small_is_flagged_and_the_linear_algebra_alone_would_miss(product):
    # Negative control: on {A ≤ 3, B ≤ 3} the truncation error is ~6e-2; the linear algebra is exact to
    # 1e-14, so a bound without the truncation term misses by twelve orders; the full bound does not.
    res = cme_stationary(product, tol=1e-6, bounds={"A": 3, "B": 3})
    exact = _exact_l1(res, _poisson_pi(res.space))
    assert exact > 1e-2
    assert res.info["linear_algebra"]["l1_bound"] < 1e-10 < exact        # what the projection alone certifies
    assert res.status == "above_tol" and res.bound >= exact and "enlarge `bounds`" in res.message


def test_the_bound_stays_certified_whichever_method_solves_the_box(product):
    ref = cme_stationary(product, tol=1e-6)
    for method in ("sparse", "banded", "gth"):
        res = cme_stationary(product, tol=1e-6, method=method)
        assert res.status == "certified" and res.info["linear_algebra"]["method"] == method
        assert _exact_l1(res, _poisson_pi(res.space)) <= res.bound <= 1e-6
        # the boxes may differ (the radius step depends on the linear-algebra part): compare marginals
        a, b = res.marginal("A"), ref.marginal("A")
        m = max(a.size, b.size)
        assert np.abs(np.pad(a, (0, m - a.size)) - np.pad(b, (0, m - b.size))).sum() <= res.bound + ref.bound


def test_birth_death_with_a_dimer_decay_against_its_detailed_balance_law():
    k, g, c = 6.0, 1.0, 0.5
    net = ReactionNetwork("0 -> M, k; M -> 0, g; 2 M -> M, c", parameters={"k": k, "g": g, "c": c})
    res = cme_stationary(net, tol=1e-7)
    assert res.status == "certified"
    assert res.info["lyapunov"]["terms"]["R3"].startswith("dropped")
    n = np.arange(400)
    mu = g * n[1:] + c * n[1:] * (n[1:] - 1) / 2
    logp = np.concatenate([[0.0], np.cumsum(np.log(k / mu))])
    pi = np.exp(logp - logp.max())
    pi /= pi.sum()
    m = res.space.states[:, 0]
    exact = float(np.abs(res.p - pi[m]).sum() + pi[m.max() + 1:].sum())
    assert exact <= res.bound <= 1e-7


def test_no_certificate_is_said_plainly_never_pretended():
    grow = ReactionNetwork("0 -> A, 1; A -> 2 A, 2; A -> 0, 1")
    with pytest.raises(NetworkError, match="no Lyapunov certificate"):
        cme_stationary(grow)
    res = cme_stationary(grow, bounds={"A": 30})
    assert res.status == "no_lyapunov" and res.bound is None and res.info["truncation"]["bound"] is None
    assert "NOT bounded" in res.message and res.info["linear_algebra"]["l1_bound"] < 1e-6
    # user-given weights that are no Lyapunov function are refused the same way (cascade, unit weights)
    cascade = ReactionNetwork("0 -> A, 3; A -> 0, 1; A -> A + B, 1; B -> 0, 1")
    res = cme_stationary(cascade, bounds={"A": 20, "B": 20}, weights={"A": 1, "B": 1})
    assert res.status == "no_lyapunov" and "no Lyapunov function" in res.message


def test_conservation_class_and_bad_arguments():
    telegraph = ReactionNetwork("G_off -> G_on, 1; G_on -> G_off, 2; G_on -> G_on + M, 10; M -> 0, 1")
    with pytest.raises(NetworkError, match="initial="):
        cme_stationary(telegraph)
    res = cme_stationary(telegraph, initial={"G_off": 1}, tol=1e-6)
    assert res.status == "certified" and res.space.bounds[list(res.space.species).index("G_on")] == 1
    with pytest.raises(TypeError, match="`network` must be a ReactionNetwork"):
        cme_stationary("0 -> A, 1")
    with pytest.raises(ValueError, match="tol"):
        cme_stationary(telegraph, initial={"G_off": 1}, tol=-1.0)
