"""`sp-ode sweep CONFIG`: TOML/JSON configs, specs, resumable output, one-line errors.

Expected values: the CLI's result must equal `sp_ode.sweep` called with the same
inputs (the library is tested in tests/sweeps/test_sweep.py).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import sp_ode
from sp_ode.cli import main

TOML = """
system = "michaelis_menten"
t_span = [0.0, 2.0]
ts = [1.0, 2.0]
x0 = "manifold"
y0 = [1.0]
tol = 1e-6
chunk_size = 8
max_order = 0
validate_fraction = 0.25
seed = 4

[params]
eps = {loguniform = [1e-6, 1e-2, 12]}
kappa = {linspace = [0.5, 2.0, 12]}
"""


def test_toml_config_runs_and_matches_the_library(tmp_path, capsys):
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(TOML)
    out = tmp_path / "out"
    assert main(["sweep", str(cfg), "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report == json.loads((out / "report.json").read_text()) | {}
    assert report["points"] == 12 and report["failed"] == 0
    saved = np.load(out / "result.npz")
    rng = np.random.default_rng(4)
    eps = np.exp(rng.uniform(np.log(1e-6), np.log(1e-2), 12))   # the spec, drawn in config order
    np.testing.assert_array_equal(saved["param_eps"], eps)
    lib = sp_ode.sweep(sp_ode.get_system("michaelis_menten").system,
                       {"eps": eps, "kappa": np.linspace(0.5, 2.0, 12)}, (0.0, 2.0), "manifold", [1.0],
                       ts=[1.0, 2.0], tol=1e-6, chunk_size=8, max_order=0, validate_fraction=0.25, seed=4,
                       progress_bar=False)
    np.testing.assert_array_equal(saved["y"], lib.y)
    # rerun: every chunk read back from out/chunks
    assert main(["sweep", str(cfg), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks_computed"] == 0


@pytest.mark.parametrize("config, message", [
    ({"system": "nope"}, "`system` must be one of"),
    ({"params": {"eps": {"logspace": [-6, -2]}}}, "must be \\[a, b, n\\]"),
    ({"params": {"eps": [1e-3, 1e-4], "kappa": [1.0]}}, "equal lengths"),
    ({"params": {"eps": [1e-3, -1e-4]}}, "point 1 has eps = -0.0001"),
    ({"tol": 0}, "`tol` must be"),
    ({"colour": "red"}, "sweep.json': unknown key 'colour'; allowed"),
])
def test_bad_configs_are_one_line_usage_errors(tmp_path, capsys, config, message):
    base = {"system": "michaelis_menten", "t_span": [0, 2], "ts": [1, 2], "x0": "manifold", "y0": [1.0],
            "tol": 1e-6, "params": {"eps": [1e-3, 1e-4]}}
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps(base | config))
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sp-ode sweep: error:")
    import re
    assert re.search(message, err[0]), err[0]


@pytest.mark.parametrize("suffix", [".toml", ".json"])
def test_a_mistyped_config_key_names_the_file_the_key_and_the_key_meant(tmp_path, capsys, suffix):
    cfg = tmp_path / f"cfg{suffix}"
    base = {"system": "michaelis_menten", "t_span": [0, 2], "ts": [1, 2], "tol": 1e-6, "validate_fractoin": 0.1,
            "params": {"eps": [1e-3, 1e-4]}}
    if suffix == ".json":
        cfg.write_text(json.dumps(base))
    else:
        cfg.write_text('system = "michaelis_menten"\nt_span = [0, 2]\nts = [1, 2]\ntol = 1e-6\n'
                       'validate_fractoin = 0.1\n[params]\neps = [1e-3, 1e-4]\n')
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(cfg) in err[0], err
    assert "unknown key 'validate_fractoin' (did you mean 'validate_fraction'?)" in err[0]
    assert not (tmp_path / "o").exists()


def test_text_report_states_the_ratio_only_when_a_reduced_point_was_validated(tmp_path, capsys):
    """Every printed line is true: with no validated reduced point there is no ratio to print (was "nan")."""
    cfg = tmp_path / "sweep.toml"
    # ε ≥ 1e-3 with max_order 0: every point takes the full solve
    cfg.write_text(TOML.replace("eps = {loguniform = [1e-6, 1e-2, 12]}", "eps = {loguniform = [1e-3, 1e-2, 12]}"))
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "full")]) == 0
    text = capsys.readouterr().out
    assert "no validated point took a reduced path" in text and "nan" not in text
    cfg.write_text(TOML.replace("seed = 4", 'seed = 4\nroute = "reduced"\nvalidate_fraction = 1.0').replace(
        "validate_fraction = 0.25\n", ""))
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "mixed")]) == 0
    text = capsys.readouterr().out
    assert "worst true/estimated" in text and "on reduced paths" in text and "nan" not in text


def test_the_program_entry_point_pins_sweep_to_one_core(tmp_path):
    """`python -m sp_ode sweep …` runs on one core (sp_ode.core.cpu_pool); other commands keep theirs."""
    import os
    import subprocess
    import sys

    if not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs CPU affinity and at least two cores to tell pinned from not")
    probe = ("import os, sys, runpy; sys.argv = ['sp-ode'] + sys.argv[1:]; from sp_ode import cli; "
             "cli.main = lambda argv=None: print(len(os.sched_getaffinity(0))) or 0; "
             "raise SystemExit(cli.program())")
    counts = {}
    for command in ("sweep", "stationary"):
        run = subprocess.run([sys.executable, "-c", probe, command, "--help"], capture_output=True, text=True,
                             timeout=120, check=True)
        counts[command] = int(run.stdout.strip())
    assert counts == {"sweep": 1, "stationary": len(os.sched_getaffinity(0))}


@pytest.mark.parametrize("where", ["list", "spec"])
def test_sweep_config_payload_is_refused_and_expressions_are_numbers(tmp_path, capsys, where):
    from tests.payloads import assert_not_run, payload

    marker = tmp_path / "marker"
    params = {"eps": [1e-3, payload(marker)]} if where == "list" else {"eps": {"linspace": [payload(marker), 1, 2]}}
    base = {"system": "michaelis_menten", "t_span": [0, 2], "ts": [1, 2], "x0": "manifold", "y0": [1.0],
            "tol": 1e-6, "params": params}
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps(base))
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sp-ode sweep: error: `params.eps") and "'['" in err, err
    assert_not_run(marker)
    from sp_ode.cli.sweep import param_values

    assert param_values("eps", ["1/4096", 2e-3, "2^-10"], None).tolist() == [2.0**-12, 2e-3, 2.0**-10]


def test_help_gives_the_config_format_with_a_complete_example(capsys):
    """The keys, the value specs and the grid form are in `sp-ode sweep --help` (they were only in a docstring)."""
    assert main(["sweep", "--help"]) == 0
    text = capsys.readouterr().out
    for needle in ("[params]", "[grid]", "loguniform", "Cartesian product", "t_span", "ts = ", "tol = ",
                   "system = ", "route", "connect_timeout", "chunk_size"):
        assert needle in text, needle
    import tomllib

    from sp_ode.cli.sweep import FORMAT
    example = "\n".join(line[4:] for line in FORMAT.splitlines() if line.startswith("    "))
    config = tomllib.loads(example)                      # the example is a valid config
    assert {"system", "t_span", "ts", "tol", "params", "grid"} <= set(config)


def test_grid_is_the_cartesian_product_of_its_axes(tmp_path, capsys):
    cfg = tmp_path / "grid.toml"
    cfg.write_text('''
system = "michaelis_menten"
t_span = [0.0, 1.0]
ts = [1.0]
tol = 1e-6
route = "full"
validate_fraction = 0.0
[params]
eps = [1e-4, 1e-3]
[grid]
kappa = [0.5, 1.0, 2.0]
lam = {linspace = [0.3, 0.5, 2]}
''')
    out = tmp_path / "out"
    assert main(["sweep", str(cfg), "--out", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["points"] == 12
    saved = np.load(out / "result.npz")
    combos = {(e, k, lam) for e, k, lam in zip(saved["param_eps"], saved["param_kappa"], saved["param_lam"])}
    assert combos == {(e, k, lam) for e in (1e-4, 1e-3) for k in (0.5, 1.0, 2.0) for lam in (0.3, 0.5)}
    cfg.write_text(cfg.read_text().replace("kappa = [0.5, 1.0, 2.0]", "eps = [1.0]"))
    assert main(["sweep", str(cfg), "--out", str(out)]) == 2
    assert "both in `params` and in `grid`" in capsys.readouterr().err


MODEL = '''
import jax.numpy as jnp
import sp_ode
from helpers import RATE            # a sibling module of this file

def f(t, x, y, args):
    return y - (y + args["kappa"]) * x

def g(t, x, y, args):
    return -y + (y + args["kappa"] - RATE) * x

system = sp_ode.FastSlowSystem(f, g, eps=1e-3, m=1, d=1, args={"kappa": jnp.asarray(1.0)}, name="my_mm")
'''


def _model_config(tmp_path, rate: float, extra: str = "") -> Path:
    (tmp_path / "helpers.py").write_text(f"RATE = {rate}\n")
    (tmp_path / "model.py").write_text(MODEL)
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(f'''
system = "model.py:system"
t_span = [0.0, 1.0]
ts = [0.5, 1.0]
x0 = "manifold"
y0 = [1.0]
tol = 1e-6
chunk_size = 4
route = "full"
validate_fraction = 0.0
{extra}
[params]
eps = {{logspace = [-5, -3, 8]}}
kappa = {{linspace = [0.5, 2.0, 8]}}
''')
    return cfg


def test_a_changed_model_file_never_resumes(tmp_path, capsys):
    """The model file's sibling constant changes between runs: the second run refuses the old chunks (exit 2)
    instead of returning the old model's numbers (0 chunks computed, exit 0 before)."""
    import sys

    cfg = _model_config(tmp_path, 0.5)
    for name in [n for n in sys.modules if n == "helpers"]:
        del sys.modules[name]                       # another test's sibling of the same name
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 0
    capsys.readouterr()
    (tmp_path / "helpers.py").write_text("RATE = 0.3\n")
    for name in [n for n in sys.modules if n == "helpers" or n.startswith("_sp_ode_user_")]:
        del sys.modules[name]                       # a new process would import the edited files afresh
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds a different sweep" in err[0]
    # the edit named (the helper, and the model whose global RATE it set), not the other parts
    assert "the helper module 'helpers' changed" in err[0] and "the model (the code of f, g" in err[0], err[0]
    assert "swept points" not in err[0] and "options" not in err[0]


