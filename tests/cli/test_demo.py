"""`sp-ode demo` (the main job, `make demo`) at smoke size: its report, its summary lines, its files."""
from __future__ import annotations

import json

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
