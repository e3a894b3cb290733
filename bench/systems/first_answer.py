"""Time to the first answer: a fresh process that imports sp_ode and simulates a new model, beside scipy.

For each model a user would bring — a 5-state and a 6-state master equation and
FitzHugh–Nagumo — the model is written to a file with a fresh name (so no compile cache can
have seen it) and solved in a **fresh Python process**, the wall-clock measured by this
parent from process start to exit:

* ``scipy``: the same model in NumPy, `scipy.integrate.solve_ivp(method="LSODA")` — the
  baseline (the fastest scipy method on these systems; Radau and BDF are printed too);
* ``sp_ode cold``: ``import sp_ode; sp_ode.simulate(...)`` with the default options and no
  persistent compilation cache;
* ``sp_ode cache``: the same in a second process after a first one filled a compilation cache
  (``sp_ode.use_compilation_cache(DIR)``);
* ``reduced``: in one process, the first `simulate_reduced` after a `simulate` of the system
  (seconds of that call alone).

Equal accuracy: every child prints y (and x) at the save times; the parent compares them
with a tight reference (scipy Radau, rtol 1e-13, atol 1e-15) and prints each route's max
error next to its time.  The floor that no JAX program can go below — a fresh ``python -c
"import jax"`` — is measured too.  Runs are interleaved and repeated; medians are reported.

    python -m bench.systems.first_answer --repeat 5 --out results/systems/first_answer.json
    python -m bench.systems.first_answer --smoke          # run by the tests
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import numpy as np

from bench._common import ROOT, default_record

# --- the models, as a user writes them ---------------------------------------------------------------------

MODELS = {
    "me5": dict(
        description="5-state master equation on a ring, rates e^{y}·k_i forward, b_i back; "
                    "y' = <w, x> - y; eps = 1e-4, rtol 1e-8",
        jax=textwrap.dedent('''
            import jax.numpy as jnp
            import numpy as np
            N = 5
            FWD = np.array([1.0, 2.0, 1.5, 0.5, 1.0]); BWD = np.array([0.7, 0.3, 1.2, 0.9, 0.4])
            W = np.linspace(-1.0, 1.0, N)
            IDX = np.arange(N)
            def Q_of_y(y):
                R = jnp.zeros((N, N)).at[IDX, (IDX + 1) % N].set(jnp.exp(y[0]) * FWD).at[(IDX + 1) % N, IDX].add(BWD)
                return R - jnp.diag(R.sum(axis=1))
            def g(t, x, y, args):
                return jnp.array([jnp.dot(W, x) - y[0]])
            def make(sp_ode):
                return sp_ode.MasterEquationSystem(Q_of_y, g, eps=1e-4, n=N, d=1, name="me5")
        '''),
        numpy=textwrap.dedent('''
            import numpy as np
            N = 5; EPS = 1e-4
            FWD = np.array([1.0, 2.0, 1.5, 0.5, 1.0]); BWD = np.array([0.7, 0.3, 1.2, 0.9, 0.4])
            W = np.linspace(-1.0, 1.0, N); IDX = np.arange(N)
            def rhs(t, z):
                x, y = z[:N], z[N]
                R = np.zeros((N, N)); R[IDX, (IDX + 1) % N] = np.exp(y) * FWD; R[(IDX + 1) % N, IDX] += BWD
                Q = R - np.diag(R.sum(axis=1))
                return np.concatenate([Q.T @ x / EPS, [W @ x - y]])
        '''),
        x0=[1.0, 0.0, 0.0, 0.0, 0.0], y0=[0.3], t_span=(0.0, 2.0), rtol=1e-8, atol=1e-10),
    "me6": dict(
        description="6-state master equation (birth-death ladder driven by y), y' = c(<w, x> - y); eps = 1e-4, "
                    "rtol 1e-6",
        jax=textwrap.dedent('''
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
            def make(sp_ode):
                return sp_ode.MasterEquationSystem(Q_of_y, g, eps=1e-4, n=N, d=1, args={"c": 1.0}, name="me6")
        '''),
        numpy=textwrap.dedent('''
            import numpy as np
            N = 6; EPS = 1e-4
            W = np.linspace(0.0, 1.0, N); UP = np.arange(N - 1); DOWN = np.arange(1, N)
            def rhs(t, z):
                x, y = z[:N], z[N]
                R = np.zeros((N, N)); R[UP, UP + 1] = 2.0 * np.exp(y); R[DOWN, DOWN - 1] = 1.0 + 0.5 * np.arange(1, N)
                Q = R - np.diag(R.sum(axis=1))
                return np.concatenate([Q.T @ x / EPS, [1.0 * (W @ x - y)]])
        '''),
        x0=[1.0, 0.0, 0.0, 0.0, 0.0, 0.0], y0=[0.2], t_span=(0.0, 2.0), rtol=1e-6, atol=1e-8),
    "fhn": dict(
        description="FitzHugh-Nagumo eps v' = v - v^3/3 - w, w' = 0.08(v + 0.7 - 0.8w); eps = 1e-3, t in [0, 20], "
                    "rtol 1e-8",
        jax=textwrap.dedent('''
            import jax.numpy as jnp
            def f(t, x, y, args):
                return x - x ** 3 / 3 - y
            def g(t, x, y, args):
                return 0.08 * (x + 0.7 - 0.8 * y)
            def make(sp_ode):
                return sp_ode.FastSlowSystem(f, g, eps=1e-3, m=1, d=1, name="fhn")
        '''),
        numpy=textwrap.dedent('''
            import numpy as np
            EPS = 1e-3
            def rhs(t, z):
                v, w = z
                return np.array([(v - v ** 3 / 3 - w) / EPS, 0.08 * (v + 0.7 - 0.8 * w)])
        '''),
        x0=[-2.0], y0=[0.0], t_span=(0.0, 20.0), rtol=1e-8, atol=1e-10),
}
SAVES = 5
FLOOR = "import jax, json; print(json.dumps({}))"

CHILD_SP = '''
import sys, time, json
t_start = time.perf_counter()
import numpy as np
import sp_ode
{cache}
import {module} as user
system = user.make(sp_ode)
ts = np.linspace({t0}, {t1}, {saves})
tr = sp_ode.simulate(system, ({t0}, {t1}), {x0}, {y0}, rtol={rtol}, atol={atol}, ts=ts)
out = {{"z": np.concatenate([tr.x, tr.y], axis=-1).tolist(), "stats": {{k: v for k, v in tr.stats.items()
        if isinstance(v, (int, float, str))}}, "backend": tr.backend, "method": tr.method,
        "in_process": time.perf_counter() - t_start}}
if {reduced}:
    t = time.perf_counter()
    red = sp_ode.simulate_reduced(system, ({t0}, {t1}), {y0}, rtol={rtol}, atol={atol}, ts=ts, **{red_kwargs})
    out["reduced_seconds"] = time.perf_counter() - t
    out["reduced_y"] = red.y.tolist()
print(json.dumps(out))
'''

CHILD_SCIPY = '''
import sys, json
import numpy as np
from scipy.integrate import solve_ivp
import {module} as user
ts = np.linspace({t0}, {t1}, {saves})
sol = solve_ivp(user.rhs, ({t0}, {t1}), np.array({x0} + {y0}, float), method={method!r}, rtol={rtol}, atol={atol},
                t_eval=ts)
print(json.dumps({{"z": sol.y.T.tolist(), "nfev": int(sol.nfev), "status": int(sol.status)}}))
'''


def _env() -> dict:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONPATH=str(ROOT))   # sp_ode from this checkout; the model from the cwd
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    return env


def timed(code: str, cwd: Path | None = None) -> tuple[float, dict]:
    """Wall seconds of a fresh `python -c code` run in `cwd` (where the user's model file is), and the JSON it printed."""
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=900,
                          cwd=cwd)
    wall = time.perf_counter() - start
    if proc.returncode:
        raise RuntimeError(f"child failed:\n{proc.stderr[-3000:]}")
    return wall, json.loads(proc.stdout.strip().splitlines()[-1])


