"""sp_ode.sweep: routes priced with their compilation, validated estimates, one batched validation, resume.

System: Michaelis–Menten (docs/theory.md §3.6), ε and κ swept.  Expected numbers come from
independent solves: scipy Radau at rtol 1e-12 (a different method and implementation from the
stacked LSODA of the sweep) on the points named; the ratio true/estimated error → 1 as ε → 0 is the
asymptotics of docs/theory.md §7.5 (the estimate is the next term of the expansion).  Reduced paths
are exercised at order 0 (estimated by order 1) to keep the compilations of this file short.
"""
from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np
import pytest

import sp_ode
from sp_ode.sweeps import _cost, _paths, _stacked, _terms
from sp_ode.sweeps._reasons import TEXT, Reason
from sp_ode.sweeps.sweep import PATH_FULL, STATUS_FAILED, STATUS_RESOLVED, SweepResumeError, sweep

TOL = 1e-6
TS = np.array([0.5, 1.0, 1.5, 2.0])
N = 24
OPTS = dict(ts=TS, tol=TOL, chunk_size=8, max_order=0, progress_bar=False)


def _entry():
    return sp_ode.get_system("michaelis_menten")


def _params(n=N, seed=1):
    rng = np.random.default_rng(seed)
    return {"eps": np.logspace(-6, -2, n), "kappa": rng.uniform(0.5, 2.0, n)}


def _radau(eps, kappa, x0, y0=(1.0,)):
    """y at TS by scipy Radau at rtol 1e-12 (deterministic: one solve per point, kept for the module)."""
    return _radau_cached(float(eps), float(kappa), tuple(np.ravel(x0).tolist()), tuple(y0)).copy()


@functools.cache
def _radau_cached(eps, kappa, x0, y0):
    e = _entry()
    s = e.system.with_eps(eps).with_args({**e.system.args, "kappa": kappa})
    return sp_ode.simulate(s, (0.0, 2.0), list(x0), list(y0), backend="scipy", method="Radau", rtol=1e-12, atol=1e-14,
                           ts=TS).y


@pytest.fixture(scope="module")
def validated_all():
    """route='reduced' (every point tries order 0), every point validated: all true errors known."""
    e = _entry()
    return sweep(e.system, _params(), (0.0, 2.0), "manifold", [1.0], validate_fraction=1.0, route="reduced", **OPTS)


def test_paths_follow_eps_and_every_point_meets_tol(validated_all):
    r = validated_all
    assert r.y.shape == (N, TS.size, 1) and r.validated.all()
    assert np.all(r.status != STATUS_FAILED)
    final_err = np.where(r.status == STATUS_RESOLVED, 0.0, r.true_error)
    assert np.all(final_err <= TOL)
    eps = r.params["eps"]
    assert np.any(r.path_first == 0) and np.any(r.path == PATH_FULL)
    assert eps[r.path_first == PATH_FULL].min() > eps[r.path_first == 0].max()    # order 0 only at small ε
    reasons = r.reasons()
    assert set(reasons) == {"reduced0", "full"}
    assert TEXT[Reason.FULL_ESTIMATE] in reasons["full"]          # tried, estimate too large: solved fully


def test_estimate_tracks_true_error(validated_all):
    r = validated_all
    big = (r.path_first == 0) & (r.true_error > 1e-2 * TOL)
    assert big.sum() >= 3
    assert np.all((r.ratio[big] > 0.5) & (r.ratio[big] < 2.0))
    # the full route's estimate (LSODA's global-error factor × its tolerance) holds too
    full = r.path_first == PATH_FULL
    assert np.all(r.true_error[full] <= r.estimate[full])


