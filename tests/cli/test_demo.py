"""`sp-ode demo` (the main job, `make demo`) at smoke size: its report, its summary lines, its files."""
from __future__ import annotations

import json

import numpy as np

from sp_ode.cli import main

STATUS = ("ok", "FAIL", "skipped")


def test_demo_smoke(tmp_path, capsys):
    rc = main(["demo", "--smoke", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0, out
    report = json.loads((tmp_path / "report.json").read_text())
    for key in ("family", "n", "p_st", "residual_max", "residual_tolerance", "spectral_gap_min", "passed", "verify",
                "figures", "checks"):
        assert key in report, key
    assert report["passed"] is True and report["residual_max"] <= report["residual_tolerance"]
    verify = report["verify"]
    assert verify["checks"] == {"hyperbolicity": "ok", "identity": "ok", "certificate": "ok"}
    assert {m["kind"] for m in verify["identity_methods"]} >= {"attractor", "linear solve"}
    for name in ("report.json", "p_st.png", "verify/report.json", "verify/manifold.png", "verify/convergence.png"):
        assert (tmp_path / name).stat().st_size > 0, name
    # every summary line says ok, FAIL or skipped, truthfully (they match the report's checks)
    summary = [ln for ln in out.splitlines() if ln.startswith("check ")]
    assert len(summary) == len(report["checks"]) >= 4
    for ln in summary:
        name, status = ln.split()[1], ln.split()[-1]
        assert status in STATUS and report["checks"][name] == status
    assert out.splitlines()[-2].startswith("demo PASSED")


def test_num_is_checked_under_smoke_too(tmp_path, capsys):
    # issue 25: `--num 0` was ignored under --smoke (the smoke grid replaced it silently)
    assert main(["demo", "--smoke", "--num", "0", "--out", str(tmp_path / "d")]) == 2
    assert "`--num` must be >= 2" in capsys.readouterr().err and not (tmp_path / "d").exists()


def test_demo_tables_a_users_family_with_its_state_names(tmp_path, capsys):
    # `sp-ode demo --family receptor.py:system` was refused with "`name` must be one of ('cycle3', …)"
    path = tmp_path / "receptor.py"
    path.write_text("import jax.numpy as jnp\nimport sp_ode\n"
                    "def Q(y):\n    a = jnp.exp(y[0])\n    return jnp.array([[-a, a], [1.0, -1.0]])\n"
                    "def g(t, x, y, args):\n    return jnp.array([x[1] - 0.5])\n"
                    "system = sp_ode.MasterEquationSystem(Q, g, eps=0.01, d=1, name='switch', "
                    "states=['closed', 'open'])\n")
    rc = main(["demo", "--family", f"{path}:system", "--y-range", "-1", "1", "--num", "5", "--json",
               "--out", str(tmp_path / "o")])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["states"] == ["closed", "open"] and out["family"] == "switch"
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    # p_st = (1, e^y)/(1 + e^y) (the 2-state switch's closed form) at y = -1 … 1
    y = np.linspace(-1.0, 1.0, 5)
    np.testing.assert_allclose(np.asarray(report["p_st"])[:, 1], np.exp(y) / (1 + np.exp(y)), rtol=1e-13)
    assert "verify skipped for a user's family" in report["verify_note"]
    assert main(["demo", "--family", f"{path}:Q", "--out", str(tmp_path / "q")]) == 2      # no range: asked for
    assert "--y-range" in capsys.readouterr().err
    assert main(["demo", "--family", "cylce3", "--out", str(tmp_path / "c")]) == 2
    assert "`--family` must be one of" in capsys.readouterr().err
