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

    python -m bench.markov.stationary                 # full (about 10 minutes on 2 busy cores)
    python -m bench.markov.stationary --smoke         # seconds; run by the test suite
    python -m bench.markov.stationary --json --out out/stationary.json

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

import numpy as np
import scipy.linalg
import scipy.sparse as sp

import sp_ode
from bench._common import child_env, default_record, module_command
from sp_ode.core.files import dumps, write_json
from sp_ode.markov.reference import birth_death_tail, componentwise_error, ncd_chain
from sp_ode.markov.solvers import gth_blocked

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


# --- 1b. bounds (issue 11): every case x every method, error and bound side by side ---

def _kmr(N: int, eps: float):
    up = [eps / 2] + [(N - n) / N * (eps / 2 + (1 - eps) * (n / (N - 1) > 1 / 3)) for n in range(1, N)]
    down = [n / N * (eps / 2 + (1 - eps) * ((n - 1) / (N - 1) < 1 / 3)) for n in range(1, N)] + [eps / 2]
    return up, down


def _bd_exact(lam, mu):
    from fractions import Fraction

    w = [Fraction(1)]
    for a, b in zip(lam, mu):
        w.append(w[-1] * Fraction(a) / Fraction(b))
    total = sum(w)
    return [x / total for x in w]


def _two_grids(side: int, delta: float):
    """Two side×side grids joined by one pair of conductance δ; reversible, p ∝ π exactly (docs/theory.md §6)."""
    from fractions import Fraction

    idx = np.arange(side * side).reshape(side, side)
    x, _ = np.divmod(np.arange(side * side), side)
    pi = np.concatenate([2.0 ** -((x + idx.ravel()) % 3), 2.0 * 2.0 ** -(x % 2)])
    rows, cols = [], []
    for off in (0, side * side):
        for a, b in [(idx[:, :-1], idx[:, 1:]), (idx[:-1, :], idx[1:, :])]:
            rows.append(a.ravel() + off)
            cols.append(b.ravel() + off)
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    w = np.ones(rows.size)
    rows, cols, w = np.r_[rows, side * side - 1], np.r_[cols, side * side], np.r_[w, delta]
    r, c, w = np.r_[rows, cols], np.r_[cols, rows], np.r_[w, w]
    n = pi.size
    Q = sp.csr_array((w / pi[r], (r, c)), shape=(n, n))
    Q = (Q - sp.diags_array(np.asarray(Q.sum(axis=1)).ravel())).tocsr()
    total = sum(Fraction(v) for v in pi)
    return Q, [Fraction(v) / total for v in pi]


def bound_cases(smoke: bool):
    from sp_ode.markov.reference import exact_stationary

    cases = []
    lam, mu = [5e-15, 2 / 3, 1 / 3], [1 / 3, 1e-14 / 3, 5e-15]
    cases.append(("birth-death [5e-15, 2/3, 1/3] (sparse)", sp_ode.birth_death(lam, mu, sparse=True),
                  _bd_exact(lam, mu)))
    for N, eps in ([(27, 1e-10)] if smoke else [(3, 1e-4), (27, 1e-10), (100, 1e-6), (200, 1e-15)]):
        up, down = _kmr(N, eps)
        cases.append((f"KMR N={N} eps={eps:.0e} (sparse)", sp_ode.birth_death(up, down, sparse=True),
                      _bd_exact(up, down)))
    Q4 = np.zeros((4, 4))
    Q4[0, 1] = Q4[1, 0] = Q4[2, 3] = Q4[3, 2] = 1e6
    Q4[1, 2], Q4[3, 0] = 1e-10, 2e-10
    np.fill_diagonal(Q4, -Q4.sum(axis=1))
    cases.append(("NCD 4 states 1e6 / 1e-10 (csr)", sp.csr_array(Q4), exact_stationary(Q4)))
    R = np.zeros((12, 12))
    R[np.arange(12), (np.arange(12) + 1) % 12] = np.geomspace(1e-12, 5e8, 12)
    Qc = R - np.diag(R.sum(axis=1))
    cases.append(("directed 12-cycle 1e-12..5e8 (csr)", sp.csr_array(Qc), exact_stationary(Qc)))
    for d in ([1e-12] if smoke else [1e-4, 1e-12, 1e-15]):
        Q, exact = ncd_chain(d)
        cases.append((f"ncd_chain delta={d:.0e} (dense)", Q, exact))
    for side, d in ([(12, 2.0**-40)] if smoke else [(50, 2.0**-40), (50, 2.0**-50)]):
        Q, exact = _two_grids(side, d)
        cases.append((f"two {side}x{side} grids delta={d:.1e} (sparse)", Q, exact))
    return cases


