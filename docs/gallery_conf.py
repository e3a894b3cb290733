"""mkdocs-gallery configuration (``conf_script`` of mkdocs.yml): run each example, show its figures.

The examples draw on standalone :class:`matplotlib.figure.Figure` objects
(``sp_ode.core.reporting.figures()``), never pyplot, so mkdocs-gallery's default
scraper (which asks pyplot for its open figures) would find none.  `figure_scraper`
instead collects, after each code block, every Figure bound to a name in the example's
globals that it has not shown yet, saves it where mkdocs-gallery expects the block's
images, and returns the Markdown for them.

Each example runs with ``--out out/gallery/<name>`` (its files stay out of docs/), and
with ``--smoke`` as well when ``SP_ODE_GALLERY=smoke`` (a quick build: ``make docs-smoke``).
"""
from __future__ import annotations

import os

from matplotlib.figure import Figure
from mkdocs_gallery.scrapers import figure_md_or_html

_SHOWN: dict[str, set[int]] = {}


def figure_scraper(block, script, **kwargs) -> str:
    """Markdown for the Figures that appeared in the example's globals during this block."""
    shown = _SHOWN.setdefault(str(script.src_py_file), set())
    paths = []
    for value in list(script.run_vars.example_globals.values()):
        candidates = value if isinstance(value, (list, tuple)) else (value,)
        for fig in candidates:
            if isinstance(fig, Figure) and id(fig) not in shown:
                shown.add(id(fig))
                path = next(script.run_vars.image_path_iterator)
                fig.savefig(path, dpi=110)
                paths.append(path)
    return figure_md_or_html(paths, script) if paths else ""


def reset_argv(script) -> list[str]:
    """The example's command line under the gallery."""
    argv = ["--out", os.path.join("out", "gallery", script.src_py_file.stem)]
    return argv + (["--smoke"] if os.environ.get("SP_ODE_GALLERY") == "smoke" else [])


conf = {
    "image_scrapers": (figure_scraper,),
    "reset_argv": reset_argv,
}
