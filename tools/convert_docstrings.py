"""Rewrite docstrings into the one style the API reference renders: numpydoc sections, Markdown.

    python tools/convert_docstrings.py sp_ode neural        (make docstrings; --check only reports)

mkdocstrings renders docstrings as Markdown with its numpy-style parser, so reST markup shows
as typed and entries written on one line put their text in the Type column.  For every
docstring (modules, classes, functions) of the packages named, this script:

1. turns Sphinx roles (``:class:`X```, ``:func:``, ``:meth:``, ``:attr:``, ``:data:``,
   ``:mod:``, ``:exc:``, ``:obj:``, with or without ``~``) into a Markdown cross-reference
   ``[`X`][full.path]`` when the target is rendered in the API reference (docs/api/*.md), else into
   inline code `` `X` ``;
2. turns reST literals (double backticks) into Markdown inline code (single backticks), and a
   paragraph ending in ``::`` (a reST literal block) into one ending in ``:``;
3. in Parameters / Attributes / Returns / Yields / Raises / Warns / Other Parameters sections,
   splits entries written on one line, ``name : type — description``, into ``name : type`` and
   an indented description; two entries on one line (``a : T;  b : U — text``) become two;
   a line whose text after ``name :`` is prose (a sentence, not a type) becomes the description.

It is idempotent (a second run changes nothing) and touches only docstring literals.  Rerun it
after merging modules written in another style; tests/docs/test_docstrings.py fails on any
role or double backtick left.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|data|mod|exc|obj):`(~?)([^`<]+?)(?:\s*<([^>]+)>)?`")
LITERAL = re.compile(r"``(.+?)``", re.S)
SECTIONS = ("Parameters", "Other Parameters", "Attributes", "Returns", "Yields", "Raises", "Warns",
            "Receives", "Warnings")
ENTRY_SECTIONS = {"Parameters", "Other Parameters", "Attributes", "Returns", "Yields", "Receives"}
NAME = r"[A-Za-z_*][\w*]*(?:\s*,\s*[A-Za-z_*][\w*]*)*"
ENTRY = re.compile(rf"^(?P<name>{NAME})\s+:\s*(?P<rest>.*)$")
DASH = " — "
# A type, as these docstrings write them: names, shapes, choices, "or", "optional", "of".
TYPE_WORDS = {"or", "of", "optional", "and", "a", "an", "the", "to", "->", "in", "with", "like", "none", "each",
              "per", "one", "same", "shape", "as", "from", "by", "at", "int", "float", "str", "bool", "dict",
              "list", "tuple", "array", "ndarray", "callable", "sequence", "mapping", "path", "int,", "float,"}


def documented_targets() -> set[str]:
    targets = set()
    for page in (ROOT / "docs" / "api").glob("*.md"):
        targets |= set(re.findall(r"^::: ([\w.]+)\s*$", page.read_text(), flags=re.M))
    return targets


class Resolver:
    """Full paths of the API reference's objects (and their public members) for a role's target."""

    def __init__(self, packages):
        self.targets = documented_targets()
        self.by_name: dict[str, set[str]] = {}
        for target in self.targets:
            self.by_name.setdefault(target.rsplit(".", 1)[1], set()).add(target)

    def resolve(self, text: str, module: str, cls: str | None) -> str | None:
        text = text.lstrip("~").strip().rstrip("()")
        head, _, member = text.partition(".")
        candidates = [text, f"{module}.{text}"]
        if cls:
            candidates.append(f"{module}.{cls}.{text}")
        if head in self.by_name and len(self.by_name[head]) == 1:
            base = next(iter(self.by_name[head]))
            candidates.append(base + (f".{member}" if member else ""))
        last = text.rsplit(".", 1)[-1]
        if "." in text and last in self.by_name and len(self.by_name[last]) == 1:
            candidates.append(next(iter(self.by_name[last])))
        for candidate in candidates:
            if candidate in self.targets:
                return candidate
            owner, _, attr = candidate.rpartition(".")
            if owner in self.targets and not attr.startswith("_") and _has_member(owner, attr):
                return candidate
        return None


def _has_member(path: str, attr: str) -> bool:
    import importlib

    module, _, name = path.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return False
    return isinstance(obj, type) and (hasattr(obj, attr) or attr in getattr(obj, "__dataclass_fields__", {})
                                      or attr in getattr(obj, "__annotations__", {}))


def convert_roles(text: str, resolver: Resolver | None, module: str, cls: str | None) -> str:
    def repl(match):
        kind, tilde, target, explicit = match.groups()
        target = (explicit or target).strip()
        shown = target.lstrip("~")
        if tilde or match.group(0).count("~"):
            shown = shown.rsplit(".", 1)[-1]
        full = resolver.resolve(target, module, cls) if resolver and kind != "mod" else None
        return f"[`{shown}`][{full}]" if full else f"`{shown}`"

    return ROLE.sub(repl, text)


def convert_literals(text: str) -> str:
    text = LITERAL.sub(lambda m: f"`{m.group(1).strip()}`" if "`" not in m.group(1) else m.group(0), text)
    # a reST literal block marker: "text::" ending a paragraph before an indented block
    return re.sub(r"(?<=\S)::(?=\n\s*\n)", ":", text)


def _is_prose(rest: str, limit: int = 4) -> bool:
    """True when the text after `name :` reads as a description rather than a type."""
    rest = rest.strip()
    if not rest:
        return False
    if rest.endswith(".") and not rest.endswith("..."):
        return True
    words = re.findall(r"[A-Za-z]+", re.sub(r"`[^`]*`|\"[^\"]*\"|'[^']*'|\([^)]*\)|\{[^}]*\}|\[[^\]]*\]", "", rest))
    prose_words = [w for w in words if w.lower() not in TYPE_WORDS and not w[0].isupper()]
    return len(prose_words) >= limit or (bool(words) and words[0].lower() in ("the", "a", "an"))


def _split_type(text: str) -> tuple[str, str]:
    """("ndarray (n,)", "p ≥ 0, sum 1.") from "ndarray (n,), p ≥ 0, sum 1.": the type before the first
    top-level ", " when it reads as a type (short, no prose); ("", text) otherwise."""
    depth = 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth == 0 and text.startswith(", ", i):
            head, tail = text[:i].strip(), text[i + 2:].strip()
            if head and tail and len(head.split()) <= 6 and not _is_prose(head, limit=2) and not head.endswith(".") \
                    and head[0] not in "\"'":   # a quoted choice ("a", "b" or "c") is one type, not a type and a text
                return head, tail
            return "", text
    return "", text


def _split_entries(line: str) -> list[str]:
    """`a : T;  b : U — text` -> [`a : T — text`, `b : U — text`] (the shared description kept on each)."""
    parts = re.split(rf";\s+(?={NAME}\s+:\s)", line)
    if len(parts) == 1:
        return parts
    tail = parts[-1].split(DASH, 1)
    shared = DASH + tail[1] if len(tail) == 2 else ""
    return [p if DASH in p else p + shared for p in parts[:-1]] + [parts[-1]]


def convert_sections(text: str) -> str:
    lines = text.split("\n")
    out: list[str] = []
    section = None
    base = None
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if stripped in SECTIONS and nxt and set(nxt) == {"-"} and len(nxt) >= 3:
            section, base = stripped, len(line) - len(line.lstrip())
            out += [line, lines[i + 1]]
            i += 2
            continue
        if section and stripped and (len(line) - len(line.lstrip())) < (base or 0):
            section = None
        if section in ENTRY_SECTIONS | {"Raises", "Warns"} and stripped and len(line) - len(line.lstrip()) == base:
            indent = " " * base
            entries = _split_entries(stripped) if section in ENTRY_SECTIONS - {"Returns", "Yields"} else [stripped]
            for entry in entries:
                match = ENTRY.match(entry) if section in ENTRY_SECTIONS else None
                if match:
                    name, rest = match.group("name"), match.group("rest").strip()
                    typ, desc = (rest.split(DASH, 1) + [""])[:2] if DASH in rest else (rest, "")
                    if not desc and _is_prose(typ):
                        head, tail = _split_type(typ)
                        typ, desc = (head, tail) if head else ("", typ)
                    desc = desc.strip()
                    desc = desc[:1].upper() + desc[1:]
                    out.append(f"{indent}{name} : {typ.strip()}".rstrip() if typ.strip() else f"{indent}{name}")
                    if desc.strip():
                        out.append(f"{indent}    {desc.strip()}")
                elif section in ("Returns", "Yields", "Raises", "Warns") and DASH in entry and not ENTRY.match(entry):
                    typ, desc = entry.split(DASH, 1)
                    out += [f"{indent}{typ.strip()}", f"{indent}    {desc.strip()}"]
                else:
                    out.append(f"{indent}{entry}")
            i += 1
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def convert_docstring(text: str, resolver: Resolver | None = None, module: str = "", cls: str | None = None) -> str:
    return convert_sections(convert_literals(convert_roles(text, resolver, module, cls)))


def _docstring_nodes(tree: ast.Module):
    """(string node, enclosing class name) for the module's and every class's and function's docstring."""
    def visit(node, cls):
        body = getattr(node, "body", [])
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            yield body[0].value, cls
        for child in body:
            if isinstance(child, ast.ClassDef):
                yield from visit(child, child.name if cls is None else f"{cls}.{child.name}")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield from visit(child, cls)
    yield from visit(tree, None)


