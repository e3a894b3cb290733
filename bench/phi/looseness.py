"""How loose is the certificate for a trained φ_θ? Exact hitting times at the point itself (c = 1).

Run after ``python -m bench.phi.surrogate --only targets`` (it reads the d = 3 checkpoint):

    .venv/bin/python -m bench.phi.looseness      # writes results/phi/surrogate/looseness_d3.json

At 6 Latin-hypercube points (seed 3) the exact solve gives p_st and h; the certificate with that h
(the anchor *at* the point, c = 1) against the true ℓ1 error separates the looseness of the bound
itself from the reach of the anchors.  Then K steps of the frozen fast flow, uniformised
(q ← q + Qᵀq/Λ, Λ the largest exit rate: nonnegative, mass-preserving, never increasing ‖q − p_st‖₁),
show how much of the looseness is the network's rough, high-frequency error.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench._common import RESULTS
from bench.phi._models import target_fit
from neural.phi.certificate import Anchor, certify, exact_solve
from neural.phi.sparse import design_points


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=RESULTS / "phi" / "surrogate",
                        help="the folder of the target run's checkpoints; the record is written there")
    FOLDER = parser.parse_args(argv).dir
    fit = target_fit(FOLDER, 3)
    fam = fit.system
    ys = design_points(fam.lower, fam.upper, 6, kind="lhs", seed=3)
    rows = []
    for y, q in zip(ys, fit.model.predict(ys)):
        Q = fam.Q(y)
        p, h, k, bound, H = exact_solve(Q)
        out = certify(Q, q, Anchor(y, fam.normalised(y[None])[0], k, h, H, p, bound, 0.0))
        err = float(np.abs(q - p).sum())
        rows.append({"y": y.tolist(), "error_l1": err, "certificate_exact_h": out["certificate"],
                     "certificate_max_form": out["certificate_max"], "H": H,
                     "residual_l1": float(np.abs(Q.T @ q).sum()), "c": out["c"]})
        QT, lam, qq, done, smooth = Q.T.tocsr(), float(-Q.diagonal().min()), q.copy(), 0, []
        for K in (5, 20, 50, 200, 1000):
            for _ in range(K - done):
                qq = qq + (QT @ qq) / lam
            done = K
            qq = np.maximum(qq, 0.0) / np.maximum(qq, 0.0).sum()
            o = certify(Q, qq, Anchor(y, fam.normalised(y[None])[0], k, h, H, p, bound, 0.0))
            smooth.append({"steps": K, "error_l1": float(np.abs(qq - p).sum()), "certificate": o["certificate"]})
        rows[-1]["fast_flow_steps"] = smooth
        print(f"err {err:.3e}  certificate {out['certificate']:.3e} ({out['certificate'] / err:.0f}x)  max form "
              f"{out['certificate_max']:.3e}  H {H:.2f}  ‖Qᵀφ‖₁ {rows[-1]['residual_l1']:.3e}")
    (FOLDER / "looseness_d3.json").write_text(json.dumps({"checkpoint": "ckpt_d3_n10000_factored_kl1.pt",
                                                         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
