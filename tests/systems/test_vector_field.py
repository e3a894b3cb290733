"""A newcomer's own functions, called through one `UserFunction`: float64 without asking, tracer errors
named, parameters in Q(y, args), states by name (docs/theory.md §2, §9; README "Your own model").

Each trap was reproduced on the code before (issue 25): a weakly typed float32 module constant in g
crashed diffrax with a bare AssertionError; a float32 generator function met a TypeError inside the
reduced solve; `np.array([...])` in f surfaced as JAX's TracerArrayConversionError from `simulate`
and `simulate_reduced`; Q(y, args) was a TypeError; a NaN y gave a NaN "generator"; a 0-d JAX ε was
refused; a rate turning negative mid-path went unnoticed.
"""
from __future__ import annotations

import pickle
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import sp_ode
from sp_ode import FastSlowSystem, MasterEquationSystem, simulate, simulate_reduced
from sp_ode.systems.vector_field import UserFunction, as_generator_function

# Made at import, outside any float64 scope, as in a user's script: a *weakly typed* float32 array
# (int array / Python float), the kind that crashed diffrax's closure conversion.
W32 = jnp.arange(4) / 3.0
W64 = np.asarray(W32, dtype=np.float64)   # the same rounded values, as float64


def _ring4(y):
    a, b = jnp.exp(0.5 * y[0]), jnp.exp(-0.5 * y[0])
    R = jnp.array([[0.0, a, 0.0, b], [b, 0.0, a, 0.0], [0.0, b, 0.0, a], [a, 0.0, b, 0.0]])
    return R - jnp.diag(R.sum(axis=1))


def _f_lin(t, x, y, args):
    return -x + y


def _g_w32(t, x, y, args):
    return jnp.array([W32 @ jnp.concatenate([x, y, x, y]) - 2.0 * y[0]])   # the constant in a product


def test_weak_float32_constant_is_made_strong_not_a_crash():
    from scipy.linalg import expm

    assert W32.dtype == jnp.float32 and W32.weak_type  # the premise of the trap
    eps = 0.05
    system = FastSlowSystem(_f_lin, _g_w32, eps=eps)
    # ε x' = −x + y, y' = w₂x + (w₁ + w₃ − 2)y with the float32-rounded w: z(t) = expm(At) z0 (an
    # independent method: scipy's matrix exponential)
    w = W64
    A = np.array([[-1.0 / eps, 1.0 / eps], [w[2], w[1] + w[3] - 2.0]])
    ts = np.linspace(0.0, 1.0, 3)
    exact = np.stack([expm(A * t) @ np.array([0.0, 1.0]) for t in ts])
    for backend in ("diffrax", "scipy"):
        traj = simulate(system, (0.0, 1.0), [0.0], [1.0], ts=ts, backend=backend, rtol=1e-10, atol=1e-12)
        assert traj.y.dtype == np.float64
        np.testing.assert_allclose(np.concatenate([traj.x, traj.y], axis=1), exact, rtol=1e-7, atol=1e-9)


def test_float32_outputs_are_cast_to_float64():
    # a generator made of float32 constants only: its output is float32 whatever y is
    K = jnp.array([[-1.0, 1.0], [2.0, -2.0]])          # float32 (the user's process)
    me = MasterEquationSystem(lambda y: K, lambda x, y: jnp.array([x[1] - y[0]]), eps=0.05)
    with sp_ode.float64():
        assert me.Q_fn(jnp.zeros(1), None).dtype == jnp.float64
    red = simulate_reduced(me, (0.0, 2.0), [0.0], ts=np.array([0.0, 2.0]))
    # p_st = (2, 1)/3 (2-state switch, DESIGN §6), so y' = 1/3 − y: y(2) = (1 − e⁻²)/3
    np.testing.assert_allclose(red.x[-1], [2 / 3, 1 / 3], rtol=1e-7)   # float32 rates: 6e-8 each
    np.testing.assert_allclose(red.y[-1, 0], (1 - np.exp(-2.0)) / 3, rtol=1e-6)


def _f_numpy(t, x, y, args):
    return np.array([-x[0] + y[0]])     # NumPy on a traced array: the mistake


def test_numpy_in_f_is_named_by_simulate_and_simulate_reduced():
    system = FastSlowSystem(_f_numpy, lambda x, y: -y, eps=0.01)
    for call in (lambda: simulate(system, (0.0, 1.0), [0.0], [1.0]),
                 lambda: simulate_reduced(system, (0.0, 1.0), [1.0], x_guess=[0.5])):
        with pytest.raises(TypeError, match=r"`f` must be written with jax.numpy.*np.array\(\[...\]\) → jnp.array") as info:
            call()
        assert "_f_numpy" in str(info.value) and "TracerArrayConversionError" in str(info.value)


