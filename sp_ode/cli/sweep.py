"""`sp-ode sweep CONFIG`: a parameter sweep, each point by its cheapest certified path (docs/theory.md §7.5).

CONFIG is a JSON or TOML file:

    system = "michaelis_menten"          # catalogue name, "family:ring20", or "path/file.py:OBJECT"
    t_span = [0.0, 2.0]
    ts = [0.5, 1.0, 1.5, 2.0]
    x0 = "manifold"                      # or a list (m,); default: the catalogue entry's x0
    y0 = [1.0]                           # default: the catalogue entry's y0
    tol = 1e-6
    out = "out/sweep"                    # chunks + manifest (resumable), report.json
    seed = 0                             # chooses random parameter draws and the validated subset
    # optional: chunk_size, validate_fraction, max_order, safety, client ("local" | "tcp://…")

    [params]                             # equal lengths; each a list or a spec
    eps = {loguniform = [1e-6, 1e-2, 1000]}
    kappa = {uniform = [0.5, 2.0, 1000]}

Specs: `{linspace = [a, b, n]}`, `{logspace = [a, b, n]}` (values 10^a … 10^b),
`{uniform = [lo, hi, n]}`, `{loguniform = [lo, hi, n]}` (random, from `seed`).
A value in a list or a spec bound may be a number or a string holding a closed
arithmetic expression (`"1/4096"`, `"2^-12"`), read by the grammar of
`sp_ode.core.expressions` — parsed, never evaluated (docs/theory.md §9).
Prints a short table (paths taken, validation, worst true/estimated error ratio),
writes `report.json` and `result.npz` under `out`.  Exit 0 every point within
tol (after re-solves); 1 some full solve failed; 2 bad config; 3 runtime error.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from sp_ode.cli.common import BUILTIN_HELP, EXIT_FAILED, EXIT_OK, UsageError, default_out
from sp_ode.core.expressions import ExpressionSyntaxError, parse_number
from sp_ode.core.files import load_object, write_json
from sp_ode.core.memory import check_memory
from sp_ode.sweeps.sweep import STATUS_FAILED, sweep
from sp_ode.systems.catalogue import SYSTEMS, get_system, master_equation_entry
from sp_ode.systems.system import FastSlowSystem

HELP = BUILTIN_HELP["sweep"]

KEYS = {"system", "params", "t_span", "ts", "x0", "y0", "tol", "out", "seed", "chunk_size", "validate_fraction",
        "max_order", "safety", "client"}
SPECS = ("linspace", "logspace", "uniform", "loguniform")


def add_arguments(parser) -> None:
    parser.add_argument("config", help="sweep configuration (.json or .toml)")
    parser.add_argument("--out", default=None, help="output folder (overrides the config; default out/sweep)")
    parser.add_argument("--client", default=None, help="'local' or a Dask scheduler address (overrides the config)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


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
        raise UsageError(f"`CONFIG` has unknown keys {unknown}; allowed: {sorted(KEYS)}.")
    for key in ("system", "params", "t_span", "ts", "tol"):
        if key not in config:
            raise UsageError(f"`CONFIG` must set `{key}`.")
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


def param_values(name: str, spec, rng) -> np.ndarray:
    """A list, or one of the specs of SPECS, as a float64 array (strings read by `_numbers`)."""
    if isinstance(spec, dict):
        if len(spec) != 1 or next(iter(spec)) not in SPECS:
            raise UsageError(f"`params.{name}` must be a list or one of {{{' | '.join(SPECS)} = [a, b, n]}}; "
                             f"got {spec!r}.")
        kind, triple = next(iter(spec.items()))
        if not (isinstance(triple, list) and len(triple) == 3 and isinstance(triple[2], int) and triple[2] > 0):
            raise UsageError(f"`params.{name}.{kind}` must be [a, b, n] with an integer n > 0; got {triple!r}.")
        a, b = (float(v) for v in _numbers(f"params.{name}.{kind}", triple[:2]))
        n = triple[2]
        check_memory(8 * n, what=f"`params.{name}.{kind}` ({n} values)", remedy="Lower n.")
        if kind == "linspace":
            return np.linspace(a, b, n)
        if kind == "logspace":
            return np.logspace(a, b, n)
        if kind == "uniform":
            return rng.uniform(a, b, n)
        if a <= 0 or b <= 0:
            raise UsageError(f"`params.{name}.loguniform` needs bounds > 0; got [{a}, {b}].")
        return np.exp(rng.uniform(np.log(a), np.log(b), n))
    if isinstance(spec, list):
        spec = _numbers(f"params.{name}", spec)
        try:
            return np.asarray(spec, dtype=np.float64)
        except (TypeError, ValueError):
            raise UsageError(f"`params.{name}` must hold numbers; got {spec!r}.") from None
    raise UsageError(f"`params.{name}` must be a list or a spec; got {type(spec).__name__}.")


def resolve_system(spec: str):
    """(system, entry or None) from a catalogue name, "family:NAME" or "file.py:OBJECT"."""

    if not isinstance(spec, str) or not spec:
        raise UsageError(f"`system` must be a catalogue name, 'family:NAME' or path/file.py:OBJECT; got {spec!r}.")
    if spec.startswith("family:"):
        family = spec.split(":", 1)[1]
        obj = master_equation_entry(family, f"me_{family}")
    elif ":" in spec:
        obj = load_object(spec, name="system")
        if callable(obj) and not isinstance(obj, FastSlowSystem) and not hasattr(obj, "system"):
            obj = obj()
    elif spec in SYSTEMS:
        obj = get_system(spec)
    else:
        raise UsageError(f"`system` must be one of {tuple(SYSTEMS)}, 'family:NAME' or path/file.py:OBJECT; "
                         f"got {spec!r}.")
    if isinstance(obj, FastSlowSystem):
        return obj, None
    if isinstance(getattr(obj, "system", None), FastSlowSystem):
        return obj.system, obj
    raise UsageError(f"`system` {spec!r} must name a FastSlowSystem or a catalogue entry; got {type(obj).__name__}.")


def run(args) -> int:

    config = load_config(args.config)
    seed = config.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise UsageError(f"`seed` must be a non-negative integer; got {seed!r}.")
    rng = np.random.default_rng(seed)
    if not isinstance(config["params"], dict) or not config["params"]:
        raise UsageError("`params` must be a non-empty table of name = list | spec.")
    params = {name: param_values(name, spec, rng) for name, spec in config["params"].items()}
    system, entry = resolve_system(config["system"])
    x0 = config.get("x0", getattr(entry, "x0", None))
    y0 = config.get("y0", getattr(entry, "y0", None))
    if x0 is None or y0 is None:
        raise UsageError(f"system {system.name!r} has no default x0/y0: set `x0` and `y0` in the config.")
    out = Path(args.out or config.get("out") or default_out("sweep"))
    client = args.client if args.client is not None else config.get("client")
    options = {k: config[k] for k in ("chunk_size", "validate_fraction", "max_order", "safety") if k in config}
    result = sweep(system, params, tuple(config["t_span"]), x0, y0, ts=config["ts"], tol=config["tol"],
                   out=out / "chunks", client=client, seed=seed, **options)
    summary = {"system": system.name, "config": str(args.config), **result.summary(),
               "chunks_computed": len(result.computed_chunks)}
    np.savez(out / "result.npz", ts=result.ts, y=result.y, path=result.path, path_first=result.path_first,
             estimate=result.estimate, status=result.status, validated=result.validated,
             true_error=result.true_error, ratio=result.ratio,
             **{f"param_{k}": v for k, v in result.params.items()})
    write_json(out / "report.json", summary)
    if args.json:
        print(json.dumps(summary, default=float))
    else:
        print(f"sweep of {system.name}: {summary['points']} points, tol {summary['tol']:g}, "
              f"{summary['seconds']:.2f} s ({summary['chunks_computed']} chunks computed)")
        for name, n in summary["paths"].items():
            print(f"  {name:<10} {n:>8}")
        worst = summary["worst_ratio_reduced"]
        ratio = (f"worst true/estimated error {worst:.3g} (reduced paths)" if np.isfinite(worst)
                 else "no validated point took a reduced path")
        print(f"  validated {summary['validated']} points: {summary['validated_within_tol_first_pass']} within tol "
              f"on the first pass, {summary['resolved']} re-solved fully; {ratio}")
        print(f"  wrote {out / 'report.json'} and {out / 'result.npz'}", file=sys.stderr)
    return EXIT_FAILED if np.any(result.status == STATUS_FAILED) else EXIT_OK