def test_sweep_agrees_with_scipy_radau(validated_all):
    """Independent method: a reduced-path point and a full-path point against scipy Radau at rtol 1e-12."""
    r = validated_all
    e = _entry()
    for i in (np.flatnonzero(r.path == 0)[0], np.flatnonzero(r.path == PATH_FULL)[-1]):
        s = e.system.with_eps(float(r.params["eps"][i])).with_args({**e.system.args,
                                                                   "kappa": float(r.params["kappa"][i])})
        start = sp_ode.slow_manifold(s, order=1)(np.array([1.0]))      # x0 = "manifold": h⁽¹⁾(y0)
        assert np.max(np.abs(_radau(r.params["eps"][i], r.params["kappa"][i], start) - r.y[i])) <= TOL


def _reference_error_vs_radau(factor):
    """max |y_ref − y_Radau(rtol 1e-12)| over 6 points spanning ε ∈ [1e-6, 1e-2], x0 = 0 (with a layer),
    the full route's stacked solve at controller tolerance `factor`·tol."""
    from sp_ode.core.precision import in_float64

    e = _entry()
    eps, kappa = np.logspace(-6, -2, 6), np.linspace(0.5, 2.0, 6)
    plan = _paths.SweepPlan(e.system, dict(e.system.args), ("kappa",), (0.0, 2.0), TS, TOL, 0, sizes=(8,))
    lanes = _paths.lanes_of(plan, eps, {"kappa": kappa}, np.arange(6))
    yr, ok, _ = in_float64(_paths.solve_full)(plan, np.zeros((6, 1)), np.ones((6, 1)), lanes, factor)
    assert ok.all()
    return max(float(np.max(np.abs(_radau(eps[i], kappa[i], [0.0]) - yr[i]))) for i in range(6))


def test_validation_reference_is_far_tighter_than_tol():
    """The reference that judges every path is ≥ 1000× more accurate than tol (scipy Radau at rtol 1e-12, an
    independent method), at every ε and through the initial layer; one run at 10·tol would not be."""
    assert _reference_error_vs_radau(_paths.REFERENCE_TOL_FACTOR) <= 1e-3 * TOL
    assert _reference_error_vs_radau(10.0) > 1e-3 * TOL


def test_validation_catches_a_wrong_estimate(monkeypatch):
    """An estimate 1000× too small puts points on paths that miss tol: validation re-solves them."""
    real = _paths.path_difference
    monkeypatch.setattr(_paths, "path_difference", lambda a, b: real(a, b) / 1000.0)
    e = _entry()
    r = sweep(e.system, _params(), (0.0, 2.0), "manifold", [1.0], validate_fraction=1.0, route="reduced", **OPTS)
    assert np.sum(r.status == STATUS_RESOLVED) >= 1
    assert r.worst_ratio > 10.0
    assert np.all(np.where(r.status == STATUS_RESOLVED, 0.0, r.true_error) <= TOL)
    assert TEXT[Reason.RESOLVED] in r.reasons()["full"]


def test_initial_layer_is_projected_and_its_reason_needs_x0_off_the_manifold(validated_all):
    """x0 = 0, off the manifold: each start is projected to the base point of its fast fibre; only where the layer
    itself (ε·40/γ) would take more than a tenth of the span is the point solved fully for the layer.
    x0 = "manifold" never gives that reason (issue 34: it did for 113 of 200 points)."""
    e = _entry()
    r = sweep(e.system, _params(), (0.0, 2.0), [0.0], [1.0], validate_fraction=1.0, route="reduced", **OPTS)
    layer = r.reason == Reason.FULL_LAYER
    eps = r.params["eps"]
    assert layer.any() and eps[layer].min() > 1e-3 and np.all(r.path[layer] == PATH_FULL)
    assert np.any(r.path_first == 0)
    assert np.all(np.where(r.status == STATUS_RESOLVED, 0.0, r.true_error) <= TOL)
    assert not np.any(validated_all.reason == Reason.FULL_LAYER)


# --- the cost model ---------------------------------------------------------------------------------

def _pair_programs(system) -> list:
    return [k for k in _stacked._PROGRAMS._data if k[0][0][0] == "pair" and k[0][1][1] is system.f]


