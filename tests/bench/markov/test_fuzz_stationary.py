"""bench/markov/fuzz_stationary.py --smoke runs end to end and finds no answer outside its bound (issue 11)."""
from __future__ import annotations

import json

import pytest

from bench.markov import fuzz_stationary


@pytest.mark.slow
def test_fuzz_stationary_smoke(capsys):
    assert fuzz_stationary.main(["--smoke", "--json"]) == 0   # in this process: the script sets no global state
    rec = json.loads(capsys.readouterr().out)  # stdout is only the record: nothing a dependency printed
    assert rec["passed"] and rec["wild"]["calls"] == 32 and rec["blocks"]["calls"] == 24
