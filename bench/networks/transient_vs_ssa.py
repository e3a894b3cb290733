"""Certified p(t) (`sp_ode.transient_distribution`) against GillesPy2's C++ SSA on GillesPy2's example models.

Target (issue 35): on GillesPy2's example models that fit in memory, certified p(t) at GillesPy2's own
output times costs less than GillesPy2's SSACSolver with 10⁴ trajectories, compilation included on
both sides.  For every model of `bench.networks.gillespy2_examples.EXAMPLES`:

* the model is read by `sp_ode.from_gillespy2` (GillesPy2's propensities); one it refuses (events,
  rules) is recorded as refused, with the reason;
* **certified**: a fresh interpreter imports sp_ode and computes p(t) on an adaptive finite state
  projection, ‖p(t) − p_J(t)‖₁ ≤ leaked + integration error ≤ `tol` = 1e-6 at every output time
  (`TransientDistribution.marginal`'s bound).  A model whose projection exceeds the library's memory or
  work budget, or this script's time limit, is recorded as too big, with what was seen (over the time
  limit, the SSA is still timed, so the record says which side loses there);
* **SSA**: a fresh interpreter imports gillespy2, builds `SSACSolver(model)` (it generates and compiles
  C++ with g++ through SCons: the cold cost a user pays), runs 10⁴ trajectories, then a second run on the
  built solver (warm);
* **equal answers**: at every output time and species, z = (SSA mean − μ)/(σ/√N) and, for the SD,
  z = (s − σ)/SE(s) with SE(s) = √((μ₄ − σ⁴)/N)/(2σ) (μ, σ, μ₄ of the certified law); |z| ≤ ~4 says the
  two compute the same law;
* **cost**: seconds of each fresh process (interpreter start, imports, compilation, solve), their ratio
  SSA/certified, the in-process seconds, and the warm SSA run;
* **accuracy**: the certified ℓ1 bound and mean-interval width against the SSA's standard error σ/√N.

Without SCons (GillesPy2's C++ build tool) the SSA is GillesPy2's NumPySSASolver, and the record says so.

    python -m bench.networks.transient_vs_ssa                # results/networks/transient_vs_ssa.json
    python -m bench.networks.transient_vs_ssa --smoke        # the dimerisation, 200 trajectories, 11 times
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from importlib.util import find_spec
from pathlib import Path

import numpy as np

from bench._common import child_env, default_record, module_command
from bench.networks.gillespy2_examples import EXAMPLES
from sp_ode.core.files import dumps, write_json

TOL = 1e-6
TRAJECTORIES = 10_000
SMOKE_TRAJECTORIES = 200
TIME_LIMIT = 60.0           # seconds per fresh process; beyond, the model is recorded as too big for this bench


def _times(model, smoke: bool) -> np.ndarray:
    """GillesPy2's output times of `model` (every tenth at --smoke)."""
    ts = np.asarray(model.tspan.items, dtype=float)
    return ts[::10] if smoke else ts


def _env() -> dict:
    # the interpreter's own bin folder first on PATH: GillesPy2 looks for a `scons` executable there, and a
    # venv's scons is not on PATH unless the venv is activated
    return child_env(PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))


def ssa_solver_name() -> tuple[str, str | None]:
    """("SSACSolver", None) when GillesPy2's C++ build can run here, else ("NumPySSASolver", why not)."""
    path = _env()["PATH"]
    if shutil.which("scons", path=path) is None and find_spec("SCons") is None:
        return "NumPySSASolver", "SCons (GillesPy2's C++ build tool) is not installed"
    if shutil.which("g++", path=path) is None:
        return "NumPySSASolver", "g++ is not on PATH"
    return "SSACSolver", None


# --- the two fresh processes -------------------------------------------------------------------------------

def certified_child(name: str, smoke: bool) -> dict:
    """In a fresh interpreter: p(t) of model `name` certified to TOL; its moments per species and time."""
    t0 = time.perf_counter()
    import sp_ode

    model = EXAMPLES[name]()
    ts = _times(model, smoke)
    net, initial = sp_ode.from_gillespy2(model)
    t1 = time.perf_counter()
    r = sp_ode.transient_distribution(net, initial, ts, tol=TOL)
    t2 = time.perf_counter()
    moments = {}
    bound = 0.0
    for s in net.species:
        rows = []
        for i in range(ts.size):
            pm, l1 = r.marginal(s, i)
            bound = max(bound, l1)
            k = np.arange(pm.size, dtype=float)
            w = pm / pm.sum()
            mu = float(w @ k)
            rows.append((mu, float(w @ (k - mu) ** 2), float(w @ (k - mu) ** 4)))
        mean, var, m4 = map(np.array, zip(*rows))
        moments[s] = {"mean": mean, "sd": np.sqrt(var), "m4": m4}
    mb = r.mean_bounds()
    width = None if mb is None else max(float(np.max(hi - lo)) for lo, hi in mb.values())
    return {"n": int(r.space.n), "bounds": dict(zip(r.species, map(int, r.space.bounds))), "method": r.method,
            "projections": len(r.expansions), "leaked": float(np.max(r.leaked)), "certified_l1": bound,
            "mean_interval_width": width, "times": ts, "moments": moments,
            "seconds": {"import_and_read": t1 - t0, "solve": t2 - t1}}


