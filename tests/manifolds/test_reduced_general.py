"""simulate_reduced(..., phi=..., x_guess=...) for a general system, and SlowManifold at zero points (issue 13).

Reference: the FitzHugh–Nagumo catalogue system, ε v' = v − v³/3 − w + I, w' = 0.08(v + 0.7 − 0.8w)
(I = 0), whose critical manifold v³ − 3v + 3(w − I) = 0 has, for |w − I| < 2/3, the three real
roots of Viète's trigonometric formula

    v_k(w) = 2 cos(arccos(−3(w − I)/2)/3 − 2πk/3),   k = 0 (right branch), 1 (middle), 2 (left).

At w = 0: v = √3, 0, −√3.  The left branch (v < −1, D_x f = 1 − v² < 0, attracting) carries the
reduced flow from w = 0 towards the equilibrium w* ≈ −0.6243 (catalogue docstring), inside |w| < 2/3
for all t, so the closed form is valid on the whole path.
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import sp_ode
from sp_ode.core.precision import float64_callable
from sp_ode.manifolds.reduced import reduced_system, simulate_reduced
from sp_ode.manifolds.slow_manifold import slow_manifold

T_SPAN = (0.0, 20.0)
TS = np.linspace(0.0, 20.0, 11)
Y0 = [0.0]


def _viete(w, k):
    return 2 * jnp.cos(jnp.arccos(-1.5 * w) / 3 - 2 * jnp.pi * k / 3)


# module level: compiled reduced solves are cached on the identity of phi
@float64_callable
def left_branch(y):
    return jnp.reshape(_viete(y[0], 2), (1,))


@float64_callable
def right_branch(y):
    return jnp.reshape(_viete(y[0], 0), (1,))


@float64_callable
def shifted_left_branch(y):  # deliberately wrong: off the manifold by 0.1
    return left_branch(y) + 0.1


class StandIn:
    """Duck-typed like neural's φ_θ: callable (but not JAX-traceable) and a jax_fn() with the JAX form."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, y):
        raise AssertionError("the torch-side __call__ must not be used: phi= goes through jax_fn()")

    def jax_fn(self):
        self.calls += 1
        return self.fn


@pytest.fixture(scope="module")
def fhn():
    return sp_ode.get_system("fitzhugh_nagumo")


@pytest.fixture(scope="module")
def closed(fhn):
    return simulate_reduced(fhn, T_SPAN, Y0, phi=left_branch, ts=TS)


def test_closed_form_is_the_attracting_left_branch(fhn, x64):
    # provenance of the reference: f(v(w), w) = 0 and D_x f = 1 − v² < 0 along the path
    ws = np.linspace(-0.65, 0.65, 27)
    v = np.array([left_branch(jnp.array([w]))[0] for w in ws])
    np.testing.assert_allclose(v - v**3 / 3 - ws, 0.0, atol=1e-14)
    assert np.all(1 - v**2 < 0)
    np.testing.assert_allclose(left_branch(jnp.array([0.0])), [-np.sqrt(3.0)], rtol=1e-15)


def test_reference_path_is_on_the_left_branch(closed, x64):
    assert closed.success
    # w decreases monotonically towards w* ≈ −0.6243 (catalogue docstring), never reaching the fold −2/3
    assert np.all(np.diff(closed.y[:, 0]) < 0)
    assert -0.6243 < closed.y[-1, 0] < -0.6
    np.testing.assert_allclose(closed.x[:, 0], [float(left_branch(jnp.array(w))[0]) for w in closed.y], atol=1e-13)


def test_x_guess_gives_the_closed_form_path(fhn, closed):
    newton = simulate_reduced(fhn, T_SPAN, Y0, x_guess=[-2.0], ts=TS)
    # measured 2e-13 when written; Newton's φ and Viète's agree to rounding
    np.testing.assert_allclose(newton.y, closed.y, rtol=0, atol=1e-8)
    np.testing.assert_allclose(newton.x, closed.x, rtol=0, atol=1e-8)


def test_x_guess_selects_the_branch(fhn):
    # from x_guess = +2 Newton finds the right branch v = √3 at w = 0, where w' = 0.08(v + 0.7) > 0
    t_span, ts = (0.0, 1.0), np.linspace(0.0, 1.0, 3)
    right = simulate_reduced(fhn, t_span, Y0, x_guess=[2.0], ts=ts)
    ref = simulate_reduced(fhn, t_span, Y0, phi=right_branch, ts=ts)
    np.testing.assert_allclose(right.y, ref.y, rtol=0, atol=1e-8)
    np.testing.assert_allclose(right.x[0], [np.sqrt(3.0)], rtol=1e-12)
    assert right.y[-1, 0] > 0