def test_no_earlier_result_is_replaced_without_overwrite(tmp_path, capsys):
    """Another command's report in --out, or another sweep's chunks: refused (exit 2) naming the file and
    --overwrite, the file unchanged; the same sweep resumes; --overwrite starts over."""
    base = {"system": "michaelis_menten", "t_span": [0, 2], "ts": [1, 2], "x0": "manifold", "y0": [1.0],
            "tol": 1e-6, "route": "full", "validate_fraction": 0.0, "params": {"eps": [1e-3, 1e-4]}}
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps(base))
    other = tmp_path / "verify_out"
    other.mkdir()
    (other / "report.json").write_text('{"verify": "full report"}')
    assert main(["sweep", str(cfg), "--out", str(other)]) == 2
    err = capsys.readouterr().err
    assert "report.json" in err and "never replaced silently" in err and "--overwrite" in err
    assert (other / "report.json").read_text() == '{"verify": "full report"}' and not (other / "chunks").exists()

    out = tmp_path / "o"
    assert main(["sweep", str(cfg), "--out", str(out)]) == 0
    first = (out / "report.json").read_text()
    cfg.write_text(json.dumps(base | {"params": {"eps": [1e-3, 1e-5]}}))      # another sweep, same folder
    capsys.readouterr()
    assert main(["sweep", str(cfg), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "holds a different sweep" in err and "--overwrite" in err
    assert "since the earlier run, the swept points (the names or values of `params`/grid):" in err
    assert (out / "report.json").read_text() == first
    assert main(["sweep", str(cfg), "--out", str(out), "--overwrite", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks_computed"] >= 1
    np.testing.assert_array_equal(np.load(out / "result.npz")["param_eps"], [1e-3, 1e-5])
    assert main(["sweep", str(cfg), "--out", str(out), "--json"]) == 0                 # the same sweep resumes
    assert json.loads(capsys.readouterr().out)["chunks_computed"] == 0


@pytest.mark.slow
def test_a_model_file_with_a_sibling_import_runs_on_a_local_dask_cluster(tmp_path, capsys):
    """`system = "model.py:OBJECT"` importing `helpers` from its own folder: in this process and on the worker
    processes of a real LocalCluster (shipped by value: they cannot import either file), the same numbers."""
    pytest.importorskip("distributed")
    import sys

    cfg = _model_config(tmp_path, 0.5)
    for name in [n for n in sys.modules if n == "helpers"]:
        del sys.modules[name]                       # another test's sibling of the same name
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "here")]) == 0
    here = np.load(tmp_path / "here" / "result.npz")["y"]
    for name in [n for n in sys.modules if n == "helpers"]:
        del sys.modules[name]
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "dask"), "--client", "local", "--force-cluster"]) == 0, \
        capsys.readouterr().err
    there = np.load(tmp_path / "dask" / "result.npz")["y"]
    ran = json.loads((tmp_path / "dask" / "report.json").read_text())["plan"]["executor"]
    assert ran["executor"] == "dask" and ran["why"] == "force_cluster=True"
    np.testing.assert_array_equal(there, here)


