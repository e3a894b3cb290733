"""Benchmark for φ_θ as a certified surrogate of p_st(y) at scale (issue 27; docs/bench/phi.md §4–7).

Targets: the two-gene CME (bench/phi/_models.py) with n = N² = 10⁴ fast states and d = 3 and d = 8
slow inputs on [0.7, 1.3]ᵈ; certified ℓ1 error ≤ 1e-3 at 10⁴ held-out Sobol inputs, checked against
exact sparse solves on ≥ 200 of them; evaluating φ_θ at 10⁴ inputs ≥ 100× cheaper than the sparse
solves (training reported separately; certification's own cost reported).  Baseline: tensor
Chebyshev and Smolyak sparse-grid interpolation of log p_st as d grows 1…8 (smaller N).

Every stage writes its JSON record as soon as it finishes, into a fresh file (never overwriting),
and training checkpoints let an interrupted run resume (``--resume``).

    OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m bench.phi.surrogate --out results/phi/surrogate
    .venv/bin/python -m bench.phi.surrogate --smoke --out DIR      # seconds; tests/bench
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from bench._common import RESULTS, fresh_path
from bench.phi._baselines import ChebyshevSurrogate, smolyak_levels, tensor_levels
from bench.phi._models import CHECK_FIELDS, family
from neural.phi.certificate import exact_solve
from neural.phi.result import PhiFit
from neural.phi.sparse import design_points
from neural.phi.surrogate import fit_surrogate
from sp_ode.core.files import write_json


def target_run(d: int, N: int, out: Path, *, budget: float, n_heldout: int, n_check: int, tol: float,
               head: str = "factored", kl_weight: float = 1.0, width: int = 64, n_train: int = 256,
               n_anchors: int = 32, resume: bool = False, label: str = "", certify_all: bool = True) -> dict:
    fam = family(d, N)
    tag = f"d{d}_n{fam.n}_{head}_kl{kl_weight:g}{label}"
    ckpt = out / f"ckpt_{tag}.pt"
    fit = fit_surrogate(fam, head=head, width=width, depth=2, n_train=n_train, steps=100_000, n_anchors=n_anchors,
                        kl_weight=kl_weight, n_monitor=16, record_every=10, checkpoint=ckpt,
                        resume=resume and ckpt.exists(), time_budget=budget, show_progress=True)
    rec = {"tag": tag, "d": d, "n": fam.n, "N": N, "domain": fit.config["domain"], "config": fit.config,
           "status": fit.status, "message": fit.message, "train_seconds": fit.train_seconds,
           "setup_seconds": fit.setup_seconds, "history": fit.history}
    held = design_points(fam.lower, fam.upper, n_heldout, seed=12345)      # disjoint seed from training
    # evaluation cost: φ_θ at all held-out inputs (one batched pass), warm, best of 3
    times = []
    for _ in range(3):
        t = time.perf_counter()
        fit.model.predict(held)
        times.append(time.perf_counter() - t)
    rec["evaluate_seconds"] = min(times)
    # exact check on a subset: true error against exact sparse solves, and the certificate there
    sub = held[:n_check]
    chk = fit.evaluate(sub)
    # the record's per-point arrays, as the check wrote them before PhiEvaluation held them
    rec["check"] = {k: getattr(chk, k).tolist() for k in CHECK_FIELDS}
    rec["check_summary"] = {
        "points": int(len(sub)), "max_error_l1": float(chk.error_l1.max()),
        "argmax_error_y": sub[int(np.argmax(chk.error_l1))].tolist(),
        "max_certificate": float(chk.certificate.max()), "max_certificate_max_form": float(chk.certificate_max.max()),
        "median_ratio_certificate_over_error": float(np.median(chk.certificate / np.maximum(chk.error_l1, 1e-300))),
        "certificate_holds_everywhere": bool(chk.holds.all()), "uncertified": int(np.isinf(chk.certificate).sum()),
        "mean_exact_solve_seconds": float(chk.solve_seconds.mean()),
    }
    print(f"[{tag}] train {fit.train_seconds:.0f} s ({fit.config['steps_done']} steps); check on {len(sub)}: "
          f"max err {rec['check_summary']['max_error_l1']:.2e}, max cert {rec['check_summary']['max_certificate']:.2e}, "
          f"holds {rec['check_summary']['certificate_holds_everywhere']}; evaluate {len(held)} in "
          f"{rec['evaluate_seconds']:.2f} s; exact solve {rec['check_summary']['mean_exact_solve_seconds'] * 1e3:.1f} ms",
          flush=True)
    if certify_all:
        pred = fit.certified_predict(held, tol, show_progress=True)
        s = pred.summary()
        rec["certified"] = {**s, "surrogate_certificate": pred.surrogate_certificate.tolist(),
                            "fell_back_mask": pred.fell_back.tolist(), "anchor": pred.anchor.tolist(),
                            "hitting_bound": pred.hitting_bound.tolist(),
                            "fraction_anchor_certified": float(np.isfinite(pred.surrogate_certificate).mean())}
        fb = pred.fell_back.sum()
        rec["exact_solves_seconds_per_point"] = (s["seconds"]["fallback_solves"] / fb if fb else
                                                 rec["check_summary"]["mean_exact_solve_seconds"])
        rec["exact_solves_all_seconds_estimate"] = rec["exact_solves_seconds_per_point"] * len(held)
        rec["speedup_evaluate_vs_exact"] = rec["exact_solves_all_seconds_estimate"] / rec["evaluate_seconds"]
        cert_cost = s["seconds"]["assemble_Q"] + s["seconds"]["certify"]
        rec["certification_seconds"] = cert_cost
        rec["speedup_evaluate_plus_certify_vs_exact"] = rec["exact_solves_all_seconds_estimate"] / (
            rec["evaluate_seconds"] + cert_cost)
        print(f"[{tag}] certified_predict on {len(held)} (tol {tol:g}): max surrogate certificate "
              f"{s['max_surrogate_certificate']:.2e} at {np.round(s['argmax_y'], 3).tolist()}, fell back "
              f"{s['fell_back']}, anchors added {s['anchors_added']}; seconds {s['seconds']}", flush=True)
    path = write_json(fresh_path(out / f"target_{tag}.json"), rec)
    rec["_path"] = str(path)
    return rec


def reduced_run(out: Path, *, N: int, budget: float, resume_from: Path | None, t_end: float, **fit_kw) -> dict:
    """The reduced flow on φ_θ against the exact-p_st reduced flow (sparse solves), d = 3, with the bound.

    The bound: at the surrogate path's points y_θ(t), the certificate ε(t) ≥ ‖φ_θ − p_st‖₁ (§7.8); the
    slow ODEs of bench/phi/_models.py are affine in the moments m = (E[A], E[B]) with ∂G/∂m known in
    closed form, and |Δm_k| ≤ ½(N − 1)ε (counts in 0…N−1, 1ᵀ(φ_θ − p_st) = 0), so the vector fields
    differ by at most β(t) = ½(N − 1)·ε(t)·‖∂G/∂m‖₂ (rigorous).  Propagated by Gronwall with the
    logarithmic norm μ(t) of the surrogate flow's Jacobian (central differences) along its path:
    |y_θ(t) − y(t)|₂ ≤ ∫₀ᵗ exp(∫ₛᵗ μ) β(s) ds — first order, since μ is that of the surrogate flow
    and not a bound over the segment between the two paths.
    """
    import sp_ode

    fam = family(3, N)
    system = fam.system
    ckpt = resume_from if resume_from is not None and resume_from.exists() else out / "ckpt_reduced.pt"
    fit = fit_surrogate(fam, steps=100_000, record_every=10, n_monitor=16, checkpoint=ckpt,
                        resume=ckpt.exists(), time_budget=budget, **fit_kw)
    ts = np.linspace(0.0, t_end, 41)
    y0 = np.array([0.8, 1.2, 0.9])
    t = time.perf_counter()
    sur = sp_ode.simulate_reduced(system, (0.0, t_end), y0, phi=fit.model, ts=ts, rtol=1e-9, atol=1e-11)
    t_sur = time.perf_counter() - t
    exact = system.simulate_reduced((0.0, t_end), y0, t_eval=ts, rtol=1e-9, atol=1e-11)
    diff = np.linalg.norm(sur.y - exact.y, axis=1)
    # the certificate along the surrogate path: two passes, the first adds anchors on the path
    fit.certified_predict(sur.y, tol=1e300)
    pred = fit.certified_predict(sur.y, tol=1e300, add_anchors=False)
    eps_t = pred.surrogate_certificate
    y1, y3 = sur.y[:, 0], sur.y[:, 1]
    gm = np.sqrt((0.5 * y1 / 20) ** 2 + (0.5 * y3 / 23) ** 2 + (0.05 / 23) ** 2)
    beta = 0.5 * (N - 1) * eps_t * gm
    fn = fit.model.jax_fn()

    def rhs(y):
        import jax

        with jax.enable_x64(True):
            return system.g(np.asarray(fn(y)), y)

    mu = []
    for y in sur.y:
        J = np.stack([(rhs(y + 1e-5 * e) - rhs(y - 1e-5 * e)) / 2e-5 for e in np.eye(3)], axis=1)
        mu.append(float(np.linalg.eigvalsh((J + J.T) / 2).max()))
    mu = np.array(mu)
    bound = np.zeros_like(ts)
    for i in range(1, len(ts)):   # e' ≤ μ e + β, trapezoid in exact exponential form per step
        dt = ts[i] - ts[i - 1]
        m = 0.5 * (mu[i] + mu[i - 1])
        b = 0.5 * (beta[i] + beta[i - 1])
        bound[i] = bound[i - 1] * np.exp(m * dt) + b * (np.expm1(m * dt) / m if abs(m) > 1e-12 else dt)
    rec = {"t": ts.tolist(), "y_surrogate": sur.y.tolist(), "y_exact": exact.y.tolist(), "difference": diff.tolist(),
           "certificate_along_path": eps_t.tolist(), "beta": beta.tolist(), "mu": mu.tolist(),
           "propagated_bound": bound.tolist(), "within_bound": bool(np.all(diff <= bound + 1e-9)),
           "surrogate_seconds": t_sur, "exact_seconds": exact.stats["seconds"], "exact_solves": exact.stats["solves"],
           "max_difference": float(diff.max()), "max_bound": float(bound.max()), "train_seconds": fit.train_seconds,
           "status": [sur.status, exact.status]}
    print(f"[reduced] max |y_θ − y| = {diff.max():.2e}, propagated bound max {bound.max():.2e}, within: "
          f"{rec['within_bound']}; surrogate {t_sur:.2f} s, exact {exact.stats['seconds']:.1f} s "
          f"({exact.stats['solves']} solves)", flush=True)
    path = write_json(fresh_path(out / "reduced.json"), rec)
    rec["_path"] = str(path)
    return rec


def timing_run(out: Path, *, N: int, n_points: int, tags) -> dict:
    """φ_θ's evaluation time at `n_points` held-out inputs, re-measured from the target checkpoints
    (the current code, best of 3), against the exact solves' time measured in the target run."""
    import json

    rows = {}
    for d, tag in tags:
        ckpt, recs = out / f"ckpt_{tag}.pt", sorted(out.glob(f"target_{tag}*.json"))
        if not ckpt.exists() or not recs:
            continue
        rec = json.loads(recs[-1].read_text())
        fit = PhiFit.load(ckpt, family(d, N))
        held = design_points(fit.system.lower, fit.system.upper, n_points, seed=12345)
        times = []
        for _ in range(3):
            t = time.perf_counter()
            fit.model.predict(held)
            times.append(time.perf_counter() - t)
        exact = rec.get("exact_solves_all_seconds_estimate")
        rows[tag] = {"evaluate_seconds": min(times), "all_times": times, "points": n_points,
                     "exact_solves_seconds": exact, "speedup": exact / min(times) if exact else None,
                     "certification_seconds": rec.get("certification_seconds"), "record": str(recs[-1])}
        print(f"[timing {tag}] evaluate {n_points} in {min(times):.2f} s; exact solves {exact} s -> "
              f"{rows[tag]['speedup']}", flush=True)
    path = write_json(fresh_path(out / "timing.json"), rows)
    return {"rows": rows, "_path": str(path)}


