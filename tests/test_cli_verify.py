"""`sp-ode verify` end to end (in-process `main`, so compiled solves are shared) and its usage errors."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sp_ode.cli import UsageError, main
from sp_ode.cli.verify import format_report, resolve_system


def test_verify_smoke_json_me3(tmp_path, capsys):
    rc = main(["verify", "--smoke", "--json", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["passed"] is True
    # step 1: Newton on the simplex vs GTH (T1), required ≤ 1e-12 by the issue
    assert out["identity_checked"] and out["identity_max_error"] <= 1e-12
    # step 2: slopes 1, 2, 1 within the certificate's stated ±0.15
    for key, want in (("slope_manifold", 1), ("slope_corrected", 2), ("slope_slow", 1)):
        assert abs(out[key] - want) <= 0.15, (key, out[key])
    for name in ("report.json", "manifold.png", "convergence.png"):
        assert (tmp_path / name).stat().st_size > 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["certificate"]["Ps"] == [16, 64, 256, 1024]
    assert len(report["certificate"]["table"]) == 4 and report["checks"]["certificate"] is True
    # the human output (what `sp-ode verify` prints without --json) from the same record
    text = format_report(report)
    assert "stationary_distribution" in text and "|x-h_eps|" in text and "verify PASSED" in text


@pytest.mark.parametrize("argv", [
    ["verify", "--system", "no_such_system"],
    ["verify", "--system", "missing/file.py:OBJ"],
    ["verify", "--system", "tests/test_cli_verify.py:NOPE"],
    ["verify", "--order", "-1"],
    ["verify", "--order", "1.5"],
    ["verify", "--Ps", "4", "0", "16"],
    ["verify", "--Ps", "4", "8"],
    ["verify", "--backend", "jax"],
])
def test_usage_errors_exit_2(argv, tmp_path, capsys):
    assert main(argv + ["--out", str(tmp_path)]) == 2
    assert "error" in capsys.readouterr().err


def test_resolve_user_file(tmp_path):
    path = tmp_path / "mine.py"
    path.write_text(
        "from sp_ode.systems import get_system\n"
        "ENTRY = get_system('toy', eps=0.1)\n"
        "BARE = ENTRY.system\n"
        "def factory():\n    return get_system('michaelis_menten')\n"
        "NOT_A_SYSTEM = 3\n")
    case = resolve_system(f"{path}:ENTRY")
    assert case.name == "toy" and case.t_span == (0.0, 2.0) and case.phi is not None
    assert resolve_system(f"{path}:factory").name == "michaelis_menten"
    with pytest.raises(UsageError, match="--t-span"):
        resolve_system(f"{path}:BARE")
    bare = resolve_system(f"{path}:BARE", t_span=(0, 1), x0=[0.0], y0=[1.0])
    np.testing.assert_array_equal(bare.y0, [1.0])
    with pytest.raises(TypeError, match="FastSlowSystem"):
        resolve_system(f"{path}:NOT_A_SYSTEM")
