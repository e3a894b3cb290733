"""Reduced paths from an off-manifold start, the order-k build cost, and sweep estimates per path (issue 34).

Three parts, each printing its figures and writing them to the JSON record (`--out`):

1. **Michaelis–Menten off the manifold** — ε v' = u − (u + K)v, u' = −u + (u + K − λ)v, K = 1, λ = 0.5,
   v(0) = 0, u(0) = 1: max |u − u_red| over t ∈ [0.2, 2] (10 save times) against scipy Radau at
   rtol 1e-12, per ε ∈ {1e-2, 1e-3, 1e-4}, order k ∈ {0, 1, 2} and start: `none` (y0, what
   `simulate_reduced` did before), `first_order` (y0 + εη₁), `projected` (the default).
2. **Order-k build cost** on the same system, each order in a fresh process: seconds to the first
   `terms` and to the first diffrax reduced solve (the compilation of the corrected flow).
3. **Sweep estimates per path** on a model tuned to nothing here: a 5-state receptor scheme (free R,
   bound RL, active RL*, desensitised D, internalised Ri; the ligand L the slow variable, depleted by
   binding and replenished), ε log-uniform in [1e-5, 1e-2], k_on uniform in [0.5, 2], tol 1e-6,
   route "reduced" (every point tries order 0, 1, 2), default validation (1 %, stratified by path),
   from x0 = "manifold" and from x0 = all receptors free (off the manifold).  Every returned point is
   then checked against a tight reference (the sweep's batched reference solve at 1e-5·tol, ≥ 1000×
   tighter than tol: tests/sweeps/test_sweep.py) and `--radau` random points against scipy Radau at
   rtol 1e-11 (independent).

    python -m bench.systems.initial_layer --n 1000 --out results/systems/initial_layer.json
    python -m bench.systems.initial_layer --smoke
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench._common import default_record

K, LAM = 1.0, 0.5
TS_MM = np.linspace(0.2, 2.0, 10)


def mm_errors(eps_list, orders) -> dict:
    from scipy.integrate import solve_ivp

    import sp_ode
    from sp_ode.systems.catalogue import michaelis_menten

    out = {}
    for eps in eps_list:
        def rhs(t, z, eps=eps):
            v, u = z
            return [(u - (u + K) * v) / eps, -u + (u + K - LAM) * v]

        def jac(t, z, eps=eps):
            v, u = z
            return [[-(u + K) / eps, (1 - v) / eps], [u + K - LAM, -1 + v]]
        ref = solve_ivp(rhs, (0, 2.0), [0.0, 1.0], method="Radau", jac=jac, rtol=1e-12, atol=1e-14, t_eval=TS_MM).y[1]
        s = michaelis_menten(eps=eps).system
        for k in orders:
            h = sp_ode.slow_manifold(s, order=k)
            for method in ("none", "first_order", "projected"):
                t0 = time.perf_counter()
                tr = sp_ode.simulate_reduced(s, (0, 2.0), [1.0], phi=h, x0=[0.0], initial_layer=method, ts=TS_MM,
                                             rtol=1e-12, atol=1e-14, backend="scipy")
                err = float(np.max(np.abs(tr.y[:, 0] - ref)))
                sh = tr.stats["initial_layer"]
                out.setdefault(f"order{k}", {}).setdefault(method, {})[f"{eps:g}"] = {
                    "error": err, "shift_over_eps": float(sh.shift[0] / eps), "seconds": time.perf_counter() - t0}
                print(f"  MM eps={eps:g} order {k} {method:<11} error {err:.3e}  shift/eps {sh.shift[0] / eps:+.6f}",
                      flush=True)
    return out


_BUILD = """
import time, json, numpy as np, sp_ode
from sp_ode.systems.catalogue import michaelis_menten
s = michaelis_menten(eps=1e-3).system
t = time.perf_counter(); h = sp_ode.slow_manifold(s, order={k}); T = h.terms(np.array([1.0])); a = time.perf_counter() - t
t = time.perf_counter(); sp_ode.simulate_reduced(s, (0, 2.0), [1.0], phi=h, ts=[1.0, 2.0]); b = time.perf_counter() - t
print(json.dumps({{"terms_s": a, "first_diffrax_solve_s": b, "terms": T.ravel().tolist()}}))
"""


def build_cost(orders) -> dict:
    out = {}
    for k in orders:
        res = subprocess.run([sys.executable, "-c", _BUILD.format(k=k)], capture_output=True, text=True, check=True,
                             env={**os.environ})
        out[f"order{k}"] = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"  build order {k}: terms {out[f'order{k}']['terms_s']:.2f} s, first diffrax solve "
              f"{out[f'order{k}']['first_diffrax_solve_s']:.2f} s", flush=True)
    return out


def receptor():
    """5-state receptor scheme: Q(L) over (R, RL, RL*, D, Ri), ligand L' = s(1 − L) − c (k_on L p_R − k_off p_RL)."""
    import jax.numpy as jnp

    import sp_ode

    def Q(y, a):
        L = y[0]
        kon, koff, act, deact, kd, kr, ki, krec = (a[n] for n in ("kon", "koff", "act", "deact", "kd", "kr", "ki",
                                                                   "krec"))
        z = jnp.zeros(())
        rates = jnp.stack([
            jnp.stack([z, kon * L, z, z, z]),
            jnp.stack([koff, z, act, z, z]),
            jnp.stack([z, deact, z, kd, ki]),
            jnp.stack([kr, z, z, z, z]),
            jnp.stack([krec, z, z, z, z]),
        ])
        return rates - jnp.diag(rates.sum(axis=1))

    def g(t, x, y, a):
        return jnp.reshape(a["s"] * (1.0 - y[0]) - a["c"] * (a["kon"] * y[0] * x[0] - a["koff"] * x[1]), (1,))

    args = {"kon": 1.0, "koff": 0.5, "act": 2.0, "deact": 1.0, "kd": 0.7, "kr": 0.3, "ki": 0.4, "krec": 0.6,
            "s": 0.2, "c": 0.5}
    return sp_ode.MasterEquationSystem(Q, g, eps=1e-3, args={k: np.float64(v) for k, v in args.items()}, n=5, d=1,
                                       name="receptor5")