def bounds(smoke: bool) -> list[dict]:
    """For each case and method: the raw method (no escalation) and the public call, error vs bound.

    Error = ‖p − p*‖₁ in exact arithmetic; ``rel`` = max componentwise relative error over p*_i ≥ 1e-290.
    """
    from fractions import Fraction

    from sp_ode.markov.stationary import METHODS as RAW

    def errors(p, exact):
        if p is None or not np.all(np.isfinite(p)):
            return float("inf"), float("inf")
        l1 = float(sum(abs(Fraction(float(x)) - e) for x, e in zip(p, exact)))
        rel = float(max(abs(Fraction(float(x)) - e) / e for x, e in zip(p, exact) if e >= 1e-290))
        return l1, rel

    rows = []
    for name, Q, exact in bound_cases(smoke):
        log(f"bounds: {name}")
        for m in METHODS:
            row = {"case": name, "n": Q.shape[0], "method": m}
            Qm = Q if (m == "sparse" or not sp.issparse(Q)) else Q.toarray()
            if m == "sparse" and not sp.issparse(Qm):
                Qm = sp.csr_array(Qm)
            p, info = RAW[m](Qm, tol=1e-6, maxiter=None)
            row["raw_l1"], row["raw_rel"] = errors(p, exact)
            row["raw_bound"] = info["bound"]
            try:
                p, info = sp_ode.stationary_distribution(Q, method=m, return_info=True)
                row["final_method"] = info["method"]
                row["l1"], row["rel"] = errors(p, exact)
                row["bound"] = info["bound"]
            except sp_ode.ConvergenceError as exc:
                row["final_method"], row["l1"], row["rel"], row["bound"] = "ConvergenceError", None, None, exc.bound
            row["bound_holds"] = bool(row["raw_bound"] >= row["raw_l1"]
                                      and (row["l1"] is None or row["bound"] >= row["l1"]))
            rows.append(row)
    return rows


def bound_cost(smoke: bool, repeat: int) -> list[dict]:
    """Seconds of method="solve" with its bound against the bare LU solve it contains (best of k), 1 BLAS thread."""
    from threadpoolctl import threadpool_limits

    from sp_ode.markov.stationary import METHODS as RAW

    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for n in ([200] if smoke else [2000]):
            Q = dense_generator(n)
            M = Q.T.copy()
            M[-1] = 1.0
            rhs = np.zeros(n)
            rhs[-1] = 1.0
            best = {"lu_solve": np.inf, "solve_with_bound": np.inf}
            calls = {"lu_solve": lambda: scipy.linalg.lu_solve(scipy.linalg.lu_factor(M), rhs),
                     "solve_with_bound": lambda: RAW["solve"](Q)}
            for _ in range(repeat):
                for key, f in calls.items():
                    t = time.perf_counter()
                    f()
                    best[key] = min(best[key], time.perf_counter() - t)
            rows.append({"n": n, **{f"{k}_s": v for k, v in best.items()},
                         "ratio": best["solve_with_bound"] / best["lu_solve"]})
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
    "amg": "stationary_distribution(Q, method='sparse')  (sp_ode.markov.solvers)",
    "spsolve_pinned": "spsolve of the same pinned M-matrix system (sp_ode.markov.solvers.pinned_direct_stationary)",
    "spsolve_bordered": "spsolve of Q^T with its last row replaced by 1^T (dense border row)",
}