def baseline_sweep(out: Path, *, N: int, ds, budget: float, n_test: int, max_solves: int) -> dict:
    rows = []
    for d in ds:
        fam = family(d, N)
        test = design_points(fam.lower, fam.upper, n_test, kind="lhs", seed=777)
        t = time.perf_counter()
        exact = np.array([exact_solve(fam.Q(y))[0] for y in test])
        t_solve = (time.perf_counter() - t) / len(test)

        def err(P):
            return float(np.abs(P - exact).sum(axis=1).max())

        fit = fit_surrogate(fam, head="factored", width=48, depth=2, n_train=256, steps=100_000, n_anchors=16,
                            kl_weight=1.0, n_monitor=0, time_budget=budget)
        net_err = err(fit.model.predict(test))
        t = time.perf_counter()
        fit.model.predict(test)
        net_eval = time.perf_counter() - t
        row = {"d": d, "n": fam.n, "exact_solve_seconds": t_solve, "network": {
            "max_error_l1": net_err, "train_seconds": fit.train_seconds, "anchor_solves": 16,
            "steps": fit.config["steps_done"], "evaluate_seconds": net_eval}}
        for kind, levels_of in (("tensor_chebyshev", tensor_levels), ("smolyak", smolyak_levels)):
            ladder = []
            for level in range(0, 9):
                levels = levels_of(d, level)
                count = _count(kind, d, level)
                if count > max_solves:
                    ladder.append({"level": level, "solves": count, "skipped": "more solves than the cap"})
                    break
                t = time.perf_counter()
                sur = ChebyshevSurrogate(lambda y: exact_solve(fam.Q(y))[0], fam.lower, fam.upper, levels)
                build = time.perf_counter() - t
                t = time.perf_counter()
                P = sur.predict(test)
                ladder.append({"level": level, "solves": sur.solves, "build_seconds": build,
                               "evaluate_seconds": time.perf_counter() - t, "max_error_l1": err(P)})
                if ladder[-1]["max_error_l1"] <= net_err:
                    break
            hit = [r for r in ladder if "max_error_l1" in r and r["max_error_l1"] <= net_err]
            row[kind] = {"ladder": ladder, "solves_to_match_network": hit[0]["solves"] if hit else None,
                         "build_seconds_to_match": hit[0]["build_seconds"] if hit else None}
        rows.append(row)
        print(f"[baseline d={d}] network err {net_err:.2e} ({fit.train_seconds:.0f} s train); tensor "
              f"{row['tensor_chebyshev']['solves_to_match_network']} solves, smolyak "
              f"{row['smolyak']['solves_to_match_network']} solves to match", flush=True)
        write_json(out / "baseline_partial.json", {"rows": rows})
    path = write_json(fresh_path(out / "baseline.json"), {"N": N, "budget": budget, "n_test": n_test,
                                                       "max_solves": max_solves, "rows": rows})
    return {"rows": rows, "_path": str(path)}


