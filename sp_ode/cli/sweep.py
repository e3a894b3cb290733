"""`sp-ode sweep CONFIG`: a parameter sweep, each point by its cheapest certified path (docs/guide/sweeps.md).

The command reads a TOML or JSON config (the format is `FORMAT`, printed by
`sp-ode sweep --help`), runs `sp_ode.sweep`, prints `SweepResult.report` (paths taken and why,
worst estimate, validation, where the time went) and writes `report.json` and `result.npz`
under `out`.  Numbers in a config may be strings holding closed arithmetic expressions, read
by the grammar of `sp_ode.core.expressions` — parsed, never evaluated (docs/theory.md §9).
Exit 0 every point within tol (after re-solves); 1 some full solve failed; 2 bad config (also: `out`
holds another sweep, or results without a sweep manifest, and no `--overwrite`); 3 runtime error (also:
the Dask scheduler did not answer in time).
"""
from __future__ import annotations

import itertools
import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np

from sp_ode.cli.common import BUILTIN_HELP, EXIT_FAILED, EXIT_OK, UsageError, default_out, refuse_existing
from sp_ode.core.expressions import ExpressionSyntaxError, parse_number
from sp_ode.core.files import atomic_write_bytes, dumps, write_json
from sp_ode.core.memory import check_memory
from sp_ode.core.validation import did_you_mean
from sp_ode.sweeps.sweep import (
    CHUNKS,
    MANIFEST,
    STATUS_FAILED,
    TIMINGS,
    VALIDATION,
    SweepResumeError,
    npz_bytes,
    remove_orphans,
    sweep,
)
from sp_ode.systems.network import NetworkSystem
from sp_ode.systems.resolve import as_system, load_system

HELP = BUILTIN_HELP["sweep"]

FORMAT = """\
CONFIG (TOML or JSON) — a complete example:

    system = "michaelis_menten"   # a catalogue name, "family:ring20", "network:cascade",
                                  # or "path/to/model.py:OBJECT" (relative to this file)
    t_span = [0.0, 2.0]
    ts = [0.5, 1.0, 1.5, 2.0]     # y is returned, and tol applies, at these times
    tol = 1e-6                    # max-norm error of y over ts, per point
    x0 = "manifold"               # or a list (m,); default: the catalogue entry's
    y0 = [1.0]                    # default: the catalogue entry's
    out = "out/sweep"             # chunks + manifest (resumable), report.json, result.npz
    seed = 0                      # random draws of the specs below, and the validated points

    [params]                      # zipped: equal lengths, point i takes entry i of each
    eps = {loguniform = [1e-6, 1e-2, 40]}
    kappa = {uniform = [0.5, 2.0, 40]}

    [grid]                        # Cartesian product: every combination of the axes
    lam = [0.3, 0.5]              # (with [params] too: every grid point with every params row)

  Values: a list, or one of {linspace = [a, b, n]}, {logspace = [a, b, n]} (10^a … 10^b),
  {uniform = [lo, hi, n]}, {loguniform = [lo, hi, n]} (random, from seed).  A number may be
  written as a string holding an expression: "1/4096", "2^-12".  Names are eps and the
  system's parameters (its args; for a network, its rate constants and slow-equation
  parameters).
  Optional: validate_fraction (0.01), max_order (2; networks 1), safety (0.5),
  route ("auto" | "full" | "reduced"), chunk_size (default: automatic, every Dask worker
  gets at least 2 tasks), client ("local" | "tcp://HOST:PORT"), connect_timeout (10 s).
"""

KEYS = {"system", "params", "grid", "t_span", "ts", "x0", "y0", "tol", "out", "seed", "chunk_size",
        "validate_fraction", "max_order", "safety", "route", "client", "connect_timeout"}
SPECS = ("linspace", "logspace", "uniform", "loguniform")


def add_arguments(parser) -> None:
    import argparse

    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = FORMAT
    parser.add_argument("config", help="sweep configuration (.json or .toml; format below)")
    parser.add_argument("--out", default=None, help="output folder (overrides the config; default out/sweep)")
    parser.add_argument("--client", default=None, help="'local' or a Dask scheduler address (overrides the config)")
    parser.add_argument("--connect-timeout", type=float, default=None,
                        help="seconds any wait for the Dask scheduler may take (default 10)")
    parser.add_argument("--force-cluster", action="store_true",
                        help="with --client local: start the local cluster even where counted work predicts it "
                             "slower than this process")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the report")
    parser.add_argument("--overwrite", action="store_true",
                        help="start over: delete this command's earlier chunks/, report.json and result.npz in "
                             "--out (without it the same sweep resumes and another one is refused)")


