"""A printed Trajectory is a short summary, not its arrays (issue 13, item 1)."""
from __future__ import annotations

import numpy as np
import pytest

import sp_ode
from sp_ode.systems.simulation import Trajectory


def _big(status=0, message=""):
    # 201 save times, m = 20 fast variables, d = 1: the generated dataclass repr printed
    # 238 lines and 6 830 characters of arrays (NumPy elides only past 1000 entries; measured
    # when this test was written, and re-measured by the next test).
    t = np.linspace(0.0, 7.5, 201)
    x = np.outer(np.exp(-t), np.arange(1.0, 21.0))
    y = (1.0 / (1.0 + t))[:, None]
    stats = {"num_steps": 57, "num_rejected_steps": 3, "t_end": 7.5, "wall_time": 0.1, "compile_time": 0.0}
    return Trajectory(t=t, x=x, y=y, status=status, message=message, stats=stats, name="big")


def test_large_trajectory_prints_a_short_summary():
    traj = _big()
    text = repr(traj)
    assert str(traj) == text
    assert len(text.splitlines()) <= 15 and len(text) <= 1500, text
    # the summary's content: name, backend/method, status, t range and count, shapes, steps, final y
    assert text.splitlines()[0] == "Trajectory(big, diffrax/Kvaerno5, success)"
    assert "t: [0, 7.5], 201 saved times" in text
    assert "x: shape (201, 20), y: shape (201, 1)" in text
    assert "57 accepted, 3 rejected" in text
    assert "y(t=7.5) = [0.117647]" in text          # 1/(1 + 7.5) to 6 significant digits
    # no full array: the first fast state (x[0] = 1, 2, …, 20) is not printed
    assert "20." not in text


def test_the_dataclass_repr_would_have_been_long():
    # the check above is not vacuous: the generated dataclass repr of the same object is long
    import dataclasses

    traj = _big()
    fields = ", ".join(f"{f.name}={getattr(traj, f.name)!r}" for f in dataclasses.fields(traj) if f.repr)
    assert len(fields) > 1500 and len(fields.splitlines()) > 15


def test_long_final_y_is_elided():
    t = np.linspace(0.0, 1.0, 3)
    y = np.tile(np.arange(50.0), (3, 1))
    traj = Trajectory(t=t, x=np.zeros((3, 2)), y=y, status=0, message="", stats={})
    line = [s for s in repr(traj).splitlines() if s.strip().startswith("y(")][0]
    assert "..." in line and "49." in line and "25." not in line
    assert "steps" not in repr(traj)               # no stats, no steps line


def test_failed_trajectory_reports_status_message_and_last_reached_time():
    traj = _big(status=1, message="max_steps (5) reached at t=3 of [0, 7.5]; raise max_steps.\nsecond line")
    y = traj.y.copy()
    y[100:] = np.inf                                 # save times a failed solve did not reach hold inf
    traj = Trajectory(t=traj.t, x=traj.x, y=y, status=1, message=traj.message, stats=traj.stats)
    text = repr(traj)
    assert "FAILED (status 1)" in text
    assert "message: max_steps (5) reached" in text and "second line" not in text
    assert f"y(t={traj.t[99]:.6g}) = [{1 / (1 + traj.t[99]):.6f}]" in text   # last finite row


@pytest.mark.slow
def test_simulated_trajectory_and_batch():
    toy = sp_ode.get_system("toy")
    ts = np.linspace(0.0, 2.0, 5)
    traj = sp_ode.simulate(toy, (0.0, 2.0), [0.0], [1.0], ts=ts)
    text = repr(traj)
    assert "scipy/LSODA, success" in text and "5 saved times" in text   # the auto route of one small solve
    assert f"{traj.stats['num_steps']} accepted" in text
    assert f"y(t=2) = [{traj.y[-1, 0]:.6f}" in text
    batch = sp_ode.simulate(toy, (0.0, 2.0), [0.0], [[1.0], [0.5], [0.25]])
    text = repr(batch)
    assert batch.batched
    assert "batch of 3: 3 of 3 succeeded" in text
    assert "x: shape (3, 2, 1), y: shape (3, 2, 1)" in text
    assert "(per solve)" in text
    assert f"(solve 0 of 3) = [{batch.y[0, -1, 0]:.6f}" in text


def test_reduced_trajectory_has_the_same_summary_and_its_name():
    toy = sp_ode.get_system("toy")
    red = sp_ode.simulate_reduced(toy, (0.0, 2.0), [1.0], ts=np.linspace(0.0, 2.0, 3))
    text = repr(red)
    assert isinstance(red, Trajectory)
    assert text.startswith("Trajectory(toy/reduced, scipy/LSODA, success)")
    # reduced flow y' = −y² from y = 1: y(2) = 1/3 (docs/theory.md §6)
    assert "y(t=2) = [0.333333]" in text


@pytest.mark.parametrize("K", [0])
def test_no_saved_times_does_not_crash(K):
    traj = Trajectory(t=np.zeros(K), x=np.zeros((K, 1)), y=np.zeros((K, 1)), status=0, message="", stats={})
    assert "no saved times" in repr(traj)
