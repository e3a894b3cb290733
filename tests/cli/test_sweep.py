"""`sp-ode sweep CONFIG`: TOML/JSON configs, specs, resumable output, one-line errors.

Expected values: the CLI's result must equal `sp_ode.sweep` called with the same
inputs (the library is tested in tests/sweeps/test_sweep.py).
"""
from __future__ import annotations

import json

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
max_order = 1
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
                       ts=[1.0, 2.0], tol=1e-6, chunk_size=8, max_order=1, validate_fraction=0.25, seed=4,
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
    ({"colour": "red"}, "unknown keys \\['colour'\\]"),
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


def test_text_report_states_the_ratio_only_when_a_reduced_point_was_validated(tmp_path, capsys):
    """Every printed line is true: with no validated reduced point there is no ratio to print (was "nan")."""
    cfg = tmp_path / "sweep.toml"
    # ε ≥ 1e-3 with max_order 0: every point takes the full solve
    cfg.write_text(TOML.replace("max_order = 1", "max_order = 0").replace(
        "eps = {loguniform = [1e-6, 1e-2, 12]}", "eps = {loguniform = [1e-3, 1e-2, 12]}"))
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "full")]) == 0
    text = capsys.readouterr().out
    assert "no validated point took a reduced path" in text and "nan" not in text
    cfg.write_text(TOML)
    assert main(["sweep", str(cfg), "--out", str(tmp_path / "mixed")]) == 0
    text = capsys.readouterr().out
    assert "worst true/estimated error" in text and "nan" not in text


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
