"""`sp-ode stationary FILE`: p_st with its error bound, the residual ‖Qᵀp‖∞ and the spectral gap γ.

FILE formats: `.npy` (dense n×n), `.npz` (`scipy.sparse.save_npz`), `.json`
(a list of rows, `{"Q": rows}`, or `{"n": n, "rates": [[i, j, rate], ...]}`).

The table shows every entry of p (≤ 20 states, else the first 10 and last 5)
with 17 significant digits in exponent form, so no positive entry prints as 0,
then the bound on ‖p − p_st‖₁ (docs/theory.md §7) and the negatives clipped.
`--out FILE` writes p to `.npy` or `.csv` (an existing file is refused unless
`--overwrite`); a `.csv` starts with `#` lines saying what the bound certifies — componentwise, or
normwise only with the level below which entries are not certified (`np.loadtxt` skips them).  A `.json` file may name its states (`"states": [...]`), and the
table then shows p by name.  A float32 `.npy` is accepted: its rounding is part of
the bound (docs/theory.md §7.12).  `--reversibility` adds the numeric detailed-balance
check (`sp_ode.check_detailed_balance`).  Exit codes: 0 the bound meets
`--tol`; 1 it does not (no method reached it: the best attempt is reported);
2 bad input; 3 a runtime failure.  During the computation file descriptor 1 is
pointed at stderr, so whatever a dependency prints cannot corrupt `--json`.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

from sp_ode.cli.common import BUILTIN_HELP, EXIT_FAILED, EXIT_OK, UsageError, refuse_existing
from sp_ode.core.files import atomic_write_bytes, dumps
from sp_ode.markov.bounds import ConvergenceError
from sp_ode.markov.generator import check_detailed_balance, from_rates
from sp_ode.markov.spectral import spectral_gap
from sp_ode.markov.stationary import stationary_distribution

HELP = BUILTIN_HELP["stationary"]


def add_arguments(parser) -> None:
    parser.add_argument("file", help="generator: .npy (dense), .npz (scipy.sparse), or .json")
    parser.add_argument("--method", default=None, help="gth | solve | sparse | jax (default: gth dense, sparse sparse)")
    parser.add_argument("--tol", type=float, default=None,
                        help="largest accepted bound on ‖p − p_st‖₁ (default 1e-8; GTH checked only when given)")
    parser.add_argument("--maxiter", type=int, default=None, help="iteration cap of the sparse solver")
    parser.add_argument("--out", default=None, help="write p to this file (.npy or .csv); an existing one needs --overwrite")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    parser.add_argument("--reversibility", action="store_true",
                        help="also check detailed balance numerically (tolerance from the rounding of the rates)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-gap", action="store_true", help="skip the spectral gap (large chains)")


def _export_header(info: dict) -> str:
    """The `#` lines a .csv export of p starts with: what its bound certifies, and where a normwise answer
    stops being certified (`np.loadtxt` skips them)."""
    lines = [f"stationary distribution (method = {info['method']}); ‖p − p_st‖₁ ≤ {info['bound']:.3g}"]
    if info.get("componentwise_bound") is not None:
        lines.append(f"componentwise: |p̂_i − p_i| ≤ {info['componentwise_bound']:.3g}·p_i for every entry")
    elif info.get("uncertified_below") is not None:
        lines.append(f"normwise only: entries below {info['uncertified_below']:.3g} are NOT certified")
    return "\n".join(lines)


def _bad(path: Path, rule: str) -> UsageError:
    return UsageError(f"`FILE` {str(path)!r} {rule}.")


def load_states(path: str | Path, n: int) -> list[str] | None:
    """The state names of a .json generator file (`"states": [...]`), or None."""
    path = Path(path)
    if path.suffix.lower() != ".json":
        return None
    data = json.loads(path.read_text())
    states = data.get("states") if isinstance(data, dict) else None
    if states is None:
        return None
    if not isinstance(states, list) or len(states) != n or not all(isinstance(x, (str, int)) for x in states):
        raise _bad(path, f"must give `states` as a list of n = {n} names; got {states!r:.80}")
    if len({str(x) for x in states}) != n:
        raise _bad(path, "must give distinct `states` names")
    return [str(x) for x in states]


def load_generator(path: str | Path):
    """Read a generator from .npy / .npz / .json; shape and file errors are usage errors (exit 2)."""
    import scipy.sparse as sp


    path = Path(path)
    if not path.is_file():
        raise UsageError(f"`FILE` {str(path)!r} does not exist.")
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            Q = np.load(path, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise _bad(path, f"is not a NumPy .npy array file ({type(exc).__name__}: {exc})") from None
        if Q.ndim != 2 or Q.shape[0] != Q.shape[1]:
            raise _bad(path, f"must hold a square (n, n) array; got shape {Q.shape}")
        if not np.issubdtype(Q.dtype, np.number) or np.iscomplexobj(Q):
            raise _bad(path, f"must hold real numbers; got dtype {Q.dtype}")
        return Q
    if suffix == ".npz":
        try:
            return sp.load_npz(path)
        except Exception as exc:
            raise _bad(path, f"is not a scipy.sparse .npz file ({exc})") from None
    if suffix == ".json":
        try:
            data = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise _bad(path, f"is not valid JSON ({exc})") from None
        if isinstance(data, dict) and "rates" in data:
            rates = data["rates"]
            if not isinstance(rates, list) or not all(isinstance(e, list) and len(e) == 3 for e in rates):
                raise _bad(path, "must give `rates` as a list of [i, j, rate] triples")
            return from_rates([tuple(e) for e in rates], n=data.get("n"))
        if isinstance(data, dict) and "Q" in data:
            data = data["Q"]
        if not isinstance(data, list) or not data or not all(isinstance(r, list) for r in data) \
                or any(len(r) != len(data) for r in data):
            raise _bad(path, 'must hold a square list of rows, {"Q": rows} or {"n": n, "rates": [[i, j, rate], ...]}')
        try:
            return np.asarray(data, dtype=float)
        except (TypeError, ValueError):
            raise _bad(path, "must hold numbers in its rows") from None
    raise UsageError(f"`FILE` must end in .npy, .npz or .json; got {path.suffix!r}.")


def _check_out(out: str | None) -> Path | None:
    if out is None:
        return None
    path = Path(out)
    if path.suffix.lower() not in (".npy", ".csv"):
        raise UsageError(f"`--out` {out!r} must end in .npy or .csv; got {path.suffix!r}.")
    if path.is_dir():
        raise UsageError(f"`--out` {out!r} is a directory; give a file name ending in .npy or .csv.")
    if not path.parent.is_dir():
        raise UsageError(f"`--out` {out!r}: the folder {str(path.parent)!r} does not exist.")
    return path


@contextlib.contextmanager
def _stdout_to_stderr():
    """Point fd 1 at fd 2 while dependencies run (their prints become diagnostics, never part of stdout)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run(args) -> int:

    out = _check_out(args.out)
    Q = load_generator(args.file)
    if not args.overwrite:  # before any work
        refuse_existing([out], what="`--out` file")
    states = load_states(args.file, int(Q.shape[0]))
    failed = None
    with _stdout_to_stderr():
        try:
            p, info = stationary_distribution(Q, method=args.method, tol=args.tol, maxiter=args.maxiter,
                                              return_info=True)
        except ConvergenceError as exc:
            failed = exc
        gap, gap_info = (None, None) if (args.no_gap or failed) else spectral_gap(Q, return_info=True)
    if failed is not None:
        record = {"n": int(Q.shape[0]), "p": None, "passed": False, "bound": failed.bound, "tol": failed.tol,
                  "escalations": failed.info.get("escalations", []), "error": str(failed)}
        if args.json:
            print(dumps(record))
        print(f"sp-ode stationary: {failed}", file=sys.stderr)
        return EXIT_FAILED
    if out is not None:  # written whole or not at all (a killed run leaves no partial file)
        buffer = io.BytesIO()
        if out.suffix.lower() == ".npy":
            np.save(buffer, p)
        else:
            np.savetxt(buffer, p, fmt="%.17g", header=_export_header(info), encoding="utf-8")
        atomic_write_bytes(out, buffer.getvalue())
    balance = check_detailed_balance(Q, states=states) if args.reversibility else None
    record = {"n": int(p.shape[0]), "p": p, "passed": True, "residual": info["residual"], "spectral_gap": gap,
              "spectral_gap_resolved": None if gap_info is None else gap_info["resolved"],
              "spectral_gap_upper_bound": None if gap_info is None else gap_info["upper_bound"],
              "states": states,
              **{k: v for k, v in info.items() if k != "residual"}}
    if balance is not None:
        record["detailed_balance"] = {"reversible": balance.reversible, "worst": balance.worst,
                                      "tolerance": balance.tolerance, "message": balance.message}
    if args.json:
        print(dumps(record))
        return EXIT_OK
    n = p.shape[0]
    print(f"stationary distribution of {args.file} (n = {n}, method = {info['method']})")
    shown = range(n) if n <= 20 else list(range(10)) + list(range(n - 5, n))
    for i in shown:
        if n > 20 and i == n - 5:
            print("   …")
        label = str(i) if states is None else states[i]
        print(f"  p[{label}] = {p[i]:.17g}")
    print(f"error bound ‖p − p_st‖₁ ≤ {info['bound']:.3g}  ({info['bound_kind']})")
    if info.get("componentwise_bound") is not None:
        print(f"componentwise   |p̂_i − p_i| ≤ {info['componentwise_bound']:.3g}·p_i")
    elif info.get("uncertified_below") is not None:
        print(f"normwise only: entries below {info['uncertified_below']:.3g} are not certified "
              f"({info.get('componentwise_failure') or 'no entrywise certificate'})")
    if info.get("input_rounding"):
        print(f"  of which {info['input_rounding']:.3g} from the rounding of the rates as given (reduced-precision "
              "input, e.g. float32)")
    print(f"negatives clipped = {info['negatives_clipped']} (largest magnitude {info['most_negative']:.3g})")
    for e in info["escalations"]:
        print(f"escalated from {e['method']}: {e['reason']}")
    print(f"residual ‖Qᵀp‖∞ = {info['residual']:.3g}")
    if gap is not None:
        if gap_info["resolved"]:
            print(f"spectral gap γ  = {gap:.6g}")
        else:
            print(f"spectral gap γ  ≤ {gap_info['upper_bound']:.3g} (below what float64 resolves for this Q)")
    if balance is not None:
        print(f"detailed balance: {balance.message}")
    if out is not None:
        print(f"p written to {out}")
    if math.isinf(info["bound"]):  # GTH under the default tol with lost underflow terms
        print("warning: no finite error bound", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK
