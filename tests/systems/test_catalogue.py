"""The catalogue sp_ode.systems: backends agree, closed forms hold, invariants hold.

Save grids and options match tests/systems/test_simulation.py so compiled solves are shared.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sp_ode import SYSTEMS, get_system, simulate_reduced, stationary_distribution
from sp_ode.systems.catalogue import CatalogueEntry, master_equation_entry
from tests.checkers import convergence_order

# These tests evaluate f, g, φ and Q(y) themselves with JAX: in float64, as sp_ode does.
# One worker runs this module (make test: --dist loadgroup), so each trajectory in `_runs` is solved once for
# the tests that read it (backends agree, mass conserved, expm), not again on the other worker.
pytestmark = [pytest.mark.usefixtures("x64"), pytest.mark.xdist_group("test_catalogue")]

RTOL = 1e-8  # the simulate default; both backends run with it


def ts_for(entry, k: int = 5):
    return np.linspace(*entry.t_span, k)


_runs: dict = {}


def run(name: str, backend: str):
    """One trajectory per (system, backend) for the session: solves are the expensive part."""
    key = (name, backend)
    if key not in _runs:
        entry = get_system(name)
        _runs[key] = (entry, entry.simulate(ts=ts_for(entry), backend=backend))
    return _runs[key]


# `make test` keeps a general system, a linear one and a master equation; the others are `slow` (make test-slow, CI).
@pytest.mark.parametrize("name", [n if n in {"toy", "linear", "me3"} else pytest.param(n, marks=pytest.mark.slow)
                                  for n in SYSTEMS])
def test_backends_agree(name):
    # Independent integrators (diffrax Kvaerno5, scipy Radau with a JAX Jacobian) at rtol = 1e-8:
    # global errors of a few rtol each; we allow 100·rtol (measured worst: 8e-8, `linear`).
    entry, a = run(name, "diffrax")
    _, b = run(name, "scipy")
    assert a.success and b.success, (a.message, b.message)
    np.testing.assert_allclose(a.t, b.t)
    diff = max(np.max(np.abs(a.x - b.x)), np.max(np.abs(a.y - b.y)))
    assert diff <= 100 * RTOL, diff


@pytest.mark.parametrize("backend", ["diffrax", "scipy"])
def test_linear_matches_expm(backend):
    # exact solution z(t) = expm(M t) z(0) (scipy.linalg.expm), M = [[A/ε, B/ε], [C, D]]
    entry, traj = run("linear", backend)
    x_ref, y_ref = entry.exact_solution(traj.t)
    err = max(np.max(np.abs(traj.x - x_ref)), np.max(np.abs(traj.y - y_ref)))
    assert err <= 100 * RTOL, err


@pytest.mark.parametrize("name", ["me3", pytest.param("me10", marks=pytest.mark.slow), pytest.param("me50", marks=pytest.mark.slow)])
def test_master_equation_mass_conserved(name):
    # 1ᵀx is invariant since Q(y)1 = 0; only rounding, accumulated over ~500 steps, moves it.
    for backend in ("diffrax", "scipy"):
        entry, traj = run(name, backend)
        assert np.max(np.abs(traj.x.sum(axis=-1) - 1.0)) <= 1e-12
        assert traj.x.min() >= -1e-9  # stays on the simplex up to the tolerance


@pytest.mark.parametrize("name", ["me3", "me10", "me50", "averaging2"])
def test_master_equation_phi_is_p_st(name):
    # T1: φ(y) = p_st(y). The catalogue φ is a bordered solve, GTH another solve of the same system; the
    # independent reference is the attractor of the frozen fast flow with its certified bracket (§7.3)
    from sp_ode.verification.identity import attractor_distribution

    entry = get_system(name)
    family = entry.system.Q_of_y
    ys = family.grid(9)
    att = attractor_distribution(family.batch(ys))
    for y, p, r in zip(ys, att.p, att.radius):
        assert r <= 1e-10
        np.testing.assert_allclose(np.asarray(entry.phi(jnp.asarray(y))), p, rtol=0, atol=r + 1e-12)
        np.testing.assert_allclose(stationary_distribution(family(y)), p, rtol=0, atol=r + 1e-12)


@pytest.mark.parametrize("name", [n for n in SYSTEMS if get_system(n).phi is not None])
def test_phi_is_critical_manifold(name):
    # f(φ(y), y) = 0 on a grid of y, and φ is where the frozen fast flow goes (explicit RK4 / uniformised
    # powers: no solve shared with φ's own computation)
    from sp_ode.verification.identity import attractor_distribution, frozen_flow_attractor

    entry = get_system(name)
    d = entry.system.d
    ys = np.linspace(0.2, 1.0, 5)[:, None] * np.ones(d)
    phis = np.stack([np.asarray(entry.phi(jnp.asarray(y))) for y in ys])
    for y, phi in zip(ys, phis):
        fx = entry.system.f(0.0, jnp.asarray(phi), jnp.asarray(y), entry.system.args)
        assert np.max(np.abs(np.asarray(fx))) <= 1e-12
    if hasattr(entry.system, "Q_of_y"):
        att = attractor_distribution(np.stack([np.asarray(entry.system.Q(jnp.asarray(y))) for y in ys]))
        assert np.all(np.max(np.abs(phis - att.p), axis=1) <= att.radius + 1e-12)
    else:
        xs, ok, _ = frozen_flow_attractor(entry.system, ys, entry.x0)
        assert ok.all() and np.max(np.abs(xs - phis)) <= 1e-10 * max(1.0, np.abs(phis).max())


def _invariance_residual(entry: CatalogueEntry, eps: float, y) -> float:
    """‖ε Dh·g(h, y) − f(h, y)‖ for h = φ + ε h₁: O(ε²) exactly when h₁ is the first-order term."""
    args = entry.system.args
    h = lambda y: entry.phi(y) + eps * entry.h1(y)
    gy = entry.system.g(0.0, h(y), y, args)
    _, dh_g = jax.jvp(h, (y,), (gy,))
    return float(jnp.max(jnp.abs(eps * dh_g - entry.system.f(0.0, h(y), y, args))))


@pytest.mark.parametrize("name", ["toy", "linear", "michaelis_menten"])
def test_h1_closed_forms_satisfy_invariance(name):
    # The invariance equation ε Dh·g(h, y) = f(h, y) (docs/theory.md §3.3 (T3)): with the right h₁ the residual
    # falls like ε² (slope 2); a wrong h₁ leaves an O(ε) residual (slope 1).
    entry = get_system(name)
    y = jnp.full((entry.system.d,), 0.7)
    epss = [1e-2, 1e-3, 1e-4]
    slope = convergence_order(epss, [_invariance_residual(entry, e, y) for e in epss])
    assert abs(slope - 2.0) < 0.05, slope


@pytest.mark.parametrize("name", ["averaging2", "michaelis_menten", "linear"])
def test_reduced_closed_forms(name):
    # reduced flow against its closed form (Lambert W / expm); scipy backend, tight tolerances
    entry = get_system(name)
    ts = ts_for(entry)
    red = simulate_reduced(entry, entry.t_span, entry.y0, ts=ts, backend="scipy", rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(red.y, entry.reduced_solution(ts), rtol=0, atol=1e-8)


def test_reduced_phi_default_for_master_equation():
    # the default φ of a master-equation system is p_st; along the reduced solution x = p_st(y)
    entry = get_system("me3")
    red = simulate_reduced(entry.system, entry.t_span, entry.y0, ts=ts_for(entry), backend="scipy")
    family = entry.system.Q_of_y
    for x, y in zip(red.x, red.y):
        np.testing.assert_allclose(x, stationary_distribution(family(y)), rtol=0, atol=1e-12)


def test_vanderpol_at_eps_1e_6():
    # Relaxation oscillations at ε = 1e-6: the first jump from (2, 2/3) comes at
    # t = 3/2 − ln 2 + |a₁| ε^{2/3} + O(ε ln ε), |a₁| = 2.33811 (fold asymptotics, Mishchenko–Rozov).
    entry = get_system("vanderpol", eps=1e-6)
    traj = entry.simulate(t_span=(0.0, 1.0))  # ts=None: every accepted step
    assert traj.success and traj.t[0] == 0.0 and traj.t[-1] == 1.0 and np.all(np.diff(traj.t) > 0)
    assert traj.t.size == traj.stats["num_steps"] + 1
    x = traj.x[:, 0]
    i = np.flatnonzero((x[:-1] > 0) & (x[1:] <= 0))[0]
    delay = traj.t[i] - entry.asymptotics["first_jump_time_limit"]
    coefficient = delay / 1e-6 ** (2 / 3)
    assert abs(coefficient - entry.asymptotics["jump_delay_coefficient"]) < 0.05, coefficient
    assert abs(traj.y[i, 0] + 2 / 3) < 1e-3  # the jump leaves from the fold y = −2/3


def test_get_system_overrides_and_errors():
    assert get_system("toy", P=64).system.eps == 1 / 64
    assert get_system("me10", eps=1e-4).eps == 1e-4
    entry = get_system()  # the default: me3
    assert entry.name == "me3" and entry.system.n == 3
    with pytest.raises(ValueError) as info:
        get_system("lorenz")
    assert "`name` must be one of" in str(info.value) and "'vanderpol'" in str(info.value)
    with pytest.raises(TypeError, match="takes overrides"):
        get_system("toy", kappa=2.0)
    with pytest.raises(ValueError, match="`eps` must be > 0"):
        get_system("toy", eps=-1.0)
    with pytest.raises(ValueError, match="`y0` must lie in"):
        get_system("me3", y0=5.0)
    with pytest.raises(ValueError, match="`family_name` must be one of"):
        master_equation_entry("ring7", "bad")
    for name, factory in SYSTEMS.items():
        assert factory.__doc__ and get_system(name).reference  # every entry documents its reference