def convert_file(path: Path, resolver: Resolver | None, module: str) -> tuple[str, int]:
    source = path.read_text()
    tree = ast.parse(source)
    lines = source.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def offset(lineno: int, col: int) -> int:   # ast columns count UTF-8 bytes, not characters
        return starts[lineno - 1] + len(lines[lineno - 1].encode()[:col].decode())

    edits = []
    for node, cls in _docstring_nodes(tree):
        start, end = offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)
        literal = source[start:end]
        prefix = re.match(r"[rRuU]*", literal).group(0)
        quote = literal[len(prefix): len(prefix) + 3]
        if quote not in ('"""', "'''"):
            continue
        inner = literal[len(prefix) + 3: -3]
        new = convert_docstring(inner, resolver, module, cls.split(".")[0] if cls else None)
        if new != inner:
            edits.append((start, end, f"{prefix}{quote}{new}{quote}"))
    for start, end, text in reversed(edits):
        source = source[:start] + text + source[end:]
    return source, len(edits)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("packages", nargs="+", help="package folders, e.g. sp_ode neural")
    parser.add_argument("--check", action="store_true", help="only report the files that would change")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    resolver = Resolver(args.packages)
    changed = 0
    for package in args.packages:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            new, count = convert_file(path, resolver, module)
            if count:
                changed += 1
                print(f"{path.relative_to(ROOT)}: {count} docstring(s)")
                if not args.check:
                    ast.parse(new)
                    path.write_text(new)
    print(f"{changed} file(s) {'would change' if args.check else 'changed'}", file=sys.stderr)
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