def baseline_to_target(out: Path, *, N: int, ds, target: float, n_test: int, max_solves: int) -> dict:
    """Exact solves the two interpolants need for a held-out max ℓ1 error ≤ `target`, as d grows (no network)."""
    rows = []
    for d in ds:
        fam = family(d, N)
        test = design_points(fam.lower, fam.upper, n_test, kind="lhs", seed=777)
        t = time.perf_counter()
        exact = np.array([exact_solve(fam.Q(y))[0] for y in test])
        row = {"d": d, "n": fam.n, "exact_solve_seconds": (time.perf_counter() - t) / len(test)}
        for kind, levels_of in (("tensor_chebyshev", tensor_levels), ("smolyak", smolyak_levels)):
            ladder = []
            for level in range(0, 12):
                count = _count(kind, d, level)
                if count > max_solves:
                    ladder.append({"level": level, "solves": count, "skipped": "more solves than the cap"})
                    break
                t = time.perf_counter()
                sur = ChebyshevSurrogate(lambda y: exact_solve(fam.Q(y))[0], fam.lower, fam.upper, levels_of(d, level))
                build = time.perf_counter() - t
                t = time.perf_counter()
                err = float(np.abs(sur.predict(test) - exact).sum(axis=1).max())
                ladder.append({"level": level, "solves": sur.solves, "build_seconds": build,
                               "evaluate_seconds": time.perf_counter() - t, "max_error_l1": err})
                if err <= target:
                    break
            hit = [r for r in ladder if r.get("max_error_l1", np.inf) <= target]
            row[kind] = {"ladder": ladder, "solves_to_target": hit[0]["solves"] if hit else None}
        rows.append(row)
        print(f"[baseline to {target:g}, d={d}] tensor {row['tensor_chebyshev']['solves_to_target']} solves, smolyak "
              f"{row['smolyak']['solves_to_target']} solves", flush=True)
    path = write_json(fresh_path(out / "baseline_to_target.json"), {"N": N, "target": target, "n_test": n_test,
                                                                 "max_solves": max_solves, "rows": rows})
    return {"rows": rows, "_path": str(path)}


