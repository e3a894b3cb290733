"""bench.render: every committed page's generated tables equal what its records under results/ give now.

Provenance: the expected counts of the DSMTS page are recounted here from the record's own case rows
(the renderer's output must follow a changed record, and a page must not follow an edited one).
"""
from __future__ import annotations

import json
import shutil

import pytest

from bench import render
from bench._common import RESULTS, ROOT, render_block


def test_every_committed_page_equals_its_rendered_records():
    found = render.pages()
    assert {p.relative_to(ROOT).as_posix() for p in found} >= {
        "docs/benchmarks.md", "docs/bench/dsmts_table.md", "docs/bench/equal_wall_clock/h5.md",
        "docs/bench/fast_map/fast_map.md"}
    stale = [str(p.relative_to(ROOT)) for p, (now, new) in found.items() if now != new]
    assert stale == [], f"run `python -m bench.render`: {stale}"
    assert render.main(["--check"]) == 0


def test_docs_hold_no_records():
    """Records live under results/; docs/ holds pages and their figures only."""
    kinds = {".json", ".csv", ".npz", ".txt", ".log", ".pt", ".safetensors"}
    strays = [p for p in (ROOT / "docs").rglob("*") if p.is_file() and p.suffix in kinds
              and "generated" not in p.parts and "assets" not in p.parts]
    assert strays == []


def test_a_changed_record_changes_its_table_and_the_page_is_then_stale(tmp_path):
    results = tmp_path / "results"
    (results / "networks").mkdir(parents=True)
    rec = json.loads((RESULTS / "networks" / "dsmts.json").read_text())
    first = next(r for r in rec["cases"] if r["status"] == "passed")
    first["status"] = "FAILED"
    (results / "networks" / "dsmts.json").write_text(json.dumps(rec))
    passed = sum(r["status"] == "passed" for r in rec["cases"])
    page = (ROOT / "docs" / "bench" / "dsmts_table.md").read_text()
    new = render.render_page(page, results)
    assert f"**{passed} passed," in new and ", 1 failed** of" in new and f"**{passed + 1} passed," in page
    assert f"| stochastic/{first['case']} | FAILED |" in new
    # text outside the block is kept as written
    assert new.splitlines()[0] == page.splitlines()[0] == "# The SBML stochastic test suite, case by case"
    # the records index lists what is there, and nothing else
    shutil.copytree(RESULTS / "markov", results / "markov")
    index = render.records(results)
    assert "| `results/markov/stationary_fuzz.json` | `python -m bench.markov.fuzz_stationary" in index
    assert "**networks** (1 entries)" in index and "results/lm" not in index


def test_malformed_blocks_are_refused_by_name():
    good = render_block("records", "")
    with pytest.raises(render.RenderError, match="unknown block 'tables'; the blocks are"):
        render.render_page(good.replace("records", "tables"))
    with pytest.raises(render.RenderError, match="block 'records' is not closed"):
        render.render_page(good.replace("<!-- /bench.render -->\n", ""))
    with pytest.raises(render.RenderError, match="holds another block"):
        render.render_page(good.replace("<!-- /bench.render -->\n", good))
    with pytest.raises(render.RenderError, match="the record 'networks/dsmts.json' is not under"):
        render.render_page(render_block("dsmts_cases", ""), ROOT / "no-such-results")
