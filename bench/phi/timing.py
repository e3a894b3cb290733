"""φ_θ's evaluation at 10⁴ inputs against exact sparse solves, measured side by side (interleaved rounds).

    .venv/bin/python -m bench.phi.timing      # writes results/phi/surrogate/timing_side_by_side.json

The machine is shared, so the two are timed in alternation within one process, three rounds each:
φ_θ at the 10⁴ held-out inputs (one batched call), and the exact solves at the first 100 of them
(SuperLU of the pinned system, pinned at φ_θ's most probable state, re-pinned at the mode when
needed — `exact_solve`), scaled to 10⁴; and the library's default sparse solver
(``sp_ode.stationary_distribution``, AMG-GMRES with its bound) at 20 of them.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sp_ode
from bench._common import RESULTS
from bench.phi._models import target_fit
from neural.phi.certificate import exact_solve
from neural.phi.sparse import design_points


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=RESULTS / "phi" / "surrogate",
                        help="the folder of the target run's checkpoints; the record is written there")
    FOLDER = parser.parse_args(argv).dir
    import torch

    torch.set_num_threads(1)
    out = {}
    for d in (3, 8):
        fit = target_fit(FOLDER, d)
        fam = fit.system
        held = design_points(fam.lower, fam.upper, 10_000, seed=12345)
        Qs = [fam.Q(y) for y in held[:100]]
        rounds = []
        for _ in range(3):
            t = time.perf_counter()
            q = fit.model.predict(held)
            ev = time.perf_counter() - t
            t = time.perf_counter()
            for Q, qy in zip(Qs, q[:100]):
                exact_solve(Q, k=int(np.argmax(qy)))
            lu = (time.perf_counter() - t) / 100
            t = time.perf_counter()
            for Q in Qs[:20]:
                sp_ode.stationary_distribution(Q)
            amg = (time.perf_counter() - t) / 20
            rounds.append({"evaluate_10k_s": ev, "superlu_per_solve_s": lu, "amg_per_solve_s": amg,
                           "speedup_vs_superlu": lu * 1e4 / ev, "speedup_vs_amg": amg * 1e4 / ev})
            print(d, rounds[-1], flush=True)
        out[f"d{d}"] = {"rounds": rounds, "median_speedup_vs_superlu": float(np.median([r["speedup_vs_superlu"] for r in rounds])),
                        "median_speedup_vs_amg": float(np.median([r["speedup_vs_amg"] for r in rounds])),
                        "load_average": list(__import__("os").getloadavg())}
    (FOLDER / "timing_side_by_side.json").write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
