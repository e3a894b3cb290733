"""φ_θ surrogate at n ≈ 10⁵ on one GPU (issue 27): the prepared script for a lent device.

Trains φ_θ on the two-gene CME (bench/phi/_models.py) with N = 316 (n = 99,856 fast states) and
d = 3 slow inputs on the GPU (float64: the certificate needs residuals far below float32's
resolution), inside a wall-clock budget of ``--budget`` seconds (default 300) for the whole run:
the anchors' exact solves (SuperLU on the CPU), the training (stopped by ``time_budget``), the
exact check on ``--check`` held-out points and ``certified_predict`` on ``--certify`` points.  Prints
and writes a JSON record of every number (training and certification reported separately).

    python -m bench.phi.gpu_surrogate --out results/phi/surrogate/gpu_1e5.json   # with a CUDA GPU
    python -m bench.phi.gpu_surrogate --device cpu --smoke --out DIR/gpu.json       # the code path on a CPU

Without a GPU (and without ``--device cpu``) it says so and exits 0.
"""
from __future__ import annotations

import argparse
import platform
import time

import torch

from bench.phi._models import two_gene
from neural.phi.sparse import SparseFamily, design_points
from neural.phi.surrogate import fit_surrogate
from sp_ode.core.files import write_json


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--budget", type=float, default=300.0, help="wall-clock seconds for the whole run")
    parser.add_argument("--N", type=int, default=316, help="counts per species (n = N²)")
    parser.add_argument("--d", type=int, default=3)
    parser.add_argument("--check", type=int, default=32, help="held-out points checked against exact solves")
    parser.add_argument("--certify", type=int, default=1024, help="held-out points given certified_predict")
    parser.add_argument("--smoke", action="store_true", help="N = 10 and seconds of training (code path)")
    parser.add_argument("--out", default="out/gpu_phi_surrogate.json")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("gpu_phi_surrogate: no CUDA device; skipped (run with --device cpu for the code path)")
        return 0
    t_start = time.perf_counter()
    N = 10 if args.smoke else args.N
    system, dom = two_gene(args.d, N)
    fam = SparseFamily.from_network(system, dom[:, 0], dom[:, 1])
    budget = 4.0 if args.smoke else args.budget
    n_anchors, n_train = (4, 32) if args.smoke else (16, 256)
    # the training gets what is left after the anchors (~0.5 s each at 10⁵ states) and ~25 % for the checks
    fit = fit_surrogate(fam, head="factored", width=64, depth=2, n_train=n_train, steps=1_000_000,
                        n_anchors=n_anchors, kl_weight=1.0, n_monitor=4, record_every=10,
                        time_budget=max(1.0, 0.7 * budget - (time.perf_counter() - t_start) - 8 * n_anchors * 0.5),
                        device=args.device, threads=None)
    held = design_points(fam.lower, fam.upper, max(args.certify, args.check), seed=12345)
    t = time.perf_counter()
    fit.model.predict(held)
    evaluate_s = time.perf_counter() - t
    chk = fit.evaluate(held[: (2 if args.smoke else args.check)])
    pred = fit.certified_predict(held[: (8 if args.smoke else args.certify)], 1e-3)
    rec = {"device": args.device, "gpu": torch.cuda.get_device_name() if args.device.startswith("cuda") else None,
           "host": platform.node(), "n": fam.n, "d": args.d, "budget_s": budget,
           "wall_s": time.perf_counter() - t_start, "train_seconds": fit.train_seconds,
           "steps_done": fit.config["steps_done"], "setup_seconds": fit.setup_seconds,
           "anchor_seconds": fit.config["anchor_seconds"], "evaluate_seconds": evaluate_s,
           "evaluate_points": len(held), "check_max_error_l1": float(chk.error_l1.max()),
           "check_max_certificate": float(chk.certificate.max()), "check_holds": bool(chk.holds.all()),
           "mean_exact_solve_seconds": float(chk.solve_seconds.mean()), "certified": pred.summary(),
           "history": fit.history}
    write_json(args.out, rec)
    print(f"gpu_phi_surrogate: n = {fam.n}, {fit.config['steps_done']} steps in {fit.train_seconds:.1f} s on "
          f"{args.device}; max ℓ1 error {rec['check_max_error_l1']:.2e} (certificate {rec['check_max_certificate']:.2e}, "
          f"holds {rec['check_holds']}); {len(held)} evaluations in {evaluate_s:.2f} s; exact solve "
          f"{rec['mean_exact_solve_seconds']:.2f} s; wall {rec['wall_s']:.0f} s of {budget:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
