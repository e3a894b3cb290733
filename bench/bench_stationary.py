"""The three stationary-distribution benchmarks of issue 2, side by side in one run.

1. **accuracy** — componentwise relative error max_i |p_i − p_i*| / p_i* of every
   method of ``sp_ode.stationary_distribution`` (gth, solve, sparse, jax) and of two
   baselines (numpy LU of the bordered system Qᵀ-with-last-row-→-1ᵀ, unclipped;
   ``scipy.linalg.null_space`` normalised) on nearly completely decomposable chains
   (δ = 1e-4 … 1e-15) and birth–death tails (p down to 1e-50 … 1e-200).  p* is exact:
   rational elimination / detailed balance in ``fractions.Fraction``
   (``sp_ode.markov.reference``).  Target: gth ≤ 1e-14 on all.
2. **dense speed** — ``stationary_distribution(Q, method="gth")`` (validation
   included) and the bare blocked GTH kernel at n = 500, 1000, 2000 against a numpy
   LU solve of the bordered system, best of k, timed alternately.  Target: gth within
   2× of LU at n = 2000.
3. **sparse scale** — ``stationary_distribution(Q, method="sparse")`` on the
   bistable toggle-switch CME (``sp_ode.cme_two_species(N, repression=(N/5, 2))``,
   production N/2, degradation 1) with N² = 10⁴ … 10⁶ states, against
   ``scipy.sparse.linalg.spsolve`` (SuperLU) of the same pinned system (the
   formulation most favourable to spsolve: no dense border row), run only up to
   ``--pinned-max`` states, and of the textbook bordered system (Qᵀ with its last row
   replaced by 1ᵀ) up to ``--bordered-max``.  Each case runs in its own subprocess;
   peak memory is that process's peak RSS (VmHWM of /proc/self/status, read by the
   child at its end: Python, the libraries, Q and the solve).  Reported: seconds (best of k),
   peak RSS, negative entries, ‖Qᵀp‖∞ and ‖Qᵀp‖∞/max|Q|, and the difference between
   the two solutions.  Target: 10⁶ states ≤ 60 s and ≤ 4 GB, zero negative entries.

    python bench/bench_stationary.py                 # full (about 10 minutes on 2 busy cores)
    python bench/bench_stationary.py --smoke         # seconds; run by the test suite
    python bench/bench_stationary.py --json --out out/bench_stationary.json

Timings swing with machine load: the ratios are measured side by side in one run.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import scipy.linalg  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import sp_ode  # noqa: E402
from sp_ode.core.files import dumps, write_json  # noqa: E402
from sp_ode.markov._gth import gth_blocked  # noqa: E402
from sp_ode.markov.reference import birth_death_tail, componentwise_error, ncd_chain  # noqa: E402

METHODS = ("gth", "solve", "sparse", "jax")
TARGETS = {"gth_max_error": 1e-14, "gth_over_lu_at_2000": 2.0, "sparse_1e6_seconds": 60.0, "sparse_1e6_gb": 4.0}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def blas_threads() -> str:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return f"unknown (OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')})"
    return ", ".join(f"{i['internal_api']}:{i['num_threads']}" for i in threadpool_info())


# --- 1. accuracy ------------------------------------------------------------------

def bordered_lu(Q):
    n = Q.shape[0]
    M = Q.T.copy()
    M[-1] = 1.0
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    return np.linalg.solve(M, rhs)


def null_space_p(Q):
    v = scipy.linalg.null_space(Q.T)[:, 0]
    return v / v.sum()


def accuracy(smoke: bool) -> list[dict]:
    deltas = [1e-15] if smoke else [1e-4, 1e-6, 1e-8, 1e-10, 1e-12, 1e-14, 1e-15]
    # birth_death_tail(n, death=d): p_{n−1} ≈ d^{−(n−1)}.
    tails = [(11, 1e5)] if smoke else [(11, 1e5), (21, 1e5), (41, 1e5), (26, 1e8)]
    cases = [(f"ncd delta={d:.0e}", *ncd_chain(d)) for d in deltas]
    for n, d in tails:
        Q, exact = birth_death_tail(n, death=d)
        cases.append((f"birth-death n={n} min p={float(min(exact)):.0e}", Q, exact))
    rows = []
    for name, Q, exact in cases:
        row = {"case": name, "n": Q.shape[0]}
        for m in METHODS:
            row[m] = componentwise_error(sp_ode.stationary_distribution(Q, method=m), exact)
        row["numpy_lu"] = componentwise_error(bordered_lu(Q), exact)
        row["null_space"] = componentwise_error(null_space_p(Q), exact)
        rows.append(row)
    return rows


# --- 2. dense speed ---------------------------------------------------------------

def dense_generator(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    R = rng.uniform(0.0, 1.0, (n, n))
    np.fill_diagonal(R, 0.0)
    return R - np.diag(R.sum(axis=1))


def dense_speed(smoke: bool, repeat: int) -> list[dict]:
    """Best-of-`repeat` seconds, with BLAS at its default thread count and at 1 thread.

    Both gth (its trailing updates are GEMMs) and LU use the same BLAS, so each
    thread setting is a like-for-like comparison.
    """
    from threadpoolctl import threadpool_limits

    rows = []
    for threads in (None, 1):
        with threadpool_limits(limits=threads, user_api="blas"):
            label = blas_threads()
            for n in ([200] if smoke else [500, 1000, 2000]):
                Q = dense_generator(n)
                best = {"gth": np.inf, "gth_kernel": np.inf, "numpy_lu": np.inf}
                calls = {"gth": lambda: sp_ode.stationary_distribution(Q, method="gth"),
                         "gth_kernel": lambda: gth_blocked(Q), "numpy_lu": lambda: bordered_lu(Q)}
                for _ in range(repeat):  # alternate, so load swings hit all three alike
                    for key, f in calls.items():
                        t = time.perf_counter()
                        f()
                        best[key] = min(best[key], time.perf_counter() - t)
                rows.append({"n": n, "blas_threads": label, **{f"{k}_s": v for k, v in best.items()},
                             "gth_over_lu": best["gth"] / best["numpy_lu"],
                             "kernel_over_lu": best["gth_kernel"] / best["numpy_lu"]})
    return rows


# --- 3. sparse scale (each case in a subprocess) ------------------------------------

def cme(N: int):
    return sp_ode.cme_two_species(N, repression=(N / 5, 2.0))


def peak_rss_gb() -> float:
    """This process's peak resident set size in GiB: VmHWM of /proc/self/status.

    Not ``getrusage(RUSAGE_SELF).ru_maxrss``: Linux keeps that across fork+exec, so a
    child would inherit the parent's high-water mark (measured: 0.54 GB "before solve"
    for every case after the dense benchmark had run in the parent).
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20  # kB → GiB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # fallback (KiB on Linux)


