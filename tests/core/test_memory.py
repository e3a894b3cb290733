"""sp_ode.core.memory: the budget is the smallest readable limit, and a refusal comes before the allocation."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from sp_ode.core import memory
from sp_ode.core.memory import MemoryBudgetError, check_memory


def test_refusal_states_the_estimate_the_budget_and_its_source(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: (10**9, "test limit"))
    assert check_memory(7.9e8, what="seven hundred MB") == 790_000_000       # under 80 % of 1 GB
    with pytest.raises(MemoryBudgetError) as exc:
        check_memory(8.1e8, what="the box", remedy="Tighten the bounds.")
    msg = str(exc.value)
    assert "the box needs an estimated 810 MB" in msg and "80% of the 1 GB" in msg and "test limit" in msg
    assert msg.endswith("Tighten the bounds.") and exc.value.needed == 810_000_000 and exc.value.budget == 8 * 10**8
    assert not isinstance(exc.value, MemoryError)
    assert check_memory(5e8, what="x", fraction=0.5) == 500_000_000
    with pytest.raises(MemoryBudgetError):
        check_memory(5.1e8, what="x", fraction=0.5)
    with pytest.raises(MemoryBudgetError, match="more than any machine has"):
        check_memory(float("inf"), what="x")


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="`fraction` must lie in"):
        check_memory(1, what="x", fraction=0)
    with pytest.raises(ValueError, match="nonnegative estimate"):
        check_memory(-1, what="x")


def test_the_smallest_limit_wins(monkeypatch):
    monkeypatch.setattr(memory, "_system_available", lambda: (8 * 10**9, "system"))
    monkeypatch.setattr(memory, "_cgroup", lambda: (4 * 10**9, "cgroup"))
    monkeypatch.setattr(memory, "_rlimits", lambda: [(2 * 10**9, "RLIMIT_AS"), (3 * 10**9, "RLIMIT_DATA")])
    assert memory.available_memory() == (2 * 10**9, "RLIMIT_AS")
    monkeypatch.setattr(memory, "_rlimits", lambda: [])
    assert memory.available_memory() == (4 * 10**9, "cgroup")


def test_an_address_space_cap_set_by_setrlimit_is_honoured():
    """Under RLIMIT_AS the budget is what the cap leaves, so a 4 GB request is refused by type, not by MemoryError."""
    pytest.importorskip("resource")
    script = textwrap.dedent("""
        import resource
        from sp_ode.core.memory import available_memory, check_memory, MemoryBudgetError
        vm = int([l for l in open('/proc/self/status') if l.startswith('VmSize:')][0].split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + 512 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
        avail, source = available_memory()
        assert avail <= 512 * 2**20 and source.startswith('RLIMIT_AS'), (avail, source)
        check_memory(100 * 2**20, what='a small array')
        try:
            check_memory(4 * 2**30, what='a 4 GB array')
        except MemoryBudgetError as exc:
            print('refused', exc)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("refused a 4 GB array needs an estimated 4.29 GB") and "RLIMIT_AS" in out.stdout


def test_an_explicit_limit_replaces_the_measured_budget(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: (10**3, "test limit"))
    assert check_memory(10**6, what="x", limit=2 * 10**6) == 10**6         # the caller raised the cap
    with pytest.raises(MemoryBudgetError, match=r"more than the limit 1 MB \(`max_bytes`\)") as exc:
        check_memory(2 * 10**6, what="x", limit=10**6)
    assert exc.value.source == "max_bytes"
