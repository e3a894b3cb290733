"""Docstrings are in the one style the API reference renders (tools/convert_docstrings.py).

No Sphinx role and no reST double-backtick literal in any docstring of `sp_ode` or `neural`,
and nothing left for the conversion script to do (so entries written on one line, with their
text in the Type column, are caught too).  After a merge brings in modules written otherwise:
``make docstrings`` (python tools/convert_docstrings.py sp_ode neural), then rerun this file.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
from convert_docstrings import Resolver, convert_docstring, convert_file  # noqa: E402

ROLE = re.compile(r":(?:py:)?(?:class|func|meth|attr|data|mod|exc|obj):`")
FILES = sorted(p for package in ("sp_ode", "neural") for p in (ROOT / package).rglob("*.py"))


def docstrings(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield getattr(node, "name", "<module>"), getattr(node, "lineno", 1), doc


def markup(doc: str) -> list[str]:
    return [m.group(0) for m in ROLE.finditer(doc)] + (["``"] if "``" in doc else [])


def test_no_sphinx_role_or_double_backtick_in_a_docstring():
    found = [f"{path.relative_to(ROOT)}:{line} {name}: {markup(doc)}"
             for path in FILES for name, line, doc in docstrings(path) if markup(doc)]
    assert not found, ("reST markup mkdocstrings shows as typed (run `make docstrings`):\n" + "\n".join(found[:40])
                       + (f"\n… {len(found) - 40} more" if len(found) > 40 else ""))


def test_markup_check_catches_roles_and_literals():
    assert markup("See :class:`Foo` and :func:`~a.b`; ``x``.") == [":class:`", ":func:`", "``"]
    assert markup("See [`Foo`][a.Foo] and `x`.") == []


@pytest.fixture(scope="module")
def resolver():
    return Resolver(["sp_ode", "neural"])


def test_nothing_left_for_the_conversion_script(resolver):
    left = []
    for path in FILES:
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        if convert_file(path, resolver, module)[1]:
            left.append(str(path.relative_to(ROOT)))
    assert not left, f"docstrings not in the rendered style (run `make docstrings`): {left}"


def test_conversion_rules(resolver):
    module = "sp_ode.markov.stationary"
    doc = ("Uses :func:`stationary_distribution` and :class:`~sp_ode.markov.bounds.ConvergenceError`, "
           ":mod:`sp_ode.core.memory`, :data:`NOT_A_NAME` and ``x``::\n\n    code\n")
    assert convert_docstring(doc, resolver, module) == (
        "Uses [`stationary_distribution`][sp_ode.markov.stationary.stationary_distribution] and "
        "[`ConvergenceError`][sp_ode.markov.bounds.ConvergenceError], `sp_ode.core.memory`, `NOT_A_NAME` "
        "and `x`:\n\n    code\n")
    section = ("Summary.\n\n    Parameters\n    ----------\n    x0 : array (m,), optional;  y0 : array (d,) — the state\n"
               "    tol : float\n        The tolerance.\n\n    Returns\n    -------\n    Path — the folder used.\n"
               "    info : dict, only when `return_info`.\n")
    assert convert_docstring(section) == (
        "Summary.\n\n    Parameters\n    ----------\n    x0 : array (m,), optional\n        The state\n"
        "    y0 : array (d,)\n        The state\n    tol : float\n        The tolerance.\n\n    Returns\n    -------\n"
        "    Path\n        the folder used.\n    info : dict\n        Only when `return_info`.\n")
    assert convert_docstring(convert_docstring(section)) == convert_docstring(section)   # idempotent
