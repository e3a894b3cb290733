"""Benchmark pages and findings speak of their topic, not of the work that produced them.

A reader of docs/benchmarks.md, docs/bench/ and docs/findings.md has no issue tracker and no
work log: "the issue's case", "this session", "session-3 table" or "the lead replaced" tell them
nothing.  Record file names (`coupling_session5.json`) are names, not phrases, and are left alone.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "docs" / "benchmarks.md", ROOT / "docs" / "findings.md", *sorted((ROOT / "docs" / "bench").rglob("*.md"))]
WORK = re.compile(r"\b(?:the issue|issue'?s?\s*#?\d*|this session|same session|session[- ]\d+|this stop|"
                  r"round \d+ of|work period|the lead|this task was|was lent)\b", re.I)
FILE_NAME = re.compile(r"[\w./-]*_session\d[\w./*{},-]*")


def work_phrases(text: str) -> list[str]:
    return [m.group(0) for m in WORK.finditer(FILE_NAME.sub("", text))]


def test_benchmark_pages_speak_of_the_topic():
    found = [f"{p.relative_to(ROOT)}: {hit!r}" for p in PAGES for hit in work_phrases(p.read_text())]
    assert not found, "phrases about the work, not the topic:\n" + "\n".join(found)


def test_the_check_catches_work_phrases_and_spares_file_names():
    assert work_phrases("it was not done in this session; the issue's case; the session-7 path") == [
        "this session", "the issue", "session-7"]
    assert work_phrases("records in `coupling_session5.json` and gates_session4.png; around 3e-8") == []
