"""Lazy package namespaces, declared once in a type stub.

Each package's public names are written in its `__init__.pyi` as
`from .module import name as name` lines.  That one file is both what type checkers
and IDEs read (so they see `sp_ode.simulate` with its signature) and, through
`lazy_loader.attach_stub`, the map from a name to the module that defines it: a name
resolves on first use, so `import sp_ode` pulls in neither jax nor sympy, and
`import neural` not torch, until a name that needs them is touched.
"""
from __future__ import annotations

import importlib

import lazy_loader


def lazy_namespace(package: str, init_file: str):
    """`(__getattr__, __dir__, __all__)` for `package` from the stub beside `init_file`.

    A name resolves to the module its stub line names, on first use.  Names that moved
    between packages are not kept as aliases (CHANGELOG.md lists every move).
    """
    return lazy_loader.attach_stub(package, init_file)


def declared_names(package: str) -> dict[str, str]:
    """`{public name: defining module}` as declared in `package`'s `__init__.pyi` (subpackages excluded)."""
    import ast
    from pathlib import Path

    init = Path(importlib.import_module(package).__file__)
    tree = ast.parse(init.with_suffix(".pyi").read_text())
    return {alias.name: f"{package}.{node.module}" for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}
