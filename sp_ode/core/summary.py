"""Short text and HTML summaries of result objects (what `print(result)` and a notebook show).

A result object lists its few defining numbers as `(label, value)` rows in `_summary_rows()`;
`Summarised` turns them into `summary()` (a few lines of text), `__repr__` (the same text) and
`_repr_html_` (a two-column table for Jupyter). Arrays, histories and models are never dumped:
a row names their size instead (`shape_of`).
"""
from __future__ import annotations

import html

import numpy as np


def shape_of(value) -> str:
    """A short description of a large value: `array (200, 3)`, `list of 301`, …"""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return f"array {tuple(shape)}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {shape_of(v)}" for k, v in list(value.items())[:6]) + ("…}" if len(value) > 6 else "}")
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__} of {len(value)}"
    return type(value).__name__


def first_line(text, limit: int = 100) -> str:
    """The first non-empty line of `text`, cut to `limit` characters (a message in a summary row)."""
    lines = [ln.strip() for ln in str(text or "").splitlines() if ln.strip()]
    line = lines[0] if lines else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"


def number(x, digits: int = 4) -> str:
    """A float in `digits` significant digits (integers and non-numbers as they are)."""
    if isinstance(x, (bool, np.bool_)) or x is None:
        return str(x)
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    try:
        return f"{float(x):.{digits}g}"
    except (TypeError, ValueError):
        return str(x)


class Summarised:
    """Mixin: `summary()`, `__repr__` and `_repr_html_` from `_summary_title()` and `_summary_rows()`.

    Dataclasses that use it are declared with `repr=False`, so that the generated repr (which
    prints every field, histories included) does not replace this one.  A class may keep a
    `summary()` of its own (the numbers as a dict, say); `__repr__` does not go through it.
    """

    def _summary_title(self) -> str:
        return type(self).__name__

    def _summary_rows(self) -> list[tuple[str, str]]:  # pragma: no cover - each result defines its rows
        return []

    def _summary_text(self) -> str:
        rows = self._summary_rows()
        width = max((len(k) for k, _ in rows), default=0)
        return "\n".join([self._summary_title()] + [f"  {k.ljust(width)}  {v}" for k, v in rows])

    def summary(self) -> str:
        """A few lines: the title, then one `label: value` line per defining number."""
        return self._summary_text()

    def __repr__(self) -> str:
        # the text itself, not `summary()`: a result whose `summary()` long returned numbers (a dict, a
        # list of lines) keeps that method and still prints short
        return self._summary_text()

    def _repr_html_(self) -> str:
        rows = "".join(f"<tr><th style='text-align:left'>{html.escape(k)}</th><td style='text-align:left'>"
                       f"{html.escape(str(v))}</td></tr>" for k, v in self._summary_rows())
        return f"<div><strong>{html.escape(self._summary_title())}</strong><table>{rows}</table></div>"
