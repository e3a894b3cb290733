"""sp_ode.sweep validation (issue 34): stratified by path, per-path true/estimate ratios, the margin re-solve,
and estimates that hold from an off-manifold start because the start is projected along its fast fibre.

Model: ε x' = y − x, y' = −x², x0 = 2, y0 = 0.1 — chosen because the *unprojected* layer estimate
ε‖D_x g‖‖x0 − φ‖/γ undershoots here: g is nonlinear in x, and the frozen fibre X = y0 + δe^{−τ}
(δ = x0 − y0 = 1.9, γ = 1) shifts y by ε η₁ with η₁ = −∫(X² − y0²)dτ = −(2y0δ + δ²/2) = −2.185 (closed form),
while that estimate is ε·2y0·δ = 0.38ε: 5.75× too small, beyond the 1/safety = 2 the margin allows.
References: scipy Radau at rtol 1e-10 on the full system (within 2e-14 of rtol 1e-12 at ε = 1e-8, 1e-6, 1e-5) (independent of the sweep's stacked LSODA).
"""
from __future__ import annotations

import importlib

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import sp_ode
from sp_ode.sweeps import _paths
from sp_ode.sweeps._reasons import Reason
from sp_ode.sweeps.sweep import PATH_FULL, STATUS_FAILED, STATUS_RESOLVED, sweep, validation_sample

TOL = 1e-6
TS = np.array([0.5, 1.0, 2.0])
X0, Y0 = 2.0, 0.1
EPS = np.logspace(-7, -5.5, 10)
OPTS = dict(ts=TS, tol=TOL, chunk_size=8, max_order=0, route="reduced", progress_bar=False)


def _f(t, x, y, a):
    return y - x


def _g(t, x, y, a):
    return -(x ** 2)


sweep_module = importlib.import_module("sp_ode.sweeps.sweep")   # the package re-exports the function `sweep`
SYSTEM = sp_ode.FastSlowSystem(_f, _g, eps=1e-6, m=1, d=1, name="quadratic_drain")


@pytest.fixture(scope="module")
def references():
    out = []
    for eps in EPS:
        sol = solve_ivp(lambda t, z: [(z[1] - z[0]) / eps, -z[0] ** 2], (0.0, 2.0), [X0, Y0], method="Radau",
                        jac=lambda t, z: [[-1 / eps, 1 / eps], [-2 * z[0], 0.0]], rtol=1e-10, atol=1e-15, t_eval=TS)
        out.append(sol.y[1][:, None])
    return np.stack(out)


def _unprojected(monkeypatch):
    """Without the fix: starts kept at y0, the layer estimated by the old term ε‖D_x g‖‖x0 − h‖/γ."""
    def keep(plan, k, x0, y0, lanes, gamma, gx):
        with np.errstate(divide="ignore", invalid="ignore"):
            term = np.asarray(lanes["eps"]) * gx * np.linalg.norm(x0 - y0, axis=1) / gamma
        return y0.copy(), term
    monkeypatch.setattr(_paths, "project_starts", keep)


def _run(frac):
    return sweep(SYSTEM, {"eps": EPS}, (0.0, 2.0), [X0], [Y0], validate_fraction=frac, **OPTS)


def _returned_error(r, references):
    return np.abs(r.y - references).reshape(EPS.size, -1).max(axis=1)


def test_projected_estimate_holds_its_margin(references):
    r = _run(1.0)
    reduced = r.path_first == 0
    assert reduced.all()                             # the projection lets even ε = 3e-6 take the reduced path
    assert r.validation["per_path"]["reduced0"]["worst_ratio"] <= 1.0 / 0.5
    assert np.all(r.true_error[reduced] <= TOL) and not np.any(r.status == STATUS_RESOLVED)
    assert np.all(_returned_error(r, references) <= TOL)


def test_unprojected_estimate_undershoots_negative_control(monkeypatch, references):
    _unprojected(monkeypatch)
    r = _run(1.0)
    worst = r.validation["per_path"]["reduced0"]["worst_ratio"]
    assert 4.0 < worst < 7.0                          # ≈ 2.185/0.38 = 5.75, the closed forms of the docstring
    assert np.any(r.true_error[r.path_first == 0] > TOL)   # first-pass answers past tol (re-solved: all validated)


def test_margin_re_solves_the_points_a_bad_ratio_no_longer_covers(monkeypatch, references):
    # a few validated points measure the undershoot; every other point within reach of tol is re-solved
    _unprojected(monkeypatch)
    r = _run(0.2)
    per = r.validation["per_path"]["reduced0"]
    assert per["validated"] == 3 and per["worst_ratio"] > 2.0 and per["margin_resolved"] >= 1
    assert np.sum(r.reason == Reason.RESOLVED_MARGIN) == per["margin_resolved"]
    assert "re-solved past the margin" in " ".join(r.report().split())
    assert np.all(_returned_error(r, references) <= TOL)
    # … and without the margin re-solve some returned point is off by more than tol
    monkeypatch.setattr(sweep_module, "margin_points",
                        lambda table, check, validate, tol, safety: ({}, np.zeros(0, dtype=np.int64)))
    r_off = _run(0.2)
    assert np.any(_returned_error(r_off, references) > TOL)


def test_every_path_used_has_validated_points():
    r = sweep(SYSTEM, {"eps": np.logspace(-8, -1.5, 20)}, (0.0, 2.0), [X0], [Y0], validate_fraction=0.05, **OPTS)
    used = set(r.path_first[r.status != STATUS_FAILED].tolist())
    assert used == {0, PATH_FULL}
    for p in used:
        assert np.any(r.validated & (r.path_first == p))
    assert set(r.validation["per_path"]) == {"reduced0", "full"}
    assert "true/estimated per path" in " ".join(r.report().split())


def test_validation_sample_is_stratified():
    path = np.array([0] * 10 + [1] * 2 + [PATH_FULL] * 50 + [2])
    status = np.zeros(path.size, dtype=np.int64)
    status[-2] = STATUS_FAILED
    v = validation_sample(path, status, 0.1, seed=3)
    assert v[path == 0].sum() == 3                  # max(3, ⌈0.1·10⌉)
    assert v[path == 1].all() and v[path == 2].all()   # fewer than 3: every point
    assert v[path == PATH_FULL].sum() == 5 and not v[-2]   # ⌈0.1·49⌉; a failed point has nothing to check
    assert not validation_sample(path, status, 0.0, seed=3).any()
    np.testing.assert_array_equal(v, validation_sample(path, status, 0.1, seed=3))


def test_an_all_full_sweep_says_why_in_one_line():
    r = sweep(SYSTEM, {"eps": np.full(4, 1e-2)}, (0.0, 2.0), [X0], [Y0], validate_fraction=0.0, ts=TS, tol=TOL,
              chunk_size=8, max_order=0, progress_bar=False)
    lines = r.report().splitlines()
    assert lines[1].startswith("  all 4 points solved fully: ")
    assert len(lines[1]) > len("  all 4 points solved fully: ") + 10
