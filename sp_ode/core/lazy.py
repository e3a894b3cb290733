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
import warnings

import lazy_loader


def lazy_namespace(package: str, init_file: str, *, moved: dict[str, str] | None = None):
    """`(__getattr__, __dir__, __all__)` for `package` from the stub beside `init_file`.

    `moved` maps names that used to live in this package to the module that defines them
    now; they still resolve, with a `DeprecationWarning` naming the new home, and are not
    listed in `__all__`.
    """
    getattr_, dir_, all_ = lazy_loader.attach_stub(package, init_file)
    moved = dict(moved or {})

    def __getattr__(name: str):
        if name in moved:
            new_home = moved[name]
            warnings.warn(f"`{package}.{name}` has moved to `{new_home.rsplit('.', 1)[0]}`: import it from "
                          f"there (or from `sp_ode`); the old name will be removed.", DeprecationWarning,
                          stacklevel=2)
            return getattr(importlib.import_module(new_home), name)
        return getattr_(name)

    return __getattr__, dir_, all_


def declared_names(package: str) -> dict[str, str]:
    """`{public name: defining module}` as declared in `package`'s `__init__.pyi` (subpackages excluded)."""
    import ast
    from pathlib import Path

    init = Path(importlib.import_module(package).__file__)
    tree = ast.parse(init.with_suffix(".pyi").read_text())
    return {alias.name: f"{package}.{node.module}" for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module for alias in node.names}