def write_model(folder: Path, name: str, kind: str) -> str:
    """The model as a user's file under a fresh module name (no cache has seen it)."""
    module = f"user_{name}_{kind}_{uuid.uuid4().hex[:10]}"
    (folder / f"{module}.py").write_text(MODELS[name][kind])
    return module


def reference(name: str) -> np.ndarray:
    """z at the save times by scipy Radau, rtol 1e-13, atol 1e-15 (in this process)."""
    from scipy.integrate import solve_ivp

    m = MODELS[name]
    ns: dict = {}
    exec(m["numpy"], ns)
    ts = np.linspace(*m["t_span"], SAVES)
    sol = solve_ivp(ns["rhs"], m["t_span"], np.array(m["x0"] + m["y0"], float), method="Radau", rtol=1e-13,
                    atol=1e-15, t_eval=ts)
    return sol.y.T


def err(z, ref) -> float:
    return float(np.max(np.abs(np.asarray(z) - ref)))


def run(names, repeat: int, scipy_methods) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="sp_ode_first_answer_"))
    rows = {}
    for name in names:
        m = MODELS[name]
        ref = reference(name)
        fmt = dict(folder=str(folder), t0=m["t_span"][0], t1=m["t_span"][1], saves=SAVES, x0=m["x0"], y0=m["y0"],
                   rtol=m["rtol"], atol=m["atol"])
        red_kwargs = {} if name.startswith("me") else {"x_guess": m["x0"]}
        rec = {"description": m["description"], "scipy": {k: [] for k in scipy_methods}, "cold": [], "cache": [],
               "reduced": [], "import_jax": [], "errors": {}}
        for _ in range(repeat):
            # the floor, interleaved with the routes so that it sees the same load
            rec["import_jax"].append(timed(FLOOR)[0])
            for method in scipy_methods:
                wall, out = timed(CHILD_SCIPY.format(module=write_model(folder, name, "numpy"), method=method, **fmt), cwd=folder)
                rec["scipy"][method].append(wall)
                rec["errors"][f"scipy {method}"] = err(out["z"], ref)
            wall, out = timed(CHILD_SP.format(module=write_model(folder, name, "jax"), cache="", reduced=False,
                                              red_kwargs={}, **fmt), cwd=folder)
            rec["cold"].append(wall)
            rec["errors"]["sp_ode"] = err(out["z"], ref)
            rec["route"] = f"{out['backend']}/{out['method']}"
            rec["stats"] = out["stats"]
            _, out = timed(CHILD_SP.format(module=write_model(folder, name, "jax"), cache="", reduced=True,
                                           red_kwargs=red_kwargs, **fmt), cwd=folder)
            rec["reduced"].append(out["reduced_seconds"])
            cache_dir = folder / f"cache_{uuid.uuid4().hex[:8]}"
            module = write_model(folder, name, "jax")
            cache = f"sp_ode.use_compilation_cache({str(cache_dir)!r})"
            timed(CHILD_SP.format(module=module, cache=cache, reduced=False, red_kwargs={}, **fmt), cwd=folder)   # fills it
            wall, out = timed(CHILD_SP.format(module=module, cache=cache, reduced=False, red_kwargs={}, **fmt), cwd=folder)
            rec["cache"].append(wall)
        med = {k: statistics.median(v) for k, v in rec["scipy"].items()}
        base = min(med, key=med.get)
        rec["baseline"] = f"scipy {base}"
        rec["median"] = {"scipy": med, "cold": statistics.median(rec["cold"]), "cache": statistics.median(rec["cache"]),
                         "reduced": statistics.median(rec["reduced"])}
        rec["median"]["import_jax"] = statistics.median(rec["import_jax"])
        rec["ratio_cold"] = rec["median"]["cold"] / med[base]
        rec["ratio_cache"] = rec["median"]["cache"] / med[base]
        # what no JAX program can go below, and what sp_ode adds above it
        rec["ratio_floor"] = rec["median"]["import_jax"] / med[base]
        rec["above_floor_cold"] = rec["median"]["cold"] - rec["median"]["import_jax"]
        rec["above_floor_cache"] = rec["median"]["cache"] - rec["median"]["import_jax"]
        rows[name] = rec
        print(f"{name}: scipy {base} {med[base]:.2f} s (error {rec['errors']['scipy ' + base]:.1e}) | sp_ode cold "
              f"{rec['median']['cold']:.2f} s = {rec['ratio_cold']:.2f}x (error {rec['errors']['sp_ode']:.1e}, "
              f"{rec['route']}) | cached {rec['median']['cache']:.2f} s = {rec['ratio_cache']:.2f}x | first "
              f"simulate_reduced {rec['median']['reduced']:.2f} s | import jax alone {rec['median']['import_jax']:.2f} s "
              f"= {rec['ratio_floor']:.2f}x", flush=True)
    floor = [s for r in rows.values() for s in r["import_jax"]]
    return {"models": rows, "import_jax_floor": statistics.median(floor), "import_jax_runs": floor}