def load_config(path) -> dict:
    """Read a JSON or TOML config; unknown keys and unreadable files are usage errors."""
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"`CONFIG` {str(path)!r} does not exist.")
    text = path.read_text()
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            config = tomllib.loads(text)
        elif path.suffix.lower() == ".json":
            config = json.loads(text)
        else:
            raise UsageError(f"`CONFIG` {str(path)!r} must end in .json or .toml.")
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"`CONFIG` {str(path)!r} is not valid {path.suffix[1:].upper()}: {exc}") from None
    if not isinstance(config, dict):
        raise UsageError(f"`CONFIG` {str(path)!r} must hold a table/object.")
    unknown = sorted(set(config) - KEYS)
    if unknown:
        close = [(k, did_you_mean(k, KEYS)) for k in unknown]
        named = ", ".join(f"{k!r}" + (f" (did you mean {c!r}?)" if c else "") for k, c in close)
        raise UsageError(f"`CONFIG` {str(path)!r}: unknown key{'s' if len(unknown) > 1 else ''} {named}; allowed: "
                         f"{sorted(KEYS)} (sp-ode sweep --help).")
    for key in ("system", "t_span", "ts", "tol"):
        if key not in config:
            raise UsageError(f"`CONFIG` must set `{key}` (sp-ode sweep --help shows a complete example).")
    if "params" not in config and "grid" not in config:
        raise UsageError("`CONFIG` must set `[params]` (zipped lists) or `[grid]` (a Cartesian product), or both.")
    return config


def _numbers(field: str, value):
    """`value` with every string read as a closed expression (nested lists kept); bad entries are usage errors."""
    if isinstance(value, list):
        return [_numbers(f"{field}[{k}]", v) for k, v in enumerate(value)]
    if isinstance(value, str):
        try:
            return parse_number(value, where=f"`{field}`")
        except ExpressionSyntaxError as exc:
            raise UsageError(str(exc)) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"`{field}` must be a number or an expression string; got {value!r}.")
    return value


def param_values(name: str, spec, rng, table: str = "params") -> np.ndarray:
    """A list, or one of the specs of SPECS, as a float64 array (strings read by `_numbers`)."""
    where = f"{table}.{name}"
    if isinstance(spec, dict):
        if len(spec) != 1 or next(iter(spec)) not in SPECS:
            raise UsageError(f"`{where}` must be a list or one of {{{' | '.join(SPECS)} = [a, b, n]}}; got {spec!r}.")
        kind, triple = next(iter(spec.items()))
        if not (isinstance(triple, list) and len(triple) == 3 and isinstance(triple[2], int) and triple[2] > 0):
            raise UsageError(f"`{where}.{kind}` must be [a, b, n] with an integer n > 0; got {triple!r}.")
        a, b = (float(v) for v in _numbers(f"{where}.{kind}", triple[:2]))
        n = triple[2]
        check_memory(8 * n, what=f"`{where}.{kind}` ({n} values)", remedy="Lower n.")
        if kind == "linspace":
            return np.linspace(a, b, n)
        if kind == "logspace":
            return np.logspace(a, b, n)
        if kind == "uniform":
            return rng.uniform(a, b, n)
        if a <= 0 or b <= 0:
            raise UsageError(f"`{where}.loguniform` needs bounds > 0; got [{a}, {b}].")
        return np.exp(rng.uniform(np.log(a), np.log(b), n))
    if isinstance(spec, list):
        spec = _numbers(where, spec)
        try:
            return np.asarray(spec, dtype=np.float64)
        except (TypeError, ValueError):
            raise UsageError(f"`{where}` must hold numbers; got {spec!r}.") from None
    raise UsageError(f"`{where}` must be a list or a spec; got {type(spec).__name__}.")


def points(config: dict, rng) -> dict:
    """The sweep's points: the zipped `[params]` rows, times the Cartesian product of the `[grid]` axes."""
    params, grid = config.get("params", {}), config.get("grid", {})
    for table, value in (("params", params), ("grid", grid)):
        if not isinstance(value, dict) or (table in config and not value):
            raise UsageError(f"`{table}` must be a non-empty table of name = list | spec.")
    zipped = {name: param_values(name, spec, rng) for name, spec in params.items()}
    lengths = {name: v.shape[0] for name, v in zipped.items()}
    if len(set(lengths.values())) > 1:
        raise UsageError(f"`params` lists must have equal lengths (one entry per point); got {lengths}.")
    axes = {name: param_values(name, spec, rng, table="grid") for name, spec in grid.items()}
    both = sorted(set(zipped) & set(axes))
    if both:
        raise UsageError(f"{both} are both in `params` and in `grid`; give each name once.")
    rows = next(iter(lengths.values())) if zipped else 1
    total = rows * int(np.prod([v.size for v in axes.values()], dtype=np.int64)) if axes else rows
    check_memory(8 * total * (len(zipped) + len(axes)), what=f"a sweep of {total} points", remedy="Fewer values.")
    combos = list(itertools.product(*(range(v.size) for v in axes.values()))) if axes else [()]
    out = {name: np.repeat(v, len(combos)) for name, v in zipped.items()} if zipped else {}
    for k, (name, v) in enumerate(axes.items()):
        out[name] = np.tile(np.array([v[c[k]] for c in combos]), rows)
    return out


