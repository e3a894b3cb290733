"""mkdocs hooks of the documentation site (mkdocs.yml `hooks:`).

- The Getting started page shows the program `examples/first_model.py` with the output and
  the figure the gallery recorded when it executed it in this same build (the marker
  ``<!-- first-model -->``), so the page can never show an output the code no longer prints.
- Gallery pages say how they were built: at smoke size (``SP_ODE_GALLERY=smoke``), or shown
  without being executed (the two long neural experiments; all but one example in the
  suite's site check).
- mkdocs-gallery's execution-time table (a build log, not a page for readers) is left out, and
  so is the note above each example's title pointing to the download links at its foot.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GALLERY = "generated/gallery"
MARKER = "<!-- first-model -->"
DOWNLOAD_NOTE = re.compile(r"!!! note\n\n    Click \[here\]\(#download_links\)\n    to download the full example code\n")
FIRST = "first_model"


def _mode() -> str:
    return os.environ.get("SP_ODE_GALLERY") or "full"


def on_files(files, config):
    timing = files.get_file_from_path(f"{GALLERY}/mg_execution_times.md")
    if timing is not None:
        files.remove(timing)
    return files


def _gallery_blocks(md: str) -> tuple[list[str], list[str]]:
    """The "Out:" code blocks and the image lines of a page mkdocs-gallery generated."""
    outputs = re.findall(r"```\{\.shell \.mkd-glr-script-out-disp \}\n(.*?)```", md, flags=re.S)
    images = re.findall(r"^!\[[^\]]*\]\(\./images/([^)]+\.png)\)", md, flags=re.M)
    return [o.strip("\n") for o in outputs], images


def first_model_section(docs_dir: Path) -> str:
    """Markdown for the Getting started program: its code, what it printed, its figure."""
    source = (ROOT / "examples" / f"{FIRST}.py").read_text()
    # the program without its gallery docstring and cell markers
    code = "\n".join(line for line in source.split('"""', 2)[2].split("\n") if line != "# %%").strip("\n")
    page = docs_dir / GALLERY / f"{FIRST}.md"
    if not page.is_file():
        raise RuntimeError(f"getting_started.md shows the output of examples/{FIRST}.py, but the gallery did not "
                           f"execute it ({page} is missing): check docs/gallery_conf.py's filename_pattern.")
    outputs, images = _gallery_blocks(page.read_text())
    if not outputs or not images:
        raise RuntimeError(f"the gallery page of examples/{FIRST}.py has no output block or no figure; "
                           "the Getting started page needs both.")
    parts = ["```python", code, "```", "", "It prints:", "", "```text", *outputs, "```", "",
             "and draws:", "",
             *(f"![The fast and the slow variable of the switch]({GALLERY}/images/{img}){{: .figure }}"
               for img in images)]
    return "\n".join(parts)


def on_page_markdown(markdown, page, config, files):
    src = page.file.src_uri
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, first_model_section(Path(config["docs_dir"])))
    if src.startswith(f"{GALLERY}/") and src.endswith(".md") and not src.endswith("index.md"):
        name = Path(src).stem
        markdown = DOWNLOAD_NOTE.sub("", markdown)
        banner = None
        if "mkd-glr-script-out" not in markdown and "mkd-glr-single-img" not in markdown:
            banner = ('!!! note "Shown, not executed in this build"\n    This page shows the example\'s code; '
                      f"run it with `python examples/{name}.py --smoke` (seconds) or without `--smoke` "
                      "for the full size.")
        elif _mode() == "smoke":
            banner = ('!!! warning "Smoke-size build"\n    This page was built by `make docs-smoke`: the example '
                      "ran with `--smoke`, a tiny version that finishes in seconds, so its numbers and figures "
                      "are not those of the full run. `make docs` builds it at full size.")
        if banner:
            # after the page title (the first heading), before the description
            head, sep, rest = markdown.partition("\n# ")
            if sep:
                title, nl, body = rest.partition("\n")
                markdown = f"{head}{sep}{title}{nl}\n{banner}\n\n{body}"
            else:
                markdown = f"{banner}\n\n{markdown}"
    return markdown