def markdown(record: dict) -> str:
    """The record as a table: medians, each route's ratio to the fastest scipy method, the import floor."""
    lines = ["| model | fastest scipy (fresh process) | `import jax` alone | sp_ode cold | sp_ode, second process "
             "(compile cache) | first `simulate_reduced` after a `simulate` | max error: scipy / sp_ode |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in record["models"].items():
        med, base = r["median"], r["baseline"]
        lines.append(f"| {name} | {base}: {med['scipy'][base.split()[1]]:.2f} s | {med['import_jax']:.2f} s "
                     f"(**{r['ratio_floor']:.2f}×**) | {med['cold']:.2f} s (**{r['ratio_cold']:.2f}×**; "
                     f"{r['above_floor_cold']:.2f} s above the floor) | {med['cache']:.2f} s "
                     f"(**{r['ratio_cache']:.2f}×**; {r['above_floor_cache']:.2f} s above) | {med['reduced']:.2f} s | "
                     f"{r['errors'][base]:.1e} / {r['errors']['sp_ode']:.1e} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scipy-methods", nargs="+", default=["LSODA", "Radau", "BDF"])
    parser.add_argument("--out", default=None, help="JSON record (e.g. results/systems/first_answer.json)")
    parser.add_argument("--md", default=None, help="write the table of medians here (e.g. docs/bench/first_answer_table.md)")
    parser.add_argument("--smoke", action="store_true", help="one model, one repeat, LSODA only")
    args = parser.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.smoke:
        args.models, args.repeat, args.scipy_methods = ["fhn"], 1, ["LSODA"]
    if args.out and Path(args.out).exists():     # before any work: records are never overwritten
        raise SystemExit(f"bench.systems.first_answer: error: {args.out} exists; choose another --out")
    record = run(args.models, args.repeat, args.scipy_methods)
    record.update(machine=platform.platform(), cpus=os.cpu_count(), threads=1, repeat=args.repeat,
                  load=os.getloadavg()[0], command=" ".join(["python", "-m", "bench.systems.first_answer", *(argv or sys.argv[1:])]))
    print(f"import jax alone (fresh process): {record['import_jax_floor']:.2f} s")
    if args.out:
        path = Path(args.out)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1))
        print(f"wrote {path}")
    print(markdown(record))
    if args.md:
        Path(args.md).write_text(markdown(record))
        print(f"wrote {args.md}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
