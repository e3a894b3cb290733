"""Machine-checked claims: the small harness behind `proofs/check_*.py` and `sp-ode prove`.

Each check script builds a `ClaimSet` and registers functions with
`@claims.claim(id, statement, method)`; a function takes `smoke` (a small,
fast size for the test suite) and returns `(passed, detail)`.  An exception
inside a check is a failed claim with its message, never a crash of the run.
A script run alone (`python proofs/check_x.py [--smoke] [--json]`) prints its
claim table and exits 1 when any claim fails; `sp-ode prove` runs every script's
set together.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import asdict, dataclass

from sp_ode.core.summary import Summarised, first_line, number


@dataclass(frozen=True, repr=False)
class ClaimResult(Summarised):
    """Outcome of one claim: `id` (e.g. "T1.tree"), the statement, how it was checked, and the result."""

    id: str
    statement: str
    method: str
    passed: bool
    detail: str
    seconds: float

    def to_dict(self) -> dict:
        return asdict(self)

    def _summary_title(self) -> str:
        return f"ClaimResult {self.id}: {'passed' if self.passed else 'FAILED'}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        return [("statement", first_line(self.statement)), ("method", first_line(self.method)),
                ("detail", first_line(self.detail)), ("seconds", number(self.seconds, 3))]


@dataclass(frozen=True)
class _Claim:
    id: str
    statement: str
    method: str
    check: Callable[[bool], tuple[bool, str]]


class ClaimSet:
    """An ordered set of checks from one script."""

    def __init__(self, script: str):
        self.script = script
        self._claims: list[_Claim] = []

    def claim(self, id: str, statement: str, method: str):
        def register(fn: Callable[[bool], tuple[bool, str]]):
            if any(c.id == id for c in self._claims):
                raise ValueError(f"claim id {id!r} registered twice in {self.script}")
            self._claims.append(_Claim(id, statement, method, fn))
            return fn

        return register

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self._claims]

    def run(self, smoke: bool = False, only: list[str] | None = None,
            progress: Callable[[str], None] | None = None) -> list[ClaimResult]:
        """Run the claims (those in `only`, if given) in order; `progress(id)` is called before each."""
        results = []
        for c in self._claims:
            if only is not None and c.id not in only:
                continue
            if progress is not None:
                progress(c.id)
            start = time.perf_counter()
            try:
                passed, detail = c.check(smoke)
                passed = bool(passed)
            except Exception as exc:  # a broken check is a failed claim, reported with its cause
                passed = False
                detail = f"{type(exc).__name__}: {exc} | " + traceback.format_exc(limit=2).splitlines()[-1]
            results.append(ClaimResult(c.id, c.statement, c.method, passed, str(detail), time.perf_counter() - start))
        return results

    def main(self, argv: list[str] | None = None) -> int:
        parser = argparse.ArgumentParser(description=f"machine checks of proofs/proof.md ({self.script})")
        parser.add_argument("--smoke", action="store_true", help="small sizes, for the test suite")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        args = parser.parse_args(argv)
        results = self.run(smoke=args.smoke)
        passed = all(r.passed for r in results)
        if args.json:
            print(json.dumps({"script": self.script, "passed": passed, "claims": [r.to_dict() for r in results]}))
        else:
            print(format_table(results))
            print(f"passed: {passed}")
        return 0 if passed else 1


def format_table(results: list[ClaimResult], width: int = 58) -> str:
    """A plain-text claim table: claim, method, result, seconds (statements wrapped to `width`)."""
    rows = [("claim", "method", "result", "seconds")]
    for r in results:
        rows.append((r.id, r.method, "PASS" if r.passed else "FAIL", f"{r.seconds:.2f}"))
    w0 = max(len(r[0]) for r in rows)
    w1 = min(max(len(r[1]) for r in rows), width)
    lines = []
    for k, (a, b, c, d) in enumerate(rows):
        b = b if len(b) <= w1 else b[: w1 - 1] + "…"
        lines.append(f"{a:<{w0}}  {b:<{w1}}  {c:<6}  {d:>7}")
        if k == 0:
            lines.append("-" * (w0 + w1 + 19))
    lines.append("")
    for r in results:
        lines.append(f"{'FAILED ' if not r.passed else ''}{r.id}: {r.detail}")
    return "\n".join(lines)


def run_script_main(claims: ClaimSet) -> None:  # pragma: no cover - thin wrapper for scripts
    sys.exit(claims.main())
