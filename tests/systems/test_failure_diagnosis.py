"""Systems checked at the door, failures diagnosed by cause (issue 12 items 8, 9; docs/theory.md §9).

Each case was measured on the code before: a NaN from f was reported as "raise max_steps
or loosen rtol/atol" (and with backend="scipy" escaped as a numpy traceback); complex g
was accepted; x0 = [] ran with m = 0; max_steps=10**9 preallocated ~24 bytes per allowed
step; a master equation whose Q(y) is not a generator, or is reducible, ran or ended in
NaN with the step-budget advice.
"""
from __future__ import annotations

import time
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import sp_ode
from sp_ode import FastSlowSystem, MasterEquationSystem, SolverError, simulate, simulate_reduced


def _sqrt_f(t, x, y, args):
    return -jnp.sqrt(x)  # x reaches 0 at t = 2√x0·ε; past it f is NaN


def _decay(t, x, y, args):
    return -y


SQRT = FastSlowSystem(_sqrt_f, _decay, eps=0.1, m=1, d=1, name="sqrt")


@pytest.mark.parametrize("backend", ["diffrax", "scipy"])
def test_nan_from_f_is_named_not_blamed_on_the_step_budget(backend):
    traj = simulate(SQRT, (0.0, 5.0), [1.0], [1.0], backend=backend, throw=False)
    assert traj.status == 4
    assert "`f` returns non-finite values (nan" in traj.message
    assert "will not help" in traj.message and "raise max_steps" not in traj.message
    assert traj.stats["t_end"] == pytest.approx(0.2, abs=1e-3)  # x(t) = (1 − t/(2ε))², zero at t = 0.2
    with pytest.raises(SolverError, match="non-finite"):
        simulate(SQRT, (0.0, 5.0), [1.0], [1.0], backend=backend)


def test_a_true_step_budget_failure_keeps_its_advice():
    # Negative control: nothing is wrong with f; the budget is just too small (a hard limit: no escalation) ...
    traj = simulate(SQRT, (0.0, 0.1), [1.0], [1.0], max_steps=3, throw=False, escalate=False)
    assert traj.status == 1 and "raise max_steps" in traj.message
    # ... and by default the budget grows instead: the answer comes back, the escalation recorded
    grown = simulate(SQRT, (0.0, 0.1), [1.0], [1.0], max_steps=3, throw=False)
    assert grown.success and grown.stats["escalations"][0]["reason"].startswith("The maximum number")


def _huge_f(t, x, y, args):
    return 1e300 - x


def test_overflow_of_f_over_eps_is_named():
    system = FastSlowSystem(_huge_f, _decay, eps=1e-10, m=1, d=1)
    traj = simulate(system, (0.0, 1.0), [1.0], [1.0], throw=False)
    assert traj.status == 4 and "f/ε overflows float64" in traj.message and "raise ε" in traj.message


def _complex_g(t, x, y, args):
    return -y * (1.0 + 0.5j)


def _complex_f(t, x, y, args):
    return -x + 0j


@pytest.mark.parametrize(("f", "g", "name"), [(lambda t, x, y, a: -x, _complex_g, "g"), (_complex_f, _decay, "f")])
def test_complex_output_is_refused_by_name(f, g, name):
    with pytest.raises(TypeError, match=f"`{name}` must return real values"):
        simulate(FastSlowSystem(f, g, eps=0.1), (0.0, 1.0), [1.0], [1.0])


@pytest.mark.parametrize("which", ["x0", "y0"])
def test_empty_states_are_refused(which):
    x0, y0 = ([], [1.0]) if which == "x0" else ([1.0], [])
    with pytest.raises(ValueError, match=f"`{which}` must have at least one component"):
        simulate(FastSlowSystem(lambda t, x, y, a: -x, _decay, eps=0.1), (0.0, 1.0), x0, y0)


def test_output_buffer_does_not_scale_with_max_steps(monkeypatch):
    # Before: the step buffer was max_steps long (24 GB for 10**9 here) and the call hung.
    start = time.perf_counter()
    traj = simulate(SQRT.with_eps(1.0), (0.0, 0.5), [1.0], [1.0], max_steps=10**9)
    assert traj.success and traj.t[-1] == 0.5
    assert time.perf_counter() - start < 60
    # Steps are kept in chunks of STEP_CHUNK, each resumed from the last state and step size
    # (the controller's memory restarts: measured 54 steps in chunks of 8 against 58 in one).
    from sp_ode.systems import integration

    whole = simulate(LINEAR, (0.0, 3.0), [1.0], [1.0])
    monkeypatch.setattr(integration, "STEP_CHUNK", 8)
    chunked = simulate(LINEAR, (0.0, 3.0), [1.0], [1.0])
    assert whole.stats["num_steps"] > 3 * 8
    assert abs(chunked.stats["num_steps"] - whole.stats["num_steps"]) <= 0.2 * whole.stats["num_steps"]
    assert chunked.t[0] == 0.0 and chunked.t[-1] == 3.0 and np.all(np.diff(chunked.t) > 0)
    assert len(chunked.t) == chunked.stats["num_steps"] + 1  # no repeated restart points
    exact = np.exp(-3.0)  # y' = −y: y(3) = e^{-3}
    assert abs(chunked.y[-1, 0] - exact) <= 1e-7 and abs(whole.y[-1, 0] - exact) <= 1e-7


def _lin_f(t, x, y, args):
    return -x + y