def sweep_ratios(n: int, radau: int, seed: int = 0) -> dict:
    import jax

    import sp_ode
    from sp_ode.sweeps import _paths

    system = receptor()
    rng = np.random.default_rng(seed)
    params = {"eps": 10 ** rng.uniform(-5, -2, n), "kon": rng.uniform(0.5, 2.0, n)}
    ts = np.array([0.5, 1.0, 1.5, 2.0])
    tol = 1e-6
    out = {}
    for label, x0 in (("manifold", "manifold"), ("off_manifold", [1.0, 0.0, 0.0, 0.0, 0.0])):
        t0 = time.perf_counter()
        r = sp_ode.sweep(system, params, (0.0, 2.0), x0, [1.0], ts=ts, tol=tol, route="reduced", max_order=2,
                         progress_bar=False, seed=seed)
        wall = time.perf_counter() - t0
        print(r.report(), flush=True)
        # every returned point against the tight batched reference (1e-5·tol), from the start each used
        plan = _paths.SweepPlan(system, dict(system.args), ("kon",), (0.0, 2.0), ts, tol, 2, dims=(5, 1))
        x0s = _x0_of(system, x0, params, n, plan)
        with jax.enable_x64(True):
            yref, ok, ref_s = _paths.reference(plan, x0s, np.ones((n, 1)), params["eps"], {"kon": params["kon"]})
        err = np.abs(r.y - yref).reshape(n, -1).max(axis=1)
        idx = rng.choice(n, size=min(radau, n), replace=False)
        rad = []
        for i in idx:
            s_i = system.with_eps(float(params["eps"][i])).with_args({**system.args, "kon": float(params["kon"][i])})
            yr = sp_ode.simulate(s_i, (0.0, 2.0), x0s[i], [1.0], backend="scipy", method="Radau", rtol=1e-11,
                                 atol=1e-13, ts=ts).y
            rad.append(float(np.max(np.abs(yr - r.y[i]))))
        per = {p: {**v} for p, v in r.validation.get("per_path", {}).items()}
        for name in set(r.path_names):
            on = r.path_names == name
            per.setdefault(name, {})["returned"] = int(on.sum())
            per[name]["max_returned_error_vs_reference"] = float(np.max(err[on]))
        out[label] = {"points": n, "wall_s": wall, "reference_s": ref_s, "paths": r.summary()["paths"],
                      "per_path": per, "margin_resolved": r.validation.get("margin_resolved", 0),
                      "resolved": int(np.sum(r.status == 1)),
                      "max_returned_error_vs_reference": float(np.max(err[ok])), "reference_failed": int(np.sum(~ok)),
                      "returned_over_tol": int(np.sum(err[ok] > tol)),
                      "radau_points": int(idx.size), "max_error_vs_radau": float(max(rad)) if rad else None,
                      "reasons": r.reasons()}
        print(f"  {label}: max returned error vs reference {np.max(err[ok]):.3g} (tol {tol:g}), "
              f"{int(np.sum(err[ok] > tol))} over tol; vs Radau on {idx.size}: {max(rad) if rad else float('nan'):.3g}",
              flush=True)
    return out


def _x0_of(system, x0, params, n, plan):
    if not isinstance(x0, str):
        return np.tile(np.asarray(x0, dtype=np.float64), (n, 1))
    import jax

    from sp_ode.sweeps import _paths
    lanes = _paths.lanes_of(plan, params["eps"], {"kon": params["kon"]}, np.arange(n))
    with jax.enable_x64(True):
        return _paths.manifold_start(plan, np.ones((n, 1)), lanes)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=200, help="sweep points")
    ap.add_argument("--radau", type=int, default=10, help="random sweep points checked against scipy Radau")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--parts", default="mm,build,sweep")
    a = ap.parse_args(argv)
    a.out = default_record(a.out, __spec__.name, a.smoke)   # results/<topic>/<name>.json by default
    parts = set(a.parts.split(","))
    record = {"command": "python -m bench.systems.initial_layer " + " ".join(argv if argv is not None else sys.argv[1:])}
    if a.smoke:
        record["mm"] = mm_errors([1e-2], [1])   # the sweep part compiles for ~25 s: not in the smoke run
    else:
        if "mm" in parts:
            record["mm"] = mm_errors([1e-2, 1e-3, 1e-4], [0, 1, 2])
        if "build" in parts:
            record["build"] = build_cost([1, 2, 3])
        if "sweep" in parts:
            record["sweep"] = sweep_ratios(a.n, a.radau)
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(record, indent=1, default=float) + "\n")
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
