"""The independent identity check (sp_ode.verification.identity; docs/theory.md §3.1 (T1), §7.3)."""
from __future__ import annotations

from fractions import Fraction

import jax.numpy as jnp
import numpy as np
import pytest

import sp_ode
from sp_ode.markov.reference import exact_stationary
from sp_ode.verification.identity import IDENTITY_TOL, attractor_distribution, identity_check


def test_attractor_bracket_contains_the_exact_answer():
    # birth–death chain: exact p by rational elimination on the float rates (an independent reference);
    # the uniformised powers never solve a linear system, and their bracket must contain it
    Q = sp_ode.birth_death([1.0, 2.0, 0.5, 3.0], [3.0, 1.0, 2.0, 0.25])
    exact = np.array([float(v) for v in exact_stationary(Q)])
    att = attractor_distribution(Q)
    assert att.converged
    assert np.all(att.lower - att.radius <= exact) and np.all(exact <= att.upper + att.radius)
    assert np.max(np.abs(att.p - exact)) <= att.radius <= 1e-11
    # the uniform start's image lies inside the same bracket (it is the mean row)
    assert np.all(att.lower <= att.uniform) and np.all(att.uniform <= att.upper)


def test_attractor_periodic_chain_is_made_aperiodic():
    # Q = [[-1, 1], [1, -1]]: with Λ = max|Q_ii| exactly, P = [[0, 1], [1, 0]] is periodic and its powers never
    # converge; Λ strictly larger (docs/theory.md §7.3) gives p = (1/2, 1/2) (closed form, symmetric rates)
    att = attractor_distribution(np.array([[-1.0, 1.0], [1.0, -1.0]]))
    assert att.converged and np.max(np.abs(att.p - 0.5)) <= 1e-15


def test_attractor_rejects_non_generators():
    with pytest.raises(ValueError, match="rows must sum to zero"):
        attractor_distribution(np.array([[-1.0, 2.0], [1.0, -1.0]]))


@pytest.fixture(scope="module")
def me3():
    return sp_ode.get_system("me3")


def test_me3_identity_by_independent_methods(me3):
    ys = me3.system.Q_of_y.grid(9)
    check = identity_check(me3.system, ys, phi=me3.phi, phi_name="catalogue φ")
    assert check.status == "ok", check.message
    kinds = {m.kind for m in check.methods.values()}
    assert {"linear solve", "attractor", "exact arithmetic", "closed form"} <= kinds
    # GTH and Newton on the bordered system solve the same linear system: reported, never counted
    same = [c for c in check.comparisons if not c["independent"]]
    assert same and all("GTH" in c["a"] + c["b"] and "Newton" in c["a"] + c["b"] for c in same)
    head = check.independent_comparison()
    assert "attractor" in head["a"] and "GTH" in head["b"]
    assert head["max_error"] <= head["tolerance"] <= 1e-10 + IDENTITY_TOL
    # exact rational elimination at the sampled y: GTH to rounding
    exact = next(c for c in check.comparisons if "exact" in c["b"] and "GTH" in c["a"])
    assert exact["points"] == 3 and exact["max_error"] <= 1e-15


@pytest.mark.parametrize("shift", [1e-3, 1e-9])
def test_a_wrong_phi_fails(me3, shift):
    # a φ off the simplex's true equilibrium by `shift` (mass conserved) must fail, naming both methods
    ys = me3.system.Q_of_y.grid(9)
    wrong = lambda y: me3.phi(y) + jnp.array([shift, -shift, 0.0])  # noqa: E731
    check = identity_check(me3.system, ys, phi=wrong, phi_name="a shifted φ")
    assert check.status == "FAIL"
    assert check.message.startswith("identity:") and "a shifted φ" in check.message
    assert f"{shift:.2e}" in check.message


def test_general_system_identity_and_wrong_closed_form():
    toy = sp_ode.get_system("toy")
    ys = np.linspace(1 / 3, 1.0, 7)[:, None]
    ok = identity_check(toy.system, ys, x0=toy.x0, phi=toy.phi)
    assert ok.status == "ok", ok.message
    flow = next(c for c in ok.comparisons if "attractor" in c["a"] and "Newton" in c["b"])
    assert flow["independent"] and flow["max_error"] <= 1e-12     # RK4 to its fixed point: φ = y² exactly
    bad = identity_check(toy.system, ys, x0=toy.x0, phi=lambda y: y**2 + 1e-6)
    assert bad.status == "FAIL" and "1.00e-06" in bad.message


def test_exact_reference_is_rational():
    # provenance of the exact method: Fractions, Qᵀp = 0 exactly
    Q = sp_ode.birth_death([1.0, 2.0], [3.0, 4.0])
    p = exact_stationary(Q)
    assert all(isinstance(v, Fraction) for v in p) and sum(p) == 1


def test_reducible_chain_is_never_certified():
    # two closed classes {0, 1}, {2, 3}: the powers keep two different limits, the spread stays 1/2 (closed
    # form: rows of class 1 converge to (½, ½, 0, 0), rows of class 2 to (0, 0, ½, ½))
    block = np.array([[-1.0, 1.0], [1.0, -1.0]])
    Q = np.block([[block, np.zeros((2, 2))], [np.zeros((2, 2)), block]])
    att = attractor_distribution(Q)
    assert not att.converged and att.radius >= 0.25


def test_slowly_mixing_family_is_inconclusive_not_passed():
    # two 2-state blocks (rates 1) coupled by δ = 1e-9: γ ≈ 2δ, so the bracket needs ~2^31 uniformised steps
    # and its rounding allowance 4·2^j·n·u exceeds 1e-10: the check says it cannot certify, never passes
    from sp_ode.systems.system import MasterEquationSystem

    def Q(y):
        d = 1e-9 * (1.0 + 0.0 * y[0])
        return jnp.array([[-1.0 - d, 1.0, d, 0.0], [1.0, -1.0, 0.0, 0.0],
                          [0.0, 0.0, -1.0, 1.0], [d, 0.0, 1.0, -1.0 - d]])

    system = MasterEquationSystem(Q, lambda t, x, y, args: -y, eps=1e-2, n=4, d=1, name="ncd")
    check = identity_check(system, np.array([[0.0], [1.0]]), exact_points=0)
    assert check.status == "FAIL" and "inconclusive" in check.message, check.message
