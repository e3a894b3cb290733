"""Critical manifold φ(y), continuation, normal hyperbolicity and where it is lost (sp_ode.manifolds.critical_manifold)."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import sp_ode
from sp_ode.manifolds.critical_manifold import (
    ManifoldNotFoundError,
    continue_manifold,
    critical_manifold,
    locate_loss_of_hyperbolicity,
    normal_hyperbolicity,
)
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

C_FOLD = 1.0 / 3.0  # an irrational-looking fold location, so the test sees real digits


def _fold_f(t, x, y, args):
    # ε x' = −(x² − (y − c)): φ± = ±√(y − c), fold at y = c (closed form), D_x f = −2x
    return -(x**2 - (y - C_FOLD))


def _fold_g(t, x, y, args):
    return -x


FOLD = FastSlowSystem(_fold_f, _fold_g, eps=1e-2, m=1, d=1, name="fold")


def _hopf_f(t, x, y, args):
    # D_x f = [[y − ¼, −1], [1, y − ¼]]: eigenvalues (y − ¼) ± i cross Re λ = 0 at y = ¼; φ = 0
    return jnp.array([[y[0] - 0.25, -1.0], [1.0, y[0] - 0.25]]) @ x


HOPF = FastSlowSystem(_hopf_f, _fold_g, eps=1e-2, m=2, d=1, name="hopf")


def _closing_Q(y):
    # 2-state switch with both rates 1 + y: eigenvalues 0 and −2(1 + y), so the gap γ = 2(1 + y)
    # closes at y = −1 (closed form); p_st = (½, ½) for y > −1
    a = 1.0 + y[0]
    return jnp.array([[-a, a], [a, -a]])


CLOSING = MasterEquationSystem(_closing_Q, lambda t, x, y, args: -y, eps=1e-2, n=2, d=1, name="closing")


def test_identity_me3_root_finding_equals_the_attractor():
    # T1, checked independently (docs/theory.md §7.3): Newton on the bordered system is one LU solve, so its
    # agreement with GTH is no evidence; the attractor of the frozen flow (uniformised powers, no solve) is.
    from sp_ode.verification.identity import attractor_distribution

    entry = sp_ode.get_system("me3")
    family = entry.system.Q_of_y
    ys = family.grid(41)
    phi = critical_manifold(entry.system, ys)
    att = attractor_distribution(family.batch(ys))
    assert phi.shape == (41, 3) and att.converged.all()
    assert np.all(np.max(np.abs(phi - att.p), axis=1) <= att.radius + 1e-12)
    assert att.radius.max() <= 1e-10


def test_critical_manifold_closed_form_and_branches():
    ys = np.array([0.5, 1.0, 2.0, 4.0])
    root = np.sqrt(ys - C_FOLD)
    np.testing.assert_allclose(critical_manifold(FOLD, ys), root[:, None], rtol=1e-14)
    # the guess selects the branch: from −1 Newton finds −√(y − c)
    np.testing.assert_allclose(critical_manifold(FOLD, ys, x_guess=[-1.0]), -root[:, None], rtol=1e-14)
    single = critical_manifold(FOLD, 1.0)
    assert single.shape == (1,)


def test_no_root_past_the_fold_raises_or_returns_nan():
    with pytest.raises(ManifoldNotFoundError, match="y = \\[0.0\\]"):
        critical_manifold(FOLD, 0.0)  # y < c: x² = y − c has no real root
    out = critical_manifold(FOLD, [0.0, 1.0], throw=False)
    assert np.isnan(out[0, 0]) and np.isclose(out[1, 0], np.sqrt(1 - C_FOLD))


def test_continuation_follows_the_branch_and_reports_its_end():
    ys = np.linspace(2.0, 0.0, 41)  # walks down through the fold at y = 1/3
    branch = continue_manifold(FOLD, ys, [1.0])
    assert branch.status == 1 and "branch lost" in branch.message
    ok = branch.converged
    assert ok[: branch.n_followed].all() and not ok[branch.n_followed:].any()
    assert np.all(ys[ok] > C_FOLD) and ys[branch.n_followed] < C_FOLD
    np.testing.assert_allclose(branch.x[ok, 0], np.sqrt(ys[ok] - C_FOLD), rtol=1e-12)
    whole = continue_manifold(FOLD, np.linspace(2.0, 1.0, 11), [1.0], predictor="constant")
    assert whole.status == 0 and whole.converged.all()


def test_normal_hyperbolicity_general_and_generator():
    y = 1.0
    nh = normal_hyperbolicity(FOLD, None, y)
    # D_x f = −2φ = −2√(y − c) (closed form)
    assert nh.kind == "attracting" and nh.attracting
    np.testing.assert_allclose(nh.max_real, -2 * np.sqrt(y - C_FOLD), rtol=1e-14)
    assert normal_hyperbolicity(FOLD, [-np.sqrt(y - C_FOLD)], y).kind == "repelling"
    assert normal_hyperbolicity(FOLD, [0.0], C_FOLD).kind == "non-hyperbolic"
    # a generator: D_x f restricted to 1^⊥ has max Re λ = −γ, with γ from sp_ode.spectral_gap (T2)
    me3 = sp_ode.get_system("me3").system
    nh = normal_hyperbolicity(me3, None, [0.3])
    assert nh.eigenvalues.shape == (2,)  # n − 1 = 2 on the simplex
    np.testing.assert_allclose(-nh.max_real, nh.spectral_gap, rtol=1e-10)
    Q = np.asarray(me3.Q(np.array([0.3])))
    np.testing.assert_allclose(nh.spectral_gap, sp_ode.spectral_gap(Q), rtol=1e-12)


def test_locate_fold_to_1e_10():
    loss = locate_loss_of_hyperbolicity(FOLD, 2.0, -1.0, x0=[1.0])
    assert loss.found and loss.kind == "fold"
    assert abs(loss.y[0] - C_FOLD) <= 1e-10          # closed form: fold at y = c
    assert abs(loss.x[0]) <= 1e-7                      # x = 0 there (Newton on the extended system)
    lo, hi = loss.bracket
    assert min(lo[0], hi[0]) <= C_FOLD <= max(lo[0], hi[0])


def _cubic_f(t, x, y, args):
    # van der Pol's critical manifold y = x³/3 − x: folds at x = ±1, y = ∓2/3 (closed form).
    # Past the fold at y = −2/3 a root still exists (on the branch x < −2), so Newton
    # converges there: continuation must recognise the jump rather than follow it.
    return y - (x**3 / 3 - x)


CUBIC = FastSlowSystem(_cubic_f, _fold_g, eps=1e-2, m=1, d=1, name="cubic")


def test_locate_fold_where_newton_jumps_branches():
    branch = continue_manifold(CUBIC, np.linspace(0.0, -1.5, 61), [2.0])
    assert branch.status == 1 and "far from the branch" in branch.message
    assert np.all(branch.x[branch.converged, 0] > 1.0)   # stayed on the attracting branch x > 1
    loss = locate_loss_of_hyperbolicity(CUBIC, 0.0, -1.5, x0=[2.0])
    assert loss.found and loss.kind == "fold"
    assert abs(loss.y[0] + 2 / 3) <= 1e-10 and abs(loss.x[0] - 1.0) <= 1e-7


def test_locate_eigenvalue_crossing_to_1e_10():
    loss = locate_loss_of_hyperbolicity(HOPF, -1.0, 1.0, x0=[0.1, 0.1])
    assert loss.found and loss.kind == "eigenvalue crossing"
    assert abs(loss.y[0] - 0.25) <= 1e-10


def test_locate_gap_closing_to_1e_10():
    loss = locate_loss_of_hyperbolicity(CLOSING, 1.0, -2.0)
    assert loss.found and loss.kind == "gap closing"
    assert abs(loss.y[0] + 1.0) <= 1e-10


def test_hyperbolic_segment_reports_not_found():
    loss = locate_loss_of_hyperbolicity(FOLD, 2.0, 1.0, x0=[1.0], num=11)
    assert not loss.found and loss.y is None and "normally hyperbolic" in loss.message
    assert np.all(loss.max_real < 0)


@pytest.mark.parametrize("call, exc, match", [
    (lambda: critical_manifold("toy", 1.0), TypeError, "`system`"),
    (lambda: critical_manifold(FOLD, [[1.0, 2.0]]), ValueError, "`y`"),
    (lambda: critical_manifold(FOLD, np.nan), ValueError, "`y` must be finite"),
    (lambda: critical_manifold(FOLD, 1.0, x_guess=[1.0, 2.0]), ValueError, "`x_guess`"),
    (lambda: continue_manifold(FOLD, [1.0, 2.0], [1.0], predictor="cubic"), ValueError, "`predictor`"),
    (lambda: continue_manifold(FOLD, [1.0, 2.0], [[1.0]]), ValueError, "`x0`"),
    (lambda: normal_hyperbolicity(FOLD, [1.0], [1.0, 2.0]), ValueError, "single point"),
    (lambda: locate_loss_of_hyperbolicity(FOLD, 1.0, 1.0), ValueError, "must differ"),
    (lambda: locate_loss_of_hyperbolicity(FOLD, 1.0, 2.0, num=2), ValueError, "`num`"),
    (lambda: locate_loss_of_hyperbolicity(FOLD, 1.0, 2.0, num=2.5), TypeError, "`num`"),
])
def test_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


# --- shapes from the system, the generator checked (issue 25) ---------------------------------------

def _channel(y):
    """A 4-state chain whose rates depend on y[0]: d = 1, though the model never says so."""
    a, b = jnp.exp(y[0] / 2), jnp.exp(-y[0] / 2)
    R = jnp.array([[0.0, a, 0.0, 0.0], [b, 0.0, a, 0.0], [0.0, b, 0.0, a], [0.0, 0.0, b, 0.0]])
    return R - jnp.diag(R.sum(axis=1))


def _g_channel(t, x, y, args):
    return jnp.array([x[2] - y[0]])          # shape (1,) whatever the length of y: d = 1


def test_flat_grid_for_d_1_gives_one_row_per_point():
    # before: ys of shape (N,) was taken as one point of d = N and φ(ys[0]) of shape (4,) came back
    system = sp_ode.MasterEquationSystem(_channel, _g_channel, eps=0.01)
    ys = np.linspace(-1.0, 1.0, 7)
    phi = sp_ode.critical_manifold(system, ys)
    assert phi.shape == (7, 4)
    # birth–death chain: p_k ∝ Π_{i<k} a/b = e^{k y} (DESIGN §6, detailed balance)
    w = np.exp(np.outer(ys, np.arange(4)))
    np.testing.assert_allclose(phi, w / w.sum(axis=1, keepdims=True), rtol=1e-12)
    assert sp_ode.critical_manifold(system, [0.3]).shape == (4,)        # one point stays one point
    sm = sp_ode.slow_manifold(system, 1)
    assert sm.terms(ys).shape == (7, 2, 4) and sm(ys).shape == (7, 4)


def test_flat_grid_that_fits_both_readings_asks_which():
    broadcasting = sp_ode.MasterEquationSystem(_channel, lambda x, y: -y, eps=0.01)   # g maps any y to itself
    with pytest.raises(ValueError, match=r"ambiguous.*pass shape \(3, 1\) for 3 points of d = 1"):
        sp_ode.critical_manifold(broadcasting, [0.1, 0.2, 0.3])
    assert sp_ode.critical_manifold(broadcasting, [[0.1], [0.2], [0.3]]).shape == (3, 4)


def test_critical_manifold_checks_the_generator_like_simulate():
    # before: φ = [0.5, 0.5] came back for this Q, with Qᵀφ = (0.5, −0.25) ≠ 0
    def not_a_generator(y):
        return jnp.array([[-1.0, 1.0], [1.0, -0.5]])   # row 1 sums to 0.5
    system = sp_ode.MasterEquationSystem(not_a_generator, lambda x, y: jnp.array([x[0] - y[0]]), eps=0.1)
    with pytest.raises(ValueError, match=r"`Q_of_y` must return a generator at every y; at y = \[0.\].*rows must sum"):
        sp_ode.critical_manifold(system, [[0.0]])
    with pytest.raises(ValueError, match="must return a generator"):
        sp_ode.simulate(system, (0.0, 1.0), [0.5, 0.5], [0.0])     # the same rule as the solve's door
