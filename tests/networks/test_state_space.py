"""sp_ode.networks.state_space: block enumeration gives the states of the whole-box reference, and a
projection that would not fit is refused, by type, before it is allocated."""
from __future__ import annotations

import itertools
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sp_ode
from sp_ode.core import memory
from sp_ode.core.memory import MemoryBudgetError
from sp_ode.networks import state_space as ss
from sp_ode.networks.network import ReactionNetwork


def _reference(bounds, total=None, laws=None, x0=None):
    """Every state of the box by itertools, filtered one at a time (lexicographic, last species fastest)."""
    out = []
    for x in itertools.product(*[range(b + 1) for b in bounds]):
        x = np.array(x)
        if total is not None and x.sum() > total:
            continue
        if laws is not None and not np.array_equal(laws @ x, laws @ x0):
            continue
        out.append(x)
    return np.array(out, dtype=np.int64).reshape(-1, len(bounds))


@pytest.mark.parametrize("bounds, total, laws, x0", [
    ([3, 4, 2], None, None, None),
    ([5, 5, 5], 7, None, None),
    ([4, 4, 6], None, np.array([[1, 1, 0]]), np.array([2, 1, 0])),
    ([6, 3, 6], 9, np.array([[1, 0, 1]]), np.array([3, 0, 2])),
])
def test_blocks_give_the_states_of_the_reference(monkeypatch, bounds, total, laws, x0):
    monkeypatch.setattr(ss, "_BLOCK_BYTES", 1)          # the smallest block (1024 codes): many blocks
    ref = _reference(bounds, total, laws, x0)
    for block_bytes in (1, 64 * 2**20):
        monkeypatch.setattr(ss, "_BLOCK_BYTES", block_bytes)
        space = ss.enumerate_states(("A", "B", "C"), np.array(bounds), total=total, laws=laws, x0=x0)
        np.testing.assert_array_equal(space.states, ref)
        if space.codes is not None:
            np.testing.assert_array_equal(space.codes, ref @ space.strides)
            assert np.all(space.index(ref) == np.arange(len(ref)))
        else:
            assert len(ref) == np.prod(np.array(bounds) + 1)


def test_count_below_total_is_exact():
    for radix, total in [([3, 4, 2], 4), ([6, 6, 6, 6], 10), ([1, 5], 0), ([11], 3)]:
        brute = sum(1 for x in itertools.product(*[range(r) for r in radix]) if sum(x) <= total)
        assert ss._count_below_total(np.array(radix), total) == brute


def test_a_projection_that_would_not_fit_is_refused_before_allocation(monkeypatch):
    monkeypatch.setattr(memory, "available_memory", lambda: (10 * 2**20, "test limit"))   # 10 MiB
    net = ReactionNetwork("0 -> A, 1; A -> 0, 1; 0 -> B, 1; B -> 0, 1")
    with pytest.raises(MemoryBudgetError, match=r"the projection of 'network' \(1e\+06 states × 2 species\) needs "
                                                r"an estimated 16 MB"):
        net.state_space({"A": 999, "B": 999})
    with pytest.raises(MemoryBudgetError, match=r"5\.005e\+05 states"):       # the exact count below total
        net.state_space(total=999)
    assert net.state_space({"A": 99, "B": 99}).n == 10**4                  # small ones still fit
    # conservation laws: J (here 2·10⁵ states of a 4·10⁸-state box) is found from its free species B, C
    # (A = 1999 − B), 2·10⁵ codes, block by block, and refused as soon as the kept part would not fit
    monkeypatch.setattr(memory, "available_memory", lambda: (10**5, "test limit"))
    conv = ReactionNetwork("A -> B, 1; B -> A, 1; 0 -> C, 1; C -> 0, 1")
    with pytest.raises(MemoryBudgetError, match=r"at least .* of the 2e\+05 codes of its free species"):
        conv.state_space({"A": 1999, "B": 1999, "C": 99}, initial={"A": 1999})


def test_the_generator_estimates_its_memory_first(monkeypatch):
    net = ReactionNetwork("0 -> A, 1; A -> 0, 1")
    space = net.state_space({"A": 9999})
    monkeypatch.setattr(memory, "available_memory", lambda: (10**6, "test limit"))
    with pytest.raises(MemoryBudgetError, match="the generator of 'network' on 10000 states"):
        net.generator(space)


def test_state_space_under_an_address_space_cap_is_a_typed_refusal():
    """9·10⁸ states (under the 2·10⁹ box guard) under RLIMIT_AS: MemoryBudgetError, not MemoryError."""
    pytest.importorskip("resource")
    script = textwrap.dedent("""
        import resource
        import sp_ode
        net = sp_ode.ReactionNetwork("0 -> A, 1; A -> 0, 1; 0 -> B, 1; B -> 0, 1")
        small = net.state_space({"A": 9, "B": 9})
        vm = int([l for l in open('/proc/self/status') if l.startswith('VmSize:')][0].split()[1]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (vm + 1024 * 2**20, resource.getrlimit(resource.RLIMIT_AS)[1]))
        try:
            net.state_space({"A": 29999, "B": 29999})
        except Exception as exc:
            print(type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
        print(net.state_space({"A": 99, "B": 99}).n)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first.startswith("MemoryBudgetError the projection of 'network' (9e+08 states × 2 species)"), first
    assert "RLIMIT_AS" in first and second == "10000"


def test_public_names_resolve_from_the_new_module():
    assert sp_ode.StateSpace is ss.StateSpace is sp_ode.networks.StateSpace
    assert sp_ode.TruncationReport is ss.TruncationReport
