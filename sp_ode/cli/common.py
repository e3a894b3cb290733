"""What every `sp-ode` subcommand shares: the usage error, exit codes, the output folder convention."""
from __future__ import annotations

from pathlib import Path

# sp_ode's own subcommands: name -> module.
BUILTIN: dict[str, str] = {
    "demo": "sp_ode.cli.demo",
    "verify": "sp_ode.cli.verify",
    "stationary": "sp_ode.cli.stationary",
    "prove": "sp_ode.cli.prove",
    "symbolic": "sp_ode.cli.symbolic",
    "sweep": "sp_ode.cli.sweep",
}
# Their one-line help, here so that `sp-ode --help` imports none of them (they import jax and
# the rest at module level); each module's HELP is this same string (tests/cli/test_program.py).
BUILTIN_HELP: dict[str, str] = {
    "demo": "the main job on its built-in default (p_st(y) and the manifold identity)",
    "verify": "verify the manifold identity and the O(eps) convergence of a fast-slow system",
    "stationary": "stationary distribution of a generator stored in a file, with its error bound",
    "prove": "run every machine check of proofs/proof.md",
    "symbolic": "exact p_st of a generator with symbolic rates, a claimed formula checked, reversibility",
    "sweep": "parameter sweep: each point by the cheapest corrected reduced path that meets tol, else the full solve",
}

# Exit codes of every subcommand (docs: README "Command line").
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_RUNTIME = 0, 1, 2, 3


class UsageError(Exception):
    """Bad command-line input (exit code 2): a file, a flag value, a model spec."""


def default_out(command: str) -> str:
    """The one output convention: `out/<command>/` under the current directory."""
    return str(Path("out") / command)
