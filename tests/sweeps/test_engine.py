"""sp_ode.sweeps.engine: both sweep engines satisfy the one contract the planner calls."""
from __future__ import annotations

import types

import pytest

from sp_ode.sweeps import _cost, _network
from sp_ode.sweeps.engine import SweepEngine, ValidationInput, conformance


@pytest.mark.parametrize("engine", [_cost, _network], ids=["dense", "network"])
def test_each_engine_conforms_member_by_member_and_signature_by_signature(engine):
    assert conformance(engine) == []
    assert isinstance(engine, SweepEngine)
    assert engine.ValidationInput is ValidationInput          # one ValidationInput, not one per engine


def test_the_check_names_a_missing_member_and_a_changed_signature():
    fake = types.ModuleType("fake_engine")
    for name in vars(_cost):
        setattr(fake, name, getattr(_cost, name))
    del fake.run_chunk
    fake.replay = lambda plan, values: None                    # y0 dropped
    found = conformance(fake)
    assert "run_chunk: missing" in found
    assert any(p.startswith("replay: parameters ['plan', 'values']") for p in found)
    assert not isinstance(fake, SweepEngine)
