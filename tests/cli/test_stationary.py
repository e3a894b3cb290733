"""`sp-ode stationary FILE` and `sp-ode demo` through `sp_ode.cli.main`."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

import sp_ode
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


# --- issue 11: the bound in the table, --out, exit codes, parseable --json, bad files ---

def _ncd4() -> np.ndarray:
    Q4 = np.zeros((4, 4))
    Q4[0, 1] = Q4[1, 0] = Q4[2, 3] = Q4[3, 2] = 1e6
    Q4[1, 2], Q4[3, 0] = 1e-10, 2e-10
    np.fill_diagonal(Q4, -Q4.sum(axis=1))
    return Q4


def test_table_shows_bound_clipping_and_tiny_entries(tmp_path, capsys):
    # A birth–death chain with p_3 ≈ 1e-45 (exact ratios 1e-15 per step): it must not print as 0.
    np.save(tmp_path / "Q.npy", sp_ode.birth_death([1e-15] * 3, [1.0] * 3))
    assert main(["stationary", str(tmp_path / "Q.npy")]) == 0
    out = capsys.readouterr().out
    assert "error bound ‖p − p_st‖₁ ≤" in out and "negatives clipped = 0" in out
    line = next(x for x in out.splitlines() if x.strip().startswith("p[3] ="))
    assert float(line.split("=")[1]) == pytest.approx(1e-45, rel=1e-12)


@pytest.mark.parametrize("suffix", [".npy", ".csv"])
def test_out_writes_p(tmp_path, capsys, suffix):
    np.save(tmp_path / "Q.npy", Q)
    target = tmp_path / ("p" + suffix)
    assert main(["stationary", str(tmp_path / "Q.npy"), "--out", str(target)]) == 0
    p = np.load(target) if suffix == ".npy" else np.loadtxt(target)
    np.testing.assert_allclose(p, [0.6, 0.4], rtol=1e-15)


def test_exit_1_when_no_method_meets_tol(tmp_path, capsys):
    np.save(tmp_path / "Q.npy", _ncd4())
    assert main(["stationary", str(tmp_path / "Q.npy"), "--tol", "1e-20", "--json"]) == 1
    cap = capsys.readouterr()
    rec = json.loads(cap.out)
    assert rec["passed"] is False and rec["bound"] > 1e-20 and "tol" in cap.err
    # the same chain at the default tolerance: escalates to GTH, exit 0, escalation printed
    assert main(["stationary", str(tmp_path / "Q.npy"), "--method", "solve"]) == 0
    assert "escalated from solve" in capsys.readouterr().out


def test_json_stays_parseable_when_a_dependency_prints(tmp_path):
    # A 12-state cycle with rates 1e-12 … 5e8 made pyamg crash / print to stdout (issue 11, defect 5).
    rates = np.geomspace(1e-12, 5e8, 12)
    R = np.zeros((12, 12))
    R[np.arange(12), (np.arange(12) + 1) % 12] = rates
    sp.save_npz(tmp_path / "Q.npz", sp.csr_matrix(R - np.diag(R.sum(axis=1))))
    r = subprocess.run([sys.executable, "-m", "sp_ode", "stationary", str(tmp_path / "Q.npz"), "--json", "--no-gap"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["passed"] and rec["bound"] <= 1e-6


@pytest.mark.parametrize("make, words", [
    (lambda d: (d / "e.npy").write_bytes(b""), "is not a NumPy .npy array file"),
    (lambda d: (d / "e.npy").write_bytes(b"garbage" * 10), "is not a NumPy .npy array file"),
    (lambda d: np.save(d / "e.npy", np.zeros((2, 2, 2))), "must hold a square (n, n) array; got shape (2, 2, 2)"),
    (lambda d: (d / "e.json").write_text('{"Q": [[1, 2], [3]]}'), "must hold a square list of rows"),
    (lambda d: (d / "e.json").write_text('{"rates": [[0, 1]]}'), "[i, j, rate] triples"),
    (lambda d: (d / "e.json").write_text('"hello"'), "must hold a square list of rows"),
])
def test_bad_files_are_one_line_usage_errors(tmp_path, capsys, make, words):
    make(tmp_path)
    f = next(tmp_path.glob("e.*"))
    assert main(["stationary", str(f)]) == 2
    err = capsys.readouterr().err
    assert words in err and str(f) in err and len(err.strip().splitlines()) == 1


def test_out_pointing_at_a_directory_is_a_usage_error(tmp_path, capsys):
    np.save(tmp_path / "Q.npy", Q)
    (tmp_path / "d.npy").mkdir()
    assert main(["stationary", str(tmp_path / "Q.npy"), "--out", str(tmp_path / "d.npy")]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["stationary", str(tmp_path / "Q.npy"), "--out", str(tmp_path / "p.txt")]) == 2
    assert "must end in .npy or .csv" in capsys.readouterr().err


# --- issue 25: no silent overwrite, float32 input, states by name, numeric detailed balance ---------

def test_existing_out_file_is_refused_without_overwrite(tmp_path, capsys):
    np.save(tmp_path / "Q.npy", Q)
    target = tmp_path / "p.npy"
    np.save(target, np.array([7.0]))
    assert main(["stationary", str(tmp_path / "Q.npy"), "--out", str(target)]) == 2
    assert "already exists" in capsys.readouterr().err and np.load(target).tolist() == [7.0]   # untouched
    assert main(["stationary", str(tmp_path / "Q.npy"), "--out", str(target), "--overwrite"]) == 0
    np.testing.assert_allclose(np.load(target), [0.6, 0.4], rtol=1e-15)
    assert not list(tmp_path.glob(".p.npy.*.tmp"))                    # written atomically


def test_float32_file_json_states_and_reversibility(tmp_path, capsys):
    R = np.array([[0.0, 0.7, 0.1], [1.3, 0.0, 0.45], [0.2, 2.2, 0.0]], dtype=np.float32)
    Q32 = R - np.diag(R.sum(axis=1, dtype=np.float32))
    np.save(tmp_path / "Q32.npy", Q32)
    assert main(["stationary", str(tmp_path / "Q32.npy")]) == 0
    assert "rounding of the rates as given" in capsys.readouterr().out
    (tmp_path / "named.json").write_text(json.dumps({"Q": Q.tolist(), "states": ["off", "on"]}))
    assert main(["stationary", str(tmp_path / "named.json"), "--reversibility"]) == 0
    out = capsys.readouterr().out
    values = {line.split("=")[0].strip(): float(line.split("=")[1]) for line in out.splitlines() if line.startswith("  p[")}
    assert values == pytest.approx({"p[off]": 0.6, "p[on]": 0.4}, rel=1e-15)
    assert "detailed balance: reversible" in out
    (tmp_path / "bad.json").write_text(json.dumps({"Q": Q.tolist(), "states": ["off"]}))
    assert main(["stationary", str(tmp_path / "bad.json")]) == 2


def test_csv_export_says_what_its_bound_certifies(tmp_path):
    # GTH: componentwise; an LU answer asked for by name: normwise only, with the uncertified level
    np.save(tmp_path / "Q.npy", Q)
    for method, words in (("gth", "# componentwise: |p̂_i − p_i| ≤"), ("solve", "# normwise only: entries below")):
        target = tmp_path / f"p_{method}.csv"
        assert main(["stationary", str(tmp_path / "Q.npy"), "--method", method, "--out", str(target)]) == 0
        text = target.read_text(encoding="utf-8")
        assert words in text and text.startswith("# stationary distribution")
        np.testing.assert_allclose(np.loadtxt(target), [0.6, 0.4], rtol=1e-12)
