"""The `sp-ode` console script (also `python -m sp_ode`).

One subcommand per job.  Each lives in its own module exposing
``add_arguments(parser)`` and ``run(args) -> int``; the module is imported only
when its subcommand runs, so `sp-ode stationary` never pays for torch.
Exit codes: 0 success, 1 a check or run failed, 2 usage error.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("sp_ode._cli_demo", "the main job on its built-in default (p_st(y) and the manifold identity)"),
    "stationary": ("sp_ode._cli_stationary", "stationary distribution of a generator stored in a file"),
    "verify": ("sp_ode._cli_verify", "verify the manifold identity and the O(eps) convergence of a fast-slow system"),
    "prove": ("sp_ode._cli_prove", "run every machine check of proofs/proof.md"),
    "train": ("neural._cli_train", "train the fast-slow attention language model"),
    "fit-phi": ("neural._cli_phi", "fit an MLP phi_theta(y) to p_st(y) and certify its error"),
}


class UsageError(Exception):
    """Raised by a subcommand for bad command-line input (exit code 2)."""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sp-ode", description="Singularly perturbed (fast-slow) ODE toolkit.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        if only is None or only == name:
            importlib.import_module(module).add_arguments(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    # Import only the module of the chosen subcommand.
    chosen = next((a for a in argv if a in COMMANDS), None)
    parser = build_parser(only=chosen or "")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse: 0 for --help, 2 for usage
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help()
        return 2
    module = importlib.import_module(COMMANDS[args.command][0])
    try:
        return int(module.run(args))
    except UsageError as exc:
        print(f"sp-ode {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        # Typed validation errors from the library are usage errors at the CLI.
        print(f"sp-ode {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"sp-ode {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
