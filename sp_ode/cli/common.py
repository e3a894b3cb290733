"""What every ``sp-ode`` subcommand shares: the usage error, exit codes, the output folder convention."""
from __future__ import annotations

from pathlib import Path

# Exit codes of every subcommand (docs: README "Command line").
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_RUNTIME = 0, 1, 2, 3


class UsageError(Exception):
    """Bad command-line input (exit code 2): a file, a flag value, a model spec."""


def default_out(command: str) -> str:
    """The one output convention: ``out/<command>/`` under the current directory."""
    return str(Path("out") / command)
