"""The documentation's sources, checked without building the site (seconds).

Every page is in the navigation, no table is broken by a blank line, every public name of
`sp_ode` and `neural` (as declared in the packages' ``__init__.pyi``) is rendered on an API
page, each API page opens with a usage example, gallery titles are short and plain, and the
pages for readers name topics, not the project's issues or work sessions.  The built site is
checked in test_site.py.
"""
from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
API = DOCS / "api"
EXAMPLES = ROOT / "examples"


def _nav_pages(config: str) -> set[str]:
    return set(re.findall(r'^\s*-\s*(?:"[^"\n]*"\s*:\s*|[^:"\n]+:\s*)?([\w/.-]+\.md)\s*$', config, flags=re.M))


def _pages() -> list[Path]:
    return sorted(p for p in DOCS.rglob("*.md") if "generated" not in p.relative_to(DOCS).parts)


def test_every_page_is_in_the_navigation():
    nav = _nav_pages((ROOT / "mkdocs.yml").read_text())
    missing = [p.relative_to(DOCS).as_posix() for p in _pages() if p.relative_to(DOCS).as_posix() not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav (readers reach them only by search): {missing}"
    absent = [page for page in nav if not (DOCS / page).is_file()]
    assert not absent, f"mkdocs.yml's nav names pages that do not exist: {absent}"


def test_nav_check_catches_a_page_left_out():
    nav = _nav_pages('nav:\n  - Home: index.md\n  - Guide:\n      - guide/a.md\n      - B: guide/b.md\n'
                     '      - "C: with a colon": guide/c.md\n')
    assert nav == {"index.md", "guide/a.md", "guide/b.md", "guide/c.md"}


def broken_tables(text: str) -> list[int]:
    """Lines where a table row follows a blank line that follows a table row: the table ended there."""
    lines = text.split("\n")
    fence = False
    bad = []
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        if fence or i < 2:
            continue
        if line.startswith("|") and not lines[i - 1].strip() and lines[i - 2].startswith("|"):
            bad.append(i + 1)
    return bad


def test_no_table_is_cut_by_a_blank_line():
    found = {p.relative_to(DOCS).as_posix(): broken_tables(p.read_text()) for p in _pages()}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"a blank line inside a table ends it; the rest shows as raw text: {found}"
    assert broken_tables("| a | b |\n| --- | --- |\n| 1 | 2 |\n\n| 3 | 4 |\n") == [5]


def stray_pipes(line: str) -> list[int]:
    """Columns of the `|` in a table row that split a cell: one not written as a cell border
    (" | "), like `|g|`, and any `\\|` inside a code span (shown there with its backslash)."""
    found = []
    for i, ch in enumerate(line):
        if ch != "|" or i in (0, len(line) - 1):
            continue
        in_code = line[:i].count("`") % 2 == 1
        if line[i - 1] == "\\":
            if in_code:
                found.append(i)
        elif not (line[i - 1] == " " and line[i + 1] == " ") or in_code:
            found.append(i)
    return found


def test_no_stray_pipe_inside_a_table_cell():
    found = []
    for page in _pages():
        for n, line in enumerate(page.read_text().split("\n"), 1):
            if line.startswith("|") and line.rstrip().endswith("|") and set(line.strip()) - set("|-: ") \
                    and stray_pipes(line.rstrip()):
                found.append(f"{page.relative_to(DOCS)}:{n}")
    assert not found, f"a | inside a table cell splits it (write \\| outside code, &#124; inside): {found}"
    assert stray_pipes("| arm | gate |g| per layer |") == [13, 15]
    assert stray_pipes("| `sp-ode verify --system NAME\\|file.py` | x |") == [31]
    assert stray_pipes("| arm | gate \\|g\\| per layer | <code>a&#124;b</code> |") == []


# --- the API reference ---------------------------------------------------------------------------------

def public_packages() -> list[str]:
    """Every package with a declared namespace (an ``__init__.pyi``) under sp_ode/ and neural/."""
    stubs = sorted((ROOT / "sp_ode").rglob("__init__.pyi")) + sorted((ROOT / "neural").rglob("__init__.pyi"))
    return [".".join(p.parent.relative_to(ROOT).parts) for p in stubs]


def documented_objects() -> dict[int, str]:
    """id(object) -> the `::: target` that renders it, over every API page."""
    objects = {}
    for page in API.glob("*.md"):
        for target in re.findall(r"^::: ([\w.]+)\s*$", page.read_text(), flags=re.M):
            module, _, name = target.rpartition(".")
            try:
                obj = importlib.import_module(target)
            except ImportError:
                obj = getattr(importlib.import_module(module), name)
            objects[id(obj)] = target
    return objects


def undocumented(packages, documented: dict[int, str]) -> list[str]:
    from sp_ode.core.lazy import declared_names

    missing = []
    for package in packages:
        namespace = importlib.import_module(package)
        for name in declared_names(package):
            obj = getattr(namespace, name)
            if not isinstance(obj, type(importlib)) and id(obj) not in documented:
                missing.append(f"{package}.{name}")
    return missing


def test_every_public_name_has_an_api_entry():
    packages = public_packages()
    assert {"sp_ode", "sp_ode.markov", "sp_ode.networks", "neural"} <= set(packages)
    missing = undocumented(packages, documented_objects())
    assert not missing, ("public names with no `::: module.name` entry on a docs/api/ page (add one under the "
                         f"module that defines it): {missing}")


def test_api_coverage_check_catches_a_missing_name():
    documented = documented_objects()
    import sp_ode

    without = {k: v for k, v in documented.items() if v != "sp_ode.markov.stationary.stationary_distribution"}
    assert id(sp_ode.stationary_distribution) in documented
    assert "sp_ode.stationary_distribution" in undocumented(["sp_ode"], without)


@pytest.mark.parametrize("page", sorted(p.stem for p in API.glob("*.md") if p.stem != "index"))
def test_api_page_opens_with_a_usage_example(page):
    text = (API / f"{page}.md").read_text()
    assert re.search(r"^## Example\n\n```python\n.+?\n```", text, flags=re.M | re.S), \
        f"docs/api/{page}.md needs '## Example' with a python block before its entries"
    assert text.index("## Example") < text.index(":::"), f"docs/api/{page}.md: the example comes first"


# --- the gallery and the pages for readers -------------------------------------------------------------

def gallery_title(path: Path) -> str:
    text = path.read_text()
    match = re.match(r'r?"""\n# (.+)\n', text)
    return match.group(1) if match else ""


def title_problems(title: str) -> list[str]:
    problems = []
    if not title:
        problems.append("no '# Title' line opening the docstring")
    if len(title) > 45:
        problems.append(f"longer than 45 characters ({len(title)}): it is clipped on the gallery card")
    if re.search(r"[`^_{}\\$]", title):
        problems.append("markup in the title (backticks, ^, _, braces, $): it shows as typed on the card and menu")
    return problems


@pytest.mark.parametrize("name", sorted(p.stem for p in EXAMPLES.glob("*.py")))
def test_gallery_titles_are_short_and_plain(name):
    problems = title_problems(gallery_title(EXAMPLES / f"{name}.py"))
    assert not problems, f"examples/{name}.py: {problems}"


def test_title_check_catches_the_old_titles():
    assert title_problems("Slow manifolds to order 3 and their ε^{k+1} rates")
    assert title_problems("Your own master equation through `sp-ode verify`")
    assert title_problems("φ_θ on your own Q(y), one slow variable: fit, certify, save, reuse")
    assert not title_problems("Slow manifolds up to order 3")


INSIDER = re.compile(r"(?<![\w/.-])(?:[Ii]ssues? \d+|issue-\d+|[Ss]essions? \d+|`status`|can_start_another)")


def insider_wording(text: str) -> list[str]:
    return [m.group(0) for m in INSIDER.finditer(text)]


def test_pages_name_topics_not_issues_or_sessions():
    found = {p.relative_to(DOCS).as_posix(): insider_wording(p.read_text()) for p in _pages()}
    found = {k: v for k, v in found.items() if v}
    assert not found, f"pages for outside readers speak of the project's issues, sessions or machine status: {found}"
    assert insider_wording("as measured in session 7 (issue 15); `status`: not drawn") == \
        ["session 7", "issue 15", "`status`"]
    assert not insider_wording("coupling_session4.json, `results/markov/stationary_issue11.json`")


def test_home_page_heading_matches_its_commands():
    text = (DOCS / "index.md").read_text()
    block = text.split("## Two commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in block.strip().split("\n") if line.strip()]
    assert len(commands) == 2 and all(c.startswith("make ") for c in commands), commands


def test_getting_started_is_first_in_the_menu():
    nav = (ROOT / "mkdocs.yml").read_text().split("\nnav:\n", 1)[1]
    assert nav.strip().split("\n")[0].strip() == "- Getting started: getting_started.md"
