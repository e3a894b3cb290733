"""`sp-ode stationary FILE` and `sp-ode demo` through `sp_ode.cli.main`."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from sp_ode.cli import main

Q = np.array([[-2.0, 2.0], [3.0, -3.0]])  # p = (3, 2)/5, γ = 5 (closed forms)


@pytest.mark.parametrize("suffix", [".npy", ".npz", ".json", "rates.json"])
def test_stationary_reads_each_format(tmp_path, capsys, suffix):
    path = tmp_path / ("Q" + suffix if not suffix.startswith("rates") else suffix)
    if suffix == ".npy":
        np.save(path, Q)
    elif suffix == ".npz":
        sp.save_npz(path, sp.csr_matrix(Q))
    elif suffix == ".json":
        path.write_text(json.dumps({"Q": Q.tolist()}))
    else:
        path.write_text(json.dumps({"n": 2, "rates": [[0, 1, 2.0], [1, 0, 3.0]]}))
    assert main(["stationary", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    np.testing.assert_allclose(out["p"], [0.6, 0.4], rtol=1e-12)
    assert out["residual"] <= 1e-14
    assert out["spectral_gap"] == pytest.approx(5.0, rel=1e-12)


def test_stationary_table_output(tmp_path, capsys):
    np.save(tmp_path / "Q.npy", Q)
    assert main(["stationary", str(tmp_path / "Q.npy"), "--method", "solve"]) == 0
    out = capsys.readouterr().out
    assert "p[0] = 0.6" in out and "spectral gap" in out and "method = solve" in out


@pytest.mark.parametrize("args, words", [
    (["stationary", "missing.npy"], "does not exist"),
    (["stationary", "{tmp}/Q.txt"], "must end in .npy, .npz or .json"),
    (["stationary", "{tmp}/P.npy"], "P - I"),
    (["stationary", "{tmp}/Q.npy", "--method", "qr"], "`method` must be one of"),
])
def test_stationary_usage_errors_exit_2(tmp_path, capsys, args, words):
    (tmp_path / "Q.txt").write_text("1")
    np.save(tmp_path / "Q.npy", Q)
    np.save(tmp_path / "P.npy", np.array([[0.5, 0.5], [0.1, 0.9]]))
    assert main([a.format(tmp=tmp_path) for a in args]) == 2
    assert words in capsys.readouterr().err


def test_console_script_module_entry_point():
    # `python -m sp_ode` and no subcommand: help, exit 2; --help exits 0.
    r = subprocess.run([sys.executable, "-m", "sp_ode"], capture_output=True, text=True)
    assert r.returncode == 2 and "stationary" in r.stdout
    r = subprocess.run([sys.executable, "-m", "sp_ode", "--help"], capture_output=True, text=True)
    assert r.returncode == 0


def test_import_sp_ode_pulls_in_neither_torch_nor_sympy():
    code = ("import sys, sp_ode; sp_ode.stationary_distribution([[-1.0, 1.0], [1.0, -1.0]]); "
            "print('torch' in sys.modules, 'sympy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