def bordered_spsolve(Q) -> np.ndarray:
    """spsolve of [Qᵀ with its last row replaced by 1ᵀ] p = e_n — the textbook bordered system
    (the sparse form of ``method="solve"``); the dense row of ones costs SuperLU fill-in."""
    import scipy.sparse.linalg as spla

    n = Q.shape[0]
    Qt = sp.csr_array(Q.T)
    M = sp.vstack([Qt[: n - 1], sp.csr_array(np.ones((1, n)))], format="csc")
    rhs = np.zeros(n)
    rhs[-1] = 1.0
    return spla.spsolve(M, rhs)


SOLVERS = {  # name → what runs in the child
    "amg": "stationary_distribution(Q, method='sparse')  (sp_ode.markov._sparse)",
    "spsolve_pinned": "spsolve of the same pinned M-matrix system (sp_ode.markov._sparse.pinned_direct_stationary)",
    "spsolve_bordered": "spsolve of Q^T with its last row replaced by 1^T (dense border row)",
}


def child(kind: str, N: int, pin: int | None, save: str | None) -> dict:
    """Run one sparse-scale case in this (fresh) process and report its own peak RSS."""
    from sp_ode.markov._sparse import pinned_direct_stationary

    t = time.perf_counter()
    Q = cme(N)
    build = time.perf_counter() - t
    rss_before = peak_rss_gb()
    t, cpu = time.perf_counter(), time.process_time()
    info = {}
    if kind == "amg":
        p, info = sp_ode.stationary_distribution(Q, method="sparse", return_info=True)
    elif kind == "spsolve_pinned":
        p = pinned_direct_stationary(Q, pin=pin)
    else:
        p = bordered_spsolve(Q)
    seconds, cpu_seconds = time.perf_counter() - t, time.process_time() - cpu
    residual = float(np.abs(Q.T @ p).max())
    if save:
        np.save(save, p)
    return {"solver": kind, "N": N, "states": N * N, "seconds": seconds, "cpu_seconds": cpu_seconds,
            "build_seconds": build,
            "peak_rss_gb": peak_rss_gb(),
            "rss_before_solve_gb": rss_before, "negatives": int((p < 0).sum()), "min_p": float(p.min()),
            "residual": residual, "relative_residual": residual / float(abs(Q).max()),
            "iterations": info.get("iterations"), "converged": info.get("converged", True),
            "pinned_state": info.get("pinned_state", pin), "negatives_clipped": info.get("negatives_clipped"),
            "most_negative_clipped": info.get("most_negative"),
            "blas_threads": blas_threads(), "loadavg_1min": os.getloadavg()[0]}


