"""Shared test setup: deterministic Hypothesis profile, shared data. (JAX stays float32 by default: sp_ode must scope its own float64.)"""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("MPLBACKEND", "Agg")
# `sp-ode` run as a subprocess keeps compiled programs in ~/.cache/sp_ode: not from the tests
# (tests/core/test_compile_cache.py checks that cache in a folder of its own)
os.environ.setdefault("SP_ODE_NO_COMPILE_CACHE", "1")

settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors,
                           HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def tinyshakespeare() -> Path:
    """Path to ../shared/data/tinyshakespeare.txt; tests that need it skip cleanly without it."""
    path = SHARED_DATA / "tinyshakespeare.txt"
    if not path.is_file():
        pytest.skip("../shared/data/tinyshakespeare.txt not present (optional data)")
    return path


@pytest.fixture
def x64():
    """Run a test that evaluates JAX functions itself in float64 (sp_ode scopes its own; tests do too)."""
    from sp_ode.core.precision import float64

    with float64():
        yield
