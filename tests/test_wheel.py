"""Installed as users install it: the wheel built from these sources, in a fresh virtual environment.

The wheel is built from a copy of the sources (`python -m build --wheel`, offline: the build
backend of this environment, so nothing is written into the checkout) and installed with
`pip install --no-deps --no-index` into a new venv.  The dependencies (numpy, jax, torch, ...)
are not reinstalled: a `.pth` line puts this environment's site-packages on the new venv's
path.  A directory named in a `.pth` file joins `sys.path` without its own `.pth` files being
run, so the editable install's finder (`__editable__.sp_ode-*.pth`) stays out and `import
sp_ode` can only find the installed copy.  Every command runs from an empty folder outside the
checkout with a bare environment (no PYTHONPATH), as a user's shell would.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sp_ode", "neural")
SHIPPED = ("*.py", "*.pyi", "py.typed", "*.txt")   # [tool.setuptools.package-data] and the modules

# One worker runs this module (make test: --dist loadgroup), so the wheel and its venv are built once.
pytestmark = pytest.mark.xdist_group("test_wheel")


def package_files(root: Path) -> set[str]:
    """The files of `PACKAGES` under `root` a wheel must hold, as paths relative to `root`."""
    return {p.relative_to(root).as_posix() for package in PACKAGES for pattern in SHIPPED
            for p in (root / package).rglob(pattern) if "__pycache__" not in p.parts}


def wheel_problems(names: list[str], expected: set[str]) -> list[str]:
    """What a wheel holding `names` lacks or holds beyond the package files `expected` and its dist-info."""
    dist_info = {n for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    files = set(names) - dist_info
    problems = [f"missing {n}" for n in sorted(expected - files)]
    problems += [f"unexpected {n}" for n in sorted(files - expected)]
    if not any(n.endswith(".dist-info/entry_points.txt") for n in dist_info):
        problems.append("no entry_points.txt: no `sp-ode` console script, no neural subcommands")
    return problems


def run(args, cwd: Path, env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(wheel path, venv bin folder, empty working folder, bare environment)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        (src / name).write_bytes((ROOT / name).read_bytes())
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp / "home"), "PYTHONNOUSERSITE": "1", "MPLBACKEND": "Agg",
           "SP_ODE_NO_COMPILE_CACHE": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
           "MKL_NUM_THREADS": "1", "TMPDIR": str(tmp)}
    (tmp / "home").mkdir()
    built = run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--skip-dependency-check",
                 "--outdir", tmp / "dist", src], tmp, {**env, "PATH": os.environ.get("PATH", env["PATH"])})
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("sp_ode-*.whl")
    venv = tmp / "venv"
    made = run([sys.executable, "-m", "venv", "--without-pip", venv], tmp, env)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], tmp, env).stdout.strip())
    deps = dict.fromkeys(sysconfig.get_path(k) for k in ("purelib", "platlib"))   # this environment's, in order
    (site / "dependencies.pth").write_text("".join(f"{d}\n" for d in deps))
    pip = run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
               "--disable-pip-version-check", "-q", wheel], tmp, env)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    cwd = tmp / "elsewhere"
    cwd.mkdir()
    return wheel, venv / "bin", cwd, env


def test_the_wheel_holds_exactly_the_package_files(installed):
    wheel = installed[0]
    expected = package_files(ROOT)
    assert {"sp_ode/py.typed", "neural/py.typed", "sp_ode/__init__.pyi", "neural/phi/__init__.pyi",
            "sp_ode/core/errors.py"} <= expected
    names = zipfile.ZipFile(wheel).namelist()
    assert wheel_problems(names, expected) == []
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert "sp-ode = sp_ode.cli:program" in entry_points and "train = neural.commands.train" in entry_points


def test_the_wheel_check_reports_a_missing_stub_and_a_stray_file():
    expected = {"sp_ode/__init__.py", "sp_ode/__init__.pyi", "sp_ode/py.typed"}
    names = ["sp_ode/__init__.py", "sp_ode/py.typed", "tests/test_x.py", "sp_ode-0.3.0.dist-info/METADATA"]
    assert wheel_problems(names, expected) == [
        "missing sp_ode/__init__.pyi", "unexpected tests/test_x.py",
        "no entry_points.txt: no `sp-ode` console script, no neural subcommands"]


def test_imports_come_from_the_venv_not_the_checkout(installed):
    _, bin_, cwd, env = installed
    code = ("import json, sys, importlib.metadata as md, sp_ode, neural; "
            "print(json.dumps({'sp_ode': sp_ode.__file__, 'neural': neural.__file__, 'path': sys.path, "
            "'editable': [m for m in sys.modules if m.startswith('__editable__')], "
            "'dist': str(md.distribution('sp-ode')._path), 'version': sp_ode.__version__, "
            "'systems': len(sp_ode.SYSTEMS), 'families': len(sp_ode.FAMILIES), "
            "'error': issubclass(neural.CheckpointError, sp_ode.Error)}))")
    proc = run([bin_ / "python", "-c", code], cwd, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    venv = bin_.parent.resolve()
    for key in ("sp_ode", "neural", "dist"):
        assert Path(seen[key]).resolve().is_relative_to(venv), (key, seen[key])
    # nothing on the path can import the checkout's packages: the only folder inside the checkout allowed
    # there is the dependencies' site-packages (the checkout's .venv, where CI and `make` keep it), whose
    # editable finder does not run (its .pth files are not read: the check above)
    deps = Path(sys.prefix).resolve()
    inside = [p for p in seen["path"] if p and Path(p).resolve().is_relative_to(ROOT)
              and not Path(p).resolve().is_relative_to(deps)]
    assert not inside, seen["path"]
    assert not [p for p in seen["path"] if p and (Path(p) / "sp_ode" / "__init__.py").exists()
                and not Path(p).resolve().is_relative_to(venv)], seen["path"]
    assert seen["editable"] == []
    assert seen["version"] == "0.3.0" and seen["error"] is True
    assert seen["systems"] > 0 and seen["families"] > 0     # the catalogues load from the installed modules


def test_the_console_script_runs_the_demo_outside_the_checkout(installed):
    _, bin_, cwd, env = installed
    proc = run([bin_ / "sp-ode", "demo", "--json"], cwd, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["passed"] is True and set(report["checks"].values()) == {"ok"}
    # GTH's residual ‖p Q‖ is at rounding level for the 3-state demo family
    assert report["residual_max"] <= report["residual_tolerance"]


@pytest.mark.parametrize("command", ["train", "fit-phi"])
def test_neural_subcommands_arrive_through_the_entry_points(installed, command):
    _, bin_, cwd, env = installed
    proc = run([bin_ / "sp-ode", command, "--help"], cwd, env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith(f"usage: sp-ode {command}")
