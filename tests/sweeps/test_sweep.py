"""sp_ode.sweep: path selection, validated error estimates, chunked resume, bad input.

System: Michaelis–Menten (docs/theory.md §3.6), ε and κ swept.  Expected numbers
come from independent solves: the reference is a full Kvaerno5 solve at
rtol = 1e-3·tol (`sweep`'s own validation), cross-checked against scipy Radau
on two points; the ratio true/estimated error → 1 as ε → 0 is the asymptotics of
docs/theory.md §7.5 (the estimate is the next term of the expansion).
"""
from __future__ import annotations

import numpy as np
import pytest

import sp_ode
from sp_ode.sweeps import _paths
from sp_ode.sweeps.sweep import PATH_FULL, STATUS_RESOLVED, SweepResumeError, sweep

TOL = 1e-6
TS = np.array([0.5, 1.0, 1.5, 2.0])
N = 24
# max_order 1: orders 0, 1 (estimated by order 2) keep the compilations of this file short
OPTS = dict(ts=TS, tol=TOL, chunk_size=8, max_order=1, progress_bar=False)


def _entry():
    return sp_ode.get_system("michaelis_menten")


def _params(n=N, seed=1):
    rng = np.random.default_rng(seed)
    return {"eps": np.logspace(-6, -2, n), "kappa": rng.uniform(0.5, 2.0, n)}


@pytest.fixture(scope="module")
def validated_all():
    """Every point validated: the whole table's true errors are known."""
    e = _entry()
    return sweep(e.system, _params(), (0.0, 2.0), "manifold", [1.0], validate_fraction=1.0, **OPTS)


def test_paths_follow_eps_and_every_point_meets_tol(validated_all):
    r = validated_all
    assert r.y.shape == (N, TS.size, 1) and r.validated.all()
    assert np.all(r.status != 2)
    # after re-solves every point is within tol of the reference (re-solved points *are* the reference)
    final_err = np.where(r.status == STATUS_RESOLVED, 0.0, r.true_error)
    assert np.all(final_err <= TOL)
    # reduced order grows with ε: order 0 only at the smallest ε, the full solve only at the largest
    eps = r.params["eps"]
    for k in (0, 1):
        assert np.any(r.path_first == k)
    assert np.any(r.path == PATH_FULL)
    assert eps[r.path_first == 0].max() < eps[r.path_first == 1].min() * 10
    assert eps[r.path_first == PATH_FULL].min() > eps[r.path_first == 0].max()
    assert set(r.path_names) <= {"reduced0", "reduced1", "full"}


def test_estimate_tracks_true_error(validated_all):
    r = validated_all
    reduced = (r.path_first >= 0)
    # where the error is well above the reduced solver's floor (1e-3·tol), the estimate is
    # asymptotically exact: ratio → 1 (docs/theory.md §7.5)
    big = reduced & (r.true_error > 1e-2 * TOL)
    assert big.sum() >= 3
    assert np.all((r.ratio[big] > 0.5) & (r.ratio[big] < 2.0))
    assert r.summary()["validated_within_tol_first_pass"] == N - r.summary()["resolved"]


def test_reference_agrees_with_scipy_radau(validated_all):
    """Independent backend: two reduced-path points against scipy Radau at rtol 1e-12."""
    e = _entry()
    r = validated_all
    for i in np.flatnonzero(r.path >= 0)[[0, -1]]:
        s = e.system.with_eps(float(r.params["eps"][i])).with_args(
            {**e.system.args, "kappa": float(r.params["kappa"][i])})
        x0 = sp_ode.slow_manifold(s, order=2)(np.array([1.0]))
        ref = sp_ode.simulate(s, (0.0, 2.0), x0, [1.0], backend="scipy", method="Radau", rtol=1e-12,
                              atol=1e-14, ts=TS)
        assert np.max(np.abs(ref.y - r.y[i])) <= TOL


def _reference_error_vs_radau(plan_tol_factor=None):
    """max |y_ref − y_Radau(rtol 1e-12)| over 6 points spanning ε ∈ [1e-6, 1e-2], x0 = 0 (with a layer)."""
    from sp_ode.core.precision import in_float64

    e = _entry()
    eps = np.logspace(-6, -2, 6)
    kappa = np.linspace(0.5, 2.0, 6)
    plan = _paths.SweepPlan(e.system, dict(e.system.args), ("kappa",), (0.0, 2.0), TS, TOL, 1)
    chunk = _paths.ChunkInput(0, np.arange(6), eps, {"kappa": kappa}, np.zeros((6, 1)),
                                    np.ones((6, 1)), np.ones(6, dtype=bool))
    idx = np.arange(6)
    if plan_tol_factor is None:
        yr, sr = in_float64(_paths._reference)(plan, chunk, chunk.x0, idx, 8)
    else:
        yr, sr = in_float64(_paths._solve_full)(plan, chunk, chunk.x0, idx, 8, TOL * plan_tol_factor,
                                                      TOL * plan_tol_factor)
    assert np.all(sr == 0)
    worst = 0.0
    for i in idx:
        s = e.system.with_eps(float(eps[i])).with_args({**e.system.args, "kappa": float(kappa[i])})
        ref = sp_ode.simulate(s, (0.0, 2.0), [0.0], [1.0], backend="scipy", method="Radau", rtol=1e-12,
                              atol=1e-14, ts=TS)
        worst = max(worst, float(np.max(np.abs(ref.y - yr[i]))))
    return worst


