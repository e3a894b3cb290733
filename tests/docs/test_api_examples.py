"""The usage example that opens each API page runs, and prints what its comments promise.

All pages' examples run in one subprocess (one JAX start-up), each in a namespace of its own.
The verification and sweeps examples are left to the tests of those packages: each takes a
minute of solves (tests/verification, tests/sweeps run the same calls at smaller sizes); here
they are only parsed.  The expected numbers are the closed forms the comments state.
"""
from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

# One worker runs this module (make test: --dist loadgroup), so its module fixture is built once, not per worker.
pytestmark = pytest.mark.xdist_group("test_api_examples")

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
NOT_RUN = {"verification": "a minute of solves", "sweeps": "a minute of solves"}
# page -> text its example must print (the closed forms in its comments)
EXPECT = {
    "markov": ["[0.66666667 0.22222222 0.11111111]"],
    "symbolic": ["Matrix([[b/(a + b)], [a/(a + b)]])", "True"],
    "manifolds": ["[0.25]", "[0.25025]", "[0.33333333]"],
    "networks": ["6.66666666"],
    "core": ["NetworkSyntaxError", "nothing was evaluated"],
    "errors": ["NotIrreducibleError True", "NetworkWarning True"],
    "neural": ["(2, 64, 256)", "True"],
    "systems": ["[0.333"],
}

RUNNER = """
import contextlib, io, json, sys, traceback

results = {}
for name, code in json.loads(sys.stdin.read()).items():
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"docs/api/{name}.md", "exec"), {"__name__": "__main__"})
        results[name] = {"ok": True, "stdout": out.getvalue()}
    except Exception:
        results[name] = {"ok": False, "stdout": out.getvalue(), "error": traceback.format_exc()[-3000:]}
print("RESULTS" + json.dumps(results))
"""


def examples() -> dict[str, str]:
    found = {}
    for page in sorted(API.glob("*.md")):
        match = re.search(r"^## Example\n\n```python\n(.+?)\n```", page.read_text(), flags=re.M | re.S)
        if match:
            found[page.stem] = match.group(1)
    return found


@pytest.fixture(scope="module")
def results():
    code = {k: v for k, v in examples().items() if k not in NOT_RUN}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "MPLBACKEND": "Agg"}
    proc = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(code), capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=400)
    assert proc.returncode == 0 and "RESULTS" in proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("RESULTS", 1)[1])


def test_every_api_page_has_an_example_that_parses():
    found = examples()
    pages = sorted(p.stem for p in API.glob("*.md") if p.stem != "index")
    assert sorted(found) == pages
    for name, code in found.items():
        ast.parse(code, filename=f"docs/api/{name}.md")
    assert set(EXPECT) | set(NOT_RUN) == set(pages), "every run example needs its expected output here"


@pytest.mark.parametrize("page", sorted(EXPECT))
def test_api_example_runs_and_prints_its_closed_form(results, page):
    result = results[page]
    assert result["ok"], f"docs/api/{page}.md's example failed:\n{result.get('error')}"
    for text in EXPECT[page]:
        assert text in result["stdout"], f"docs/api/{page}.md's example did not print {text!r}:\n{result['stdout']}"