def test_a_small_sweep_is_all_full_and_compiles_no_reduced_path():
    """24 points: the first chunk prices the full route; compiling a reduced path could not pay, so none is
    compiled, and every point says why (the old sweep compiled orders 0–3 for any sweep: 244 s for 60 points)."""
    e = _entry()
    before = len(_pair_programs(e.system))
    r = sweep(e.system, _params(), (0.0, 2.0), "manifold", [1.0], validate_fraction=0.2, **OPTS)
    assert np.all(r.path == PATH_FULL) and np.all(r.status == 0)
    assert r.reasons() == {"full": {TEXT[Reason.FULL_COMPILE]: N}}
    assert len(_pair_programs(e.system)) == before
    assert r.plan["notes"] and "not tried" in r.plan["notes"][0]
    assert r.plan["t_full_per_point_s"] > 0 and r.plan["compile_s"]["pair0"] > 0
    final = np.where(r.status == STATUS_RESOLVED, 0.0, r.true_error)[r.validated]
    assert np.all(final <= TOL)


def test_each_route_compiles_once_per_stack_size():
    """Chunks of 8, 8 and 4 points and 5 validated points all run on the one stack size 8: one compilation of
    the full route for the whole sweep, none for a second sweep over the same system."""
    import jax.numpy as jnp

    # fresh vector fields (Michaelis–Menten written again): nothing compiled for them yet
    s = sp_ode.FastSlowSystem(lambda t, x, y, a: y - (y + a["kappa"]) * x,
                              lambda t, x, y, a: -y + (y + a["kappa"] - a["lam"]) * x, eps=1e-3, m=1, d=1,
                              args={"kappa": jnp.asarray(1.0), "lam": jnp.asarray(0.5)}, name="mm_again")
    kw = dict(OPTS, route="full", validate_fraction=0.25)
    x0 = np.full((20, 1), 0.5)
    keys = set(_stacked._PROGRAMS._data)
    sweep(s, _params(20, seed=5), (0.0, 2.0), x0, [1.0], **kw)
    new = [k for k in set(_stacked._PROGRAMS._data) - keys if k[0][1][1] is s.f]
    assert [(k[0][0], k[1]) for k in new] == [("full", 8)]
    clock = _stacked.compile_clock()
    sweep(s.with_args({"kappa": 1.5, "lam": 0.6}), _params(20, seed=6), (0.0, 2.0), x0, [1.0], **kw)
    assert _stacked.compile_clock() == clock


def test_validation_is_one_batched_reference_solve(monkeypatch):
    """Three chunks, validated points in each: one reference call for the whole sweep (it was one per chunk)."""
    calls = []
    real = _paths.reference
    monkeypatch.setattr(_paths, "reference", lambda *a, **k: (calls.append(a[1].shape[0]), real(*a, **k))[1])
    e = _entry()
    r = sweep(e.system, _params(), (0.0, 2.0), "manifold", [1.0], validate_fraction=0.5, route="full", **OPTS)
    assert calls == [int(r.validated.sum())] and r.validated.sum() == N // 2
    assert "validate" in r.stage_seconds


def test_report_fits_one_screen_and_says_why():
    e = _entry()
    r = sweep(e.system, _params(), (0.0, 2.0), "manifold", [1.0], validate_fraction=0.2, **OPTS)
    text = r.report()
    lines = text.splitlines()
    assert len(lines) <= 24 and max(len(line) for line in lines) <= 160
    assert TEXT[Reason.FULL_COMPILE] in text and "worst estimate" in text and "validated" in text
    s = r.summary()
    assert s["reasons"] == r.reasons() and 0 <= s["validation_share"] <= 1
    assert str(r) == text


