"""The architecture, checked: the public API stays where users have it, imports go one way,
no private name crosses a module, and the import contracts catch a deliberate back-import."""
from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# Every public name importable from these namespaces before the layout change (v0.1.0),
# listed by hand so that a name silently dropped from an __init__ fails here.
PUBLIC_API = {
    "sp_ode": [
        "ConvergenceCertificate", "FAMILIES", "FastSlowSystem", "GeneratorFamily", "METHODS",
        "ManifoldNotFoundError", "MasterEquationSystem", "NotIrreducibleError", "SYSTEMS",
        "SignUndecidableError", "SlowManifold", "SolverError", "StationaryCertificate", "SymbolicSizeError",
        "SymbolicStationary", "Trajectory", "__version__", "birth_death", "check_generator",
        "check_symbolic_generator", "closed_classes", "cme_two_species", "communicating_classes",
        "continue_manifold", "convergence_certificate", "critical_manifold", "detailed_balance", "from_rates",
        "from_transition_matrix", "get_family", "get_system", "group_inverse", "group_inverse_apply",
        "is_irreducible", "kolmogorov_criterion", "locate_loss_of_hyperbolicity", "normal_hyperbolicity",
        "numeric_bridge", "reduced_system", "simulate", "simulate_reduced", "slow_manifold", "spectral_gap",
        "stationary_distribution", "stationary_distributions", "stationary_residual", "symbolic_generator",
        "symbolic_stationary", "uniformize", "verify_stationary",
    ],
    "sp_ode.symbolic": [
        "BridgeReport", "ReversibilityReport", "SignUndecidableError", "StationaryCertificate",
        "SymbolicSizeError", "SymbolicStationary", "birth_death_generator", "check_symbolic_generator",
        "complete_generator", "detailed_balance", "kolmogorov_criterion", "numeric_bridge", "ring_generator",
        "symbolic_generator", "symbolic_stationary", "verify_stationary",
    ],
    "sp_ode.systems": [
        "CatalogueEntry", "DEFAULT_SYSTEM", "SYSTEMS", "get_system", "master_equation_entry",
    ],
    "neural": [
        "ARMS", "ByteCorpus", "CheckpointError", "CheckpointMismatchError", "FastSlowLM", "MarkovSource",
        "ModelConfig", "PRESETS", "PhiCertificate", "PhiEvaluation", "PhiFit", "PhiMLP", "TrainConfig",
        "TrainResult", "add_to_blocks", "block_mean_pool", "evaluate_phi", "fit_phi", "get_batch", "kl_loss",
        "lag_one_block", "load_corpus", "load_text", "markov_corpus", "phi_certificate", "residual_loss",
        "small", "tiny",
    ],
}


@pytest.mark.parametrize("namespace", sorted(PUBLIC_API))
def test_every_public_name_still_importable(namespace):
    module = importlib.import_module(namespace)
    missing = [name for name in PUBLIC_API[namespace] if not hasattr(module, name)]
    assert not missing, f"{namespace} lost {missing}"
    for name in PUBLIC_API[namespace]:  # `from namespace import name` works too
        exec(f"from {namespace} import {name}", {})


def test_every_listed_name_of_each_subpackage_resolves():
    for namespace in ("sp_ode", "sp_ode.markov", "sp_ode.networks", "sp_ode.systems", "sp_ode.manifolds",
                      "sp_ode.verification", "sp_ode.sweeps", "sp_ode.symbolic", "neural"):
        module = importlib.import_module(namespace)
        for name in module.__all__:
            getattr(module, name)


def _private_imports(paths) -> list[str]:
    """`from pkg.mod import _name` (or `pkg.mod._name`) inside the package sources."""
    found = []
    for path in paths:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("sp_ode", "neural"):
                package_dir = ROOT.joinpath(*node.module.split("."))
                for alias in node.names:
                    if (package_dir / f"{alias.name}.py").exists():
                        continue  # a private *module* of that package (import-linter checks who imports it)
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{alias.name}")
    return found


def test_no_module_imports_a_private_name_of_another():
    sources = sorted((ROOT / "sp_ode").rglob("*.py")) + sorted((ROOT / "neural").rglob("*.py"))
    assert _private_imports(sources) == []


