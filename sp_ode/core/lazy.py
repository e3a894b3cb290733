"""Lazy package namespaces: public names resolve to their defining module on first use.

Keeps ``import sp_ode`` free of jax/sympy and ``import neural`` free of torch until a
name that needs them is touched.
"""
from __future__ import annotations

import importlib


def lazy_namespace(package: str, names: dict[str, str]):
    """``(__getattr__, __dir__)`` for `package`, resolving ``names[attr]`` modules on demand.

    A name not in `names` falls back to the submodule ``package.attr`` (so
    ``sp_ode.systems`` works like an attribute); anything else is an AttributeError.
    """
    import sys

    def __getattr__(attr: str):
        module = names.get(attr)
        if module is None:
            try:
                return importlib.import_module(f"{package}.{attr}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{attr}":
                    raise
            raise AttributeError(f"module {package!r} has no attribute {attr!r}")
        value = getattr(importlib.import_module(module), attr)
        setattr(sys.modules[package], attr, value)  # cache: later lookups skip __getattr__
        return value

    def __dir__():
        return sorted(names)

    return __getattr__, __dir__
