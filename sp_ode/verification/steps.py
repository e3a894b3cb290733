"""The steps of a verdict: one record per check, filled by the dense and the network verdicts alike.

A verdict (`sp_ode.verify`; `sp_ode.verification.network.verify_network`) is an ordered list of steps
(`VerdictStep`): a name, a status in `STATUSES` — `ok`, `FAIL` or `skipped` — a one-line message (its
numbers, or why it failed), the skip reason when skipped, and the seconds of the stage that ran it.
`Steps` holds them in order and gives the views a report prints and writes: `checks` (name → status),
`messages` (name → message), `seconds` (stage → seconds, plus any extra timings a verdict adds),
`passed` (every step `ok`) and `failure` (the message of the first failed step).

`StepsView.write` is the one save loop of both verdicts: it refuses a folder that holds an earlier
report (unless told to overwrite), draws each figure the verdict has the data for, removes a stale
one it has not (a figure from an earlier run must not stand beside this verdict), and writes
`report.json` last.
"""
from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sp_ode.core.files import write_json

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator

__all__ = ["StepsView", "VerdictStep", "Steps", "STATUSES", "REPORT", "refuse_earlier_report"]

REPORT = "report.json"

STATUSES = ("ok", "FAIL", "skipped")


def refuse_earlier_report(out, overwrite: bool) -> Path:
    """`out` as a Path; FileExistsError when it already holds a verdict's `report.json` and not `overwrite`
    (an earlier result is never replaced silently; `sp_ode.verify` calls this before any work)."""
    out = Path(out)
    if (out / REPORT).exists() and not overwrite:
        raise FileExistsError(f"`out` {str(out)!r} already holds a verify report ({REPORT}); choose another "
                              "folder or pass overwrite=True (command line: --overwrite).")
    return out


def _check_status(name: str, status: str) -> str:
    if status not in STATUSES:
        raise ValueError(f"the status of step {name!r} must be one of {STATUSES}; got {status!r}.")
    return status


@dataclass
class VerdictStep:
    """One check of a verdict.

    Attributes
    ----------
    name : str
    status : {"ok", "FAIL", "skipped"}
    message : str
        One line: the step's numbers, or why it failed or was skipped.
    seconds : float or None
        The seconds of the stage that ran it (None: not run).
    skip_reason : str or None
        Why it was skipped (the message, when `status` is "skipped"); None otherwise.
    """

    name: str
    status: str = "skipped"
    message: str = ""
    seconds: float | None = None
    skip_reason: str | None = None

    def __post_init__(self) -> None:
        _check_status(self.name, self.status)
        if self.status == "skipped" and self.skip_reason is None:
            self.skip_reason = self.message

    @property
    def passed(self) -> bool:
        return self.status == "ok"


@dataclass
class Steps:
    """The ordered steps of one verdict (module docstring); `Steps(names, message)` starts each skipped with
    `message` as its reason.

    Attributes
    ----------
    steps : list of VerdictStep
    seconds : dict
        Stage → seconds (`timed`), JSON-ready; a verdict may add entries (e.g. per-solve times).
    """

    steps: list = field(default_factory=list)
    seconds: dict = field(default_factory=dict)

    @classmethod
    def start(cls, names: Iterable[str], message: str = "") -> Steps:
        """Every step named, skipped, with `message` as its reason until it is set."""
        return cls([VerdictStep(n, "skipped", message) for n in names])

    @classmethod
    def from_checks(cls, checks: dict, messages: dict) -> Steps:
        """The steps of a `checks` / `messages` pair (as in a report.json)."""
        return cls([VerdictStep(n, s, messages.get(n, "")) for n, s in checks.items()])

    def __getitem__(self, name: str) -> VerdictStep:
        for step in self.steps:
            if step.name == name:
                return step
        raise KeyError(f"no step {name!r}; the steps are {[s.name for s in self.steps]}.")

    def __iter__(self) -> Iterator[VerdictStep]:
        return iter(self.steps)

    def set(self, name: str, status: str, message: str) -> None:
        """Record the outcome of step `name` (a "skipped" status keeps `message` as its reason)."""
        step = self[name]
        step.status, step.message = _check_status(name, status), message
        step.skip_reason = message if status == "skipped" else None

    def skip(self, name: str, reason: str) -> None:
        self.set(name, "skipped", reason)

    @contextmanager
    def timed(self, stage: str, *names: str) -> Iterator[None]:
        """Time the block as `stage` (in `seconds`) and as the seconds of the steps `names` (default: `stage`)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.record(stage, time.perf_counter() - start, *names)

    def record(self, stage: str, seconds: float, *names: str) -> None:
        """`seconds` of `stage` (in `seconds`), and of the steps `names` (default: `stage`)."""
        self.seconds[stage] = seconds
        for n in names or (stage,):
            self[n].seconds = seconds

    @property
    def checks(self) -> dict:
        return {s.name: s.status for s in self.steps}

    @property
    def messages(self) -> dict:
        return {s.name: s.message for s in self.steps}

    @property
    def passed(self) -> bool:
        return all(s.passed for s in self.steps)

    @property
    def failure(self) -> str | None:
        return next((s.message for s in self.steps if s.status == "FAIL"), None)


class StepsView:
    """The verdict's figures read from its `steps` (a `Steps`), for the result types that hold one
    (`VerifyReport`, `NetworkVerdict`): one reading, not a copy per type."""

    steps: Steps

    @property
    def checks(self) -> dict:
        return self.steps.checks

    @property
    def messages(self) -> dict:
        return self.steps.messages

    @property
    def passed(self) -> bool:
        return self.steps.passed

    @property
    def failure(self) -> str | None:
        return self.steps.failure

    figures: list

    if TYPE_CHECKING:     # what each verdict type supplies: its record and its figures
        def to_dict(self) -> dict[str, Any]: ...

        def figure_makers(self) -> list[tuple[str, Callable[[Path], Any] | None]]:
            """(file name, draw(path) or None when this verdict has no data for it), in the order written."""

    def write(self, out, *, overwrite: bool = False) -> list[str]:
        """The figures and `report.json` under the folder `out` (module docstring); the files written.

        Raises
        ------
        FileExistsError
            `out` already holds a `report.json` and `overwrite` is False.
        """
        out = refuse_earlier_report(out, overwrite)
        out.mkdir(parents=True, exist_ok=True)
        self.figures = []
        for name, draw in self.figure_makers():
            target = out / name
            if draw is not None:
                self.figures.append(str(draw(target)))
            elif target.exists():
                target.unlink()           # a figure from an earlier run must not stand beside this verdict
        write_json(out / REPORT, self.to_dict())
        self.figures.append(str(out / REPORT))
        return list(self.figures)

