"""`sp-ode stationary FILE`: p_st, the residual ‖Qᵀp‖∞ and the spectral gap γ of a stored generator.

FILE formats: ``.npy`` (dense n×n), ``.npz`` (``scipy.sparse.save_npz``), ``.json``
(a list of rows, ``{"Q": rows}``, or ``{"n": n, "rates": [[i, j, rate], ...]}``).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from sp_ode.cli.common import UsageError

HELP = "stationary distribution of a generator stored in a file"


def add_arguments(parser) -> None:
    parser.add_argument("file", help="generator: .npy (dense), .npz (scipy.sparse), or .json")
    parser.add_argument("--method", default=None, help="gth | solve | sparse | jax (default: gth dense, sparse sparse)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-gap", action="store_true", help="skip the spectral gap (large chains)")


def load_generator(path: str | Path):
    """Read a generator from .npy / .npz / .json (validation happens in the solver)."""
    import scipy.sparse as sp

    from sp_ode.markov.generator import from_rates

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"`FILE` {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        return np.load(path, allow_pickle=False)
    if suffix == ".npz":
        try:
            return sp.load_npz(path)
        except Exception as exc:
            raise UsageError(f"`FILE` {str(path)!r} is not a scipy.sparse .npz file ({exc}).") from None
    if suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise UsageError(f"`FILE` {str(path)!r} is not valid JSON ({exc}).") from None
        if isinstance(data, dict) and "rates" in data:
            return from_rates([tuple(e) for e in data["rates"]], n=data.get("n"))
        if isinstance(data, dict) and "Q" in data:
            data = data["Q"]
        return np.asarray(data, dtype=float)
    raise UsageError(f"`FILE` must end in .npy, .npz or .json; got {path.suffix!r}.")


def run(args) -> int:
    from sp_ode.core.files import dumps
    from sp_ode.markov.spectral import spectral_gap
    from sp_ode.markov.stationary import stationary_distribution

    Q = load_generator(args.file)
    p, info = stationary_distribution(Q, method=args.method, return_info=True)
    gap = None if args.no_gap else spectral_gap(Q)
    record = {"n": int(p.shape[0]), "p": p, "residual": info["residual"], "spectral_gap": gap,
              **{k: v for k, v in info.items() if k != "residual"}}
    if args.json:
        print(dumps(record))
        return 0
    n = p.shape[0]
    print(f"stationary distribution of {args.file} (n = {n}, method = {info['method']})")
    shown = range(n) if n <= 20 else list(range(10)) + list(range(n - 5, n))
    for i in shown:
        if n > 20 and i == n - 5:
            print("   …")
        print(f"  p[{i}] = {p[i]:.16g}")
    print(f"residual ‖Qᵀp‖∞ = {info['residual']:.3g}")
    if gap is not None:
        print(f"spectral gap γ  = {gap:.6g}")
    if "converged" in info and not info["converged"]:
        print("warning: the sparse solver did not reach its tolerance", file=sys.stderr)
        return 1
    return 0