def test_one_wrapper_per_function_and_it_pickles():
    a = as_generator_function("Q_of_y", _ring4)
    assert a is as_generator_function("Q_of_y", _ring4) and isinstance(a, UserFunction) and a.shorthand
    assert pickle.loads(pickle.dumps(a)) is a        # rebuilt through the same cache
    with pytest.raises(TypeError, match="must take \\(y, args\\) or the shorthand \\(y\\)"):
        as_generator_function("Q_of_y", lambda y, a, b: y)


# --- Q(y, args) ---------------------------------------------------------------------------------

def _switch(y, args):
    a = args["k"] * jnp.exp(y[0])
    return jnp.array([[-a, a], [args["b"], -args["b"]]])


def _g_switch(t, x, y, args):
    return jnp.array([args["c"] * (x[1] - y[0])])


def _p_switch(y, k, b):
    a = k * np.exp(y)
    return np.stack([b / (a + b), a / (a + b)], axis=-1)   # p_st = (b, a)/(a + b) (DESIGN §6)


def test_generator_with_parameters_is_computed_with_them():
    system = MasterEquationSystem(_switch, _g_switch, eps=0.01, args={"k": 1.0, "b": 2.0, "c": 1.0})
    assert system.takes_args
    ys = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(sp_ode.critical_manifold(system, ys), _p_switch(ys, 1.0, 2.0), rtol=1e-13)
    faster = system.with_args({"k": 3.0, "b": 2.0, "c": 1.0})
    np.testing.assert_allclose(sp_ode.critical_manifold(faster, ys), _p_switch(ys, 3.0, 2.0), rtol=1e-13)
    np.testing.assert_allclose(faster.Q([0.0]), [[-3.0, 3.0], [2.0, -2.0]], rtol=1e-15)
    # the reduced flow reads the parameters as data: x = p_st(y; k) along the path
    red = simulate_reduced(faster, (0.0, 1.0), [0.0], ts=np.linspace(0.0, 1.0, 4))
    np.testing.assert_allclose(red.x, _p_switch(red.y[:, 0], 3.0, 2.0), rtol=1e-12)
    # a batch over k (batch_args) equals the solve at each k (here: the largest, by another backend)
    ks = np.array([0.5, 3.0])
    args = {"k": ks, "b": np.full(2, 2.0), "c": np.ones(2)}
    batch = simulate(system, (0.0, 1.0), np.tile([0.5, 0.5], (2, 1)), np.zeros((2, 1)), args=args,
                     batch_args=True, ts=np.array([0.0, 1.0]), backend="diffrax", rtol=1e-10, atol=1e-12)
    one = simulate(faster, (0.0, 1.0), [0.5, 0.5], [0.0], ts=np.array([0.0, 1.0]), backend="scipy",
                   method="Radau", rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(batch.y[1], one.y, rtol=1e-7, atol=1e-9)


# --- states by name, bad y, ε as a JAX scalar, a rate turning negative ------------------------------

def _one_way(y):
    return jnp.array([[-1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]) * jnp.exp(y[0])


def test_states_name_the_messages():
    labels = ["closed", "open", "inactive"]
    bad = MasterEquationSystem(lambda y: jnp.array([[-1.0, 1.0, 0.0], [1.0, -1.0, -0.5], [0.0, 1.0, -1.0]]),
                               lambda x, y: jnp.array([0.0]), eps=0.1, states=labels)
    with pytest.raises(ValueError, match=r"rate open -> inactive"):
        bad.check_generator_at([0.0])
    reducible = MasterEquationSystem(_one_way, lambda x, y: jnp.array([0.0]), eps=0.1, states=labels)
    with pytest.raises(sp_ode.NotIrreducibleError, match=r"\{open\}, \{inactive\}"):
        sp_ode.critical_manifold(reducible, [[0.0]])
    with pytest.raises(ValueError, match="must name each of the n = 3 fast states; got 2"):
        MasterEquationSystem(_one_way, lambda x, y: jnp.array([0.0]), eps=0.1, n=3, states=["a", "b"])
    with pytest.raises(ValueError, match="distinct"):
        MasterEquationSystem(_one_way, lambda x, y: jnp.array([0.0]), eps=0.1, states=["a", "a", "b"])


def test_nan_y_is_refused_not_a_nan_generator():
    me = sp_ode.get_system("me3").system
    with pytest.raises(ValueError, match=r"`y` must be finite to evaluate Q\(y\).*nan"):
        me.Q(np.array([np.nan]))
    user = MasterEquationSystem(_ring4, lambda x, y: jnp.array([x[0] - y[0]]), eps=0.1)
    with pytest.raises(ValueError, match="`y` must be finite"):
        user.Q([np.nan])
    assert np.all(np.isfinite(user.Q([0.2])))        # negative control


def test_zero_dimensional_jax_eps_is_a_number():
    system = FastSlowSystem(lambda x, y: -x + y, lambda x, y: -y, eps=jnp.asarray(0.01))
    assert system.eps == pytest.approx(0.01) and isinstance(system.eps, float)
    with pytest.raises(ValueError, match="`eps` must be > 0"):
        FastSlowSystem(lambda x, y: -x + y, lambda x, y: -y, eps=jnp.asarray(-1.0))
    with pytest.raises(TypeError, match="`eps` must be a real number"):
        FastSlowSystem(lambda x, y: -x + y, lambda x, y: -y, eps=jnp.ones(2))


def _turning_negative(y):
    r = 1.0 - y[0]                      # the rate B -> C is negative once y passes 1
    R = jnp.array([[0.0, 1.0, 0.0], [0.5, 0.0, r], [1.0, 1.0, 0.0]])
    return R - jnp.diag(R.sum(axis=1))


def test_a_rate_turning_negative_mid_path_names_t_y_and_the_rate():
    system = MasterEquationSystem(_turning_negative, lambda x, y: jnp.array([1.0]), eps=0.01, states=["A", "B", "C"])
    for traj in (simulate(system, (0.0, 2.0), np.ones(3) / 3, [0.0], backend="diffrax", throw=False),
                 simulate(system, (0.0, 2.0), np.ones(3) / 3, [0.0], backend="scipy", throw=False),
                 simulate_reduced(system, (0.0, 2.0), [0.0], throw=False)):
        assert traj.status == 4, traj.message
        assert "t=1" in traj.message and "y=[1.]" in traj.message and "rate B -> C" in traj.message
        assert traj.stats["t_end"] == pytest.approx(1.0, abs=1e-3)   # y(t) = t reaches 1 at t = 1
    ok = simulate(system, (0.0, 0.9), np.ones(3) / 3, [0.0], backend="diffrax")   # negative control
    assert ok.success


K32 = jnp.array(0.1)      # strong float32, made at import in the user's (float32) process


def _f_k32(t, x, y, args):
    return -(1 + K32) * x + y      # 1 + K is computed in float32, then meets the float64 x


def _g_lin(t, x, y, args):
    return -x


def test_a_float32_constant_closed_over_is_named_at_the_first_solve():
    # the newcomer's trap: y(2) came back 7e-9 off at rtol 1e-11, without a word
    from sp_ode.core.precision import Float32Warning, float32_leaves

    leaky = FastSlowSystem(_f_k32, _g_lin, eps=1e-3, m=1, d=1, name="leaky")
    with pytest.warns(Float32Warning, match=r"`f` of system 'leaky' closes over a float32 constant \(0\.1\)"):
        simulate(leaky, (0.0, 0.1), [0.0], [1.0], rtol=1e-11, atol=1e-13)
    # a float32 scalar of NumPy reaches the trace as a float32-rounded float64 literal: named too
    assert float32_leaves(lambda x: x * np.float32(0.2), np.ones(1))[0].startswith("the float32-rounded literal")
    # negative control: a short dyadic (3·2⁻¹⁷, exact in both precisions, long in decimal) is no float32 rounding;
    # it is the master-equation row-sum tolerance 64·n·2⁻²³ at n = 3, and me3 and me50 warned at their first solve
    assert float32_leaves(lambda x: x * 2.288818359375e-05, np.ones(1)) == []
    for name in ("me3", "me50"):
        entry = sp_ode.get_system(name)
        with warnings.catch_warnings():
            warnings.simplefilter("error", Float32Warning)
            simulate(entry, entry.t_span, entry.x0, entry.y0, ts=np.array(entry.t_span), backend="scipy")
    # negative control: the same model with a Python float is quiet (and so is a float64 array)
    clean = FastSlowSystem(lambda t, x, y, args: -(1 + 0.1) * x + y, _g_lin, eps=1e-3, m=1, d=1, name="clean")
    with warnings.catch_warnings():
        warnings.simplefilter("error", Float32Warning)
        simulate(clean, (0.0, 0.1), [0.0], [1.0], rtol=1e-11, atol=1e-13)
    assert float32_leaves(lambda x: x * np.float64(0.2) + jnp.asarray(W64), np.ones(4)) == []
