"""The documentation's tables of records, regenerated from ``results/``: ``python -m bench.render``.

A page holds each generated table between two comments (`bench._common.render_block` writes them):

    <!-- bench.render: NAME (python -m bench.render regenerates it from results/; do not edit) -->
    | … the table … |
    <!-- /bench.render -->

NAME is one of `BLOCKS`, a function of the records under ``results/`` that returns the block's
Markdown.  ``python -m bench.render`` rewrites every block of every page under ``docs/``;
``--check`` only compares, names each stale page and exits 1 (tests/bench/test_render.py runs it,
so a committed page always equals what its records say).  Text outside the blocks — the
discussion of what the numbers mean — is written by hand.

Blocks: ``records`` (docs/benchmarks.md: every record under results/, by topic, with the command
it records), ``dsmts_cases`` (docs/bench/dsmts_table.md, from results/networks/dsmts.json),
``h5`` (docs/bench/equal_wall_clock/h5.md), ``fast_map`` (docs/bench/fast_map/fast_map.md) and
``tt_stationary`` (docs/bench/tt_stationary.md, from results/networks/tt_stationary.json).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

from bench._common import RESULTS, ROOT, render_block

DOCS = ROOT / "docs"
TOPICS = ("markov", "systems", "networks", "sweeps", "lm", "phi")
BEGIN = re.compile(r"^<!-- bench\.render: (?P<name>[\w-]+)(?: [^\n]*)? -->\n", re.M)
END = "<!-- /bench.render -->\n"


class RenderError(ValueError):
    """A page's generated block is malformed (unclosed, nested, unknown name) or its record is missing."""


def _record(rel: str, results: Path) -> dict:
    path = results / rel
    if not path.is_file():
        raise RenderError(f"the record {rel!r} is not under {results}: a page's table is rendered from it")
    return json.loads(path.read_text())


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _command(path: Path) -> str | None:
    """The ``command`` a JSON record states it was written by, if any."""
    if path.suffix != ".json":
        return None
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError:
        return None
    cmd = data.get("command") if isinstance(data, dict) else None
    return cmd if isinstance(cmd, str) and cmd else None


def records(results: Path) -> str:
    """Every record under `results`, one table per topic: the file (a folder of runs as one row) and its command."""
    out = []
    for topic in TOPICS:
        folder = results / topic
        if not folder.is_dir():
            continue
        rows = []
        for path in sorted(folder.iterdir()):
            if path.name.startswith("."):
                continue
            rel = path.relative_to(results.parent).as_posix()
            if path.is_dir():
                files = sorted(p for p in path.rglob("*") if p.is_file() and not p.name.startswith("."))
                cmds = sorted({c for c in map(_command, files) if c})
                what = f"{len(files)} record{'' if len(files) == 1 else 's'}" + (f"; `{_cell(cmds[0])}`" if len(cmds) == 1 else "")
                rows.append(f"| `{rel}/` | {what} |")
            else:
                cmd = _command(path)
                rows.append(f"| `{rel}` | {f'`{_cell(cmd)}`' if cmd else '—'} |")
        out += [f"**{topic}** ({len(rows)} entries)", "", "| record | written by (the command it records) |",
                "| --- | --- |", *rows, ""]
    return "\n".join(out)


def dsmts_cases(results: Path) -> str:
    from bench.networks.dsmts_check import table

    return table(_record("networks/dsmts.json", results))


def h5(results: Path) -> str:
    from bench.lm.equal_wall_clock import markdown

    return markdown(_record("lm/equal_wall_clock/h5.json", results))


def fast_map(results: Path) -> str:
    from bench.lm.fast_map_fixed_point import markdown

    rec = _record("lm/fast_map/fast_map.json", results)
    return markdown(rec, rec)


def tt_stationary(results: Path) -> str:
    from bench.networks.tt_stationary import markdown

    return markdown(_record("networks/tt_stationary.json", results))


BLOCKS: dict[str, Callable[[Path], str]] = {"records": records, "dsmts_cases": dsmts_cases, "h5": h5,
                                            "fast_map": fast_map, "tt_stationary": tt_stationary}


def render_page(text: str, results: Path = RESULTS, where: str = "page") -> str:
    """`text` with each generated block replaced by what its records give now (the rest unchanged)."""
    out, pos = [], 0
    for m in BEGIN.finditer(text):
        if m.start() < pos:
            raise RenderError(f"{where}: block {m['name']!r} begins inside another block")
        end = text.find(END, m.end())
        if end < 0:
            raise RenderError(f"{where}: block {m['name']!r} is not closed by {END.strip()!r}")
        if BEGIN.search(text, m.end(), end):
            raise RenderError(f"{where}: block {m['name']!r} holds another block before its end")
        if m["name"] not in BLOCKS:
            raise RenderError(f"{where}: unknown block {m['name']!r}; the blocks are {sorted(BLOCKS)}")
        out += [text[pos:m.start()], render_block(m["name"], BLOCKS[m["name"]](results))]
        pos = end + len(END)
    return "".join(out) + text[pos:]


def pages(docs: Path = DOCS, results: Path = RESULTS) -> dict[Path, tuple[str, str]]:
    """{page: (as committed, as rendered)} for every page under `docs` that holds a generated block."""
    found = {}
    for page in sorted(docs.rglob("*.md")):
        if "generated" in page.relative_to(docs).parts:
            continue
        text = page.read_text(encoding="utf-8")
        if BEGIN.search(text):
            found[page] = (text, render_page(text, results, str(page.relative_to(docs.parent))))
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only: name each stale page, exit 1 if any")
    parser.add_argument("--smoke", action="store_true", help="the same as --check (every bench script takes --smoke)")
    args = parser.parse_args(argv)
    try:
        found = pages()
    except RenderError as exc:
        print(f"bench.render: error: {exc}", file=sys.stderr)
        return 2
    stale = [p for p, (now, new) in found.items() if now != new]
    for page in stale:
        rel = page.relative_to(ROOT)
        if args.check or args.smoke:
            print(f"{rel}: stale (python -m bench.render rewrites it)")
        else:
            page.write_text(found[page][1], encoding="utf-8")
            print(f"wrote {rel}")
    print(f"{len(found)} pages with generated tables, {len(stale)} {'stale' if args.check or args.smoke else 'rewritten'}")
    return 1 if stale and (args.check or args.smoke) else 0


if __name__ == "__main__":
    sys.exit(main())