def ssa_child(name: str, smoke: bool, solver: str, trajectories: int) -> dict:
    """In a fresh interpreter: GillesPy2's `solver` built cold on model `name`, `trajectories` twice (cold, warm)."""
    t0 = time.perf_counter()
    import gillespy2

    model = EXAMPLES[name]()
    ts = _times(model, smoke)
    model.timespan(gillespy2.TimeSpan(ts))
    t1 = time.perf_counter()
    with warnings.catch_warnings():      # GillesPy2 1.8.3 walks propensities with ast's deprecated visit_Num
        warnings.simplefilter("ignore", DeprecationWarning)
        sim = getattr(gillespy2, solver)(model=model)     # SSACSolver: generates and compiles the C++ here
        t2 = time.perf_counter()
        res = sim.run(number_of_trajectories=trajectories, seed=1)
        t3 = time.perf_counter()
        sim.run(number_of_trajectories=trajectories, seed=2)
        t4 = time.perf_counter()
    stats = {}
    for s in model.listOfSpecies:
        x = np.array([traj[s] for traj in res], dtype=float)           # (N, T)
        stats[s] = {"mean": x.mean(axis=0), "sd": x.std(axis=0, ddof=1)}
    return {"solver": solver, "trajectories": trajectories, "times": ts, "stats": stats,
            "seconds": {"import_and_build_model": t1 - t0, "build": t2 - t1, "run": t3 - t2, "warm_run": t4 - t3}}


def _fresh(role: str, name: str, smoke: bool, extra=()) -> tuple[dict | None, float, str | None]:
    """Run `role` for model `name` in a fresh interpreter: (its record or None, wall seconds, why it failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "child.json"
        cmd = module_command(__spec__.name, "--child", role, "--model", name, "--child-out", str(out),
                             *(["--smoke"] if smoke else []), *extra)
        t = time.perf_counter()
        try:
            run = subprocess.run(cmd, env=_env(), capture_output=True, text=True, timeout=TIME_LIMIT)
        except subprocess.TimeoutExpired:
            return None, time.perf_counter() - t, f"over this bench's limit of {TIME_LIMIT:.0f} s per process"
        wall = time.perf_counter() - t
        if run.returncode != 0:
            lines = [ln for ln in run.stderr.strip().splitlines() if ln.strip()]
            return None, wall, lines[-1] if lines else f"exit status {run.returncode}"
        return json.loads(out.read_text()), wall, None


# --- comparing the two -------------------------------------------------------------------------------------

def z_scores(cert: dict, ssa: dict) -> dict:
    """Largest |z| of the SSA's means and SDs against the certified law (module docstring); where σ = 0 the
    SSA must agree exactly (z = 0, else inf).  Also the SSA's largest standard error σ/√N of a mean."""
    n = ssa["trajectories"]
    zm, zs, se = 0.0, 0.0, 0.0
    for s, mo in cert["moments"].items():
        mu, sd, m4 = (np.asarray(mo[k], dtype=float) for k in ("mean", "sd", "m4"))
        m, v = (np.asarray(ssa["stats"][s][k], dtype=float) for k in ("mean", "sd"))
        live = sd > 1e-12
        dead_ok = np.allclose(m[~live], mu[~live], atol=1e-9) and np.all(v[~live] == 0)
        if not dead_ok:
            return {"mean": float("inf"), "sd": float("inf"), "ssa_standard_error": float("nan")}
        zm = max(zm, float(np.max(np.abs(m[live] - mu[live]) / (sd[live] / np.sqrt(n))))) if live.any() else zm
        se_sd = np.sqrt(np.maximum(m4[live] - sd[live] ** 4, 0.0) / n) / (2 * sd[live])
        ok = se_sd > 0
        if ok.any():
            zs = max(zs, float(np.max(np.abs(v[live][ok] - sd[live][ok]) / se_sd[ok])))
        se = max(se, float(np.max(sd / np.sqrt(n))))
    return {"mean": zm, "sd": zs, "ssa_standard_error": se}


