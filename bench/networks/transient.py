"""p(t) of a CME with its FSP bound (`sp_ode.transient_distribution`) against closed forms; the record.

Cases (docs/theory.md §7.10; the same laws as `tests/networks/test_transient.py`):

* immigration–death 0 → X (a = 10), X → 0 (0.1 X) from X(0) = 0: X(t) ~ Poisson(100(1 − e^{−0.1t}));
  the largest relative error of the marginal where the law is above 1e-25 below its mean or above 1e-8,
  its ℓ1 error against the reported bound, the widths of the certified mean and SD intervals;
* linear birth–death X → 2X (0.1 X), X → 0 (0.11 X) from X(0) = 20 (Kendall's mean and variance): the
  closed forms inside the certified intervals, the intervals' widths;
* the FSP identity ‖p(t) − p_J(t)‖₁ = leaked mass (Munsky–Khammash): a projection X ≤ 25 of immigration–
  death (a = 8, m = 0.5) against X ≤ 120, the difference against the two integrations' certified errors;
* the adaptive projection: A and B produced at 30 and 1 from bounds 10, 10 — which species grew;
* certified moment intervals (§7.10): the linear M/P network 0 → M (4), M → M + P (6M), M → 0, P → 0 (0.5P)
  at t = 1, 10, 100 against its closed-form moments (the relative widths of the exact moment-equation
  intervals and of the projection's own); immigration–death 0 → A (50), A → 0 (A) swept over tol and t,
  counting misses of the certified intervals and of the zero-escape bound (the negative control).

    python -m bench.networks.transient --out results/networks/transient.json
    python -m bench.networks.transient --smoke
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numpy as np
from scipy.stats import poisson

from bench._common import default_record
from sp_ode.core.files import dumps, write_json
from sp_ode.networks.cme.transient import fsp_transient, transient_distribution
from sp_ode.networks.network import ReactionNetwork


def _immigration_death(a, m):
    return ReactionNetwork("0 -> X, a; X -> 0, m", parameters={"a": a, "m": m}, name="immigration_death")


def poisson_case(ts) -> dict:
    t = time.perf_counter()
    r = transient_distribution(_immigration_death(10.0, 0.1), {"X": 0}, ts, tol=1e-12)
    seconds = time.perf_counter() - t
    lam = 100.0 * (1 - np.exp(-0.1 * ts))
    rel, l1_ratio = 0.0, 0.0
    for i, ti in enumerate(ts):
        pm, l1 = r.marginal("X", i)
        k = np.arange(pm.size)
        exact = poisson.pmf(k, lam[i]) if ti > 0 else (k == 0).astype(float)
        far = ((exact > 1e-25) & (k <= lam[i])) | (exact > 1e-8)
        rel = max(rel, float(np.max(np.abs(pm[far] - exact[far]) / exact[far])))
        l1_ratio = max(l1_ratio, float(np.abs(pm - exact).sum() / (l1 + 1e-300)))
    (lo, hi), (slo, shi) = r.mean_bounds()["X"], r.sd_bounds()["X"]
    return {"law": "Poisson(100(1 − e^{−0.1t}))", "times": ts, "n": int(r.space.n), "method": r.method,
            "leaked": float(r.leaked[-1]), "max_relative_error": rel, "l1_error_over_bound": l1_ratio,
            "mean_inside": bool(np.all((lo <= lam) & (lam <= hi))), "mean_width": float(np.max(hi - lo)),
            "sd_inside": bool(np.all((slo <= np.sqrt(lam) + 1e-12) & (np.sqrt(lam) <= shi + 1e-12))),
            "sd_width": float(np.max(shi - slo)), "projections": len(r.expansions), "seconds": seconds}


def birth_death_case(ts) -> dict:
    net = ReactionNetwork("X -> 2 X, l; X -> 0, mu", parameters={"l": 0.1, "mu": 0.11})
    t = time.perf_counter()
    r = transient_distribution(net, {"X": 20}, ts, tol=1e-12, moment_tol=1e-9)
    seconds = time.perf_counter() - t
    g = 0.1 - 0.11
    mean = 20 * np.exp(g * ts)
    sd = np.sqrt(20 * (0.21 / g) * np.exp(g * ts) * (np.exp(g * ts) - 1))
    (lo, hi), (slo, shi) = r.mean_bounds()["X"], r.sd_bounds()["X"]
    return {"law": "Kendall: E X = 20 e^{−0.01t}, Var X = 20·(0.21/−0.01)·e^{gt}(e^{gt} − 1)", "times": ts,
            "n": int(r.space.n), "leaked": float(r.leaked[-1]),
            "mean_inside": bool(np.all((lo <= mean * (1 + 1e-13)) & (mean <= hi * (1 + 1e-13)))),
            "mean_width": float(np.max(hi - lo)),
            "sd_inside": bool(np.all((slo <= sd + 1e-12) & (sd <= shi + 1e-12))), "sd_width": float(np.max(shi - slo)),
            "moment_leak": float(r.expansions[-1]["moment_leak"]), "projections": len(r.expansions),
            "seconds": seconds}


def leak_case() -> dict:
    net = _immigration_death(8.0, 0.5)
    small, big = net.state_space({"X": 25}), net.state_space({"X": 120})
    ts = np.array([1.0, 4.0])
    rs = fsp_transient(net, small, np.eye(small.n)[0], ts)
    rb = fsp_transient(net, big, np.eye(big.n)[0], ts)
    pad = np.zeros((ts.size, big.n))
    pad[:, :small.n] = rs.p
    dist = np.abs(rb.p - pad).sum(axis=1)
    slack = rs.integration_error + rb.integration_error
    return {"projections": [int(small.n), int(big.n)], "times": ts, "leaked_small": rs.leaked,
            "leaked_big": rb.leaked, "l1_distance": dist, "abs_difference": np.abs(dist - rs.leaked),
            "certified_slack": slack, "identity_holds": bool(np.all(np.abs(dist - rs.leaked) <= slack))}


def adaptive_case() -> dict:
    net = ReactionNetwork("0 -> A, 30; A -> 0, 1; 0 -> B, 1; B -> 0, 1")
    r = transient_distribution(net, {}, [5.0], bounds={"A": 10, "B": 10}, tol=1e-10)
    return {"first_bounds": r.expansions[0]["bounds"], "last_bounds": r.expansions[-1]["bounds"],
            "projections": len(r.expansions), "leaked": float(r.leaked[-1])}


def _mp_closed_forms(ts):
    e = np.exp
    mM = 4 * (1 - e(-ts))
    mP = 48 - 96 * e(-ts / 2) + 48 * e(-ts)
    vP = 240 - 96 * e(-ts / 2) + 624 * e(-ts) - 576 * ts * e(-ts) - 768 * e(-3 * ts / 2)
    return {"M": (mM, np.sqrt(mM)), "P": (mP, np.sqrt(vP))}


def intervals_case(smoke: bool) -> dict:
    net = ReactionNetwork("0 -> M, 4; M -> M + P, 6; M -> 0, 1; P -> 0, 0.5", name="mp")
    ts = np.array([1.0, 10.0, 100.0])
    t = time.perf_counter()
    r = (transient_distribution(net, {}, ts, tol=1e-3, bounds={"M": 20, "P": 150}) if smoke
         else transient_distribution(net, {}, ts, tol=1e-8))
    seconds = time.perf_counter() - t
    mp = {}
    for name, (mean, sd) in _mp_closed_forms(ts).items():
        row = {}
        for source in ("auto", "projection"):
            iv = r.intervals(name, source=source)
            row[source] = {"status": iv.status, "source": iv.source,
                           "inside": bool(np.all((iv.mean[0] <= mean) & (mean <= iv.mean[1]) & (iv.sd[0] <= sd)
                                                 & (sd <= iv.sd[1]))),
                           "mean_rel_width": (iv.mean[1] - iv.mean[0]) / mean, "sd_rel_width": (iv.sd[1] - iv.sd[0]) / sd}
        mp[name] = row
    sweep = ReactionNetwork("0 -> A, 50; A -> 0, 1")
    tols = [1e-1, 1e-2, 1e-4] if smoke else [1e-1, 1e-2, 1e-4, 1e-8]
    tgrid = np.array([0.5, 1.0, 1.5, 2.0]) if smoke else np.array([0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0])
    lam = 50 * (1 - np.exp(-tgrid))
    counts = {"auto": 0, "projection": 0, "zero_escape_control": 0}
    checked = 0
    for tol in tols:
        for horizon in ([2.0] if smoke else [2.0, float(tgrid[-1])]):
            ts_k = tgrid[tgrid <= horizon]
            rr = transient_distribution(sweep, {"A": 0}, ts_k, tol=tol)
            lk = lam[: ts_k.size]
            for key, kw in (("auto", {}), ("projection", {"source": "projection"}),
                            ("zero_escape_control", {"source": "projection", "escaped": "zero"})):
                iv = rr.intervals("A", **kw)
                miss = ~((iv.mean[0] <= lk) & (lk <= iv.mean[1]) & (iv.sd[0] <= np.sqrt(lk)) & (np.sqrt(lk) <= iv.sd[1]))
                counts[key] += int(miss.sum())
            checked += ts_k.size
    return {"mp": {"times": ts, "n": int(r.space.n), "leaked": r.leaked, "seconds": seconds, "species": mp,
                   "lyapunov": {k: r.growth[k] for k in ("beta", "gamma2", "weights")}},
            "immigration_death_sweep": {"tols": tols, "times": tgrid, "points": checked, "misses": counts}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--smoke", action="store_true", help="fewer save times")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    ts_p = np.array([0.0, 2.0, 30.0]) if args.smoke else np.array([0.0, 0.5, 2.0, 10.0, 30.0])
    ts_b = np.array([0.0, 5.0]) if args.smoke else np.array([0.0, 1.0, 5.0, 20.0])
    record = {"command": " ".join(sys.argv), "poisson": poisson_case(ts_p), "birth_death": birth_death_case(ts_b),
              "leak": leak_case(), "adaptive": adaptive_case(), "intervals": intervals_case(args.smoke),
              "environment": {"python": platform.python_version(), "cpus": os.cpu_count(),
                              "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS")}}
    if args.out:
        write_json(args.out, record)
    p, b = record["poisson"], record["birth_death"]
    print(dumps(record, indent=2) if args.json else
          f"Poisson: max rel {p['max_relative_error']:.2e}, ℓ1/bound {p['l1_error_over_bound']:.2f}; birth–death "
          f"mean inside {b['mean_inside']}, sd inside {b['sd_inside']}; leak identity {record['leak']['identity_holds']}; "
          f"M/P intervals: P mean rel width {np.max(record['intervals']['mp']['species']['P']['auto']['mean_rel_width']):.1e}"
          f", misses {record['intervals']['immigration_death_sweep']['misses']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
