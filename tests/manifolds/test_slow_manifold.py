"""Slow manifold h_ε = φ + εh₁ + … (sp_ode.slow_manifold): series path, T3 closed form, corrected flow."""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

import sp_ode
from sp_ode.manifolds.slow_manifold import SlowManifold, slow_manifold


@pytest.fixture(scope="module")
def toy():
    return sp_ode.get_system("toy")


@pytest.fixture(scope="module")
def toy_h2(toy):
    # order 2 keeps the compile short.  order=3 returns h₃ = 72y⁵ as derived below (checked by
    # hand when written), but its nested ε-derivatives take ~10 s to trace: not in the suite.
    return slow_manifold(toy, order=2)


def test_toy_terms_match_hand_derivation(toy_h2):
    # Toy of docs/theory.md §6: ε x' = −x + y², y' = −x.  Invariance ε h'(y)·(−h) = −h + y² with
    # h = y² + εh₁ + ε²h₂ + ε³h₃, matched by powers of ε (by hand):
    #   ε¹: −2y·y² = −h₁                         ⇒ h₁ = 2y³
    #   ε²: −(2y·h₁ + 6y²·y²) = −h₂              ⇒ h₂ = 10y⁴
    #   ε³: −(2y·10y⁴ + 6y²·2y³ + 40y³·y²) = −h₃ ⇒ h₃ = 72y⁵
    ys = np.linspace(-1.5, 2.0, 8)
    T = toy_h2.terms(ys)
    assert T.shape == (8, 3, 1)
    expected = np.stack([ys**2, 2 * ys**3, 10 * ys**4], axis=1)
    np.testing.assert_allclose(T[:, :, 0], expected, rtol=1e-13, atol=1e-13)


def test_call_sums_the_series(toy_h2):
    y, eps = 0.7, 0.01
    want = y**2 + eps * 2 * y**3 + eps**2 * 10 * y**4
    np.testing.assert_allclose(toy_h2(y)[0], want, rtol=1e-15)          # the system's ε = 0.01
    np.testing.assert_allclose(toy_h2(y, eps=0.1)[0], y**2 + 0.2 * y**3 + 0.1 * y**4, rtol=1e-14)
    np.testing.assert_allclose(toy_h2([y, 2 * y])[:, 0], [want, (2 * y)**2 + eps * 2 * (2 * y)**3
                                                          + eps**2 * 10 * (2 * y)**4], rtol=1e-15)
    np.testing.assert_allclose(np.asarray(toy_h2.jax_fn()(np.array([y])))[0], want, rtol=1e-15)
    assert toy_h2.jax_fn() is toy_h2.jax_fn()  # same ε → same function (compiled solves keyed on it are reused)


def test_t3_closed_form_equals_series_on_master_equations():
    # docs/theory.md §3.3 (T3) (A − p1ᵀ)⁻¹ formula vs the general invariance-equation path: independent code paths
    for name in ("me3", "me10"):
        entry = sp_ode.get_system(name)
        ys = np.linspace(-0.9, 0.9, 7)
        series = slow_manifold(entry, 1).terms(ys)
        closed = slow_manifold(entry, 1, method="closed_form").terms(ys)
        np.testing.assert_allclose(series, closed, rtol=0, atol=1e-12)
        assert np.max(np.abs(closed[:, 1])) > 1e-3       # h₁ is not trivially zero
        np.testing.assert_allclose(closed[:, 1].sum(axis=-1), 0.0, atol=1e-14)  # 1ᵀh₁ = 0
        p = sp_ode.stationary_distribution(entry.system.Q_of_y.batch(ys))
        np.testing.assert_allclose(closed[:, 0], p, atol=1e-13)


def test_catalogue_closed_forms_of_h1():
    # Michaelis–Menten: h₁ = κλ s/(s + κ)⁴ (standard QSSA first correction); linear: h₁ = H₁y
    mm = sp_ode.get_system("michaelis_menten")
    s = np.linspace(0.1, 2.0, 5)
    np.testing.assert_allclose(slow_manifold(mm, 1).terms(s)[:, 1, 0], np.asarray(mm.h1(s)), rtol=1e-12)
    lin = sp_ode.get_system("linear")
    ys = np.random.default_rng(0).normal(size=(4, 2))
    np.testing.assert_allclose(slow_manifold(lin, 1).terms(ys)[:, 1], np.stack([lin.h1(y) for y in ys]),
                               rtol=1e-12, atol=1e-14)