def test_a_point_that_blows_up_fails_alone():
    """One lane whose solution blows up before t1 fails on its own (the stack is split around it); the others
    match per-point scipy Radau solves."""
    import jax.numpy as jnp

    def f(t, x, y, a):
        return -x + y

    def g(t, x, y, a):
        return a["p"] * x ** 3 - y

    s = sp_ode.FastSlowSystem(f, g, eps=1e-3, m=1, d=1, args={"p": jnp.asarray(0.1)}, name="blowup")
    p = np.array([0.1, 0.2, 8.0, 0.3])          # p = 8: y' ≈ 8y³ − y from y0 = 1 blows up near t ≈ 0.07
    r = sweep(s, {"eps": np.full(4, 1e-3), "p": p}, (0.0, 2.0), "manifold", [1.0], ts=TS, tol=TOL, route="full",
              validate_fraction=0.0, progress_bar=False)
    assert r.status.tolist() == [0, 0, STATUS_FAILED, 0]
    assert r.reason[2] == Reason.FAILED and np.all(np.isinf(r.y[2]))
    for i in (0, 1, 3):
        si = s.with_args({"p": float(p[i])})
        x0 = sp_ode.slow_manifold(si, order=1)(np.array([1.0]))
        ref = sp_ode.simulate(si, (0.0, 2.0), x0, [1.0], backend="scipy", method="Radau", rtol=1e-12, atol=1e-14,
                              ts=TS).y
        assert np.max(np.abs(ref - r.y[i])) <= TOL


# --- resume and fingerprints ---------------------------------------------------------------------------

def test_interrupted_sweep_resumes_without_recomputing(tmp_path, monkeypatch):
    """Interrupted after its first chunk, with the temporary files a `kill -9` mid-write leaves (a torn
    manifest and chunk): the same call resumes, computes only the missing chunks, removes the orphans, and
    leaves chunk files byte for byte those of an uninterrupted run (they held a wall-clock timing array)."""
    import json

    e = _entry()
    args = (e.system, _params(), (0.0, 2.0), "manifold", [1.0])
    whole = tmp_path / "whole"
    full = sweep(*args, validate_fraction=0.1, out=whole, **OPTS)
    tmp_path = tmp_path / "cut"
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
    orphans = [tmp_path / ".manifest.json.x1y2z3.tmp", tmp_path / ".chunk_000001.npz.a1b2c3.tmp"]
    for p in orphans:
        p.write_bytes(b"torn")
    monkeypatch.setattr(_paths, "run_chunk", lambda plan, chunk: (computed.extend(chunk.points.tolist()),
                                                                   real(plan, chunk))[1])
    resumed = sweep(*args, validate_fraction=0.1, out=tmp_path, **OPTS)
    assert resumed.computed_chunks == (1, 2)
    assert sorted(computed) == list(range(N))              # no point computed twice
    assert not any(p.exists() for p in orphans)
    for i in range(3):
        name = f"chunk_{i:06d}.npz"
        assert (tmp_path / name).read_bytes() == (whole / name).read_bytes(), name
    assert json.loads((tmp_path / "manifest.json").read_text()) == json.loads((whole / "manifest.json").read_text())
    for name in ("y", "path", "estimate", "status", "validated", "reason"):
        np.testing.assert_array_equal(getattr(resumed, name), getattr(full, name))
    again = sweep(*args, validate_fraction=0.1, out=tmp_path, **OPTS)   # all read back, validation too
    assert again.computed_chunks == () and np.array_equal(again.y, full.y) and again.seconds == 0.0
    np.testing.assert_array_equal(again.true_error, full.true_error)
    with pytest.raises(SweepResumeError, match="different sweep") as refused:
        sweep(*args, validate_fraction=0.1, out=tmp_path, **{**OPTS, "tol": 2 * TOL})
    assert f"since the earlier run, the options (tol {TOL!r} → {2 * TOL!r})" in str(refused.value)


def _tiny(system, out, **kw):
    return sweep(system, {"eps": np.array([1e-4, 1e-3])}, (0.0, 1.0), "manifold", [1.0], ts=np.array([1.0]),
                 tol=TOL, route="full", validate_fraction=0.0, progress_bar=False, out=out, **kw)


