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


def xdist_group_name(item: pytest.Item) -> str | None:
    """The group pytest-xdist gives an item with ``xdist_group`` marks: their names sorted and joined by ``_``."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) if names else None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` (make test): send every test of an ``xdist_group`` to one worker.

    pytest-xdist 3.8 names an item's group by appending ``@group`` to ``item._nodeid``, which pytest 9 no
    longer reads (a node's id is ``item._id``, a NodeId): the groups were silently ignored, and each group's
    module fixture was built on both workers (the docs site's one-minute build twice, measured in issue 37).
    Here, in a worker under loadgroup, an item whose id lacks its group gets it, as xdist means it to.
    tests/test_xdist_groups.py checks the result, with a negative control.
    """
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        group = xdist_group_name(item)
        if group is None or item.nodeid.endswith(f"@{group}"):
            continue
        from _pytest.nodeid import NodeId  # pytest >= 9 only: older pytest read xdist's _nodeid

        item._id = NodeId.parse(f"{item.nodeid}@{group}")
    # The groups first (a stable sort: each keeps its order, every other test too): a group is the larger unit
    # of work (one expensive fixture and its tests), and the scheduler hands units out in this order, so none is
    # left to run alone on one worker at the end while the other idles.  A fixed order, never a timing.
    items.sort(key=lambda item: xdist_group_name(item) is None)


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
