"""Sweeps that count their own cost: `sp_ode.sweep` beside its baselines, each in a fresh process.

Cases: a system (``mm`` Michaelis–Menten, ``me20`` the 20-state ring master equation, ``me6`` the
6-state birth–death ladder of bench/systems/first_answer.py), N points, and an ε range — ``all``:
ε log-uniform in [1e-6, 1e-2], ``small``: in [1e-6, 1e-5] — with a second parameter uniform in
[0.5, 2] (κ, c, c), x0 = h⁽¹⁾(y0) per point (the sweep's own ``x0="manifold"`` start, computed
here once and handed to every contender), y at t = 0.5, 1, 1.5, 2, tol = 1e-6 on y.

**Contenders**, each a fresh Python process (``python -c``) whose wall time from its start to its
exit is measured here; each also reports its *work* — everything after ``import sp_ode`` and the
model's construction, compilation included:

* ``sweep``: ``sp_ode.sweep(...)`` with its defaults (cost model, 1 % validated);
* ``sweep_full``: the same with ``route="full"`` (its own all-full route: stacked LSODA), for reference;
* ``vmap``: all-full vmapped Kvaerno5, one ``sp_ode.simulate`` of the whole batch with ε as data;
* ``scipy_<M>``: a loop of ``sp_ode.simulate(..., backend="scipy", method=M)`` over the points, M ∈
  {LSODA, BDF, Radau};
* ``numpy_LSODA``: the model written in NumPy and ``scipy.integrate.solve_ivp(method="LSODA")`` in a
  loop — what a scipy user writes, no JAX at all.

With ``--extrapolate-above`` points or more, the loops run on ``--subset`` points and are
extrapolated: total = measured − loop + loop × N/subset (said so in the record); vmapped Kvaerno5
above ``--vmap-cap`` lanes the same way, linearly in the lanes past its compilation.

**Equal accuracy.**  A tight reference (scipy Radau, rtol 1e-12, atol 1e-14, point by point) on
``--ref-count`` random points; each baseline runs at the loosest rtol of 1e-6 … 1e-10 (atol =
1e-2·rtol) whose max error there is ≤ tol, chosen here before any timing; the sweep's own max
error on the same points is printed beside it.  Targets: sweep ≤ 1.5× the faster of
(vmap, fastest scipy loop) — compared on the *work* seconds (the common import is the same for
all, its seconds are printed too); for the ``small`` range, faster than both; validation ≤ 20 % of the sweep.

    python -m bench.sweeps.sweep --systems mm,me20,me6 --n 60 --out results/sweeps/fresh_process_n60.json
    python -m bench.sweeps.sweep --systems mm,me20 --n 10000 --out results/sweeps/fresh_process_n1e4.json
    python -m bench.sweeps.sweep --smoke          # tiny, run by the tests
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from bench._common import child_env, default_record

TS = np.array([0.5, 1.0, 1.5, 2.0])
TOL = 1e-6
LADDER = (1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
RANGES = {"all": (1e-6, 1e-2), "small": (1e-6, 1e-5)}
PARAM = {"mm": "kappa", "me20": "c", "me6": "c"}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# --- the models (importable by the children: no JAX work at import) ----------------------------------

ME6 = textwrap.dedent('''
    import jax.numpy as jnp
    import numpy as np
    N = 6
    W = np.linspace(0.0, 1.0, N)
    UP = np.arange(N - 1); DOWN = np.arange(1, N)
    def Q_of_y(y):
        lam = 2.0 * jnp.exp(y[0]); mu = 1.0 + 0.5 * np.arange(1, N)
        R = jnp.zeros((N, N)).at[UP, UP + 1].set(lam).at[DOWN, DOWN - 1].set(mu)
        return R - jnp.diag(R.sum(axis=1))
    def g(t, x, y, args):
        return jnp.array([args["c"] * (jnp.dot(W, x) - y[0])])
''')


def build(name: str):
    """(system, swept name, y0) — the model as sp_ode sees it."""
    import sp_ode
    from sp_ode.systems.catalogue import master_equation_entry

    if name == "mm":
        return sp_ode.get_system("michaelis_menten").system, "kappa", np.array([1.0])
    if name == "me20":
        return master_equation_entry("ring20", "me20").system, "c", np.array([0.5])
    namespace: dict = {}
    exec(compile(ME6, "me6_model", "exec"), namespace)   # the bench's own model text, as in bench.systems.first_answer
    system = sp_ode.MasterEquationSystem(namespace["Q_of_y"], namespace["g"], eps=1e-4, n=6, d=1,
                                         args={"c": 1.0}, name="me6")
    return system, "c", np.array([0.2])


def numpy_model(name: str, system):
    """rhs(t, z, eps, value) of the same model in NumPy (what a scipy user writes)."""
    if name == "mm":
        lam = float(system.args["lam"])

        def rhs(t, z, eps, kappa):
            x, y = z
            return np.array([(y - (y + kappa) * x) / eps, -y + (y + kappa - lam) * x])
        return rhs
    if name == "me20":
        n = 20
        ang = 2 * np.pi * np.arange(n) / n
        fwd0, bwd0 = 1.0 + 0.5 * np.sin(ang), 1.0 + 0.5 * np.cos(ang)
        w = np.asarray(system.args["w"], dtype=np.float64)
        i = np.arange(n)

        def rhs(t, z, eps, c):
            x, y = z[:n], z[n]
            R = np.zeros((n, n))
            R[i, (i + 1) % n] = np.exp(y) * fwd0
            R[i, (i - 1) % n] += bwd0
            Q = R - np.diag(R.sum(axis=1))
            return np.concatenate([Q.T @ x / eps, [c * (w @ x - y)]])
        return rhs
    n = 6
    W, up, down = np.linspace(0.0, 1.0, n), np.arange(n - 1), np.arange(1, n)

    def rhs(t, z, eps, c):
        x, y = z[:n], z[n]
        R = np.zeros((n, n))
        R[up, up + 1] = 2.0 * np.exp(y)
        R[down, down - 1] = 1.0 + 0.5 * np.arange(1, n)
        Q = R - np.diag(R.sum(axis=1))
        return np.concatenate([Q.T @ x / eps, [c * (W @ x - y)]])
    return rhs


_LIFT: dict = {}


def lifted(system):
    """ε moved into args, so one vmapped Kvaerno5 solve carries a different ε per lane."""
    import sp_ode

    if system not in _LIFT:
        f, g = system.f, system.g
        _LIFT[system] = sp_ode.FastSlowSystem(lambda t, x, y, a: f(t, x, y, a["p"]) / a["eps"],
                                              lambda t, x, y, a: g(t, x, y, a["p"]), eps=1.0,
                                              m=system.m, d=system.d, name=f"{system.name}/eps-in-args")
    return _LIFT[system]


def lane_args(system, eps, values, name):
    n = eps.size
    p = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), (n,) + np.shape(v)).copy()
         for k, v in system.args.items()}
    p[name] = np.asarray(values, dtype=np.float64)
    return {"eps": np.asarray(eps, dtype=np.float64), "p": p}


def one_system(system, e, v, name):
    return system.with_eps(float(e)).with_args({**system.args, name: np.asarray(v, dtype=np.float64)})


# --- the children ---------------------------------------------------------------------------------------

CHILD = '''
import sys, time, json
T0 = time.perf_counter()
from sp_ode.core.cpu_pool import pin_to_one_core
pin_to_one_core(0)
import numpy as np
import sp_ode
import bench.sweeps.sweep as B
mode, rtol = {mode!r}, {rtol!r}
system, name, y0 = B.build({system!r})
if mode == "numpy_LSODA":          # the NumPy model takes its constants from sp_ode's: built before the clock
    import scipy.integrate
    rhs = B.numpy_model({system!r}, system)
t_import = time.perf_counter() - T0
d = np.load({data!r})
eps, vals, x0, idx = d["eps"], d["vals"], d["x0"], d["idx"]
out = {{}}
t = time.perf_counter()
if mode in ("sweep", "sweep_full"):
    r = sp_ode.sweep(system, {{"eps": eps, name: vals}}, (0.0, 2.0), x0, y0, ts=B.TS, tol=B.TOL,
                     progress_bar=False, route="auto" if mode == "sweep" else "full")
    y = r.y
    out["summary"] = r.summary()
elif mode == "vmap":
    n = idx.size
    tr = sp_ode.simulate(B.lifted(system), (0.0, 2.0), x0[idx], np.broadcast_to(y0, (n, y0.size)), ts=B.TS,
                         rtol=rtol, atol=1e-2 * rtol, throw=False, args=B.lane_args(system, eps[idx], vals[idx], name),
                         batch_args=True)
    y = np.asarray(tr.y)
    out["compile_s"] = float(tr.stats.get("compile_time", 0.0))
    out["failed"] = int(np.sum(np.asarray(tr.status) != 0))
elif mode.startswith("scipy_"):
    ys = []
    for i in idx:
        tr = sp_ode.simulate(B.one_system(system, eps[i], vals[i], name), (0.0, 2.0), x0[i], y0, backend="scipy",
                             method=mode.split("_")[1], rtol=rtol, atol=1e-2 * rtol, ts=B.TS, throw=False)
        ys.append(np.asarray(tr.y))
    y = np.array(ys)
else:
    ys = []
    for i in idx:
        sol = scipy.integrate.solve_ivp(lambda tt, z: rhs(tt, z, eps[i], vals[i]), (0.0, 2.0),
                                        np.concatenate([x0[i], y0]), method="LSODA", t_eval=B.TS, rtol=rtol,
                                        atol=1e-2 * rtol)
        ys.append(sol.y[-y0.size:].T)
    y = np.array(ys)
out["work_s"] = time.perf_counter() - t
out["import_s"] = t_import
np.save({yout!r}, y)
print(json.dumps(out, default=float))
'''


def run_child(system: str, mode: str, data: Path, yout: Path, rtol=None) -> dict:
    code = CHILD.format(mode=mode, rtol=rtol, system=system, data=str(data),
                        yout=str(yout))
    env = child_env(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", SP_ODE_NO_COMPILE_CACHE="1")
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=7200)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"child {system}/{mode} failed:\n{proc.stderr[-3000:]}")
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    rec["process_s"] = wall
    rec["y"] = np.load(yout)
    return rec


# --- one case ------------------------------------------------------------------------------------------

def case(system_name: str, N: int, range_name: str, args, tmp: Path) -> dict:
    import sp_ode
    from bench._common import loosest_rtol
    from sp_ode.core.precision import in_float64
    from sp_ode.sweeps import stages

    system, name, y0 = build(system_name)
    lo, hi = RANGES[range_name]
    rng = np.random.default_rng(args.seed)
    eps = np.exp(rng.uniform(np.log(lo), np.log(hi), N))
    vals = rng.uniform(0.5, 2.0, N)
    # x0 = h⁽¹⁾(y0) per point: the sweep's own manifold start (vmapped), handed to every contender
    plan = stages.SweepPlan(system, dict(system.args), (name,), (0.0, 2.0), TS, TOL, 1,
                            sizes=(min(N, 512),))
    x0 = in_float64(stages.manifold_start)(plan, np.broadcast_to(y0, (N, y0.size)).copy(),
                                           stages.lanes_of(plan, eps, {name: vals}, np.arange(N)))
    ref_idx = np.sort(rng.choice(N, size=min(args.ref_count, N), replace=False))
    t = time.perf_counter()
    ref = np.array([sp_ode.simulate(one_system(system, eps[i], vals[i], name), (0.0, 2.0), x0[i], y0,
                                    backend="scipy", method="Radau", rtol=1e-12, atol=1e-14, ts=TS).y
                    for i in ref_idx])
    log(f"  reference: {ref_idx.size} points, scipy Radau rtol 1e-12, {time.perf_counter() - t:.1f} s")

    def err_on_ref(y_all, idx_run):
        pos = {int(i): k for k, i in enumerate(idx_run)}
        have = [k for k, i in enumerate(ref_idx) if int(i) in pos]
        rows = [pos[int(ref_idx[k])] for k in have]
        return float(np.max(np.abs(y_all[rows] - ref[have]))) if have else float("nan")

    # equal accuracy: the loosest ladder rtol of each baseline on the reference points (not timed)
    choices = {}
    sub_ref = ref_idx[:args.ladder_points]

    class Stack:
        def __init__(self, y, ok):
            self.y, self.success = y, ok

    def vmap_ref(rtol):
        n = ref_idx.size
        tr = sp_ode.simulate(lifted(system), (0.0, 2.0), x0[ref_idx], np.broadcast_to(y0, (n, y0.size)), ts=TS,
                             rtol=rtol, atol=1e-2 * rtol, throw=False,
                             args=lane_args(system, eps[ref_idx], vals[ref_idx], name), batch_args=True)
        return Stack(np.asarray(tr.y), bool(np.all(np.asarray(tr.status) == 0)))

    modes = args.contenders.split(",")
    if "vmap" in modes:
        choices["vmap"] = loosest_rtol(vmap_ref, lambda s: float(np.abs(s.y - ref).max()), TOL, LADDER)
    for method in [m.split("_")[1] for m in modes if m.startswith("scipy_")]:
        def loop(rtol, method=method):
            ys, ok = [], True
            for i in sub_ref:
                tr = sp_ode.simulate(one_system(system, eps[i], vals[i], name), (0.0, 2.0), x0[i], y0,
                                     backend="scipy", method=method, rtol=rtol, atol=1e-2 * rtol, ts=TS, throw=False)
                ok &= tr.success
                ys.append(tr.y)
            return Stack(np.array(ys), ok)
        choices[f"scipy_{method}"] = loosest_rtol(loop, lambda s: float(np.abs(s.y - ref[:sub_ref.size]).max()),
                                                  TOL, LADDER)
    import scipy.integrate

    rhs = numpy_model(system_name, system)

    def numpy_loop(rtol):
        ys, ok = [], True
        for i in sub_ref:
            sol = scipy.integrate.solve_ivp(lambda tt, z, i=i: rhs(tt, z, eps[i], vals[i]), (0.0, 2.0),
                                            np.concatenate([x0[i], y0]), method="LSODA", t_eval=TS, rtol=rtol,
                                            atol=1e-2 * rtol)
            ok &= sol.success
            ys.append(sol.y[-y0.size:].T)
        return Stack(np.array(ys), ok)
    choices["numpy_LSODA"] = loosest_rtol(numpy_loop, lambda s: float(np.abs(s.y - ref[:sub_ref.size]).max()),
                                          TOL, LADDER)
    for k, v in choices.items():
        log(f"  {k}: rtol {v['rtol']} (error {v['error']})")

    # the children
    loops_sub = N if N < args.extrapolate_above else args.subset
    data = tmp / f"{system_name}_{N}_{range_name}.npz"
    loop_idx = np.sort(rng.choice(N, size=min(loops_sub, N), replace=False))
    vmap_lanes = N if system_name != "me20" or N <= args.vmap_cap else args.vmap_cap
    contenders = {}
    for mode in modes:
        if mode not in ("sweep", "sweep_full") and not choices[mode]["reached"]:
            contenders[mode] = {"reached": False, "tried": choices[mode]["tried"]}
            continue
        idx = np.arange(N) if mode in ("sweep", "sweep_full") else \
            (np.arange(vmap_lanes) if mode == "vmap" else loop_idx)
        np.savez(data, eps=eps, vals=vals, x0=x0, idx=idx)
        rtol = choices[mode]["rtol"] if mode in choices else None
        rec = run_child(system_name, mode, data, tmp / "y.npy", rtol)
        y_all = rec.pop("y")
        rec["max_error_on_reference"] = err_on_ref(y_all, idx)
        rec["points_run"] = int(idx.size)
        rec["rtol"] = rtol
        scale = N / idx.size
        if scale > 1:
            fixed = rec.get("compile_s", 0.0) if mode == "vmap" else 0.0
            loop = rec["work_s"] - fixed
            rec["extrapolated"] = f"×{scale:.4g}: measured on {idx.size} of {N} points"
            rec["work_s_measured"], rec["process_s_measured"] = rec["work_s"], rec["process_s"]
            rec["work_s"] = fixed + loop * scale
            rec["process_s"] = rec["process_s_measured"] - rec["work_s_measured"] + rec["work_s"]
        contenders[mode] = rec
        log(f"  {mode:<12} work {rec['work_s']:8.2f} s (process {rec['process_s']:.2f} s, import "
            f"{rec['import_s']:.2f} s){' extrapolated ' + rec['extrapolated'] if 'extrapolated' in rec else ''}; "
            f"error {rec['max_error_on_reference']:.2e}")
    scipy_keys = [k for k in contenders if (k.startswith("scipy_") or k == "numpy_LSODA") and "work_s" in contenders[k]]
    fastest_scipy = min(scipy_keys, key=lambda k: contenders[k]["work_s"]) if scipy_keys else None
    base = {k: contenders[k]["work_s"] for k in ("vmap", fastest_scipy) if k and "work_s" in contenders.get(k, {})}
    best = min(base, key=base.get) if base else None
    sw = contenders["sweep"]
    summ = sw["summary"]
    verdict = {
        "fastest_scipy_loop": fastest_scipy, "faster_baseline": best,
        "ratio_sweep_to_faster_baseline": sw["work_s"] / base[best] if best else None,
        "ratio_target": 1.0 if range_name == "small" else 1.5,
        "validation_share": summ.get("validation_share"),
        "sweep_within_tol_on_reference": sw["max_error_on_reference"] <= TOL,
    }
    ratio = verdict["ratio_sweep_to_faster_baseline"]
    speed = ratio is not None and (ratio < 1.0 if range_name == "small" else ratio <= 1.5)
    verdict["met"] = bool(speed and verdict["sweep_within_tol_on_reference"]
                          and (summ.get("validation_share") or 0.0) <= 0.2)
    log(f"  → sweep / {best} = {verdict['ratio_sweep_to_faster_baseline']:.3g} (target ≤ {verdict['ratio_target']}), "
        f"validation {100 * (summ.get('validation_share') or 0):.0f} %, paths {summ['paths']}")
    return {"system": system.name, "points": N, "eps_range": list(RANGES[range_name]), "range": range_name,
            "swept": name, "ref_points": int(ref_idx.size), "choices": choices, "contenders": contenders,
            "verdict": verdict}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", default="mm,me20,me6")
    ap.add_argument("--n", type=int, default=60)
    ap.add_argument("--ranges", default="all,small")
    ap.add_argument("--ref-count", type=int, default=40)
    ap.add_argument("--ladder-points", type=int, default=10, help="reference points the loops' ladders run on")
    ap.add_argument("--subset", type=int, default=40, help="points the loops run on above --extrapolate-above")
    ap.add_argument("--extrapolate-above", type=int, default=1000)
    ap.add_argument("--vmap-cap", type=int, default=2048, help="me20: vmapped lanes run (extrapolated above)")
    ap.add_argument("--contenders", default="sweep,sweep_full,vmap,scipy_LSODA,scipy_BDF,scipy_Radau,numpy_LSODA")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.smoke:
        args.systems, args.n, args.ranges, args.ref_count, args.ladder_points = "mm", 8, "all", 3, 2
        args.contenders = "sweep,numpy_LSODA"  # two fresh processes: the sweep and a baseline
    from sp_ode.core.cpu_pool import pin_to_one_core
    from sp_ode.core.files import dumps, write_json

    core = pin_to_one_core(0)
    import jax

    record = {"tol": TOL, "ts": TS, "cases": [], "command": " ".join(sys.argv)}
    with tempfile.TemporaryDirectory() as tmp, jax.enable_x64(True):
        for system_name in args.systems.split(","):
            for range_name in args.ranges.split(","):
                log(f"bench.sweeps.sweep: {system_name}, N = {args.n}, ε {range_name} {RANGES[range_name]}, "
                    f"load {os.getloadavg()[0]:.1f}")
                record["cases"].append(case(system_name, args.n, range_name, args, Path(tmp)))
                if args.out:
                    write_json(args.out, record)    # written as each case finishes
    record["environment"] = {"python": platform.python_version(), "jax": jax.__version__, "cpus": os.cpu_count(),
                             "load_avg_end": os.getloadavg(), "OMP_NUM_THREADS": "1 (children)",
                             "pinned_core": core}
    if args.out:
        write_json(args.out, record)
    text = dumps(record, indent=2)
    print(text if args.json else "\n".join(
        f"{c['system']} N={c['points']} {c['range']}: sweep {c['contenders']['sweep']['work_s']:.2f} s vs "
        f"{c['verdict']['faster_baseline']} → {c['verdict']['ratio_sweep_to_faster_baseline']:.3g}"
        for c in record["cases"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
