"""mkdocs-gallery configuration (``conf_script`` of mkdocs.yml): run each example, show its figures.

The examples draw on standalone :class:`matplotlib.figure.Figure` objects
(``sp_ode.core.reporting.figures()``), never pyplot, so mkdocs-gallery's default
scraper (which asks pyplot for its open figures) would find none.  `figure_scraper`
instead collects, after each code block, every Figure bound to a name in the example's
globals that it has not shown yet, saves it where mkdocs-gallery expects the block's
images, and returns the Markdown for them.

Each example runs with ``--out out/gallery/<name>`` (its files stay out of docs/).
``SP_ODE_GALLERY`` chooses what executes:

- unset (``make docs``): every example at full size, except the two long neural experiments,
  which are shown with their source (each has its own test);
- ``smoke`` (``make docs-smoke``): the same examples with ``--smoke`` (seconds each); every
  page says so in a banner (tools/mkdocs_hooks.py);
- ``check`` (the suite's built-site check, tests/docs/test_site.py): only ``first_model``,
  the Getting started program; the other pages show their source without output.

Besides Figures, a block may show PNG files an example wrote (a `pathlib.Path`, or a list of
them, bound to a global): they are copied as they are, so their labels keep the size they
were drawn at instead of being scaled down inside another figure.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from matplotlib.figure import Figure
from mkdocs_gallery.scrapers import figure_md_or_html

_SHOWN: dict[str, set] = {}
LONG = ("ablation_500k", "when_coupling_matters")   # shown, not executed (each has its own test)
PATTERNS = {
    "full": "^((?!" + "|".join(LONG) + ").)*$",
    "smoke": "^((?!" + "|".join(LONG) + ").)*$",
    "check": "first_model",
}


def gallery_mode() -> str:
    """``full``, ``smoke`` or ``check``, from ``SP_ODE_GALLERY`` (a typo is refused, naming the choices)."""
    mode = os.environ.get("SP_ODE_GALLERY") or "full"
    if mode not in PATTERNS:
        raise ValueError(f"SP_ODE_GALLERY must be one of {sorted(PATTERNS)} or unset; got {mode!r}.")
    return mode


def figure_scraper(block, script, **kwargs) -> str:
    """Markdown for the Figures (and written PNG files) that appeared in the example's globals during this block."""
    shown = _SHOWN.setdefault(str(script.src_py_file), set())
    paths = []
    for value in list(script.run_vars.example_globals.values()):
        candidates = value if isinstance(value, (list, tuple)) else (value,)
        for item in candidates:
            if isinstance(item, Figure) and id(item) not in shown:
                shown.add(id(item))
                path = next(script.run_vars.image_path_iterator)
                item.savefig(path, dpi=110)
                paths.append(path)
            elif (isinstance(item, Path) and item.suffix == ".png" and item.is_file()
                  and str(item.resolve()) not in shown):
                shown.add(str(item.resolve()))
                path = next(script.run_vars.image_path_iterator)
                shutil.copyfile(item, path)
                paths.append(path)
    # One single-image block per figure: mkdocs-gallery's several-image form (HLIST_HEADER) leaves
    # a literal "%s" and raw list markup on the page (its template is never filled).
    return "\n\n".join(figure_md_or_html([path], script) for path in paths)


def reset_argv(script) -> list[str]:
    """The example's command line under the gallery."""
    argv = ["--out", os.path.join("out", "gallery", script.src_py_file.stem)]
    return argv + (["--smoke"] if gallery_mode() == "smoke" else [])


conf = {
    "image_scrapers": (figure_scraper,),
    "reset_argv": reset_argv,
    "filename_pattern": PATTERNS[gallery_mode()],
}
