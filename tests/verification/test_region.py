"""Normal hyperbolicity judged on the region a trajectory visits (sp_ode.verification.region; docs/theory.md §3.5)."""
from __future__ import annotations

import math
import time

import numpy as np

import sp_ode
from sp_ode.verification.region import MARGIN, visited_region


def test_fitzhugh_nagumo_fold_outside_is_a_note():
    # I = 0: the left-branch equilibrium w* ≈ −0.6243 (v* + 0.7 = 0.8(v* − v*³/3), v* ≈ −1.1994) lies above the
    # fold w = −2/3 (closed form): the trajectory never reaches it, so the verdict is ok with a note
    e = sp_ode.get_system("fitzhugh_nagumo")
    r = visited_region(e.system, e.t_span, e.x0, e.y0)
    assert r.status == "ok" and not r.reached, r.message
    assert -0.6243 < r.lower[0] < -0.6 and r.upper[0] == 0.0
    assert any(n.startswith("fold at w = -0.666667") and "not reached" in n for n in r.notes)
    assert r.margin == MARGIN * (r.upper[0] - r.lower[0])


def test_fitzhugh_nagumo_fold_reached_stops_within_seconds():
    # I = 0.5: fold at w = −2/3 + I = −1/6 (closed form), on the path of the reduced flow
    e = sp_ode.get_system("fitzhugh_nagumo", I=0.5)
    visited_region(e.system, (0.0, 1.0), e.x0, e.y0)     # compile the Newton kernels outside the timing
    start = time.perf_counter()
    r = visited_region(e.system, e.t_span, e.x0, e.y0)
    elapsed = time.perf_counter() - start
    assert r.status == "FAIL" and r.reached and r.kind == "fold"
    assert abs(r.y_star[0] + 1 / 6) <= 1e-10
    assert r.full is None                               # nothing but the reduced path was integrated
    assert r.message.startswith("normal hyperbolicity: the critical manifold loses normal hyperbolicity")
    assert "reached at t ≈ 4.6" in r.message and "the reduction does not hold past it" in r.message
    assert elapsed < 10, elapsed


def test_vanderpol_fold_time_matches_closed_form():
    # along the branch x > 1, dt = −(x² − 1)/x dx: from x = 2 the fold x = 1 (y = −2/3) is reached at
    # t = ∫₁² (x − 1/x) dx = 3/2 − ln 2 (closed form)
    e = sp_ode.get_system("vanderpol")
    r = visited_region(e.system, (0.0, 4.0), e.x0, e.y0)
    assert r.reached and abs(r.y_star[0] + 2 / 3) <= 1e-10
    assert abs(r.t_star - (1.5 - math.log(2))) <= 1e-3, r.t_star
    # the catalogue default span stays on the branch: a meaningful verdict
    ok = visited_region(e.system, e.t_span, e.x0, e.y0)
    assert ok.status == "ok" and ok.lower[0] > -2 / 3


def test_master_equation_region():
    e = sp_ode.get_system("me3")
    r = visited_region(e.system, e.t_span, e.x0, e.y0, num_times=101)
    assert r.status == "ok" and r.weakest_attraction > 0
    # the spectral gap along the visited range is the weakest attraction (T2): γ(y) at the grid's worst point
    gaps = [sp_ode.spectral_gap(np.asarray(e.system.Q(np.array([y])))) for y in np.ravel(r.ys)]
    assert abs(min(gaps) - r.weakest_attraction) <= 1e-9 * max(gaps)


def test_repelling_branch_fails_at_once():
    # FitzHugh–Nagumo started on the middle branch: Newton from v = 0 at w = 0 finds v = 0, where
    # D_x f = 1 − v² = 1 > 0 (closed form): not attracting, so nothing is integrated
    e = sp_ode.get_system("fitzhugh_nagumo", v0=0.0)
    r = visited_region(e.system, e.t_span, e.x0, e.y0)
    assert r.status == "FAIL" and r.reached and r.kind == "not attracting"
    assert "is not attracting (largest Re λ of D_x f on the fast fibre 1 ≥ 0)" in r.message
    assert r.full is None and r.reduced is None