def _count(kind: str, d: int, level: int) -> int:
    from bench.phi._baselines import smolyak_count

    return (1 if level == 0 else 2**level + 1) ** d if kind == "tensor_chebyshev" else smolyak_count(d, level)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny, seconds-long version")
    parser.add_argument("--out", default=str(RESULTS / "phi" / "surrogate"))
    parser.add_argument("--only", choices=("targets", "baseline", "baseline_to_target", "heads", "reduced", "timing",
                                           "all"), default="all")
    parser.add_argument("--budget", type=float, default=600.0, help="training seconds per target run")
    parser.add_argument("--resume", action="store_true", help="resume target runs from their checkpoints")
    parser.add_argument("--tol", type=float, default=1e-3)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    smoke = args.smoke
    N = 8 if smoke else 100
    # smoke: half a second of training per fit (the code paths; a certificate holds at any accuracy)
    kw = {"budget": 0.5 if smoke else args.budget, "n_heldout": 16 if smoke else 10_000,
          "n_check": 4 if smoke else 200, "tol": args.tol, "resume": args.resume,
          "n_train": 32 if smoke else 256, "n_anchors": 4 if smoke else 32, "width": 16 if smoke else 64}
    records = {}
    if args.only in ("targets", "all"):
        for d in (3, 8):
            records[f"d{d}"] = target_run(d, N, out, **kw)
    if args.only in ("heads", "all"):
        # the plain (dense) head and the pure-residual run, at d = 3, against the factored head
        records["d3_dense"] = target_run(3, N, out, head="dense", certify_all=False, **kw)
        records["d3_pure_residual"] = target_run(3, N, out, kl_weight=0.0, certify_all=False, **kw)
    if args.only in ("reduced", "all"):
        tag = f"d3_n{N * N}_factored_kl1"
        records["reduced"] = reduced_run(out, N=N, budget=kw["budget"], resume_from=out / f"ckpt_{tag}.pt",
                                         t_end=1.0 if smoke else 6.0, head="factored", width=kw["width"], depth=2,
                                         n_train=kw["n_train"], n_anchors=kw["n_anchors"], kl_weight=1.0)
    if args.only in ("timing", "all"):
        records["timing"] = timing_run(out, N=N, n_points=kw["n_heldout"],
                                       tags=[(d, f"d{d}_n{N * N}_factored_kl1") for d in (3, 8)])
    if args.only in ("baseline", "all"):
        records["baseline"] = baseline_sweep(out, N=6 if smoke else 30, ds=(1, 2) if smoke else range(1, 9),
                                             budget=0.5 if smoke else 60.0, n_test=8 if smoke else 64,
                                             max_solves=50 if smoke else 3000)
    if args.only in ("baseline_to_target", "all"):
        records["baseline_to_target"] = baseline_to_target(
            out, N=6 if smoke else 30, ds=(1, 2) if smoke else range(1, 9), target=args.tol,
            n_test=8 if smoke else 64, max_solves=50 if smoke else 5000)
    print("records:", {k: v.get("_path") for k, v in records.items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
