"""How far does one anchor reach? The check c = min_i (G(y)ĥ)_i of docs/theory.md §7.8 around the box centre.

    .venv/bin/python -m bench.phi.anchor_reach     # writes results/phi/surrogate/anchor_reach.json
    .venv/bin/python -m bench.phi.anchor_reach --smoke --out x.json     # seconds (tests/bench)

For the two-gene CME (bench/phi/_models.py, N = 100) with d = 3 and d = 8: the anchor is the exact
solve at y = 1 (the box centre); c is evaluated at y = 1 ± δ along each axis and at 8 random
corners 1 + δ·(±1, …, ±1) (seed 0), for δ = 2 % … 30 %.  c > 0 certifies the hitting times there.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from bench._common import RESULTS, fresh_path
from bench.phi._models import family
from neural.phi.certificate import make_anchor, supersolution_constant


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="the record (default: a fresh results/phi/surrogate/anchor_reach.json; none at --smoke)")
    parser.add_argument("--smoke", action="store_true", help="d = 3, N = 10, δ = 0 and 2 %%: seconds")
    args = parser.parse_args(argv)
    if args.out is None and not args.smoke:
        args.out = fresh_path(RESULTS / "phi" / "surrogate" / "anchor_reach.json")
    out = {}
    for d in ((3,) if args.smoke else (3, 8)):
        fam = family(d, 10 if args.smoke else 100)
        a = make_anchor(fam, np.ones(d))
        rows = []
        # δ = 0 is the anchor itself, where c = 1 exactly (h is its own hitting-time vector)
        for delta in ((0.0, 0.02) if args.smoke else (0.02, 0.05, 0.1, 0.15, 0.2, 0.3)):
            axis = []
            for j in range(d):
                for sign in (-1, 1):
                    y = np.ones(d)
                    y[j] += sign * delta
                    axis.append(supersolution_constant(fam.Q(y), a.h, a.k))
            rng = np.random.default_rng(0)
            corners = [supersolution_constant(fam.Q(1 + delta * rng.choice([-1, 1], d)), a.h, a.k) for _ in range(8)]
            rows.append({"delta": delta, "min_c_axis": min(axis), "median_c_axis": float(np.median(axis)),
                         "min_c_corners": min(corners), "median_c_corners": float(np.median(corners)),
                         "max_c_corners": max(corners)})
            print(d, rows[-1], flush=True)
        out[f"d{d}"] = {"anchor_H": a.H, "rows": rows}
    if args.out is not None:
        args.out.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