LINEAR = FastSlowSystem(_lin_f, _decay, eps=1e-2, m=1, d=1, name="linear_decay")


# --- master equations ----------------------------------------------------------------------

def _not_generator(y):
    return jnp.array([[-1.0, 1.0], [1.0, -0.5]])  # row 1 sums to 0.5


def _g1(t, x, y, args):
    return jnp.array([1.0])


def test_master_equation_with_a_non_generator_is_refused_at_y0():
    system = MasterEquationSystem(_not_generator, _g1, eps=0.01, n=2, d=1)
    with pytest.raises(ValueError, match="`Q_of_y` must return a generator at y = .*rows must sum to zero"):
        simulate(system, (0.0, 1.0), [0.5, 0.5], [0.0])


def test_master_equation_initial_state_off_the_simplex_is_refused_by_how_much_unless_opted_in():
    # before: warned and ran (x(t) then stays off the simplex and never approaches p_st)
    me3 = sp_ode.get_system("me3")
    with pytest.raises(ValueError, match=r"`x0` must be a probability vector.*differs from 1 by up to 0.5.*x0 / x0.sum"):
        simulate(me3, (0.0, 0.1), [1.5, 0.0, 0.0], me3.y0)
    with pytest.raises(ValueError, match=r"most negative entry is -0.1.*simplex=False"):
        simulate(me3, (0.0, 0.1), [1.1, -0.1, 0.0], me3.y0)
    with warnings.catch_warnings():  # negative control: a distribution runs, silently
        warnings.simplefilter("error")
        simulate(me3, (0.0, 0.1), me3.x0, me3.y0)
    # the opt-in: a linear population of mass 2 conserves its mass and approaches 2·p_st(y)
    system = me3.system
    pop = MasterEquationSystem(system.Q_of_y, system.g, eps=system.eps, args=system.args, simplex=False)
    traj = simulate(pop, (0.0, 0.1), 2.0 * np.asarray(me3.x0), me3.y0)
    np.testing.assert_allclose(traj.x[-1].sum(), 2.0, rtol=1e-9)


def _closing(y):
    r = jnp.maximum(1.0 - y[0], 0.0)  # every rate vanishes at y = 1: two closed classes there
    return r * jnp.array([[-1.0, 1.0], [1.0, -1.0]])


def test_reducible_generator_on_the_reduced_path_names_the_closed_classes():
    system = MasterEquationSystem(_closing, _g1, eps=0.01, n=2, d=1)
    traj = simulate_reduced(system, (0.0, 2.0), [0.0], throw=False)
    assert traj.status == 4
    assert "p_st(y) is undefined" in traj.message and "2 closed classes, {0}, {1}" in traj.message
    assert traj.stats["t_end"] == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(ValueError, match="no reduced flow at y0.*closed classes"):
        simulate_reduced(system, (0.0, 2.0), [1.5])
    ok = simulate_reduced(system, (0.0, 0.5), [0.0])  # negative control: before y = 1 all is well
    np.testing.assert_allclose(ok.x[-1], [0.5, 0.5], rtol=1e-12)


def _turns_bad(y):
    return jnp.array([[-1.0, 1.0], [1.0 - y[0], -1.0]])  # a generator only at y = 0


def test_generator_is_checked_along_the_reduced_path():
    system = MasterEquationSystem(_turns_bad, _g1, eps=0.01, n=2, d=1)
    traj = simulate_reduced(system, (0.0, 1.0), [0.0], throw=False)
    assert traj.status == 4 and "Q(y) is not a generator" in traj.message


@pytest.mark.slow
def test_a_row_sum_leaving_zero_mid_path_names_t_y_and_the_state_on_the_full_path():
    """Q(y) is a generator at y0 = 0 only (row b sums to −y): the full solves ran on, mass leaking
    silently (status 0); now they stop where the row sum leaves float32 rounding, naming t, y, the state."""
    system = MasterEquationSystem(_turns_bad, _g1, eps=0.01, n=2, d=1, states=["a", "b"])
    for backend in ("diffrax", "scipy"):
        traj = simulate(system, (0.0, 1.0), [0.5, 0.5], [0.0], backend=backend, throw=False)
        assert traj.status == 4, (backend, traj.message)
        assert "Q(y) is not a generator at y=[" in traj.message and "at t=" in traj.message
        assert "rows must sum to zero" in traj.message and "(state b)" in traj.message
        assert traj.stats["t_end"] < 1e-3
    fixed = MasterEquationSystem(lambda y: jnp.array([[-1.0, 1.0], [1.0 + y[0], -1.0 - y[0]]]), _g1, eps=0.01)
    assert simulate(fixed, (0.0, 1.0), [0.5, 0.5], [0.0], backend="diffrax").success   # negative control


def test_unknown_dimension_messages_name_the_right_argument():
    me = MasterEquationSystem(_closing, _g1, eps=0.01)
    with pytest.raises(ValueError, match="`n=`"):
        me.vector_field(0.0, jnp.zeros(3))
    # the manifolds read n off Q(y) itself (shapes from the system): p_st of the 2-state switch, (1, 1)/2
    np.testing.assert_allclose(sp_ode.critical_manifold(me, 0.3), [0.5, 0.5], rtol=1e-14)
    with pytest.raises(ValueError, match="`m=`"):
        sp_ode.critical_manifold(FastSlowSystem(lambda t, x, y, a: -x, _decay, eps=0.1), 0.3)
