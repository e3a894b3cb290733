"""What every `sp-ode` subcommand shares: the usage error, exit codes, the output folder convention."""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from sp_ode.core.errors import Error

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


class UsageError(Error):
    """Bad command-line input (exit code 2): a file, a flag value, a model spec."""


def default_out(command: str) -> str:
    """`out/<command>/` under the current directory: the folder of a command that resumes by content (`sweep`)."""
    return str(Path("out") / command)


LATEST = "latest"


def run_folder(command: str, *, root: str | Path = "out", resume: bool = False) -> Path:
    """A fresh folder for one run of `command`: `out/<command>/<YYYY-MM-DD>/<HH-MM-SS>`, and `latest` beside them.

    The default output of every command that writes a result (as Hydra's `outputs/DATE/TIME`):
    repeating a command never collides with an earlier run and never replaces it. A second
    run in the same second gets `-2`, `-3`, … (the folder is created here, atomically, so two
    processes never share one). `out/<command>/latest` is a symbolic link to the newest run
    folder (replaced atomically). With `resume=True` the latest run folder is returned instead,
    for `--resume` without `--out` (a UsageError when there is none). The clock only names the
    folder; nothing computed depends on it.
    """
    base = Path(root) / command
    link = base / LATEST
    if resume:
        if not link.exists():
            raise UsageError(f"`--resume` without `--out` continues the latest run in {str(base)!r}, and there is "
                             f"none; pass the run folder as `--out`.")
        return link.resolve()
    stamp = datetime.now()
    day, second = stamp.strftime("%Y-%m-%d"), stamp.strftime("%H-%M-%S")
    (base / day).mkdir(parents=True, exist_ok=True)
    k = 1
    while True:
        folder = base / day / (second if k == 1 else f"{second}-{k}")
        try:
            folder.mkdir()
            break
        except FileExistsError:
            k += 1
    tmp = base / f".{LATEST}.{os.getpid()}"
    try:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(folder.relative_to(base), target_is_directory=True)
        os.replace(tmp, link)
    except OSError:  # a file system without symbolic links: the run folder is still printed by the command
        pass
    return folder


def refuse_existing(paths, *, what: str, flag: str = "--overwrite") -> None:
    """No earlier result is replaced silently: a UsageError naming the files that exist, unless the caller passed `flag`.

    `paths` are the files (or folders) a command is about to write; call this before any work.
    """
    found = [str(p) for p in paths if p is not None and Path(p).exists()]
    if found:
        shown = ", ".join(repr(f) for f in found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise UsageError(f"{what} already exists ({shown}); an earlier result is never replaced silently: choose "
                         f"another `--out` or pass {flag}.")
