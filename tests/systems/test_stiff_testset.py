"""The four standard stiff problems (VDPOL, ROBER, OREGO, HIRES) against their published references.

Reference values: Test Set for IVP Solvers (Mazzia & Magherini, Bari, release 2.4),
copied into `sp_ode.systems.stiff_testset` with their provenance.  scipy's Radau at the
same tolerances is the independent second backend.
"""
from __future__ import annotations

import numpy as np
import pytest

import sp_ode
from sp_ode.systems.stiff_testset import STIFF_PROBLEMS, get_stiff_problem, significant_digits

RTOL = 1e-7
# One worker runs this module (make test: --dist loadgroup): each (problem, backend) in `results` is solved
# once for both tests that read it (a duplicated HIRES Kvaerno5 solve was measured on the other worker).
pytestmark = pytest.mark.xdist_group("test_stiff_testset")


def _solve(name: str, backend: str, rtol: float = RTOL):
    p = get_stiff_problem(name)
    traj = sp_ode.simulate(p.system, p.t_span, p.x0, p.y0, rtol=rtol, atol=p.atol(rtol), backend=backend,
                           ts=np.array(p.t_span), max_steps=100_000)
    return p, np.concatenate([traj.x[-1], traj.y[-1]]), traj


class _Solves(dict):
    """(problem, backend) -> _solve(...), each solved on first use: under pytest-xdist each worker solves
    only the pairs its tests read, not all eight."""

    def __missing__(self, key):
        self[key] = _solve(*key)
        return self[key]


@pytest.fixture(scope="module")
def results():
    return _Solves()


# scipy on every problem and diffrax on ROBER in `make test`; diffrax's other three are `slow` (make test-slow, CI).
@pytest.mark.parametrize(("name", "backend"), [
    pytest.param(name, backend, marks=pytest.mark.slow) if backend == "diffrax" and name != "rober" else (name, backend)
    for name in STIFF_PROBLEMS for backend in ("diffrax", "scipy")])
def test_every_component_within_ten_tolerance_units(results, name, backend):
    # Error at t1 against the published reference, per component, in units of the tolerance
    # it implies (rtol·|ref| + atol).  Measured at rtol 1e-7 (diffrax Kvaerno5 / scipy Radau):
    # see docs/bench/stiff.md (before the general-system tolerance factor, orego had 5.8 units).
    p, z, _ = results[(name, backend)]
    units = np.abs(z - p.reference) / (RTOL * np.abs(p.reference) + p.atol(RTOL))
    assert np.max(units) <= 10.0, (name, backend, units)


@pytest.mark.parametrize("name", [n if n == "rober" else pytest.param(n, marks=pytest.mark.slow) for n in STIFF_PROBLEMS])
def test_diffrax_within_one_digit_of_radau(results, name):
    # scd = −log10 max relative error (the Test Set's measure).  With the controller at
    # rtol/100 for a general system (integration.TOL_FACTOR_GENERAL), Kvaerno5 vs Radau:
    # vdpol 10.42 vs 9.24, rober 8.80 vs 8.80, orego 8.18 vs 8.67, hires 11.90 vs 8.28.
    # At the requested tolerance itself ROBER and OREGO were 1.7 and 2.4 digits behind
    # (7.11, 6.23), and with the master-equation κ = 1 of old, HIRES had 4.1 (issue 12).
    p, z_dfx, _ = results[(name, "diffrax")]
    _, z_radau, _ = results[(name, "scipy")]
    assert significant_digits(z_dfx, p.reference) >= significant_digits(z_radau, p.reference) - 1.0


def test_significant_digits_sees_a_wrong_answer():
    # The checker itself: a result off by 1e-4 relative in one component has 4 digits.
    p = get_stiff_problem("hires")
    wrong = p.reference.copy()
    wrong[3] *= 1 + 1e-4
    assert significant_digits(wrong, p.reference) == pytest.approx(4.0, abs=1e-6)
    units = np.abs(wrong - p.reference) / (RTOL * np.abs(p.reference) + p.atol(RTOL))
    assert np.max(units) > 10.0  # the ten-tolerance-unit check would catch it


def test_unknown_problem_is_named():
    with pytest.raises(ValueError, match="must be one of"):
        get_stiff_problem("pollu")


@pytest.mark.slow
def test_bench_stiff_smoke(tmp_path):
    # The benchmark's code paths at smoke size: JSON record, figure, κ table.
    import importlib
    import json

    bench = importlib.import_module("bench.systems.stiff")
    out, png = tmp_path / "stiff.json", tmp_path / "stiff.png"
    assert bench.main(["--smoke", "--out", str(out), "--png", str(png)]) == 0
    record = json.loads(out.read_text())
    assert png.stat().st_size > 0
    assert {r["method"] for r in record["rows"]} == {"auto (LSODA)", "Kvaerno5", "Radau", "BDF", "LSODA ×1", "BDF ×1"}
    assert all(r["success"] for r in record["rows"])
    # the default route meets its tolerance (≤ 10 units); LSODA at the requested tolerance itself need not
    assert all(r["max_tolerance_units"] <= 10 for r in record["rows"] if r["method"] == "auto (LSODA)")
    by_config = {(r["tol_factor"], r["kappa"]): r for r in record["kappa"]}
    general, master, diffrax_default = by_config[(1e-2, 1.0)], by_config[(1.0, 1.0)], by_config[(1.0, 1e-2)]
    # On HIRES (measured 9.65 · 1130 steps, 7.43 · 368, 9.54 · 1181): the general-system
    # default beats the master-equation constants by > 1 digit, at no more steps than
    # diffrax's own defaults
    assert general["scd"] > master["scd"] + 1.0
    assert general["steps"] <= 1.2 * diffrax_default["steps"]