def run_model(name: str, smoke: bool, solver: str, trajectories: int) -> dict:
    import sp_ode
    from sp_ode.networks.gillespy2 import GillesPy2FeatureError

    row: dict = {"model": name}
    try:
        net, _ = sp_ode.from_gillespy2(EXAMPLES[name]())
    except GillesPy2FeatureError as e:          # events, rules: outside the CME, refused by name
        return {**row, "status": "refused", "why": str(e)}
    row["species"] = list(net.species)
    cert, cert_wall, why = _fresh("certified", name, smoke)
    ssa_args = ["--solver", solver, "--trajectories", str(trajectories)]
    if cert is None:
        row.update(status="too big", why=f"certified p(t): {why}", certified_wall_seconds=cert_wall)
        if why and why.startswith("over this bench's limit"):
            # too slow, not refused: the SSA's cost on it says which of the two loses (recorded, not hidden)
            ssa, ssa_wall, ssa_why = _fresh("ssa", name, smoke, ssa_args)
            row.update(ssa_wall_seconds=ssa_wall, ssa_why=ssa_why,
                       ssa_seconds=None if ssa is None else {"process": ssa_wall, **ssa["seconds"]})
        return row
    ssa, ssa_wall, why = _fresh("ssa", name, smoke, ssa_args)
    row.update(status="compared", n_states=cert["n"], bounds=cert["bounds"], method=cert["method"],
               times=len(cert["times"]), horizon=float(cert["times"][-1]), certified_l1=cert["certified_l1"],
               certified_within_tol=bool(cert["certified_l1"] <= TOL), mean_interval_width=cert["mean_interval_width"],
               certified_seconds={"process": cert_wall, **cert["seconds"]})
    if ssa is None:
        return {**row, "status": "ssa failed", "why": why}
    z = z_scores(cert, ssa)
    row.update(ssa_solver=ssa["solver"], trajectories=ssa["trajectories"],
               ssa_seconds={"process": ssa_wall, **ssa["seconds"]}, z_max=z,
               ssa_standard_error=z["ssa_standard_error"],
               ratio_cold=ssa_wall / cert_wall,                                       # both fresh processes
               ratio_warm=ssa["seconds"]["warm_run"] / cert["seconds"]["solve"])      # built solver vs solve alone
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="the dimerisation only, 200 trajectories, every tenth time")
    ap.add_argument("--models", nargs="*", default=None, help=f"a subset of {', '.join(EXAMPLES)}")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", choices=["certified", "ssa"], help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--child-out", help=argparse.SUPPRESS)
    ap.add_argument("--solver", default="SSACSolver", help=argparse.SUPPRESS)
    ap.add_argument("--trajectories", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        rec = (certified_child(args.model, args.smoke) if args.child == "certified"
               else ssa_child(args.model, args.smoke, args.solver, args.trajectories))
        write_json(args.child_out, rec)
        return 0
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    models = args.models or (["dimerization"] if args.smoke else list(EXAMPLES))
    unknown = [m for m in models if m not in EXAMPLES]
    if unknown:
        ap.error(f"--models: unknown {unknown}; the models are {list(EXAMPLES)}")
    solver, why = ssa_solver_name()
    trajectories = SMOKE_TRAJECTORIES if args.smoke else TRAJECTORIES
    rows = [run_model(m, args.smoke, solver, trajectories) for m in models]
    record = {"command": " ".join(["python -m", __spec__.name, *sys.argv[1:]]), "tol": TOL, "trajectories": trajectories, "ssa_solver": solver,
              "ssa_solver_why": why, "time_limit_seconds": TIME_LIMIT, "models": rows,
              "environment": {"python": platform.python_version(), "cpus": os.cpu_count(),
                              "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}}
    if args.out:
        write_json(args.out, record)
    if args.json:
        print(dumps(record, indent=2))
    else:
        for r in rows:
            print(f"{r['model']}: {r['status']}" + (
                f", n {r['n_states']}, bound {r['certified_l1']:.1e}, certified {r['certified_seconds']['process']:.1f} s, "
                f"SSA {r['ssa_seconds']['process']:.1f} s (warm run {r['ssa_seconds']['warm_run']:.2f} s), "
                f"ratio {r['ratio_cold']:.1f}, |z| mean {r['z_max']['mean']:.1f} sd {r['z_max']['sd']:.1f}"
                if r["status"] == "compared" else f" ({r.get('why')})"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
