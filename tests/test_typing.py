"""The typed public API (issue 37): every public function is annotated, and each public name is declared once.

Public = the names the packages' `__init__.pyi` stubs declare (`sp_ode.core.lazy.declared_names`).  That the
annotations name real types, and the stubs real objects, is mypy's check (`make lint`, `[tool.mypy]`).
"""
from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUB_PACKAGES = [".".join(p.parent.relative_to(ROOT).parts)
                 for root in ("sp_ode", "neural") for p in sorted((ROOT / root).rglob("__init__.pyi"))]


def public_objects() -> dict[str, object]:
    """`{qualified public name: object}`, each object once (the first package that declares it)."""
    from sp_ode.core.lazy import declared_names

    seen: dict[int, tuple[str, object]] = {}
    for package in STUB_PACKAGES:
        namespace = importlib.import_module(package)
        for name in declared_names(package):
            obj = getattr(namespace, name)
            seen.setdefault(id(obj), (f"{package}.{name}", obj))
    return dict(seen.values())


def unannotated(obj) -> list[str]:
    """What of `obj`'s signature carries no annotation: parameter names, and "return".

    *args, **kwargs and self are exempt; a class is judged by its constructor's parameters (its result is
    the class itself).  An object with no signature to inspect, or no callable at all, has nothing missing.
    """
    if isinstance(obj, type(inspect)) or not callable(obj):
        return []
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    missing = [name for name, p in sig.parameters.items()
               if p.annotation is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and name != "self"]
    if not isinstance(obj, type) and sig.return_annotation is sig.empty:
        missing.append("return")
    return missing


def test_the_stub_packages_are_found():
    assert {"sp_ode", "sp_ode.markov", "sp_ode.systems", "neural", "neural.phi"} <= set(STUB_PACKAGES)


def test_every_public_function_is_annotated():
    objects = public_objects()
    functions = [q for q, o in objects.items() if inspect.isfunction(inspect.unwrap(o))]
    # the walk reaches the central entry points and every stub (91 functions when issue 37 closed; an empty
    # walk would pass vacuously)
    assert {"sp_ode.simulate", "sp_ode.stationary_distribution", "sp_ode.verify", "sp_ode.sweep",
            "neural.fit_phi", "neural.phi_certificate"} <= set(functions)
    assert len(functions) >= 90
    missing = {q: m for q, o in objects.items()
               if not (isinstance(o, type) and issubclass(o, BaseException)) and (m := unannotated(o))}
    assert not missing, f"public functions with unannotated parameters or return: {missing}"


def test_the_annotation_check_sees_an_unannotated_function():
    def bare(Q, y: float, *args, eps=None, **kwargs):
        return Q

    def full(Q: object, *args: object, eps: float | None = None, **kwargs: object) -> object:
        return Q

    class Bare:
        def __init__(self, f, g: int) -> None:
            self.f = f

    assert unannotated(bare) == ["Q", "eps", "return"]
    assert unannotated(full) == []
    assert unannotated(Bare) == ["f"]
    # a wrapper (in_float64, functools.wraps) is judged by the function it wraps
    from sp_ode.core.precision import in_float64

    assert unannotated(in_float64(bare)) == ["Q", "eps", "return"]
    import sp_ode

    assert unannotated(sp_ode.simulate) == []


def test_the_annotations_carry_the_shapes_of_the_central_inputs():
    import sp_ode

    params = inspect.signature(sp_ode.simulate).parameters
    assert params["system"].annotation == "SystemLike"
    assert params["t_span"].annotation == "TimeSpan"
    # (the text of the annotation: Python's unparser may requote the shape string)
    assert params["x0"].annotation.replace("'", '"') == 'Float[ArrayLike, "*batch m"]'
    assert inspect.signature(sp_ode.stationary_distribution).parameters["Q"].annotation == "GeneratorMatrix"


# --- each name declared once ------------------------------------------------------------------------------------

def repeated_declarations(stub: Path, owners: set[str]) -> list[str]:
    """Names a stub imports from a module inside a subpackage in `owners` (one with a stub of its own),
    instead of from that subpackage: those are declared twice."""
    tree = ast.parse(stub.read_text())
    return [f"from .{node.module} import {alias.name}" for node in tree.body
            if isinstance(node, ast.ImportFrom) and node.module and "." in node.module
            and node.module.split(".")[0] in owners for alias in node.names]


def owners_of(stub: Path) -> set[str]:
    return {d.name for d in stub.parent.iterdir() if (d / "__init__.pyi").is_file()}


@pytest.mark.parametrize("package", STUB_PACKAGES)
def test_each_public_name_is_declared_once(package):
    stub = ROOT.joinpath(*package.split("."), "__init__.pyi")
    assert repeated_declarations(stub, owners_of(stub)) == []


def test_a_re_declared_name_is_caught(tmp_path):
    (tmp_path / "systems").mkdir()
    (tmp_path / "systems" / "__init__.pyi").write_text("from .simulation import simulate as simulate\n")
    stub = tmp_path / "__init__.pyi"
    stub.write_text("from .systems.simulation import simulate as simulate\nfrom .core.cache import x as x\n")
    assert repeated_declarations(stub, owners_of(stub)) == ["from .systems.simulation import simulate"]
    stub.write_text("from .systems import simulate as simulate\nfrom .core.cache import x as x\n")
    assert repeated_declarations(stub, owners_of(stub)) == []


def test_a_name_imported_from_a_subpackage_is_the_subpackages_object():
    # the one-declaration form resolves at run time (lazy_loader imports the subpackage, then its name)
    import neural
    import sp_ode
    import sp_ode.systems.simulation
    from sp_ode.core.lazy import declared_names

    assert sp_ode.simulate is sp_ode.systems.simulate is sp_ode.systems.simulation.simulate
    # declared_names follows the subpackage's stub to the defining module
    assert declared_names("sp_ode")["simulate"] == "sp_ode.systems.simulation"
    assert declared_names("neural")["fit_phi"] == "neural.phi.fit"
    assert neural.fit_phi is importlib.import_module("neural.phi.fit").fit_phi