def test_a_local_cluster_predicted_slower_is_one_warning_line_and_the_report_says_why(tmp_path, capsys):
    """--client local on 12 points: no cluster started (a worker's start alone costs more than the sweep's
    counted work), one warning line with the figures, the choice in report.json."""
    cfg = _mm_config(tmp_path)
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "o"), "--client", "local", "--json"]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert len(err) == 1 and err[0].startswith("sp-ode sweep: warning: sweep: client='local' not started: predicted")
    ran = json.loads((tmp_path / "o" / "report.json").read_text())["plan"]["executor"]
    assert ran["executor"] == "in-process" and ran["forecast"]["local_cluster_s"] >= ran["forecast"]["in_process_s"]


def test_a_silent_scheduler_is_one_line_and_exit_3_within_the_timeout(tmp_path, capsys):
    import socket
    import time

    pytest.importorskip("distributed")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)          # accepts (the kernel completes the handshake), never answers
    try:
        cfg = _model_config(tmp_path, 0.5)
        start = time.monotonic()
        code = main(["sweep", str(cfg), "--out", str(tmp_path / "o"), "--client",
                     f"tcp://127.0.0.1:{server.getsockname()[1]}", "--connect-timeout", "2"])
        assert code == 3 and time.monotonic() - start < 15
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "no Dask scheduler answered" in err[0] and "within 2 s" in err[0]
    finally:
        server.close()


