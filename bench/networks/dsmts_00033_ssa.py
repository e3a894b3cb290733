"""DSMTS 00033 (dsmts-003-04) three ways: the published values, the exact FSP, and an independent SSA.

The model: 2P → P2 at k1·P(P − 1)/2, P2 → 2P at k2·P2 (k1 = 0.001, k2 = 0.01), P(0) = 100, P2(0) = 0, and
the event "when P2 > 30: P := 100, P2 := 0" (SBML fires it when the trigger goes from false to true, i.e.
at the reaction that makes P2 = 31).  Its published means and SDs disagree with the FSP of
`sp_ode.transient_distribution(..., events=...)` by up to 0.85 (P-mean at t = 15–18) although the FSP is
exact here (the event closes the class P + 2·P2 = 100: nothing leaks).  This script settles which is
the law of the model as written with a Gillespie SSA written here from the model's description alone (numpy,
all runs advanced together; nothing from sp_ode), and prints DSMTS's own statistics (its user guide §3):
Z_t = √n (X̄_t − μ_t)/σ_t and Y_t = √(n/2) (S²_t/σ²_t − 1), against the FSP and against the published μ, σ.

    python -m bench.networks.dsmts_00033_ssa /path/to/sbml-test-suite --json results/networks/dsmts_00033.json
    python -m bench.networks.dsmts_00033_ssa SUITE --smoke          # 2·10⁴ runs, a few seconds
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

K1, K2, P0, CUT = 0.001, 0.01, 100, 30
GRID = np.arange(0.0, 51.0)


def ssa(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(P, P2) at t = 0, 1, …, 50 on n independent runs (arrays (51, n))."""
    rng = np.random.default_rng(seed)
    P, P2, t = np.full(n, P0), np.zeros(n, dtype=np.int64), np.zeros(n)
    out_P, out_P2 = np.zeros((GRID.size, n)), np.zeros((GRID.size, n))
    nxt = np.zeros(n, dtype=np.int64)            # the next output time of each run
    alive = np.ones(n, dtype=bool)
    while alive.any():
        a1, a2 = K1 * P * (P - 1) / 2, K2 * P2
        a0 = a1 + a2                             # > 0 always here (P + 2·P2 = 100)
        t_next = t + rng.exponential(1.0, n) / a0
        while True:                              # the state holds on [t, t_next): record the grid points passed
            due = alive & (nxt < GRID.size)
            due &= GRID[np.minimum(nxt, GRID.size - 1)] < t_next
            if not due.any():
                break
            i = np.flatnonzero(due)
            out_P[nxt[i], i], out_P2[nxt[i], i] = P[i], P2[i]
            nxt[i] += 1
        alive &= nxt < GRID.size
        dimer = alive & (rng.random(n) * a0 < a1)
        split = alive & ~dimer
        P = P - 2 * dimer + 2 * split
        P2 = P2 + dimer - split
        fire = alive & (P2 > CUT)                # the event, at the reaction that enters P2 > 30
        P, P2 = np.where(fire, P0, P), np.where(fire, 0, P2)
        t = t_next
    return out_P, out_P2


def _published(suite: Path) -> tuple[np.ndarray, np.ndarray]:
    case = suite / "cases" / "stochastic" / "00033"
    load = lambda kind: np.loadtxt(case / f"dsmts-003-04-{kind}.csv", delimiter=",", skiprows=1)
    return load("mean"), load("sd")


def _fsp(suite: Path):
    from sp_ode.networks.cme.transient import transient_distribution
    from sp_ode.networks.sbml import from_sbml

    net, initial, events = from_sbml(suite / "cases" / "stochastic" / "00033" / "00033-sbml-l3v2.xml",
                                     with_events=True)
    res = transient_distribution(net, initial, GRID, tol=1e-12, events=events)
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("suite", help="checkout of sbml-test-suite (or a folder holding its cases/)")
    ap.add_argument("--runs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--smoke", action="store_true", help="2·10⁴ runs")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    suite = Path(args.suite)
    if not (suite / "cases" / "stochastic" / "00033").is_dir():
        print(f"dsmts_00033_ssa: error: no cases/stochastic/00033 under {str(suite)!r}", file=sys.stderr)
        return 2
    n = 20_000 if args.smoke else args.runs
    t0 = time.perf_counter()
    chunk = 200_000
    s1, s2, done = {"P": 0.0, "P2": 0.0}, {"P": 0.0, "P2": 0.0}, 0
    for k in range(0, n, chunk):
        m = min(chunk, n - k)
        for name, x in zip(("P", "P2"), ssa(m, args.seed + k)):
            s1[name] = s1[name] + x.sum(axis=1)
            s2[name] = s2[name] + (x * x).sum(axis=1)
        done += m
    ssa_seconds = time.perf_counter() - t0
    res = _fsp(suite)
    mean_pub, sd_pub = _published(suite)
    record = {"runs": done, "seed": args.seed, "ssa_seconds": ssa_seconds, "fsp_leaked": float(res.leaked.max()),
              "fsp_n": res.space.n, "species": {}}
    print(f"DSMTS 00033: {done} SSA runs ({ssa_seconds:.1f} s); FSP on {res.space.n} states, leak "
          f"{res.leaked.max():.1e}")
    for col, name in ((1, "P"), (2, "P2")):
        mu_fsp, sd_fsp = res.mean(name), res.sds()[name]
        xbar = s1[name] / done
        s2_hat = s2[name] / done - xbar**2                  # ≈ the variance (n large)
        ok = sd_pub[:, col] > 0
        stats = {}
        for ref, mu, sd in (("fsp", mu_fsp, sd_fsp), ("published", mean_pub[:, col], sd_pub[:, col])):
            z = np.sqrt(done) * (xbar[ok] - mu[ok]) / sd[ok]
            y = np.sqrt(done / 2) * (s2_hat[ok] / sd[ok] ** 2 - 1)
            stats[ref] = {"max_abs_Z": float(np.abs(z).max()), "max_abs_Y": float(np.abs(y).max()),
                          "Z": z.tolist(), "Y": y.tolist()}
        stats["max_abs_mean_fsp_minus_published"] = float(np.abs(mu_fsp - mean_pub[:, col]).max())
        stats["max_abs_sd_fsp_minus_published"] = float(np.abs(sd_fsp - sd_pub[:, col]).max())
        record["species"][name] = stats
        print(f"  {name:3s} vs FSP: max|Z| {stats['fsp']['max_abs_Z']:.2f}, max|Y| {stats['fsp']['max_abs_Y']:.2f};  "
              f"vs published: max|Z| {stats['published']['max_abs_Z']:.2f}, max|Y| "
              f"{stats['published']['max_abs_Y']:.2f};  |FSP − published| ≤ "
              f"{stats['max_abs_mean_fsp_minus_published']:.3f} (mean), {stats['max_abs_sd_fsp_minus_published']:.3f} (SD)")
    if args.json:
        Path(args.json).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