def test_a_changed_model_never_resumes_from_old_chunks(tmp_path):
    """The same name, other args (λ = 0.5 → 0.3), other code (a constant in g), other closure: each is a
    different sweep (was: 0 chunks computed and the old system's numbers returned)."""
    e = _entry()
    first = _tiny(e.system, tmp_path / "a")
    with pytest.raises(SweepResumeError, match="since the earlier run, the system's `args`:"):
        _tiny(e.system.with_args({**e.system.args, "lam": np.asarray(0.3)}), tmp_path / "a")
    np.testing.assert_array_equal(_tiny(e.system, tmp_path / "a").y, first.y)     # unchanged: resumes

    def make(c):
        def g(t, x, y, a):
            return -y + c * x
        return sp_ode.FastSlowSystem(lambda t, x, y, a: y - x, g, eps=1e-3, m=1, d=1, name="same")

    _tiny(make(0.5), tmp_path / "b")
    with pytest.raises(SweepResumeError):
        _tiny(make(0.7), tmp_path / "b")                        # a closure constant
    _tiny(sp_ode.FastSlowSystem(lambda t, x, y, a: y - x, lambda t, x, y, a: -y + 0.5 * x, eps=1e-3, m=1, d=1,
                                name="same2"), tmp_path / "c")
    with pytest.raises(SweepResumeError):
        _tiny(sp_ode.FastSlowSystem(lambda t, x, y, a: y - x, lambda t, x, y, a: -y + 0.6 * x, eps=1e-3, m=1, d=1,
                                    name="same2"), tmp_path / "c")   # the code of g


HELPED = """
import sp_ode
import rates_helper                # read as rates_helper.RATE: not one of f's or g's globals

def f(t, x, y, args):
    return y - x

def g(t, x, y, args):
    return -y + rates_helper.RATE * x

system = sp_ode.FastSlowSystem(f, g, eps=1e-3, m=1, d=1, name="helped")
"""


def test_a_resume_refused_after_a_helper_module_changed_names_that_helper(tmp_path):
    """model.py does `import rates_helper` and reads `rates_helper.RATE`: the constant is no global of f or g,
    so 0.5 → 0.7 in the helper kept the fingerprint and the sweep resumed with the old model's numbers.  The
    helper's source is a part of the fingerprint now, and the refusal names it (and nothing else)."""
    import sys

    from sp_ode.core.files import load_object

    def load(rate):
        (tmp_path / "rates_helper.py").write_text(f"RATE = {rate}\n")
        for name in [n for n in sys.modules if n == "rates_helper" or n.startswith("_sp_ode_user_")]:
            del sys.modules[name]            # a new process would import the edited files afresh
        return load_object(f"{tmp_path / 'model.py'}:system")

    (tmp_path / "model.py").write_text(HELPED)
    first = _tiny(load(0.5), tmp_path / "o")
    assert _tiny(load(0.5), tmp_path / "o").computed_chunks == ()          # unchanged: resumes
    with pytest.raises(SweepResumeError) as refused:
        _tiny(load(0.7), tmp_path / "o")
    assert "since the earlier run, the helper module 'rates_helper' changed:" in str(refused.value)
    assert not np.array_equal(_tiny(load(0.7), tmp_path / "new").y, first.y)   # the edit changes the answer


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
    with pytest.raises(TypeError, match="`params` must be a non-empty mapping"):
        call([1.0, 2.0])
    with pytest.raises(ValueError, match="`x0` must be an array or 'manifold'"):
        sweep(s, good, (0.0, 2.0), "manfold", [1.0], **OPTS)
    with pytest.raises(ValueError, match="`y0` must have shape"):
        sweep(s, good, (0.0, 2.0), "manifold", np.ones((3, 1)), **OPTS)
    with pytest.raises(ValueError, match="`validate_fraction`"):
        call(good, validate_fraction=1.5)
    with pytest.raises(ValueError, match="`route` must be one of"):
        call(good, route="fastest")
    with pytest.raises(ValueError, match="`connect_timeout` must be"):
        call(good, connect_timeout=0)


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
            got = _terms.manifold_terms(plan, 2)(np.array([y]), dict(s.args))
            np.testing.assert_allclose(np.array(got), want, rtol=1e-12, atol=1e-14)