def test_a_port_that_is_not_a_scheduler_is_one_line_and_closes_quietly(tmp_path):
    """A server that answers with other bytes (an HTTP error page) at --client: the command printed its one
    error line, then dask's `Client.__del__` waited 2·timeout for a goodbye that could not come and printed a
    TimeoutError traceback at exit.  Now: the error line, nothing after it, exit 3."""
    import contextlib
    import os
    import socket
    import subprocess
    import sys
    import threading

    pytest.importorskip("distributed")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def answer():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn = server.accept()[0]
            except OSError:
                continue
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n" * 100)
            conn.close()

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    cfg = tmp_path / "sweep.json"
    cfg.write_text(json.dumps({"system": "michaelis_menten", "t_span": [0, 2], "ts": [1, 2], "x0": "manifold",
                               "y0": [1.0], "tol": 1e-6, "params": {"eps": [1e-3, 1e-4]}}))
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "SP_ODE_NO_COMPILE_CACHE": "1"}
    try:
        proc = subprocess.run([sys.executable, "-m", "sp_ode", "sweep", str(cfg), "--out", str(tmp_path / "o"),
                               "--client", f"tcp://127.0.0.1:{server.getsockname()[1]}", "--connect-timeout", "3"],
                              capture_output=True, text=True, timeout=120, env=env)
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()
    assert proc.returncode == 3, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sp-ode sweep: error:") and "no Dask scheduler" in lines[0], lines
    assert "Traceback" not in proc.stderr