def test_phi_slow_manifold_order_0_gives_the_closed_form_path(fhn, closed):
    manifold = slow_manifold(fhn, 0, x_guess=[-2.0])
    via = simulate_reduced(fhn, T_SPAN, Y0, phi=manifold, ts=TS)
    np.testing.assert_allclose(via.y, closed.y, rtol=0, atol=1e-8)
    # the same as the old spelling, phi=manifold.jax_fn()
    old = simulate_reduced(fhn, T_SPAN, Y0, phi=manifold.jax_fn(), ts=TS)
    np.testing.assert_allclose(via.y, old.y, rtol=0, atol=1e-12)


def test_phi_slow_manifold_order_1_gives_the_corrected_flow():
    # Toy (docs/theory.md §6): φ = y², h₁ = 2y³, so an order-1 SlowManifold as phi is the flow
    # y' = −(y² + ε 2y³) at the system's ε — the corrected reduced flow, not T2's y' = −y².
    toy = sp_ode.get_system("toy", eps=0.05)
    eps = toy.system.eps

    @float64_callable
    def h_eps(y):
        return y**2 + eps * 2 * y**3

    ts = np.linspace(0.0, 2.0, 5)
    manifold = slow_manifold(toy, 1)
    via = simulate_reduced(toy, (0.0, 2.0), [1.0], phi=manifold, ts=ts)
    ref = simulate_reduced(toy, (0.0, 2.0), [1.0], phi=h_eps, ts=ts)
    np.testing.assert_allclose(via.y, ref.y, rtol=0, atol=1e-9)
    np.testing.assert_allclose(via.y, manifold.simulate((0.0, 2.0), [1.0], ts=ts).y, rtol=0, atol=1e-12)
    plain = simulate_reduced(toy, (0.0, 2.0), [1.0], ts=ts)          # closed form φ = y²: y(2) = 1/3
    np.testing.assert_allclose(plain.y[-1], [1 / 3], rtol=1e-8)
    assert abs(via.y[-1, 0] - plain.y[-1, 0]) > 1e-3                  # O(ε) apart


def test_duck_typed_jax_fn_is_used(fhn, closed):
    stand_in = StandIn(left_branch)
    via = simulate_reduced(fhn, T_SPAN, Y0, phi=stand_in, ts=TS)
    assert stand_in.calls == 1
    np.testing.assert_allclose(via.y, closed.y, rtol=0, atol=1e-12)
    # and it matters: a stand-in whose jax_fn is off the manifold by 0.1 changes the path
    # (w' = 0.08(v + 0.7 − 0.8w) grows by 0.008 everywhere)
    shifted = simulate_reduced(fhn, T_SPAN, Y0, phi=StandIn(shifted_left_branch), ts=TS)
    direct = simulate_reduced(fhn, T_SPAN, Y0, phi=shifted_left_branch, ts=TS)
    np.testing.assert_allclose(shifted.y, direct.y, rtol=0, atol=1e-12)
    assert np.max(np.abs(shifted.y - closed.y)) > 1e-2


def test_neural_phi_mlp_qualifies():
    # a real φ_θ (untrained: only the plumbing is tested) is accepted as phi= through its jax_fn
    torch = pytest.importorskip("torch")  # noqa: F841
    from neural.phi.fit import PhiMLP

    me3 = sp_ode.get_system("me3")
    mlp = PhiMLP(1, 3, width=4, depth=1, lower=[-2.0], upper=[2.0], seed=0)
    ts = np.linspace(0.0, 1.0, 3)
    via = simulate_reduced(me3, (0.0, 1.0), [0.5], phi=mlp, ts=ts)
    np.testing.assert_allclose(via.x, mlp.predict(via.y), rtol=1e-12, atol=1e-14)
    p_st = simulate_reduced(me3, (0.0, 1.0), [0.5], ts=ts)            # the default φ = p_st differs
    assert np.max(np.abs(via.y - p_st.y)) > 1e-3


@pytest.mark.parametrize("bad", [3.0, "left", np.array([1.0])])
def test_wrong_phi_type_is_a_type_error_naming_phi(fhn, bad):
    with pytest.raises(TypeError, match=r"`phi` must be callable as phi\(y\).*SlowManifold.*jax_fn.*got "
                       + type(bad).__name__):
        simulate_reduced(fhn, T_SPAN, Y0, phi=bad)


def test_jax_fn_returning_no_callable_is_a_type_error(fhn):
    with pytest.raises(TypeError, match=r"`phi`.jax_fn\(\) must return a callable.*returned float"):
        simulate_reduced(fhn, T_SPAN, Y0, phi=StandIn(1.5))