def test_corrected_reduced_flow_against_scipy(toy):
    # y' = g(h_ε(y), y) = −(y² + 2εy³) for k = 1: an independent scipy solve of that scalar ODE
    eps = 0.05
    h = slow_manifold(toy.system.with_eps(eps), 1)
    traj = h.simulate((0.0, 2.0), [1.0], method="Tsit5", rtol=1e-12, atol=1e-14, ts=[0.0, 1.0, 2.0])
    ref = solve_ivp(lambda t, y: -(y**2 + 2 * eps * y**3), (0, 2), [1.0], rtol=1e-12, atol=1e-14,
                    t_eval=[0.0, 1.0, 2.0]).y[0]
    np.testing.assert_allclose(traj.y[:, 0], ref, rtol=1e-9)
    np.testing.assert_allclose(traj.x[:, 0], ref**2 + 2 * eps * ref**3, rtol=1e-9)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"order": -1}, ValueError, "`order`"),
    ({"order": 1.5}, TypeError, "`order`"),
    ({"order": True}, TypeError, "`order`"),
    ({"order": 99}, ValueError, "`order`"),
    ({"order": 6}, ValueError, "highest order the series supports"),
    ({"method": "fraser"}, ValueError, "`method`"),
    ({"method": "closed_form"}, ValueError, "MasterEquationSystem"),
    ({"x_guess": [1.0, 2.0]}, ValueError, "`x_guess`"),
    ({"phi": 3.0}, TypeError, "`phi`"),
])
def test_bad_input(toy, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        slow_manifold(toy, **kwargs)


def test_bad_input_generator_and_call(toy_h2):
    with pytest.raises(ValueError, match="`order` must be <= 1"):
        slow_manifold(sp_ode.get_system("me3"), 2, method="closed_form")
    with pytest.raises(TypeError, match="`system`"):
        slow_manifold(object())
    with pytest.raises(ValueError, match="`eps`"):
        toy_h2(1.0, eps=-1.0)
    assert isinstance(toy_h2, SlowManifold) and "order=2" in repr(toy_h2)


def _switch(y, args):
    a = args["k"] * jnp.exp(y[0])
    return jnp.array([[-a, a], [args["b"], -args["b"]]])


def test_closed_form_manifold_reads_the_parameters_of_each_solve():
    # Q(y, args): the corrected flow with args= must be the flow of the system built with those args
    # (before: the closed form took Q from the system's own args, so a sweep over a rate of Q used
    # the wrong manifold and its error estimate was off by up to 870x)
    base = sp_ode.MasterEquationSystem(_switch, lambda x, y: jnp.array([x[1] - y[0]]), eps=0.05,
                                       args={"k": 1.0, "b": 2.0})
    other = {"k": 3.0, "b": 0.5}
    ts = np.linspace(0.0, 1.0, 3)
    a = slow_manifold(base, 1).simulate((0.0, 1.0), [0.0], ts=ts, args=other)
    b = slow_manifold(base.with_args(other), 1).simulate((0.0, 1.0), [0.0], ts=ts)
    np.testing.assert_allclose(a.y, b.y, rtol=1e-12)
    np.testing.assert_allclose(a.x, b.x, rtol=1e-12)
    assert abs(a.y[-1, 0] - slow_manifold(base, 1).simulate((0.0, 1.0), [0.0], ts=ts).y[-1, 0]) > 0.1  # they differ


def test_michaelis_menten_terms_to_order_three_match_closed_forms():
    # h₂, h₃ of ε v' = u − (u + K)v, u' = −u + (u + K − λ)v: the invariance equation solved order by order
    # in sympy (exact rational functions: H = Σ_{i<j} εⁱh_i + εʲc, solve [εʲ](ε H'·g(H) − f(H)) = 0 for c):
    #   h₂ = −Kλu(K² − 2Kλ + Ku + 3λu)/(u + K)⁷,
    #   h₃ = Kλu(K⁴ − 5K³λ + 2K³u + 5K²λ² + 6K²λu + K²u² − 24Kλ²u + 11Kλu² + 15λ²u²)/(u + K)¹⁰.
    # At u = K = 1, λ = 1/2 these are −5/512 and 9/2048.
    from sp_ode.systems.catalogue import michaelis_menten
    K, lam = 1.0, 0.5
    u = np.array([0.3, 1.0, 2.5])
    T = slow_manifold(michaelis_menten(eps=1e-3).system, order=3).terms(u[:, None])   # (3, 4, 1)
    h2 = -K * lam * u * (K**2 - 2 * K * lam + K * u + 3 * lam * u) / (u + K) ** 7
    h3 = K * lam * u * (K**4 - 5 * K**3 * lam + 2 * K**3 * u + 5 * K**2 * lam**2 + 6 * K**2 * lam * u + K**2 * u**2
                        - 24 * K * lam**2 * u + 11 * K * lam * u**2 + 15 * lam**2 * u**2) / (u + K) ** 10
    np.testing.assert_allclose(T[:, :, 0], np.stack([u / (u + K), K * lam * u / (u + K) ** 4, h2, h3], axis=1),
                               rtol=1e-12, atol=1e-15)
    assert T[1, 2, 0] == pytest.approx(-5 / 512, rel=1e-13) and T[1, 3, 0] == pytest.approx(9 / 2048, rel=1e-13)