def test_validation_reference_is_far_tighter_than_tol():
    """The reference that judges every path is ≥ 1000× more accurate than tol (scipy Radau at rtol 1e-12,
    an independent backend), at every ε and through the initial layer; a reference run at the sweep's own
    tol would not be (the check fails on it)."""
    assert _reference_error_vs_radau() <= 1e-3 * TOL
    assert _reference_error_vs_radau(plan_tol_factor=10.0) > 1e-3 * TOL


def test_validation_catches_a_wrong_estimate(monkeypatch):
    """An estimate 1000× too small puts points on paths that miss tol: validation re-solves them."""
    real = _paths._path_difference
    monkeypatch.setattr(_paths, "_path_difference", lambda a, b: real(a, b) / 1000.0)
    e = _entry()
    r = sweep(e.system, _params(), (0.0, 2.0), "manifold", [1.0], validate_fraction=1.0, **OPTS)
    assert np.sum(r.status == STATUS_RESOLVED) >= 1
    assert r.worst_ratio > 10.0
    assert np.all(np.where(r.status == STATUS_RESOLVED, 0.0, r.true_error) <= TOL)


def test_initial_layer_term_sends_large_eps_to_full():
    """x0 = 0, off the manifold: the layer shift ε‖D_x g‖‖x0 − h‖/γ rules out reduced paths at large ε."""
    e = _entry()
    r = sweep(e.system, _params(), (0.0, 2.0), [0.0], [1.0], validate_fraction=1.0, **OPTS)
    assert np.all(r.path[r.params["eps"] > 1e-4] == PATH_FULL)
    assert np.any(r.path_first >= 0)          # at ε ~ 1e-6 the layer shift is below tol
    assert np.all(np.where(r.status == STATUS_RESOLVED, 0.0, r.true_error) <= TOL)


def test_interrupted_sweep_resumes_without_recomputing(tmp_path, monkeypatch):
    e = _entry()
    args = (e.system, _params(), (0.0, 2.0), "manifold", [1.0])
    full = sweep(*args, validate_fraction=0.1, **OPTS)
    computed = []
    real = _paths.run_chunk

    def interrupt_after_first(plan, chunk):
        if computed:
            raise KeyboardInterrupt
        computed.extend(chunk.points.tolist())
        return real(plan, chunk)

    monkeypatch.setattr(_paths, "run_chunk", interrupt_after_first)
    with pytest.raises(KeyboardInterrupt):
        sweep(*args, validate_fraction=0.1, out=tmp_path, **OPTS)
    monkeypatch.setattr(_paths, "run_chunk", lambda plan, chunk: (computed.extend(chunk.points.tolist()),
                                                                       real(plan, chunk))[1])
    resumed = sweep(*args, validate_fraction=0.1, out=tmp_path, **OPTS)
    assert resumed.computed_chunks == (1, 2)
    assert sorted(computed) == list(range(N))              # no point computed twice
    for name in ("y", "path", "estimate", "status", "validated"):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(full, name))
    again = sweep(*args, validate_fraction=0.1, out=tmp_path, **OPTS)   # all read back
    assert again.computed_chunks == () and np.array_equal(again.y, full.y)
    with pytest.raises(SweepResumeError, match="different sweep"):
        sweep(*args, validate_fraction=0.1, out=tmp_path, **{**OPTS, "tol": 2 * TOL})


# --- bad input ------------------------------------------------------------------------------

