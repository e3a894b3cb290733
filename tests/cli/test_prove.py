"""`sp-ode prove`: claim table, --json record, exit codes (0 all pass, 1 a claim fails, 2 usage)."""
from __future__ import annotations

import json
from pathlib import Path

from sp_ode.cli import main

FAILING = '''
from sp_ode.cli.claims import ClaimSet

claims = ClaimSet("check_fail.py")


@claims.claim("F.true", "one plus one is two", "arithmetic")
def true(smoke):
    return 1 + 1 == 2, "ok"


@claims.claim("F.false", "one plus one is three", "arithmetic")
def false(smoke):
    return 1 + 1 == 3, "1 + 1 = 2"
'''


def test_json_record_and_report_file(capsys, tmp_path: Path):
    rc = main(["prove", "--smoke", "--json", "--only", "L4", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["passed"] is True and out["smoke"] is True
    assert [c["id"] for c in out["claims"]] == ["L4.bordered-determinant"]
    claim = out["claims"][0]
    assert claim["passed"] is True and claim["seconds"] >= 0 and claim["script"] == "check_uniqueness.py"
    assert json.loads((tmp_path / "report.json").read_text())["claims"][0]["id"] == claim["id"]


def test_table_lists_claim_method_result_seconds(capsys):
    rc = main(["prove", "--smoke", "--only", "L5"])
    text = capsys.readouterr().out
    assert rc == 0
    header = text.splitlines()[0].split()
    assert header == ["claim", "method", "result", "seconds"]
    assert "L5.simple-zero-eigenvalue" in text and "PASS" in text and "passed: True" in text


def test_a_failing_claim_exits_1(capsys, tmp_path: Path):
    (tmp_path / "check_fail.py").write_text(FAILING)
    rc = main(["prove", "--proofs", str(tmp_path), "--json"])
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert rc == 1 and out["passed"] is False
    assert {c["id"]: c["passed"] for c in out["claims"]} == {"F.true": True, "F.false": False}
    assert "FAILED F.false" in captured.err


def test_usage_errors_exit_2(capsys, tmp_path: Path):
    assert main(["prove", "--proofs", str(tmp_path)]) == 2  # no check_*.py there
    assert "no check_*.py" in capsys.readouterr().err
    assert main(["prove", "--only", "no-such-claim"]) == 2
    assert "matches no claim" in capsys.readouterr().err