def child(kind: str, N: int, pin: int | None, save: str | None) -> dict:
    """Run one sparse-scale case in this (fresh) process and report its own peak RSS."""
    from sp_ode.markov.solvers import pinned_direct_stationary

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
            "bound": info.get("bound"), "seconds_parts": info.get("seconds"),
            "pinned_state": info.get("pinned_state", pin), "negatives_clipped": info.get("negatives_clipped"),
            "most_negative_clipped": info.get("most_negative"),
            "preconditioner": info.get("preconditioner"), "air_probe": info.get("air_probe"),
            "blas_threads": blas_threads(), "loadavg_1min": os.getloadavg()[0]}


def run_child(kind, N, pin=None, save=None, timeout=1200) -> dict:
    cmd = module_command(__spec__.name, "--case", f"{kind}:{N}")
    if pin is not None:
        cmd += ["--pin", str(pin)]
    if save:
        cmd += ["--save", save]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=child_env())
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
    if rec.get("bounds"):
        lines += ["", "1b. error bounds (issue 11): raw method vs public call (escalating); ℓ1 errors exact",
                  f"{'case':44s}{'meth':>7s}{'raw l1':>10s}{'raw bnd':>10s}{'final':>8s}{'l1':>10s}"
                  f"{'bound':>10s}{'rel':>10s} holds"]
        for r in rec["bounds"]:
            lines.append(f"{r['case']:44s}{r['method']:>7s}{r['raw_l1']:10.1e}{r['raw_bound']:10.1e}"
                         f"{r['final_method'][:7]:>8s}{fmt(r['l1']):>10s}{r['bound']:10.1e}{fmt(r['rel']):>10s} "
                         f"{r['bound_holds']}")
    if rec.get("bound_cost"):
        lines += ["", "1c. cost of the bound, dense (1 BLAS thread, best of k)"]
        for r in rec["bound_cost"]:
            lines.append(f"  n = {r['n']}: LU solve {r['lu_solve_s']:.3f} s, solve + bound "
                         f"{r['solve_with_bound_s']:.3f} s, ratio {r['ratio']:.2f}")
    for r in rec.get("sparse_scale", []):
        parts = r.get("seconds_parts")
        if r["solver"] == "amg" and parts:
            lines.append(f"  sparse {r['states']} states: setup {parts['setup']:.1f} s + solve {parts['solve']:.1f} s,"
                         f" bound {parts['bound']:.1f} s: ratio {sum(parts.values()) / (parts['setup'] + parts['solve']):.2f}"
                         f" (bound {fmt(r.get('bound'))})")
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
    if rec.get("bounds"):
        out["bound_holds_every_row"] = {"value": sum(not r["bound_holds"] for r in rec["bounds"]), "target": 0}
    if rec.get("bound_cost"):
        out["bound_cost_dense"] = {"value": max(r["ratio"] for r in rec["bound_cost"]), "target": 1.3}
    parts = top.get("seconds_parts")
    if parts:
        out["bound_cost_sparse"] = {"value": sum(parts.values()) / (parts["setup"] + parts["solve"]), "target": 1.3}
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
    ap.add_argument("--only", choices=["accuracy", "bounds", "dense", "sparse"], action="append",
                    help="run only these parts")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the tables")
    ap.add_argument("--out", default=None, help="also write the JSON record to this file")
    ap.add_argument("--case", help=argparse.SUPPRESS)   # child mode: KIND:N
    ap.add_argument("--pin", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--save", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.case:
        kind, N = args.case.split(":")
        print(dumps(child(kind, int(N), args.pin, args.save)))
        return 0
    repeat = args.repeat or (1 if args.smoke else 3)
    parts = args.only or ["accuracy", "bounds", "dense", "sparse"]
    rec = {"command": " ".join([Path(sys.executable).name, *sys.argv]), "blas_threads": blas_threads(),
           "cpus": os.cpu_count(), "repeat": repeat, "sparse_solvers": SOLVERS, "accuracy": [], "dense_speed": [], "sparse_scale": []}
    if "accuracy" in parts:
        log("accuracy …")
        rec["accuracy"] = accuracy(args.smoke)
    if "bounds" in parts:
        log("bounds …")
        rec["bounds"] = bounds(args.smoke)
        rec["bound_cost"] = bound_cost(args.smoke, repeat)
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
