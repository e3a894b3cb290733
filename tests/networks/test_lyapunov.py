"""sp_ode.networks.cme.lyapunov: Foster–Lyapunov certificates exp(θ w·x) for the infinite CME (docs/theory.md §7.15)."""
import math

import numpy as np
import pytest
import sympy
from scipy.stats import poisson

from sp_ode.networks.cme.lyapunov import find_lyapunov, propensity_supremum
from sp_ode.networks.network import ReactionNetwork


def _net(text, **params):
    return ReactionNetwork(text, parameters=params)


def test_immigration_death_constants_are_the_closed_form_and_bound_the_poisson_tail():
    # 0 -> A (k), A -> 0 (g): A0 = k(e^θ − 1), γ = g(1 − e^{−θ}), log(c1/c2) = θλe^θ (theory §7.15), π = Poisson(λ).
    k, g = 6.0, 2.0
    lam = k / g
    cert = find_lyapunov(_net("0 -> A, k; A -> 0, g", k=k, g=g), weights={"A": 1.0}, delta=1e-8)
    assert cert.found and cert.weights.tolist() == [1.0]
    th = cert.theta
    assert cert.log_mean_bound == pytest.approx(th * lam * math.exp(th), rel=1e-9)
    # E_π[e^{θA}] = exp(λ(e^θ − 1)) (Poisson mgf) lies below the certified c1/c2
    assert lam * math.expm1(th) <= cert.log_mean_bound
    for r in range(0, 60, 3):
        assert poisson.sf(r - 1, lam) <= cert.tail(r)           # P(A ≥ r) ≤ (c1/c2)e^{−θr}
    N = cert.box(1e-8)["A"]
    assert poisson.sf(N, lam) <= 1e-8 and N < 40                # the box holds all but 1e-8 (true quantile 16)


def test_weights_found_by_the_lp_and_wrong_weights_refused():
    # Cascade 0 -> A, A -> 0, A -> A + B, B -> 0: u = A + B does not decrease (A -> A + B raises it as fast
    # as A -> 0 lowers it): the LP must take w_B < w_A; unit weights have G_A = e^θ + e^{−θ} − 2 > 0 for every θ.
    net = _net("0 -> A, 3; A -> 0, 1; A -> A + B, 1; B -> 0, 1")
    cert = find_lyapunov(net)
    assert cert.found and cert.weights[1] < cert.weights[0] and cert.weights.min() >= 1.0
    wrong = find_lyapunov(net, weights={"A": 1.0, "B": 1.0})
    assert not wrong.found and "no Lyapunov function" in wrong.reason
    assert math.isinf(wrong.mean_bound) and wrong.tail(1e9) == 1.0
    with pytest.raises(ValueError, match=r"`weights\['B'\]` must be finite and >= 1"):
        find_lyapunov(net, weights={"A": 1.0, "B": 0.5})
    with pytest.raises(ValueError, match="has none"):
        find_lyapunov(net, weights={"A": 1.0})


def test_growth_without_a_faster_degradation_gets_no_certificate_with_the_reason():
    supercritical = find_lyapunov(_net("0 -> A, 1; A -> 2 A, 2; A -> 0, 1"))
    assert not supercritical.found and "infeasible" in supercritical.reason
    # a non-affine, unbounded propensity that raises the count: named
    quadratic = find_lyapunov(_net("0 -> A, 1; 2 A -> 3 A, 1; A -> 0, 1"))
    assert not quadratic.found and "R2" in quadratic.reason and "neither affine" in quadratic.reason


def test_hill_terms_are_bounded_and_a_dimer_decay_is_dropped():
    A, B = sympy.symbols("A B")
    assert propensity_supremum(20 / (1 + (B / 6) ** 3), [A, B]) == pytest.approx(20.0)
    assert propensity_supremum(5 * A**2 / (9 + A**2), [A, B]) == pytest.approx(5.0)
    assert propensity_supremum(A / (1 + A), [A, B]) == pytest.approx(1.0)
    assert propensity_supremum(A**2 / (1 + A), [A, B]) is None          # unbounded: A²'s monomial not in D
    assert propensity_supremum(1 / (1 - A + A**2), [A, B]) is None      # a negative coefficient: not certified
    toggle = ReactionNetwork("0 => A, a/(1 + (B/K)^h); A -> 0, 1; 0 => B, a/(1 + (A/K)^h); B -> 0, 1",
                             parameters={"a": 20.0, "K": 6.0, "h": 3.0})
    cert = find_lyapunov(toggle)
    assert cert.found and cert.terms["R1"].startswith("bounded by 20")
    dimer = find_lyapunov(_net("0 -> M, 4; M -> 0, 1; 2 M -> M, 0.5"))
    assert dimer.found and dimer.log_mean_bound > 0 and dimer.terms["R3"].startswith("dropped")


def test_conserved_species_are_capped_not_weighted():
    telegraph = _net("G_off -> G_on, 1; G_on -> G_off, 2; G_on -> G_on + M, 20; M -> 0, 1")
    cert = find_lyapunov(telegraph, caps={"G_off": 1, "G_on": 1})
    assert cert.found and dict(zip(cert.species, cert.weights)) == {"G_off": 0.0, "G_on": 0.0, "M": 1.0}
    assert cert.box(1e-6)["G_on"] == 1 and cert.box(1e-6)["M"] > 20
    everything_capped = find_lyapunov(_net("A -> B, 1; B -> A, 1"), caps={"A": 3, "B": 3})
    assert not everything_capped.found and "finite" in everything_capped.reason
    assert np.isnan(everything_capped.theta)
