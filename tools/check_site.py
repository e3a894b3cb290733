"""Check a built documentation site for what a strict mkdocs build lets through.

    python tools/check_site.py build/site        (run by `make docs` and `make docs-smoke`)

A strict build fails on warnings (broken links, missing pages, unresolved references) but not
on text that renders wrongly. This reads every built page as a browser would see its text and
reports, one line each (exit 1 when there is any):

- a table that did not render: a paragraph that starts with ``|`` (a blank line inside a
  table, or an unescaped ``|`` in a cell, ends it and the rest shows as raw ``| … |`` text);
- LaTeX left raw: ``\\[``, ``\\(`` or ``$$`` outside the math that arithmatex marks for KaTeX,
  or a page with math that does not load KaTeX and its renderer (the math would show as typed);
- Sphinx markup shown as typed: ``:class:``, ``:func:``, ``:data:``, ``:mod:``, ``:meth:``,
  ``:attr:`` roles, or double backticks (reST literals) in text or inline code;
- a page that the navigation does not reach (every built page must be linked from the menu);
- gallery image markup shown as typed: a literal ``%s`` or a ``{: .mkd-glr…}`` attribute list in
  the text (mkdocs-gallery's several-image template, which it never fills);
- a page that loads a script or a style sheet from another host (the site serves its own
  KaTeX, so it renders offline), or a KaTeX asset missing from the site.
"""
from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

ROLES = re.compile(r":(class|func|data|mod|meth|attr|exc|obj):`")
RAW_MATH = re.compile(r"\\\[|\\\(|\$\$")
RAW_GALLERY = re.compile(r"%s|\{:\s*\.mkd-glr")
BROKEN_TABLE = re.compile(r"<p>\s*\|")
EXTERNAL_ASSET = re.compile(r"<(?:script[^>]*\ssrc|link[^>]*\shref)=\"(?:https?:)?//", re.I)
KATEX_FILES = ("assets/katex/katex.min.js", "assets/katex/katex.min.css", "assets/javascripts/katex-render.js")
# pages that are not documentation: mkdocs' own 404 page
NOT_PAGES = {"404.html"}
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _Text(HTMLParser):
    """Collects (text, inside_code) for every text node outside <pre>, <script>, <style> and
    outside elements marked as math (class "arithmatex"); and the links of the primary nav."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, bool, bool]] = []   # (tag, opens a skipped region, is the primary nav)
        self.skip = 0
        self.code = 0
        self.nav = 0
        self.texts: list[tuple[str, bool]] = []
        self.nav_links: set[str] = set()

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        attrs = dict(attrs)
        classes = (attrs.get("class") or "").split()
        skipped = tag in ("pre", "script", "style") or "arithmatex" in classes
        self.skip += skipped
        self.code += tag == "code"
        is_nav = tag == "nav" and "md-nav--primary" in classes
        self.nav += is_nav
        if tag == "a" and self.nav and attrs.get("href"):
            self.nav_links.add(attrs["href"])
        self.stack.append((tag, skipped, is_nav))

    def handle_endtag(self, tag):
        if tag in VOID or all(open_tag != tag for open_tag, _, _ in self.stack):
            return
        while self.stack:
            open_tag, skipped, is_nav = self.stack.pop()
            self.skip -= skipped
            self.code -= open_tag == "code"
            self.nav -= is_nav
            if open_tag == tag:
                break

    def handle_data(self, data):
        if not self.skip and data.strip():
            self.texts.append((data, bool(self.code)))


def _page_url(site: Path, html: Path) -> str:
    rel = html.relative_to(site).as_posix()
    return rel[: -len("index.html")] if rel.endswith("index.html") else rel


def _resolve(base_url: str, href: str) -> str:
    """A nav href (relative to the page at `base_url`) as a site path like ``api/markov/``."""
    href = href.split("#", 1)[0].split("?", 1)[0]
    if not href or "://" in href or href.startswith("mailto:"):
        return ""
    parts = [p for p in base_url.split("/")[:-1] if p] if not href.startswith("/") else []
    for piece in href.split("/"):
        if piece == "..":
            if parts:
                parts.pop()
        elif piece not in ("", "."):
            parts.append(piece)
    path = "/".join(parts)
    if href.endswith("/") and path:
        path += "/"
    return path


def check_site(site) -> list[str]:
    """Every problem found in the built site `site` (a folder holding index.html), one line each."""
    site = Path(site)
    problems: list[str] = []
    if not (site / "index.html").is_file():
        return [f"{site}: no index.html (is this a built site?)"]
    for asset in KATEX_FILES:
        if not (site / asset).is_file():
            problems.append(f"{asset}: missing from the site (KaTeX must be served by the site itself)")
    pages = sorted(p for p in site.rglob("*.html") if p.relative_to(site).as_posix() not in NOT_PAGES)
    reached: set[str] = set()
    for html in pages:
        rel = html.relative_to(site).as_posix()
        source = html.read_text(encoding="utf-8")
        for match in BROKEN_TABLE.finditer(source):
            line = source.count("\n", 0, match.start()) + 1
            snippet = source[match.start(): match.start() + 80].split("\n")[0]
            problems.append(f"{rel}:{line}: a table did not render (a paragraph starts with '|'): {snippet!r}")
        for match in EXTERNAL_ASSET.finditer(source):
            problems.append(f"{rel}: loads an asset from another host: {source[match.start(): match.start() + 90]!r}")
        if 'class="arithmatex"' in source and not all(f'/{Path(a).name}"' in source or f'"{a}"' in source
                                                        for a in KATEX_FILES if a.endswith(".js")):
            problems.append(f"{rel}: has math but does not load KaTeX and katex-render.js: it shows as raw LaTeX")
        parser = _Text()
        parser.feed(source)
        for text, in_code in parser.texts:
            where = "inline code" if in_code else "text"
            if not in_code and RAW_MATH.search(text):
                problems.append(f"{rel}: raw LaTeX outside rendered math in {where}: {text.strip()[:80]!r}")
            if ROLES.search(text):
                problems.append(f"{rel}: a Sphinx role shown as typed in {where}: {text.strip()[:80]!r}")
            if not in_code and RAW_GALLERY.search(text):
                problems.append(f"{rel}: gallery image markup shown as typed in {where}: {text.strip()[:80]!r}")
            if "``" in text:
                problems.append(f"{rel}: double backticks shown as typed in {where}: {text.strip()[:80]!r}")
        url = _page_url(site, html)
        reached |= {_resolve(url, href) for href in parser.nav_links}
    for html in pages:
        url = _page_url(site, html)
        if url not in reached and url != "":
            problems.append(f"{url or 'index.html'}: built, but not in the navigation")
    return problems


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python tools/check_site.py SITE_DIR", file=sys.stderr)
        return 2
    problems = check_site(argv[0])
    for line in problems:
        print(line)
    pages = len(list(Path(argv[0]).rglob("*.html")))
    print(f"check_site: {pages} pages, {len(problems)} problem(s)", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