def run_child(kind, N, pin=None, save=None, timeout=1200) -> dict:
    cmd = [sys.executable, __file__, "--case", f"{kind}:{N}"]
    if pin is not None:
        cmd += ["--pin", str(pin)]
    if save:
        cmd += ["--save", save]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(f"case {kind}:{N} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def sparse_scale(smoke: bool, repeat: int, pinned_max: int, bordered_max: int) -> list[dict]:
    """One row per (grid, solver); baselines run once, up to their size caps, after the AMG runs."""
    grids = [30] if smoke else [100, 316, 600, 1000]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for N in grids:
            log(f"sparse scale: N = {N} ({N * N} states)")
            runs = [run_child("amg", N, save=f"{tmp}/amg.npy") for _ in range(repeat)]
            amg = min(runs, key=lambda r: r["seconds"])
            amg["seconds_all"] = [r["seconds"] for r in runs]
            rows.append(amg)
            p = np.load(f"{tmp}/amg.npy")
            for kind, cap in (("spsolve_pinned", pinned_max), ("spsolve_bordered", bordered_max)):
                if N * N > cap:
                    continue
                log(f"  {kind}")
                r = run_child(kind, N, pin=amg["pinned_state"], save=f"{tmp}/direct.npy")
                q = np.load(f"{tmp}/direct.npy")
                r["time_ratio_vs_amg"] = r["seconds"] / amg["seconds"]
                r["memory_ratio_vs_amg"] = r["peak_rss_gb"] / amg["peak_rss_gb"]
                r["max_abs_diff_vs_amg_over_max_p"] = float(np.abs(p - q).max() / p.max())
                rows.append(r)
    return rows


# --- report -------------------------------------------------------------------------

def fmt(x):
    return "-" if x is None else f"{x:.2g}" if isinstance(x, float) else str(x)


def report(rec: dict) -> str:
    lines = [f"BLAS threads: {rec['blas_threads']}; cpus: {os.cpu_count()}", "",
             "1. accuracy: max componentwise relative error vs exact rational p*"]
    cols = [*METHODS, "numpy_lu", "null_space"]
    lines.append(f"{'case':32s}" + "".join(f"{c:>12s}" for c in cols) + f"{'lu/gth':>10s}")
    for r in rec["accuracy"]:
        ratio = r["numpy_lu"] / max(r["gth"], 1e-17)
        lines.append(f"{r['case']:32s}" + "".join(f"{r[c]:12.1e}" for c in cols) + f"{ratio:10.1e}")
    lines += ["", "2. dense speed (best of k; seconds)",
              f"{'n':>6s}{'gth':>10s}{'kernel':>10s}{'numpy LU':>10s}{'gth/LU':>9s}{'kern/LU':>9s}  BLAS threads"]
    for r in rec["dense_speed"]:
        lines.append(f"{r['n']:6d}{r['gth_s']:10.3f}{r['gth_kernel_s']:10.3f}{r['numpy_lu_s']:10.3f}"
                     f"{r['gth_over_lu']:9.2f}{r['kernel_over_lu']:9.2f}  {r['blas_threads']}")
    lines += ["", "3. sparse scale: toggle-switch CME; wall seconds (AMG: best of k), that run's CPU seconds and",
              "   1-min load average; peak RSS of the solving process; ratios = baseline / AMG",
              f"{'states':>9s} {'solver':17s}{'wall s':>8s}{'cpu s':>8s}{'load':>6s}{'GB':>6s}{'iters':>6s}"
              f"{'neg':>6s}{'rel.res':>9s}{'t/amg':>7s}{'GB/amg':>7s}{'|dp|/maxp':>10s}"]
    for r in rec["sparse_scale"]:
        lines.append(f"{r['states']:9d} {r['solver']:17s}{r['seconds']:8.2f}{r['cpu_seconds']:8.2f}"
                     f"{r['loadavg_1min']:6.1f}{r['peak_rss_gb']:6.2f}{fmt(r['iterations']):>6s}{r['negatives']:6d}"
                     f"{r['relative_residual']:9.1e}{fmt(r.get('time_ratio_vs_amg')):>7s}"
                     f"{fmt(r.get('memory_ratio_vs_amg')):>7s}{fmt(r.get('max_abs_diff_vs_amg_over_max_p')):>10s}")
    lines += ["", "targets:"] + [f"  {k}: {'met' if v['met'] else 'MISSED'} ({v['value']:.3g} vs {v['target']})"
                                 for k, v in rec["targets"].items()]
    return "\n".join(lines)


def targets(rec: dict) -> dict:
    out = {"gth_max_error": {"value": max(r["gth"] for r in rec["accuracy"]),
                             "target": TARGETS["gth_max_error"]}}
    n_big = max(r["n"] for r in rec["dense_speed"])
    for r in rec["dense_speed"]:
        if r["n"] == n_big:
            out[f"gth_over_lu_at_{n_big} (BLAS {r['blas_threads']})"] = {
                "value": r["gth_over_lu"], "target": TARGETS["gth_over_lu_at_2000"]}
    amg = [r for r in rec["sparse_scale"] if r["solver"] == "amg"]
    top = max(amg, key=lambda r: r["states"])
    out[f"sparse_{top['states']}_seconds"] = {"value": top["seconds"], "target": TARGETS["sparse_1e6_seconds"]}
    out[f"sparse_{top['states']}_gb"] = {"value": top["peak_rss_gb"], "target": TARGETS["sparse_1e6_gb"]}
    out["sparse_negatives"] = {"value": sum(r["negatives"] for r in amg), "target": 0}
    for v in out.values():
        v["met"] = bool(v["value"] <= v["target"])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--smoke", action="store_true", help="tiny sizes, seconds (for the test suite)")
    ap.add_argument("--repeat", type=int, default=None, help="best of k timings (default 3; 1 with --smoke)")
    ap.add_argument("--pinned-max", type=int, default=1_000_000,
                    help="largest state count given to spsolve on the pinned system")
    ap.add_argument("--bordered-max", type=int, default=360_000,
                    help="largest state count given to spsolve on the bordered system")
    ap.add_argument("--only", choices=["accuracy", "dense", "sparse"], action="append", help="run only these parts")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    ap.add_argument("--out", default=None, help="also write the JSON record to this file")
    ap.add_argument("--case", help=argparse.SUPPRESS)   # child mode: KIND:N
    ap.add_argument("--pin", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.case:
        kind, N = args.case.split(":")
        print(dumps(child(kind, int(N), args.pin, args.save)))
        return 0
    repeat = args.repeat or (1 if args.smoke else 3)
    parts = args.only or ["accuracy", "dense", "sparse"]
    rec = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "blas_threads": blas_threads(),
           "cpus": os.cpu_count(), "repeat": repeat, "sparse_solvers": SOLVERS, "accuracy": [], "dense_speed": [], "sparse_scale": []}
    if "accuracy" in parts:
        log("accuracy …")
        rec["accuracy"] = accuracy(args.smoke)
    if "dense" in parts:
        log("dense speed …")
        rec["dense_speed"] = dense_speed(args.smoke, repeat)
    if "sparse" in parts:
        rec["sparse_scale"] = sparse_scale(args.smoke, repeat, args.pinned_max, args.bordered_max)
    if all(rec[k] for k in ("accuracy", "dense_speed", "sparse_scale")):
        rec["targets"] = targets(rec)
    else:
        rec["targets"] = {}
    if args.out:
        write_json(args.out, rec)
    print(dumps(rec) if args.json else report(rec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