def resolve_system(spec: str, base: Path | None = None):
    """(system, entry or None) from a catalogue name, "family:NAME", "network:NAME" or "file.py:OBJECT"
    (a relative file is looked for next to the config first): the one door, `sp_ode.systems.resolve`."""
    try:
        obj = load_system(spec, name="system", base=base)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    system = as_system(obj)
    return system, (None if obj is system else obj)


def _prepare_out(out: Path, *, overwrite: bool) -> Path:
    """The sweep's folder in `out` (`out/chunks`, or `out` itself where a library sweep left its manifest
    there: `sp_ode.sweeps.sweep.sweep_folder`).  Nothing is replaced silently: the same sweep resumes from it
    (its manifest's fingerprint decides, `sp_ode.sweep`); results in `out` with no sweep manifest beside them
    (another command's, or a sweep's whose chunks were removed) are refused; `overwrite` deletes exactly the
    files this command writes, nothing else in `out`.  A sweep killed before its first manifest landed leaves
    only orphaned temporary files (`sweep.is_orphan`): they are removed and the same command starts afresh."""
    folder = out if (out / MANIFEST).is_file() else out / CHUNKS
    chunks, written = out / CHUNKS, [out / "report.json", out / "result.npz"]
    if overwrite:
        if chunks.is_dir():
            shutil.rmtree(chunks)
        if folder == out:
            for name in (MANIFEST, VALIDATION, TIMINGS):
                (out / name).unlink(missing_ok=True)
            for path in out.glob("chunk_*.npz"):
                path.unlink()
        for path in written:
            path.unlink(missing_ok=True)
        return chunks
    remove_orphans(out)        # a report or result torn by a kill: rewritten below
    if not (folder / MANIFEST).is_file():
        remove_orphans(chunks)
        if chunks.is_dir() and not any(chunks.iterdir()):
            chunks.rmdir()
        refuse_existing([chunks, *written], what="an earlier result in --out", flag="--overwrite")
    return folder


def run(args) -> int:
    config = load_config(args.config)
    seed = config.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"`seed` must be a non-negative integer; got {seed!r}.")
    rng = np.random.default_rng(seed)
    params = points(config, rng)
    system, entry = resolve_system(config["system"], Path(args.config).resolve().parent)
    network = isinstance(system, NetworkSystem)
    x0 = config.get("x0", "manifold" if network else getattr(entry, "x0", None))
    y0 = config.get("y0", getattr(entry, "y0", None))
    if x0 is None or y0 is None:
        raise UsageError(f"system {system.name!r} has no default x0/y0: set `x0` and `y0` in the config.")
    out = Path(args.out or config.get("out") or default_out("sweep"))
    client = args.client if args.client is not None else config.get("client")
    timeout = args.connect_timeout if args.connect_timeout is not None else config.get("connect_timeout", 10.0)
    options = {k: config[k] for k in ("chunk_size", "validate_fraction", "max_order", "safety", "route") if k in config}
    folder = _prepare_out(out, overwrite=args.overwrite)
    try:
        with warnings.catch_warnings():
            # a warning is one line of the command's, as its errors are (not a file:line and a source line)
            warnings.showwarning = lambda message, *_, **__: print(f"sp-ode sweep: warning: {message}",
                                                                    file=sys.stderr)
            result = sweep(system, params, tuple(config["t_span"]), x0, y0, ts=config["ts"], tol=config["tol"],
                           out=folder, client=client, seed=seed, connect_timeout=timeout,
                           force_cluster=args.force_cluster, **options)
    except SweepResumeError as exc:
        raise UsageError(f"{exc} Or pass --overwrite to replace it.") from None
    summary = {"system": system.name, "config": str(args.config), **result.summary(),
               "chunks_computed": len(result.computed_chunks)}
    arrays = dict(ts=result.ts, y=result.y, path=result.path, path_first=result.path_first, estimate=result.estimate,
                  status=result.status, reason=result.reason, validated=result.validated,
                  true_error=result.true_error, ratio=result.ratio,
                  **{f"param_{k}": v for k, v in result.params.items()})
    atomic_write_bytes(out / "result.npz", npz_bytes(arrays))
    write_json(out / "report.json", summary)
    if args.json:
        print(dumps(summary))
    else:
        print(f"sweep of {system.name} ({summary['chunks_computed']} chunks computed)")
        print(result.report())
        print(f"  wrote {out / 'report.json'} and {out / 'result.npz'}", file=sys.stderr)
    return EXIT_FAILED if np.any(result.status == STATUS_FAILED) else EXIT_OK