def test_bad_input_is_named():
    e = _entry()
    s, good = e.system, _params(4)
    call = lambda params, **kw: sweep(s, params, (0.0, 2.0), "manifold", [1.0], **{**OPTS, **kw})
    with pytest.raises(ValueError, match="equal lengths"):
        call({"eps": good["eps"], "kappa": good["kappa"][:3]})
    with pytest.raises(ValueError, match="'kapa' is not a parameter.*'kappa'"):
        call({"eps": good["eps"], "kapa": good["kappa"]})
    bad_eps = good["eps"].copy()
    bad_eps[2] = 0.0
    with pytest.raises(ValueError, match="point 2 has eps = 0.0"):
        call({"eps": bad_eps})
    with pytest.raises(ValueError, match="`tol` must be"):
        call(good, tol=0.0)
    with pytest.raises(ValueError, match="`tol` must be"):
        call(good, tol=-1e-6)
    with pytest.raises(TypeError, match="`params` must be a non-empty mapping"):
        call([1.0, 2.0])
    with pytest.raises(ValueError, match="`x0` must be an array or 'manifold'"):
        sweep(s, good, (0.0, 2.0), "manfold", [1.0], **OPTS)
    with pytest.raises(ValueError, match="`y0` must have shape"):
        sweep(s, good, (0.0, 2.0), "manifold", np.ones((3, 1)), **OPTS)
    with pytest.raises(ValueError, match="`validate_fraction`"):
        call(good, validate_fraction=1.5)


def test_a_parameter_f_and_g_do_not_read_is_refused():
    e = _entry()
    s = e.system.with_args({**e.system.args, "unused": np.asarray(1.0)})
    with pytest.raises(ValueError, match=r"\['unused'\] are not read by f or g"):
        sweep(s, {"unused": np.ones(4)}, (0.0, 2.0), "manifold", [1.0], **OPTS)


def test_higher_order_terms_match_the_series_of_slow_manifold():
    """h₂ built by one step of (O_2) on top of order 1 = slow_manifold(order=2) (series), to rounding."""
    import jax

    e = _entry()
    s = e.system
    plan = _paths.SweepPlan(s, dict(s.args), ("kappa",), (0.0, 2.0), TS, TOL, 1)
    with jax.enable_x64(True):
        for y in (0.3, 1.0, 2.5):
            want = sp_ode.slow_manifold(s, order=2).terms(np.array([y]))
            got = _paths._terms(plan, 2)(np.array([y]), dict(s.args))
            np.testing.assert_allclose(np.array(got), want, rtol=1e-12, atol=1e-14)


def test_stage_seconds_account_for_the_chunks_computed(tmp_path):
    """stage_seconds sums the per-stage times of the chunks this call computed: positive and within the
    call's wall time; a sweep resumed entirely from ``out`` computed nothing and reports no stages."""
    entry = sp_ode.get_system("michaelis_menten")
    params = {"eps": np.array([1e-4, 1e-3, 1e-5, 1e-4])}
    kw = dict(ts=np.array([0.5, 1.0]), tol=1e-6, chunk_size=2, max_order=0, validate_fraction=0.0,
              progress_bar=False, out=tmp_path / "sw")
    res = sp_ode.sweep(entry.system, params, (0.0, 1.0), "manifold", [1.0], **kw)
    stages = res.summary()["stage_seconds"]
    assert {"setup", "reduced_0"} <= set(stages) and all(v >= 0 for v in stages.values())
    assert 0 < sum(stages.values()) <= res.seconds
    again = sp_ode.sweep(entry.system, params, (0.0, 1.0), "manifold", [1.0], **kw)
    assert again.computed_chunks == () and again.stage_seconds == {}


def test_sweep_plan_survives_pickling_bit_for_bit():
    """The plan sent to Dask workers keeps float64 parameters (a float64 JAX array unpickled outside
    JAX's float64 scope comes back float32: the workers then solved with λ = 0.30000001192…)."""
    import pickle

    from sp_ode.systems.catalogue import michaelis_menten

    system = michaelis_menten(lam=0.3).system
    plan = _paths.SweepPlan(system, dict(system.args), ("kappa",), (0.0, 2.0), TS, TOL, 1)
    back = pickle.loads(pickle.dumps(plan))
    chunk = _paths.ChunkInput(0, np.arange(2), np.array([1e-3, 1e-4]), {"kappa": np.array([1.0, 1.5])},
                                    None, np.ones((2, 1)), np.zeros(2, dtype=bool))
    lanes = _paths._lane_args(back, chunk, np.arange(2))
    assert lanes["args"]["lam"].dtype == np.float64 and np.all(lanes["args"]["lam"] == 0.3)


def test_a_sweep_too_large_for_memory_is_refused_before_any_chunk(monkeypatch):
    from sp_ode.core import memory

    e = _entry()
    ran = []
    monkeypatch.setattr(_paths, "run_chunk", lambda *a, **k: ran.append(1))
    monkeypatch.setattr(memory, "available_memory", lambda: (100, "test limit"))
    with pytest.raises(sp_ode.MemoryBudgetError, match=r"a sweep of 4 points in chunks of .* needs an estimated"):
        sweep(e.system, _params(4), (0.0, 2.0), "manifold", [1.0], **OPTS)
    assert ran == []
