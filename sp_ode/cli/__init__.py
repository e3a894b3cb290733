"""The `sp-ode` console script (also `python -m sp_ode`).

One subcommand per job, each in its own module exposing `HELP`,
`add_arguments(parser)` and `run(args) -> int`; the module is imported only
when its subcommand runs, so `sp-ode stationary` never pays for torch.
Beside them, `common` holds what the subcommands share and `claims` the
harness of machine-checked claims that `proofs/check_*.py` and `sp-ode prove` use.
Subcommands of other packages (`train`, `fit-phi` from `neural`) arrive
through the `sp_ode.commands` entry points, so sp_ode never imports them.

- `demo`, `stationary`, `symbolic`, `verify`, `sweep`, `prove` — `sp-ode demo`, `sp-ode
  stationary FILE`, `sp-ode symbolic FILE`, `sp-ode verify`, `sp-ode sweep CONFIG`, `sp-ode prove`;
- `common` — what they share: the usage error, the exit codes, the output folder convention.

Exit codes: 0 success, 1 a check failed, 2 usage error, 3 runtime error.  Errors
print one line `sp-ode CMD: error: …`; `--debug` adds the traceback.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from sp_ode import __version__
from sp_ode.cli.common import BUILTIN, BUILTIN_HELP, EXIT_FAILED, EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, UsageError
from sp_ode.core.cache import use_compilation_cache
from sp_ode.core.cpu_pool import pin_to_one_core
from sp_ode.core.validation import did_you_mean

ONE_CORE_COMMANDS = frozenset({"sweep"})  # commands run pinned to one core by program()

__all__ = ["main", "program", "UsageError", "commands", "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_RUNTIME"]

ENTRY_POINT_GROUP = "sp_ode.commands"


def commands() -> dict[str, str]:
    """Every subcommand: sp_ode's own, then those other installed packages declare as entry points."""
    from importlib.metadata import entry_points

    found = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return found


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors and "did you mean" for flags and choices."""

    def error(self, message: str):  # noqa: D401 - argparse API
        hint = ""
        if message.startswith("unrecognized arguments:"):
            flags = [opt for action in self._actions for opt in action.option_strings]
            for word in message.split(":", 1)[1].split():
                close = did_you_mean(word.split("=")[0], flags)
                if close:
                    hint = f" (did you mean {close}?)"
                    break
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{hint}\n")


def _version() -> str:

    return f"sp-ode {__version__}"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; subcommand arguments are added for `only` (all when None)."""
    table = commands()
    parser = _Parser(prog="sp-ode", description="Singularly perturbed (fast-slow) ODE toolkit.")
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("--debug", action="store_true", help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, module_name in table.items():
        if only is None or only == name:
            module = importlib.import_module(module_name)
            p = sub.add_parser(name, help=module.HELP, description=module.HELP)
            parser.chosen_subparser = p  # errors about its flags are reported with its own usage
            p.add_argument("--debug", action="store_true", help="show the full traceback of an error")
            module.add_arguments(p)
        else:
            sub.add_parser(name, help=_help_line(module_name))
    return parser


def _help_line(module_name: str) -> str:
    """The module's HELP: from `BUILTIN_HELP` for sp_ode's own (no import), else imported."""
    own = {module: name for name, module in BUILTIN.items()}
    if module_name in own:
        return BUILTIN_HELP[own[module_name]]
    try:
        return importlib.import_module(module_name).HELP
    except Exception as exc:  # a broken plugin must not break `sp-ode --help`
        return f"(unavailable: {type(exc).__name__})"


def program() -> int:
    """The `sp-ode` program (console script, `python -m sp_ode`): `main` in a process of its own.

    Being the process's entry point, it may do what a library call must not: it keeps compiled programs
    on disk (`sp_ode.use_compilation_cache`, under `~/.cache/sp_ode/jax`; `SP_ODE_NO_COMPILE_CACHE=1`
    turns that off), and `sp-ode sweep`
    pins its process to one core before the first JAX computation (`sp_ode.core.cpu_pool`:
    jaxlib 0.10.2's batched LAPACK kernels can deadlock a multi-threaded XLA pool; the sweep is
    single-threaded, and its Dask workers get a core each).
    """
    command = next((a for a in sys.argv[1:] if not a.startswith("-")), None)
    asks_help = bool({"-h", "--help", "--version"} & set(sys.argv[1:]))
    if command is not None and not asks_help and os.environ.get("SP_ODE_NO_COMPILE_CACHE") != "1":
        # a second run of the same model starts without compiling it (README "Time to a first answer")
        use_compilation_cache()
    if command in ONE_CORE_COMMANDS:

        pin_to_one_core(0)
    return main()


def main(argv: list[str] | None = None) -> int:
    """Run `sp-ode` with `argv` (default `sys.argv[1:]`); return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    table = commands()
    positional = [a for a in argv if not a.startswith("-")]
    chosen = next((a for a in argv if a in table), None)
    if chosen is None and positional and not any(a in ("-h", "--help", "--version") for a in argv):
        word = positional[0]
        close = did_you_mean(word, table, cutoff=0.5)
        hint = f" (did you mean {close!r}?)" if close else ""
        print(f"sp-ode: error: unknown command {word!r}{hint}; commands: {', '.join(table)}", file=sys.stderr)
        return EXIT_USAGE
    parser = build_parser(only=chosen or "")
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # an unknown flag of the subcommand: its usage and a "did you mean" among its flags
            getattr(parser, "chosen_subparser", parser).error(f"unrecognized arguments: {' '.join(extra)}")
    except SystemExit as exc:  # argparse: 0 for --help/--version, 2 for usage
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    module = importlib.import_module(table[args.command])
    debug = getattr(args, "debug", False)
    try:
        return int(module.run(args))
    except UsageError as exc:
        _report(args.command, exc, debug)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"sp-ode {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # one line; the traceback with --debug
        _report(args.command, exc, debug)
        return EXIT_USAGE if _rejected_input(exc) else EXIT_RUNTIME


def _rejected_input(exc: BaseException) -> bool:
    """True for a ValueError/TypeError raised by sp_ode's or neural's own validation (bad input, exit 2).

    The same exception types raised inside a dependency (numpy, scipy, jax) or a
    user's model during the computation are runtime failures (exit 3).
    """
    if not isinstance(exc, (ValueError, TypeError)) or exc.__traceback__ is None:
        return False
    origin = traceback.extract_tb(exc.__traceback__)[-1].filename
    return any(f"{os.sep}{pkg}{os.sep}" in origin for pkg in ("sp_ode", "neural"))


def _report(command: str, exc: BaseException, debug: bool) -> None:
    if debug:
        traceback.print_exception(exc, file=sys.stderr)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    print(f"sp-ode {command}: error: {message}", file=sys.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
