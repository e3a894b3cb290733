"""One error family: every exception sp_ode and neural define subclasses `sp_ode.Error` and keeps
its built-in base, every warning subclasses `sp_ode.SpOdeWarning`, and docs/api/errors.md lists
each public one with its module and built-in base (so a new error cannot land undocumented)."""
from __future__ import annotations

import builtins
import importlib
import pkgutil
import re
import types
from pathlib import Path

import pytest

import sp_ode
from sp_ode.core.errors import Error, SpOdeWarning

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "api" / "errors.md"
BUILTIN = {c for c in vars(builtins).values() if isinstance(c, type) and issubclass(c, BaseException)}
ROW = re.compile(r"^\| `(\w+)` \| `([\w.]+)` \| `(\w+)` \| .+ \|$", flags=re.M)


def library_modules(packages=("sp_ode", "neural")) -> list[types.ModuleType]:
    """Every module of `packages`, imported (`__main__` runs the command line, so it is left out)."""
    modules = []
    for name in packages:
        package = importlib.import_module(name)
        modules.append(package)
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if info.name.rsplit(".", 1)[-1] != "__main__":
                modules.append(importlib.import_module(info.name))
    return modules


def defined_exceptions(modules) -> list[type]:
    """The exception and warning classes each module defines (not those it imports)."""
    return [obj for module in modules for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, BaseException) and obj.__module__ == module.__name__]


def builtin_base(cls: type) -> type:
    """The nearest built-in exception class in `cls`'s method resolution order."""
    return next(c for c in cls.__mro__ if c in BUILTIN)


def documented(text: str) -> dict[str, tuple[str, str]]:
    """`{class name: (module, built-in base)}` from the table rows of the errors page."""
    return {name: (module, base) for name, module, base in ROW.findall(text)}


def problems(classes, rows: dict[str, tuple[str, str]]) -> list[str]:
    """What is wrong with `classes` against the family rules and the documented `rows`."""
    found = []
    for cls in classes:
        where = f"{cls.__module__}.{cls.__name__}"
        root, family = (SpOdeWarning, "sp_ode.SpOdeWarning") if issubclass(cls, Warning) else (Error, "sp_ode.Error")
        if not issubclass(cls, root):
            found.append(f"{where} does not subclass {family}")
        if cls.__name__.startswith("_"):
            continue  # private control flow, caught inside its module: not on the page
        if cls.__name__ not in rows:
            found.append(f"{where} is not listed in docs/api/errors.md")
            continue
        module, base = rows[cls.__name__]
        if module != cls.__module__:
            found.append(f"{where}: docs/api/errors.md gives its module as {module}")
        if builtin_base(cls).__name__ != base:
            found.append(f"{where}: its built-in base is {builtin_base(cls).__name__}, docs/api/errors.md says {base}")
    names = {cls.__name__ for cls in classes}
    found += [f"docs/api/errors.md lists {name}, which no module defines" for name in sorted(set(rows) - names)]
    return found


@pytest.fixture(scope="module")
def classes():
    return defined_exceptions(library_modules())


def test_every_library_exception_is_in_the_family_and_documented(classes):
    names = {cls.__name__ for cls in classes}
    # the walk reaches every layer and neural (a walk that found nothing would pass vacuously)
    assert {"Error", "SpOdeWarning", "ExpressionSyntaxError", "NetworkError", "SolverError", "UsageError",
            "CheckpointError", "PhiFileError", "UselessSurrogateWarning"} <= names
    assert problems(classes, documented(PAGE.read_text())) == []


def test_existing_built_in_handlers_keep_working():
    assert issubclass(sp_ode.NetworkError, ValueError) and issubclass(sp_ode.NetworkError, sp_ode.Error)
    assert issubclass(sp_ode.SolverError, RuntimeError) and issubclass(sp_ode.SymbolicTimeoutError, TimeoutError)
    assert issubclass(sp_ode.Float32Warning, UserWarning) and issubclass(sp_ode.Float32Warning, sp_ode.SpOdeWarning)
    with pytest.raises(ValueError) as exc:
        sp_ode.stationary_distribution([[0.0, 0.0], [0.0, 0.0]])     # two closed classes: not irreducible
    assert type(exc.value) is sp_ode.NotIrreducibleError and isinstance(exc.value, sp_ode.Error)


def test_the_checker_reports_each_deliberate_mistake():
    fake = types.ModuleType("fake_errors")

    class Bare(ValueError):                      # outside the family
        pass

    class Dropped(Error):                        # lost the ValueError it is documented with
        pass

    class Undocumented(Error, KeyError):
        pass

    class LooseWarning(UserWarning):
        pass

    class _Private(Exception):                   # private: needs the base, not a row
        pass

    class Fine(Error, ValueError):
        pass

    for cls in (Bare, Dropped, Undocumented, LooseWarning, _Private, Fine):
        cls.__module__ = fake.__name__
        setattr(fake, cls.__name__, cls)
    fake.ValueError = ValueError                 # an imported class is not the module's own
    classes = defined_exceptions([fake])
    assert [c.__name__ for c in classes] == ["Bare", "Dropped", "Undocumented", "LooseWarning", "_Private", "Fine"]
    page = ("| `Bare` | `fake_errors` | `ValueError` | x |\n| `Dropped` | `fake_errors` | `ValueError` | x |\n"
            "| `LooseWarning` | `fake_errors` | `UserWarning` | x |\n| `Fine` | `elsewhere` | `ValueError` | x |\n"
            "| `Gone` | `fake_errors` | `ValueError` | x |\n")
    assert problems(classes, documented(page)) == [
        "fake_errors.Bare does not subclass sp_ode.Error",
        "fake_errors.Dropped: its built-in base is Exception, docs/api/errors.md says ValueError",
        "fake_errors.Undocumented is not listed in docs/api/errors.md",
        "fake_errors.LooseWarning does not subclass sp_ode.SpOdeWarning",
        "fake_errors._Private does not subclass sp_ode.Error",
        "fake_errors.Fine: docs/api/errors.md gives its module as elsewhere",
        "docs/api/errors.md lists Gone, which no module defines",
    ]
