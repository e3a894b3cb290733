"""Lazy package namespaces, declared once in a type stub.

Each package's public names are written in its `__init__.pyi` as
`from .module import name as name` lines.  That one file is both what type checkers
and IDEs read (so they see `sp_ode.simulate` with its signature) and, through
`lazy_loader.attach_stub`, the map from a name to the module that defines it: a name
resolves on first use, so `import sp_ode` pulls in neither jax nor sympy, and
`import neural` not torch, until a name that needs them is touched.

A name is declared once: a package re-exporting a subpackage's name imports it from the
subpackage (`from .systems import simulate as simulate` in `sp_ode/__init__.pyi`); at run
time that resolves `sp_ode.systems`, whose own stub names the defining module.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import lazy_loader


def lazy_namespace(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """`(__getattr__, __dir__, __all__)` for `package` from the stub beside `init_file`.

    A name resolves to the module its stub line names, on first use.  Names that moved
    between packages are not kept as aliases (CHANGELOG.md lists every move).
    """
    return lazy_loader.attach_stub(package, init_file)


def declared_names(package: str) -> dict[str, str]:
    """`{public name: defining module}` as declared in `package`'s `__init__.pyi` (subpackages excluded).

    A name imported from a subpackage with a stub of its own is followed into that stub, so the
    value is always the module that defines the name, never the package that re-exports it.
    """
    import ast
    from pathlib import Path

    init = Path(importlib.import_module(package).__file__)
    tree = ast.parse(init.with_suffix(".pyi").read_text())
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            source = f"{package}.{node.module}"
            stub = init.parent.joinpath(*node.module.split("."), "__init__.pyi")
            owned = declared_names(source) if stub.is_file() else {}
            for alias in node.names:
                names[alias.name] = owned.get(alias.name, source)
    return names
