"""Progress bars and figures, without global state (docs/theory.md §9).

Figures are `matplotlib.figure.Figure` objects drawn with the
object-oriented API: no pyplot, no backend switch, no rcParams change, so a
user's interactive matplotlib session is untouched by anything sp_ode plots.
"""
from __future__ import annotations

import os
import sys


def progress(iterable=None, *, total=None, desc=None, disable=None, **kw):
    """A tqdm progress bar on stderr; silent when stderr is not a terminal unless `SP_ODE_PROGRESS` is set."""
    from tqdm.auto import tqdm

    if disable is None:
        disable = not sys.stderr.isatty() and not os.environ.get("SP_ODE_PROGRESS")
    return tqdm(iterable, total=total, desc=desc, disable=disable, file=sys.stderr, leave=False, **kw)


class Figures:
    """The two pyplot calls the project uses, `subplots` and `close`, on standalone Figure objects."""

    @staticmethod
    def subplots(nrows: int = 1, ncols: int = 1, *, figsize=None, **kw):
        """`(Figure, axes)` like `pyplot.subplots`, but the figure belongs to no global figure manager."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=figsize)
        return fig, fig.subplots(nrows, ncols, **kw)

    @staticmethod
    def close(fig) -> None:
        """Nothing to release: a standalone Figure is freed with its last reference."""


def figures() -> Figures:
    """The figure factory (a drop-in for the `plt` the plotting code calls)."""
    return Figures()
