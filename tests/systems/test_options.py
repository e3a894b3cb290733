"""How a solve is run (sp_ode.systems.options): the route auto picks, the escalation ladder, global-error tolerances.

Provenance of the expected values: the Test Set references of `sp_ode.systems.stiff_testset`
(VDPOL, ε = 1e-6, y(2) from RADAU5 in extended precision), the closed form of the toy
(docs/theory.md §6) and scipy Radau at rtol 1e-13 as an independent backend.
"""
from __future__ import annotations

import numpy as np
import pytest

import sp_ode
from sp_ode.systems.options import SolveOptions
from sp_ode.systems.simulation import simulate_checked
from sp_ode.systems.stiff_testset import get_stiff_problem

TS = np.linspace(0.0, 2.0, 5)


def test_auto_route_scipy_for_one_small_solve_diffrax_for_a_batch():
    e = sp_ode.get_system("toy", eps=1e-3)
    one = e.simulate(ts=TS)
    assert (one.stats["backend"], one.stats["method"]) == ("scipy", "LSODA")
    assert "small system" in one.stats["route"]
    batch = e.simulate(x0=np.zeros((2, 1)), y0=np.array([[1.0], [0.5]]), ts=TS)
    assert (batch.stats["backend"], batch.stats["method"]) == ("diffrax", "Kvaerno5")
    assert "batch" in batch.stats["route"]
    asked = e.simulate(ts=TS, backend="scipy", method="Radau")
    assert asked.stats["route"].endswith("asked for")


def test_eps_args_and_tolerances_are_data_to_the_compiled_vector_field():
    # one compiled f and Jacobian serve every ε, parameter value and tolerance of the same system
    e = sp_ode.get_system("michaelis_menten", eps=1e-2)
    e.simulate(ts=TS)
    again = sp_ode.simulate(e.system.with_eps(1e-4).with_args({**e.system.args, "kappa": 1.7}), e.t_span,
                            e.x0, e.y0, ts=TS, rtol=1e-6, atol=1e-9)
    assert again.stats["backend"] == "scipy" and again.stats["compile_time"] == 0.0


def test_auto_answer_meets_the_tolerance_against_an_independent_backend():
    # the toy at ε = 1e-3: LSODA (auto) against scipy Radau at rtol 1e-13, in tolerance units
    e = sp_ode.get_system("toy", eps=1e-3)
    auto = e.simulate(ts=TS, rtol=1e-8, atol=1e-10)
    ref = e.simulate(ts=TS, backend="scipy", method="Radau", rtol=1e-13, atol=1e-15)
    units = np.abs(auto.y - ref.y) / (1e-8 * np.abs(ref.y) + 1e-10)
    assert units.max() <= 10.0


def test_vdpol_at_rtol_1e_10_succeeds_within_ten_tolerance_units():
    # ε = 1e-6 at rtol 1e-10 ran out of its 50 000 steps at t = 3.2e-4 on the old default (diffrax, controller
    # at rtol/100); scipy Radau gets 13.4 digits there.  The default must succeed and meet the tolerance.
    p = get_stiff_problem("vdpol")
    rtol = 1e-10
    traj = sp_ode.simulate(p.system, p.t_span, p.x0, p.y0, rtol=rtol, atol=p.atol(rtol), ts=np.array(p.t_span))
    z = np.concatenate([traj.x[-1], traj.y[-1]])
    units = np.abs(z - p.reference) / (rtol * np.abs(p.reference) + p.atol(rtol))
    assert traj.success and units.max() <= 10.0, units


def test_a_budget_failure_escalates_and_is_recorded():
    e = sp_ode.get_system("toy", eps=1e-3)
    ref = e.simulate(ts=TS)
    budget = ref.stats["num_steps"] // 4          # a quarter of what the solve needs; 8x that is enough
    small = e.simulate(ts=TS, max_steps=budget, throw=False, escalate=False)
    assert small.status == 1 and f"max_steps ({budget}) reached" in small.message     # the check can fail
    grown = e.simulate(ts=TS, max_steps=budget)
    assert grown.success
    first = grown.stats["escalations"][0]
    assert first["from"] == first["to"] == "scipy/LSODA" and first["budget"] == 8 * budget
    np.testing.assert_allclose(grown.y, ref.y, rtol=0, atol=1e-8)


