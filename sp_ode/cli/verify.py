"""`sp-ode verify`: parse the arguments, call `sp_ode.verify`, print the report.

The verdict itself — normal hyperbolicity where the system goes, the manifold identity by
independent methods, the ε-certificate; or, for a reaction network, its paths, identity and
slopes — is `sp_ode.verification.report.verify` (docs/theory.md §3.5, §7.3, §7.7).  This
module only turns `--system` (a catalogue name, `network:NAME` or `file.py:OBJECT`) into
an object, prints the summary (`--json`: one JSON object), writes the figures and
`report.json` under `--out` (refusing an earlier report without `--overwrite`; without
`--out`, into a fresh run folder `out/verify/DATE/TIME`, linked as `out/verify/latest`) and
exits 0 when every check passed, 1 when one failed (the first line of the message names it).
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
import sys
from pathlib import Path

from sp_ode.cli.common import BUILTIN_HELP, UsageError, run_folder
from sp_ode.core.files import dumps, load_object
from sp_ode.core.validation import hint
from sp_ode.networks.models import NETWORK_MODELS
from sp_ode.systems.catalogue import SYSTEMS, CatalogueEntry, get_system
from sp_ode.systems.resolve import NETWORK_PREFIX, SYSTEM_TYPES, as_system
from sp_ode.systems.system import FastSlowSystem
from sp_ode.verification.report import SMOKE_PS, resolve_case, verify

DEMO_SYSTEM = "me3"   # what `sp-ode demo` (make demo) verifies
# --smoke: smaller projections of the catalogue networks (n ≈ 60–150)
NETWORK_SMOKE = {"telegraph": {"N": 30}, "birth_death": {"N": 40}, "toggle_switch": {"N": 10}, "cascade": {"N": 14}}

HELP = BUILTIN_HELP["verify"]

JSON_KEYS = ("system", "checks", "passed", "failure", "identity_checked", "identity_methods",
             "identity_max_error", "identity_tolerance", "loss_of_hyperbolicity", "slope_manifold",
             "slope_corrected", "slope_slow", "slope_tolerance", "constants", "figures")
NETWORK_JSON_KEYS = ("system", "kind", "n", "checks", "passed", "failure", "identity_checked", "identity_methods",
                     "identity_independent", "identity_max_error", "identity_tolerance", "slope_reduced",
                     "slope_reduced_stderr", "slope_corrected", "slope_corrected_stderr", "slope_tolerance",
                     "eps_values", "seconds", "figures")


def add_arguments(parser) -> None:
    parser.add_argument("--system", default=DEMO_SYSTEM,
                        help=f"catalogue name ({', '.join(SYSTEMS)}), a reaction network "
                             f"({', '.join(NETWORK_PREFIX + k for k in NETWORK_MODELS)}) or path/to/file.py:OBJECT, "
                             "OBJECT a system, a catalogue entry, a NetworkSystem or a NetworkModel (or a "
                             f"zero-argument factory of one) (default: {DEMO_SYSTEM})")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="a parameter, e.g. --set I=0.5 for fitzhugh_nagumo (repeatable): of a catalogue system, a "
                             "user file's factory function, or a user system's eps, P or dict args")
    parser.add_argument("--Ps", type=int, nargs="+", default=None, metavar="P",
                        help="block sizes P (ε = 1/P) for the certificate, at least 4 (default 4 8 ... 4096; "
                             "network models: at least 5, default ε = 10^-1.5 ... 10^-3.5)")
    parser.add_argument("--order", type=int, default=1, help="order k of the slow manifold h_ε (default 1)")
    parser.add_argument("--backend", default="auto", help="auto (default: scipy LSODA for single small solves), diffrax or scipy")
    parser.add_argument("--num", type=int, default=None,
                        help="grid points in y for the identity check (default 41; network models: 5)")
    parser.add_argument("--t-span", type=float, nargs=2, default=None, metavar=("T0", "T1"),
                        help="time span (default: the system's)")
    parser.add_argument("--x0", type=float, nargs="+", default=None, help="initial fast state (default: the system's)")
    parser.add_argument("--y0", type=float, nargs="+", default=None, help="initial slow state (default: the system's)")
    parser.add_argument("--out", default=None,
                        help="output folder (default: a fresh out/verify/DATE/TIME, linked as out/verify/latest)")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier report in --out")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--smoke", action="store_true", help=f"tiny, fast version (P = {SMOKE_PS}, 9 grid points)")


def parse_overrides(items) -> dict:
    """`["I=0.5", ...]` → `{"I": 0.5}` (numbers as float)."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"`--set` must be KEY=VALUE; got {item!r}.")
        try:
            out[key] = float(value)
        except ValueError:
            raise UsageError(f"`--set {key}` must be a number; got {value!r}.") from None
    return out


def _network_kwargs(builder, overrides: dict) -> dict:
    """`--set` values for a network builder: known keyword names only, ints where the default is an int."""
    params = {k: p for k, p in inspect.signature(builder).parameters.items() if p.default is not inspect.Parameter.empty}
    out = {}
    for key, value in overrides.items():
        if key not in params:
            raise UsageError(f"`--set {key}`: not a parameter of this network model; it takes {tuple(params)}.")
        if isinstance(params[key].default, int) and not isinstance(params[key].default, bool):
            if not float(value).is_integer():
                raise UsageError(f"`--set {key}` must be an integer; got {value!r}.")
            value = int(value)
        out[key] = value
    return out