def test_sweep_plan_survives_pickling_bit_for_bit():
    """The plan sent to Dask workers keeps float64 parameters (a float64 JAX array unpickled outside
    JAX's float64 scope comes back float32: the workers then solved with λ = 0.30000001192…)."""
    import pickle

    from sp_ode.systems.catalogue import michaelis_menten

    system = michaelis_menten(lam=0.3).system
    plan = _paths.SweepPlan(system, dict(system.args), ("kappa",), (0.0, 2.0), TS, TOL, 1)
    back = pickle.loads(pickle.dumps(plan))
    lanes = _paths.lanes_of(back, np.array([1e-3, 1e-4]), {"kappa": np.array([1.0, 1.5])}, np.arange(2))
    lam = lanes["args"][sorted(system.args).index("lam")]
    assert lam.dtype == np.float64 and np.all(lam == 0.3)


def test_a_sweep_too_large_for_memory_is_refused_before_any_chunk(monkeypatch):
    from sp_ode.core import memory

    e = _entry()
    ran = []
    monkeypatch.setattr(_paths, "run_chunk", lambda *a, **k: ran.append(1))
    monkeypatch.setattr(memory, "available_memory", lambda: (100, "test limit"))
    with pytest.raises(sp_ode.MemoryBudgetError, match=r"a sweep of 4 points in chunks of .* needs an estimated"):
        sweep(e.system, _params(4), (0.0, 2.0), "manifold", [1.0], **OPTS)
    assert ran == []