def test_a_diffrax_budget_is_extended_with_the_same_compiled_program():
    # Kvaerno5 with a quarter of the budget it needs: the 8x budget continues from the last state reached with
    # the program compiled for the first budget (no second compilation), and gives the generous budget's answer
    e = sp_ode.get_system("toy", eps=1e-2)
    args = (e.system, e.t_span, np.asarray(e.x0, float), np.asarray(e.y0, float))
    ref = simulate_checked(*args, ts=TS, options=SolveOptions("diffrax", "Kvaerno5", 1e-8, 1e-10, 50_000, False))
    budget = (ref.stats["num_steps"] + ref.stats["num_rejected_steps"]) // 4 + 1   # diffrax counts both
    first = simulate_checked(*args, ts=TS, options=SolveOptions("diffrax", "Kvaerno5", 1e-8, 1e-10, budget, False))
    assert first.status == 1
    grown = simulate_checked(*args, ts=TS, options=SolveOptions("diffrax", "Kvaerno5", 1e-8, 1e-10, budget, True))
    assert grown.success and [x["to"] for x in grown.stats["escalations"]] == ["diffrax/Kvaerno5"]
    assert grown.stats["compile_time"] == 0.0       # the continuation reused the compiled program
    np.testing.assert_allclose(grown.y, ref.y, rtol=0, atol=1e-9)


def test_a_hopeless_budget_stops_climbing_and_says_what_it_would_need():
    # van der Pol to t = 1e9: relaxation oscillations of period ≈ 1.6 need ~1e12 steps; the ladder (8x the
    # budget, then Radau) used to spend minutes to fail the same way. The 8x rung stops after its second
    # interval of 2000 steps (the prediction counts steps, not time) and Radau is not tried.
    e = sp_ode.get_system("vanderpol")
    traj = sp_ode.simulate(e.system, (0.0, 1e9), e.x0, e.y0, throw=False, max_steps=2000)
    assert traj.status == 1 and [x["to"] for x in traj.stats["escalations"]] == ["scipy/LSODA"]
    assert traj.stats["num_steps"] == 4000 and traj.stats["predicted_steps"] > 4 * (8 - 2) * 2000
    assert "the ladder was not climbed further" in traj.message and "more, over 4x" in traj.message


def test_the_step_prediction_is_optimistic_and_steps_out_of_the_way_of_growing_steps():
    from sp_ode.systems.integration import predicted_steps
    # 100 steps over [0, 1], last step 0.01: 900 more to reach t = 10 by either estimate
    assert predicted_steps(0.0, 1.0, 10.0, 100, 0.01) == pytest.approx(900.0)
    # the smaller of the two estimates: a last step of 0.09 (< 10x the mean 0.01) predicts only 100
    assert predicted_steps(0.0, 1.0, 10.0, 100, 0.09) == pytest.approx(100.0)
    # steps growing (a solve leaving its initial layer): no prediction, so no stop
    assert np.isnan(predicted_steps(0.0, 1.0, 10.0, 100, 0.5))
    assert np.isnan(predicted_steps(1.0, 1.0, 10.0, 100, 0.01))          # no progress: nothing to extrapolate


def test_a_singularity_is_not_escalated_forever():
    # y(0) = -1 blows up at t ≈ 1 (the reduced flow y' = -y²): the ladder stops when a retry gets no further
    e = sp_ode.get_system("toy", eps=1e-2)
    traj = sp_ode.simulate(e.system, e.t_span, e.x0, [-1.0], ts=TS, throw=False)
    assert not traj.success and abs(traj.stats["t_end"] - 1.1) < 0.05
    assert len(traj.stats["escalations"]) <= 2


@pytest.mark.parametrize("rtol", [1e-4, 1e-6, 1e-8, 1e-10])
@pytest.mark.parametrize("name", ["vdpol", "rober", "orego", "hires"])
def test_test_set_within_ten_tolerance_units_at_every_tolerance(name, rtol):
    # the default route on the four Test Set problems, rtol 1e-4 … 1e-10 (LSODA at its requested tolerance
    # left up to 226 units on OREGO at 1e-10; its controller now runs at 1e-2 of it: ≤ 4.6 measured)
    p = get_stiff_problem(name)
    traj = sp_ode.simulate(p.system, p.t_span, p.x0, p.y0, rtol=rtol, atol=p.atol(rtol), ts=np.array(p.t_span))
    z = np.concatenate([traj.x[-1], traj.y[-1]])
    units = np.abs(z - p.reference) / (rtol * np.abs(p.reference) + p.atol(rtol))
    assert traj.success and units.max() <= 10.0, (name, rtol, units)


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="`backend` must be one of"):
        SolveOptions.checked(backend="gpu")
    with pytest.raises(ValueError, match="`method` must be one of"):
        SolveOptions.checked(backend="scipy", method="Kvaerno5")
    with pytest.raises(ValueError, match="`rtol`"):
        SolveOptions.checked(rtol=-1.0)