def system_object(spec, *, overrides=None, smoke: bool = False):
    """`--system` → (object for `sp_ode.verify`, description or None)."""
    if not isinstance(spec, str) or not spec:
        raise UsageError(f"`--system` must be a catalogue name or path/to/file.py:OBJECT; got {spec!r}.")
    if spec.startswith(NETWORK_PREFIX):
        key = spec[len(NETWORK_PREFIX):]
        if key not in NETWORK_MODELS:
            raise UsageError(f"`--system` {spec!r}: unknown network model; use one of "
                             f"{tuple(NETWORK_PREFIX + k for k in NETWORK_MODELS)}.")
        kwargs = {**(NETWORK_SMOKE.get(key, {}) if smoke else {}), **_network_kwargs(NETWORK_MODELS[key], overrides or {})}
        text = f"catalogue network {key}" + (f" ({', '.join(f'{k}={v}' for k, v in kwargs.items())})" if kwargs else "")
        return NETWORK_MODELS[key](**kwargs), text
    if ":" in spec or spec.endswith(".py"):
        obj = load_object(spec, name="--system")
        if callable(obj) and not isinstance(obj, SYSTEM_TYPES):
            obj = _call_factory(spec, obj, overrides or {})
        elif overrides:
            obj = _with_overrides(spec, obj, overrides)
        if not isinstance(obj, SYSTEM_TYPES):
            raise TypeError(f"`--system` {spec!r} must name a FastSlowSystem, a catalogue entry, a NetworkSystem or "
                            f"a NetworkModel; got {type(obj).__name__}.")
        return obj, None
    if spec in SYSTEMS:
        return get_system(spec, **(overrides or {})), None
    raise UsageError(f"`--system` must be one of {tuple(SYSTEMS)}, network:NAME (NAME one of "
                     f"{tuple(NETWORK_MODELS)}) or path/to/file.py:OBJECT; got {spec!r}.")


def _call_factory(spec: str, factory, overrides: dict):
    """A user's factory called with the `--set` values as keyword arguments (those it takes)."""
    if overrides:
        params = inspect.signature(factory).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        for key in overrides:
            if key not in params and not takes_any:
                raise UsageError(f"`--set {key}`: {spec} takes {tuple(params)}{hint(key, params)}.")
    return factory(**overrides)


def _with_overrides(spec: str, obj, overrides: dict):
    """`--set` on a user's system object: `eps`/`P`, or keys of its dict `args` (a catalogue entry's system too)."""
    system = as_system(obj) if isinstance(obj, SYSTEM_TYPES) else None
    if not isinstance(system, FastSlowSystem):
        raise UsageError(f"`--set` applies to a FastSlowSystem's args, eps or P, or to a factory function's "
                         f"parameters; {spec} is a {type(obj).__name__}: pass the values inside the file instead.")
    args = dict(system.args) if isinstance(system.args, dict) else None
    for key, value in overrides.items():
        if key == "eps":
            system = system.with_eps(value)
        elif key == "P":
            system = system.with_P(int(value))
        elif args is not None and key in args:
            args[key] = value
        else:
            known = ("eps", "P", *(args or {}))
            raise UsageError(f"`--set {key}`: not a parameter of {spec}; it takes {known}{hint(key, known)}.")
    if args is not None:
        system = system.with_args(args)
    if isinstance(obj, FastSlowSystem):
        return system
    if isinstance(obj, CatalogueEntry):
        return dataclasses.replace(obj, system=system)
    entry = copy.copy(obj)                 # a user's entry (e.g. a SimpleNamespace): a copy, the file's object kept
    entry.system = system
    return entry


def resolve_system(spec, *, t_span=None, x0=None, y0=None, overrides=None, smoke: bool = False):
    """`--system` and the initial-data flags → the `sp_ode.verification.report.Case` to verify."""
    obj, description = system_object(spec, overrides=overrides, smoke=smoke)
    try:
        return resolve_case(obj, t_span=t_span, x0=x0, y0=y0, description=description)
    except ValueError as exc:   # missing initial data: name the flags
        text = str(exc).replace("`t_span`", "--t-span").replace("`x0`", "--x0").replace("`y0`", "--y0")
        raise UsageError(text) from None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text and text.strip() else ""


def run(args) -> int:
    if args.backend not in ("auto", "diffrax", "scipy"):
        raise UsageError(f"`--backend` must be one of ('auto', 'diffrax', 'scipy'); got {args.backend!r}.")
    if args.order < 0:
        raise UsageError(f"`--order` must be >= 0; got {args.order}.")
    if args.num is not None and args.num < 2:
        raise UsageError(f"`--num` must be >= 2; got {args.num}.")
    case = resolve_system(args.system, t_span=args.t_span, x0=args.x0, y0=args.y0,
                          overrides=parse_overrides(args.overrides), smoke=args.smoke)
    out = run_folder("verify") if args.out is None else Path(args.out)
    if (out / "report.json").exists() and not args.overwrite:
        raise UsageError(f"`--out` {str(out)!r} already holds a verify report; choose another folder or pass "
                         "--overwrite.")
    report = verify(case, Ps=args.Ps, order=args.order, backend=args.backend, num=args.num, smoke=args.smoke,
                    show_progress=not args.json)
    report.write(out, overwrite=True)
    record = report.to_dict()
    if args.json:
        print(dumps({k: record.get(k) for k in (NETWORK_JSON_KEYS if case.network else JSON_KEYS)}))
    else:
        print(report.format())
        print(f"wrote {', '.join(report.figures)}")
    if not report.passed:
        print(f"sp-ode verify: {_first_line(report.failure or 'a check was skipped: ' + str(report.checks))}",
              file=sys.stderr)
    return 0 if report.passed else 1
