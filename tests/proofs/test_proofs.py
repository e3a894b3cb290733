"""The machine checks of proofs/proof.md, at --smoke sizes, inside the test suite.

Each check script's claims run in-process (one test per claim, so a failure
names the claim); one script also runs standalone, as a user would run it.
The proof text must mark every claim id it relies on, and every id must exist.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from sp_ode.cli.prove import PROOFS, load_claim_sets

SETS = load_claim_sets(PROOFS)
CLAIMS = [(s, cid) for s in SETS for cid in s.ids]


@pytest.mark.parametrize("claim_set, claim_id", CLAIMS, ids=[cid for _, cid in CLAIMS])
def test_claim_holds_at_smoke_size(claim_set, claim_id):
    (result,) = claim_set.run(smoke=True, only=[claim_id])
    assert result.passed, result.detail
    assert result.seconds >= 0 and result.detail


def test_every_claim_is_cited_in_proof_md_and_every_citation_exists():
    text = (PROOFS / "proof.md").read_text()
    cited = set(re.findall(r"\[check: ([A-Za-z0-9.\-]+)\]", text))
    ids = {cid for _, cid in CLAIMS}
    assert ids <= cited, f"claims not cited in proof.md: {sorted(ids - cited)}"
    assert cited <= ids, f"proof.md cites unknown claims: {sorted(cited - ids)}"
    for claim_set in SETS:
        assert claim_set.script in text, f"proof.md does not name {claim_set.script}"


def test_a_script_runs_standalone():
    out = subprocess.run(
        [sys.executable, str(PROOFS / "check_certificate.py"), "--smoke"],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "T4.bound" in out.stdout and "passed: True" in out.stdout


def test_a_failing_check_is_reported_not_raised(tmp_path: Path):
    from sp_ode.cli.claims import ClaimSet

    claims = ClaimSet("inline")

    @claims.claim("X.raises", "a broken check", "none")
    def broken(smoke):
        raise ZeroDivisionError("boom")

    @claims.claim("X.false", "a false claim", "none")
    def false(smoke):
        return False, "1 != 2"

    results = claims.run(smoke=True)
    assert [r.passed for r in results] == [False, False]
    assert "ZeroDivisionError: boom" in results[0].detail
    with pytest.raises(ValueError, match="registered twice"):
        claims.claim("X.false", "again", "none")(lambda smoke: (True, ""))