def test_auto_chunk_size_gives_every_worker_two_tasks():
    from sp_ode.sweeps.sweep import DEFAULT_CHUNK, auto_chunk_size

    assert auto_chunk_size(60, 1) == (60, None) and auto_chunk_size(10**4, 1) == (DEFAULT_CHUNK, None)
    size, warning = auto_chunk_size(256, 2)
    assert warning is None and -(-256 // size) >= 4
    size, warning = auto_chunk_size(20, 4)
    assert warning is not None and "fewer than 2" in warning and size == 8
    assert _cost.COMPILE_RATIO[0] >= 1.0


def _switch_Q(y, args):
    a, b = args["k"] * jnp.exp(y[0]), args["b"]
    return jnp.array([[-a, a], [b, -b]])


def _switch_g(t, x, y, args):
    return jnp.array([x[1] - y[0]])


def test_a_rate_inside_Q_of_y_and_args_is_swept_like_any_parameter():
    """`Q(y, args)`: the rate k read only by Q is a sweep parameter (not refused as unread), and each point
    equals an independent scipy Radau solve at that k; the reduced path at small ε reads k too."""
    system = sp_ode.MasterEquationSystem(_switch_Q, _switch_g, eps=1e-3, args={"k": 1.0, "b": 2.0},
                                         states=["off", "on"])
    ks = np.array([0.5, 3.0])
    ts = np.array([0.5, 1.0])
    for eps, route in ((1e-3, "full"), (1e-6, "reduced")):
        res = sweep(system, {"k": ks, "eps": np.full(2, eps)}, (0.0, 1.0), "manifold", [0.0], ts=ts, tol=1e-6,
                    route=route, max_order=0, validate_fraction=0.0, progress_bar=False)
        for i, k in enumerate(ks):
            one = system.with_args({"k": k, "b": 2.0}).with_eps(eps)
            x0 = sp_ode.critical_manifold(one, [0.0])
            ref = sp_ode.simulate(one, (0.0, 1.0), x0, [0.0], ts=ts, backend="scipy", method="Radau",
                                  rtol=1e-11, atol=1e-13)
            np.testing.assert_allclose(res.y[i], ref.y, atol=3e-6)
        assert abs(res.y[1, -1, 0] - res.y[0, -1, 0]) > 0.05        # k changes the answer (negative control)


class _Rate:
    """A callable model object: its state (`c`) is part of the model."""

    def __init__(self, c):
        self.c = c

    def __call__(self, x, y):
        return self.c * (y - x)


def test_the_fingerprint_sees_the_state_of_every_callable_object():
    """f and g callable objects: the second one's state was hashed as an already-seen reference (a freed
    temporary lent it its id), so g's constant 2 → 3 kept the fingerprint and a sweep would resume with
    the old model's numbers; the same model still hashes the same."""
    from sp_ode.sweeps._fingerprint import model_digest

    def system(c):
        return sp_ode.FastSlowSystem(_Rate(1.0), _Rate(c), eps=0.01, m=1, d=1)

    assert model_digest(system(2.0)) != model_digest(system(3.0))
    assert model_digest(system(2.0)) == model_digest(system(2.0))


# --- reproducibility: counted work routes, groups stack ------------------------------------------------

_SAME = ("y", "path", "estimate", "status", "reason", "validated", "true_error")


def _routed(monkeypatch, **kw):
    """64 points routed by the cost model with compilation priced at nothing, so that it mixes reduced and
    full paths at this small N (at the fitted prices 64 points are all full: nothing to compare)."""
    monkeypatch.setattr(_cost, "COMPILE_BASE_S", 1e-9)
    monkeypatch.setattr(_cost, "COMPILE_S_PER_LINE", 0.0)
    e = _entry()
    rng = np.random.default_rng(7)
    params = {"eps": 10.0 ** rng.uniform(-8, -4, 64), "kappa": rng.uniform(0.5, 2.0, 64)}
    return sweep(e.system, params, (0.0, 2.0), "manifold", [1.0], **{**OPTS, "validate_fraction": 0.1, **kw})


def _assert_same(a, b):
    for name in _SAME:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    clocks = ("seconds",)
    assert {k: v for k, v in a.plan.items() if k not in clocks + ("chunk_size",)} == \
        {k: v for k, v in b.plan.items() if k not in clocks + ("chunk_size",)}


def test_a_sweep_is_bit_identical_at_any_chunk_size(monkeypatch):
    """Chunks of 8, 24 and 64 points (1, 3 and 8 groups of G = 8): the same numbers, paths and routing bit for
    bit (a chunk size of 8 instead of the default changed y by up to 1.1e-7: the first chunk priced the route
    and the stacks were the chunks).  Negative control: stacks of 16 instead of 8 do change the numbers, so
    equality here is not for want of sensitivity."""
    runs = [_routed(monkeypatch, chunk_size=c) for c in (8, 24, 64)]
    assert {"reduced0", "full"} <= set(runs[0].path_names)            # both routes are exercised
    for other in runs[1:]:
        _assert_same(runs[0], other)
    monkeypatch.setattr(_stacked, "stack_group", lambda N, n: 16)
    wider = _routed(monkeypatch, chunk_size=64)
    full = (runs[0].path == PATH_FULL) & (wider.path == PATH_FULL)
    assert not np.array_equal(wider.y[full], runs[0].y[full])


def test_a_sweep_is_bit_identical_under_load(monkeypatch):
    """The same sweep with and without a CPU burner (a process spinning `while True: pass`) running beside
    it: the routing reads counted work only (steps, evaluations, flop counts, program sizes), never a clock,
    nor whether this process compiled a route before (the second run finds everything compiled)."""
    import subprocess
    import sys

    quiet = _routed(monkeypatch)
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded = _routed(monkeypatch)
    finally:
        burner.kill()
        burner.wait()
    _assert_same(quiet, loaded)
    assert loaded.plan["t_full_per_point_s"] == quiet.plan["t_full_per_point_s"] > 0


def test_the_engine_is_chosen_by_type_not_by_sniffing_imported_modules():
    """`sweep` picks the network engine by `isinstance(system, NetworkSystem)`; it looked into sys.modules."""
    import importlib
    import inspect

    module = importlib.import_module("sp_ode.sweeps.sweep")
    assert inspect.ismodule(module) and "sys.modules" not in inspect.getsource(module)