def test_private_name_check_fails_on_a_deliberate_private_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from sp_ode.markov.generator import _format_classes\n")
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert len(_private_imports([bad])) == 1
    finally:
        ROOT = saved


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}, timeout=300)


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed (pip install -e '.[test]')")
def test_import_contracts_hold_and_catch_a_back_import(tmp_path):
    # A copy of the packages: the contracts hold on it as committed ...
    for name in ("sp_ode", "neural", "bench"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    ok = _lint_imports(tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    # ... and break on a library module that imports neural (the back-import the layout forbids)
    with open(tmp_path / "sp_ode" / "markov" / "generator.py", "a") as fh:
        fh.write("\nimport neural.lm.config  # deliberate back-import\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "sp_ode never imports neural" in broken.stdout and "BROKEN" in broken.stdout
    # ... and on a library module that imports a benchmark (bench sits beside the libraries, above them)
    shutil.copy(ROOT / "sp_ode" / "markov" / "generator.py", tmp_path / "sp_ode" / "markov" / "generator.py")
    with open(tmp_path / "neural" / "config.py", "a") as fh:
        fh.write("\nimport bench.render  # deliberate import of a benchmark\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "sp_ode never imports neural (neural depends on sp_ode, one way) KEPT" in broken.stdout
    assert "the benchmarks (bench) are imported by nothing in the libraries BROKEN" in broken.stdout


def test_no_docstring_cites_a_file_outside_the_repository():
    offenders = []
    for path in sorted((ROOT / "sp_ode").rglob("*.py")) + sorted((ROOT / "neural").rglob("*.py")):
        text = path.read_text()
        if "DESIGN" in text or "../shared" in text or "STYLE.md" in text:
            offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_theory_notes_exist_with_the_cited_sections():
    theory = (ROOT / "docs" / "theory.md").read_text()
    cited = set()
    for path in list((ROOT / "sp_ode").rglob("*.py")) + list((ROOT / "neural").rglob("*.py")):
        cited.update(re.findall(r"docs/theory\.md §(\d+(?:\.\d+)?)", path.read_text()))
    assert cited, "no docstring cites docs/theory.md"
    for section in sorted(cited):
        assert f"§{section} " in theory, f"docs/theory.md has no section §{section}"


MAX_MODULES = 15


def _module_counts(root: Path) -> dict[str, int]:
    return {str(d.relative_to(root)): sum(1 for f in d.glob("*.py") if f.name != "__init__.py")
            for d in [root, *root.rglob("*")] if d.is_dir() and d.name != "__pycache__"}


def test_no_folder_holds_more_than_fifteen_modules(tmp_path):
    for package in ("sp_ode", "neural", "bench"):
        crowded = {d: n for d, n in _module_counts(ROOT / package).items() if n > MAX_MODULES}
        assert not crowded, f"folders over {MAX_MODULES} modules: {crowded}"
    # the check itself sees a crowded folder
    (tmp_path / "pkg").mkdir()
    for i in range(MAX_MODULES + 1):
        (tmp_path / "pkg" / f"m{i}.py").write_text("")
    assert _module_counts(tmp_path)["pkg"] == MAX_MODULES + 1


def test_every_package_has_a_docstring_and_a_declared_api():
    from sp_ode.core.lazy import declared_names

    for package in ("sp_ode.markov", "sp_ode.networks", "sp_ode.systems", "sp_ode.manifolds", "sp_ode.verification",
                    "sp_ode.sweeps", "sp_ode.symbolic", "neural"):
        module = importlib.import_module(package)
        assert (module.__doc__ or "").strip(), f"{package} has no docstring"
        names = declared_names(package)
        assert names and set(names) <= set(module.__all__), package


def test_the_architecture_page_names_every_package():
    text = (ROOT / "docs" / "architecture.md").read_text()
    for package in ("core", "markov", "symbolic", "systems", "manifolds", "networks", "verification", "sweeps", "cli"):
        assert f"sp_ode.{package}" in text, package


# One door (sp_ode.systems.resolve): what an object is, is decided by its type, never by the attributes it
# happens to carry, and no module looks into sys.modules to learn what was imported.
_DUCK = re.compile(r"\b(?:hasattr|getattr)\(\s*(?:obj|system|entry|spec|model|case\.system)\s*,\s*"
                   r"[\"'](?:system|network|space|gen|slow_odes|simulate_reduced|Q_of_y)[\"']")
_SNIFF = re.compile(r"\bsys\.modules\b")
# Where sys.modules is the subject itself: loading a user's file as a module (and unloading it), registering
# those modules for pickling by value, fingerprinting the user's helper modules by their source, and the proof
# harness's own module loading.
_SYS_MODULES_OWNERS = {"sp_ode/core/files.py", "sp_ode/sweeps/_dask.py", "sp_ode/sweeps/_fingerprint.py",
                       "sp_ode/cli/prove.py"}


def _door_offences(paths, root: Path) -> list[str]:
    found = []
    for path in paths:
        rel = path.relative_to(root).as_posix()
        for k, line in enumerate(path.read_text().splitlines(), 1):
            if _DUCK.search(line):
                found.append(f"{rel}:{k}: duck typing: {line.strip()}")
            if _SNIFF.search(line) and rel not in _SYS_MODULES_OWNERS:
                found.append(f"{rel}:{k}: sys.modules sniffing: {line.strip()}")
    return found


def test_no_duck_typing_of_systems_and_no_sys_modules_sniffing():
    sources = sorted((ROOT / "sp_ode").rglob("*.py")) + sorted((ROOT / "neural").rglob("*.py"))
    assert _door_offences(sources, ROOT) == []


def test_door_check_fails_on_a_duck_typed_network_and_a_sniff(tmp_path):
    (tmp_path / "sp_ode").mkdir()
    bad = tmp_path / "sp_ode" / "bad.py"
    bad.write_text('import sys\nif hasattr(system, "network"):\n    pass\nnet = sys.modules.get("sp_ode.x")\n')
    found = _door_offences([bad], tmp_path)
    assert len(found) == 2 and "duck typing" in found[0] and "sniffing" in found[1]


def unnamed_modules(package_dir: Path, dotted: str) -> list[str]:
    """The modules and subpackages of a package its `__init__` docstring does not name.

    A module counts as named when the docstring writes it in backticks (`` `mod` ``) or by its
    dotted path (`pkg.mod`, `pkg.mod.name`); `__main__` and `__init__` are not listed.
    """
    doc = ast.get_docstring(ast.parse((package_dir / "__init__.py").read_text())) or ""
    members = sorted({p.stem for p in package_dir.glob("*.py") if not p.stem.startswith("__")}
                     | {p.parent.name for p in package_dir.glob("*/__init__.py")})
    return [m for m in members
            if f"`{m}`" not in doc and not re.search(rf"{re.escape(dotted)}\.{m}(?!\w)", doc)]


def test_every_package_docstring_names_each_of_its_modules(tmp_path):
    missing = {}
    for package in ("sp_ode", "neural"):
        for init in sorted((ROOT / package).rglob("__init__.py")):
            dotted = ".".join(init.parent.relative_to(ROOT).parts)
            if unnamed := unnamed_modules(init.parent, dotted):
                missing[dotted] = unnamed
    assert not missing, f"package docstrings that do not name each of their modules: {missing}"
    # the check itself sees a module the docstring leaves out
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text('"""- `alpha` — one; `pkg.beta.f` two."""\n')
    for name in ("alpha.py", "beta.py", "betamax.py", "gamma.py", "__main__.py", "sub/__init__.py"):
        (tmp_path / "pkg" / name).write_text("")
    assert unnamed_modules(tmp_path / "pkg", "pkg") == ["betamax", "gamma", "sub"]


def cross_package_imports(root: Path) -> dict[str, dict[str, set[str]]]:
    """{module: {name: importing subpackages}}: every `from sp_ode.X… import name` (or neural's) made from
    another subpackage, of a name that no stub declares public (`sp_ode.seams` says why these matter)."""
    from sp_ode.core.lazy import declared_names

    public: set[str] = set()
    for top in ("sp_ode", "neural"):
        for init in (root / top).rglob("__init__.pyi"):
            public |= set(declared_names(".".join(init.parent.relative_to(root).parts)))
    found: dict[str, dict[str, set[str]]] = {}
    for top in ("sp_ode", "neural"):
        for path in sorted((root / top).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            home = ".".join(parts[:2]) if len(parts) > 2 else parts[0]
            for node in ast.walk(ast.parse(path.read_text())):
                if not (isinstance(node, ast.ImportFrom) and node.module
                        and node.module.split(".")[0] in ("sp_ode", "neural")):
                    continue
                module = node.module.split(".")
                if len(module) < 2 or ".".join(module[:2]) == home:
                    continue
                for alias in node.names:
                    if alias.name not in public:
                        found.setdefault(node.module, {}).setdefault(alias.name, set()).add(home)
    return found


def seam_mismatches(found: dict, declared: dict) -> list[str]:
    """Undeclared crossings, and declared seams that nothing imports (or not from the packages listed)."""
    out = []
    for module, names in found.items():
        for name, users in names.items():
            listed = set(declared.get(module, {}).get(name, ()))
            if not listed:
                out.append(f"{module}.{name} is imported by {sorted(users)} but declared in no seams table")
            elif listed != users:
                out.append(f"{module}.{name}: imported by {sorted(users)}, the seams table says {sorted(listed)}")
    for module, names in declared.items():
        for name in names:
            if name not in found.get(module, {}):
                out.append(f"{module}.{name} is declared a seam but nothing imports it across packages")
    return out


def test_every_internal_seam_is_declared_once_and_used():
    from neural.seams import SEAMS as NEURAL_SEAMS
    from sp_ode.seams import SEAMS

    assert not set(SEAMS) & set(NEURAL_SEAMS)
    assert all(m.startswith("sp_ode") for m in SEAMS) and all(m.startswith("neural") for m in NEURAL_SEAMS)
    assert seam_mismatches(cross_package_imports(ROOT), {**SEAMS, **NEURAL_SEAMS}) == []


def test_the_seam_check_names_an_undeclared_import_and_a_stale_entry(tmp_path):
    (tmp_path / "sp_ode" / "markov").mkdir(parents=True)
    (tmp_path / "sp_ode" / "markov" / "a.py").write_text("from sp_ode.core.validation import check_positive\n")
    (tmp_path / "sp_ode" / "markov" / "b.py").write_text("from sp_ode.systems.simulation import run_engines\n")
    found = cross_package_imports(tmp_path)
    declared = {"sp_ode.core.validation": {"check_positive": ("sp_ode.markov",)},
                "sp_ode.core.files": {"write_json": ("sp_ode.markov",)}}
    assert seam_mismatches(found, declared) == [
        "sp_ode.systems.simulation.run_engines is imported by ['sp_ode.markov'] but declared in no seams table",
        "sp_ode.core.files.write_json is declared a seam but nothing imports it across packages"]
