"""Shared test setup: float64 JAX, deterministic Hypothesis profile, shared data."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("JAX_ENABLE_X64", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.differing_executors],
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