def _mm_config(tmp_path) -> Path:
    cfg = tmp_path / "sweep.toml"
    cfg.write_text(TOML)
    return cfg


def _mm_library(out=None):
    """The library call with the inputs of TOML (the spec drawn as `points` draws it)."""
    rng = np.random.default_rng(4)
    eps = np.exp(rng.uniform(np.log(1e-6), np.log(1e-2), 12))
    return sp_ode.sweep(sp_ode.get_system("michaelis_menten").system,
                        {"eps": eps, "kappa": np.linspace(0.5, 2.0, 12)}, (0.0, 2.0), "manifold", [1.0],
                        ts=[1.0, 2.0], tol=1e-6, chunk_size=8, max_order=0, validate_fraction=0.25, seed=4,
                        progress_bar=False, out=out)


def test_a_sweep_killed_before_its_first_manifest_resumes_with_the_same_command(tmp_path, capsys):
    """`kill -9` while the first manifest was being written leaves `chunks/` holding only the temporary file
    of `atomic_write_bytes`: the same command was refused ("an earlier result in --out already exists") and
    the orphan stayed.  Now the orphan is removed and the command runs; a stranger's file is still refused."""
    cfg, out = _mm_config(tmp_path), tmp_path / "out"
    (out / "chunks").mkdir(parents=True)
    orphan = out / "chunks" / ".manifest.json.k9x2_a.tmp"
    orphan.write_text('{"format": 2, "finger')                      # torn mid-write
    assert main(["sweep", str(cfg), "--out", str(out), "--json"]) == 0
    assert not orphan.exists() and json.loads(capsys.readouterr().out)["chunks_computed"] == 2
    other = tmp_path / "other"
    (other / "chunks").mkdir(parents=True)
    (other / "chunks" / "notes.txt").write_text("mine")             # not a sweep's file: refused as before
    assert main(["sweep", str(cfg), "--out", str(other)]) == 2
    assert "already exists" in capsys.readouterr().err and (other / "chunks" / "notes.txt").exists()


def test_library_and_command_resume_each_others_folders(tmp_path, capsys):
    """`sp-ode sweep --out D` keeps the sweep in D/chunks; `sweep(..., out=D)` finds it there and computes
    nothing (it started over before: another layout), and the command resumes a folder the library made."""
    cfg = _mm_config(tmp_path)
    made_by_cli = tmp_path / "cli"
    assert main(["sweep", str(cfg), "--out", str(made_by_cli), "--json"]) == 0
    capsys.readouterr()
    lib = _mm_library(out=made_by_cli)
    assert lib.computed_chunks == () and not (made_by_cli / "manifest.json").exists()
    np.testing.assert_array_equal(lib.y, np.load(made_by_cli / "result.npz")["y"])
    made_by_lib = tmp_path / "lib"
    first = _mm_library(out=made_by_lib)
    assert main(["sweep", str(cfg), "--out", str(made_by_lib), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["chunks_computed"] == 0
    np.testing.assert_array_equal(np.load(made_by_lib / "result.npz")["y"], first.y)
    assert not (made_by_lib / "chunks").exists()
