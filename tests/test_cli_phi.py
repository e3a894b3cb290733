"""`sp-ode fit-phi` through `sp_ode.cli.main`: the --smoke --json record, files, and usage errors."""
from __future__ import annotations

import json

import pytest

from sp_ode.cli import main

USER_Q = '''
import numpy as np

def Q(y):
    """2-state switch a = e^{y0}, b = 1 + y1^2 (irreducible everywhere)."""
    a, b = np.exp(y[0]), 1.0 + y[1] ** 2
    return np.array([[-a, a], [b, -b]])

def Q_reducible_right(y):
    a = np.exp(y[0])
    return np.array([[-a, a], [0.0, 0.0]]) if y[0] > 0.5 else np.array([[-a, a], [1.0, -1.0]])
'''


def test_smoke_json_record_and_files(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["fit-phi", "--smoke", "--json", "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    for key in ["max_abs_error", "max_certificate", "certificate_holds", "loss", "max_tv", "max_kl"]:
        assert key in record
    assert record["certificate_holds"] is True
    assert record["system"] == "cycle3" and record["loss_name"] == "kl"
    # the certificate bounds the 2-norm error, hence the max abs error (‖·‖∞ ≤ ‖·‖₂)
    assert record["max_abs_error"] <= record["max_certificate"]
    assert 0 < record["max_abs_error"] < 0.37  # below the uniform start's error
    assert record["extrapolation"]["n_points"] > 0 and record["extrapolation"]["extrapolation"] is True
    assert json.loads((out / "report.json").read_text())["max_abs_error"] == record["max_abs_error"]
    for name in ["training.png", "phi_components.png", "error_certificate.png"]:
        assert (out / name).stat().st_size > 1000


def test_user_function_two_dimensional_residual_table(tmp_path, capsys):
    f = tmp_path / "my_q.py"
    f.write_text(USER_Q)
    code = main(["fit-phi", "--smoke", "--system", f"{f}:Q", "--domain", "-1", "1", "0", "1",
                 "--loss", "residual", "--steps", "10", "--out", str(tmp_path / "o")])
    assert code == 0
    text = capsys.readouterr().out
    assert "n = 2, d = 2" in text and "certificate holds" in text and "NO" not in text


@pytest.mark.parametrize("argv, match", [
    (["--loss", "mse"], "`--loss` must be one of"),
    (["--system", "nosuch"], "`system` must be one of"),
    (["--system", "{f}:Q"], "`domain` is required"),
    (["--system", "{f}:Q", "--domain", "-1", "1", "0"], "LO HI pairs"),
    (["--system", "{f}:Q_reducible_right", "--domain", "-1", "1"], r"y = \[0\.5\d+\].*irreducible"),
    (["--device", "cuda"], "`--device` must be 'cpu'"),
    (["--width", "0"], "`width` must be a positive integer"),
])
def test_usage_errors_exit_2(tmp_path, capsys, argv, match):
    import re

    f = tmp_path / "my_q.py"
    f.write_text(USER_Q)
    argv = [a.replace("{f}", str(f)) for a in argv]
    assert main(["fit-phi", "--smoke", "--steps", "1", "--out", str(tmp_path / "o"), *argv]) == 2
    assert re.search(match, capsys.readouterr().err)
