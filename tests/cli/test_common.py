"""The output-folder convention shared by every subcommand (sp_ode/cli/common.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sp_ode.cli import main
from sp_ode.cli.common import UsageError, run_folder

ENZYME = "E -> ES : k1*S\nES -> E : km1\nES -> EP : k2\nEP -> E : k3\n"


def test_run_folder_is_fresh_each_time_and_latest_points_at_the_newest(tmp_path):
    a = run_folder("verify", root=tmp_path)
    b = run_folder("verify", root=tmp_path)   # the same second: a suffixed sibling, never the same folder
    assert a != b and a.is_dir() and b.is_dir()
    assert a.relative_to(tmp_path).parts[0] == "verify" and len(a.relative_to(tmp_path).parts) == 3
    assert (tmp_path / "verify" / "latest").resolve() == b.resolve()
    assert run_folder("verify", root=tmp_path, resume=True) == b.resolve()


def test_resume_without_a_run_is_a_usage_error_naming_the_folder(tmp_path):
    with pytest.raises(UsageError, match=r"--resume.*no|none"):
        run_folder("train", root=tmp_path, resume=True)


def test_the_same_symbolic_query_twice_in_one_folder_writes_two_reports(tmp_path, monkeypatch, capsys):
    # the newcomer's trap: the second run used to fail with "a `sp-ode symbolic` report already exists"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "enzyme.txt").write_text(ENZYME)
    assert main(["symbolic", "enzyme.txt", "--json"]) == 0
    assert main(["symbolic", "enzyme.txt", "--json"]) == 0
    reports = sorted((tmp_path / "out" / "symbolic").glob("*/*/report.json"))
    assert len(reports) == 2
    assert json.loads(reports[0].read_text())["p"] == json.loads(reports[1].read_text())["p"]
    latest = (tmp_path / "out" / "symbolic" / "latest").resolve()
    assert latest in {r.parent.resolve() for r in reports}
    capsys.readouterr()
    # an explicit --out that holds a report is still refused, naming --overwrite
    explicit = Path(reports[0].parent)
    assert main(["symbolic", "enzyme.txt", "--out", str(explicit)]) == 2
    assert "--overwrite" in capsys.readouterr().err
