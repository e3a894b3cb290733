"""One list of verdict steps (`sp_ode.verification.steps`), filled by the dense and the network verdicts.

The statuses and messages a report prints and writes are read off its steps; a status outside
("ok", "FAIL", "skipped") is refused; a skipped step keeps its reason; the failure is the first FAIL.
"""
from __future__ import annotations

import pytest

from sp_ode.verification.steps import STATUSES, Steps, VerdictStep


def test_steps_give_the_checks_messages_verdict_and_first_failure():
    steps = Steps.start(("a", "b", "c"), "skipped: not run")
    assert steps.checks == {"a": "skipped", "b": "skipped", "c": "skipped"} and not steps.passed
    assert steps["b"].skip_reason == "skipped: not run" and steps.failure is None
    steps.set("a", "ok", "fine")
    steps.set("b", "FAIL", "b: wrong")
    steps.set("c", "FAIL", "c: wrong too")
    assert steps.checks == {"a": "ok", "b": "FAIL", "c": "FAIL"}
    assert steps.messages == {"a": "fine", "b": "b: wrong", "c": "c: wrong too"}
    assert steps.failure == "b: wrong" and not steps.passed           # the first failure, in step order
    assert steps["b"].skip_reason is None
    steps.set("b", "ok", "fixed")
    steps.set("c", "ok", "fixed")
    assert steps.passed and steps.failure is None


def test_a_status_outside_the_three_is_refused():
    with pytest.raises(ValueError, match="status of step 'a' must be one of"):
        VerdictStep("a", "passed")
    steps = Steps.start(("a",))
    with pytest.raises(ValueError, match=r"\('ok', 'FAIL', 'skipped'\); got 'PASS'"):
        steps.set("a", "PASS", "")
    with pytest.raises(KeyError, match="no step 'z'"):
        steps["z"]
    assert STATUSES == ("ok", "FAIL", "skipped")


def test_timings_go_to_the_stage_and_its_steps():
    steps = Steps.start(("paths", "rate_reduced", "rate_corrected"))
    with steps.timed("paths"):
        pass
    steps.record("certificate", 2.5, "rate_reduced", "rate_corrected")
    assert list(steps.seconds) == ["paths", "certificate"] and steps.seconds["certificate"] == 2.5
    assert steps["rate_reduced"].seconds == steps["rate_corrected"].seconds == 2.5
    assert steps["paths"].seconds == steps.seconds["paths"] >= 0.0


def test_a_report_reads_its_checks_off_one_list():
    from sp_ode.verification.report import VerifyReport

    steps = Steps.from_checks({"hyperbolicity": "ok", "identity": "FAIL", "certificate": "skipped"},
                              {"hyperbolicity": "h", "identity": "identity: off", "certificate": "skipped: no"})
    r = VerifyReport("toy", "general", "", steps, {})
    assert r.checks == steps.checks and r.messages == steps.messages
    assert not r.passed and r.failure == "identity: off" and r.to_dict()["checks"] == steps.checks
    steps.set("identity", "ok", "fine")
    steps.set("certificate", "ok", "fine")
    assert r.passed and r.failure is None                               # one source: the steps
