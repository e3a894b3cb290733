"""A planted payload for the input routes that read expressions: text that runs a shell command under eval.

sympy's ``parse_expr`` (and ``sympify``) end in Python's ``eval``; with names mapped to
Symbols, the classic escape still works: from a tuple literal up to ``object``, across its
subclasses to ``os._wrap_close``, whose module globals hold ``os.system``.  Every route
test plants this text where an expression is read and checks that the marker file is
never created; `test_the_payload_runs_under_eval` (tests/networks/test_rates.py) shows
the text does create it when evaluated, so a route that evaluated would fail its test.
"""
from __future__ import annotations

from pathlib import Path


def payload(marker: Path) -> str:
    """The expression text that creates `marker` when evaluated (no commas, semicolons or ``<``)."""
    return ("[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == '_wrap_close'][0]"
            f".__init__.__globals__['system']('touch {marker}')")


def assert_not_run(marker: Path) -> None:
    assert not marker.exists(), f"the planted payload ran: {marker} was created"