def test_no_manifold_names_both_ways_forward(fhn):
    with pytest.raises(ValueError) as info:
        simulate_reduced(fhn, T_SPAN, Y0)
    text = str(info.value)
    assert "fitzhugh_nagumo" in text and "x_guess=" in text and "phi=" in text
    assert "slow_manifold(system, 0, x_guess=" in text and "neural.load_phi" in text


def test_inconsistent_requests_are_value_errors(fhn):
    with pytest.raises(ValueError, match="`phi` and `x_guess` must not both be given"):
        reduced_system(fhn, left_branch, x_guess=[-2.0])
    with pytest.raises(ValueError, match=r"`x_guess` must have shape \(m,\) = \(1,\); got \(2,\)"):
        reduced_system(fhn, x_guess=[-2.0, 1.0])
    with pytest.raises(ValueError, match="`x_guess` is for a general system; 'me3' is a master equation"):
        reduced_system(sp_ode.get_system("me3"), x_guess=[1 / 3, 1 / 3, 1 / 3])
    toy_manifold = slow_manifold(sp_ode.get_system("toy"), 0)
    with pytest.raises(ValueError, match="`phi` must be a slow manifold of `system` 'fitzhugh_nagumo'.*'toy'"):
        reduced_system(fhn, toy_manifold)
    red = reduced_system(fhn, left_branch)
    with pytest.raises(ValueError, match="`phi` must not be given with a ReducedSystem"):
        simulate_reduced(red, T_SPAN, Y0, phi=left_branch)


def test_slow_manifold_follows_the_system_args(fhn):
    # a SlowManifold as phi is evaluated with the args of the system reduced (data to its terms):
    # with I = 0.1 the left branch is v_2(w − I) (Viète above with w − I in place of w)
    shifted = fhn.system.with_args({**fhn.system.args, "I": jnp.asarray(0.1)})
    manifold = slow_manifold(fhn, 0, x_guess=[-2.0])
    red = simulate_reduced(shifted, (0.0, 2.0), Y0, phi=manifold, ts=np.linspace(0.0, 2.0, 3))
    want = [float(_viete(w - 0.1, 2)) for w in red.y[:, 0]]
    np.testing.assert_allclose(red.x[:, 0], want, atol=1e-12)


# --- SlowManifold at zero points (item 3) ---------------------------------------------------------

def test_slow_manifold_at_zero_points_is_empty():
    toy = sp_ode.get_system("toy")
    manifold = slow_manifold(toy, 1)
    for empty in (np.zeros((0, 1)), np.zeros(0)):
        out = manifold(empty)
        assert out.shape == (0, 1) and out.dtype == np.float64
        assert manifold.terms(empty).shape == (0, 2, 1)
    # consistent with the non-empty batch (toy: h = y² + ε 2y³, ε = 0.01)
    np.testing.assert_allclose(manifold(np.array([[0.5]])), [[0.25 + 0.01 * 0.25]], rtol=1e-15)
    me3 = slow_manifold(sp_ode.get_system("me3"), 1, method="closed_form")
    assert me3(np.zeros((0, 1))).shape == (0, 3)


def test_critical_manifold_at_zero_points_is_empty():
    # the same chunked evaluation (`map_chunks`) serves Newton's critical manifold
    fhn = sp_ode.get_system("fitzhugh_nagumo").system
    out = sp_ode.critical_manifold(fhn, np.zeros((0, 1)), x_guess=[-2.0])
    assert out.shape == (0, 1)


def test_phi_mlp_jax_fn_is_reused_until_the_weights_change():
    # sp_ode caches compiled solves by the function's identity: the same weights must give the
    # same function object (no recompilation per simulate_reduced call), changed weights a new one.
    import torch

    from neural.phi.fit import PhiMLP

    mlp = PhiMLP(1, 3, width=4, depth=1, lower=[-2.0], upper=[2.0], seed=0)
    fn = mlp.jax_fn()
    assert mlp.jax_fn() is fn
    before = np.asarray(fn(np.array([0.3])))
    with torch.no_grad():  # the output layer starts at zero (uniform φ): move its bias
        mlp.out.bias.add_(torch.linspace(0.0, 1.0, 3, dtype=mlp.out.bias.dtype))
    fresh = mlp.jax_fn()
    assert fresh is not fn
    after = np.asarray(fresh(np.array([0.3])))
    assert np.max(np.abs(after - before)) > 1e-6  # the new copy carries the new weights
    # (outside sp_ode's float64 scope JAX computes in float32)
    np.testing.assert_allclose(after, mlp.predict(np.array([[0.3]]))[0], rtol=1e-6, atol=1e-7)
