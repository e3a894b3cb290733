"""sp_ode.core.cpu_pool: entry points and Dask workers pin themselves to one core (XLA's pool then has one thread).

Run in subprocesses: pinning is process-wide, and the test process must keep its cores.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

CODE = """
import json, os
from sp_ode.core import cpu_pool
before = sorted(os.sched_getaffinity(0))
core = cpu_pool.pin_to_one_core({index})
after_pin = sorted(os.sched_getaffinity(0))
cpu_pool.pin_worker({worker}, cpu_pool.cores_before_pinning())
print(json.dumps({{"before": before, "core": core, "after_pin": after_pin,
                  "after_worker": sorted(os.sched_getaffinity(0)),
                  "remembered": cpu_pool.cores_before_pinning()}}))
"""


def _run(index: int, worker: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CODE.format(index=index, worker=worker)], capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout)


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux-only")
def test_pin_to_one_core_and_worker_plugin_spread_over_the_original_cores():
    r = _run(index=0, worker=1)
    cores = r["before"]
    assert r["after_pin"] == [cores[0]] and r["core"] == cores[0]
    # the plugin spreads workers over the cores the parent had *before* it pinned itself
    assert r["remembered"] == cores
    assert r["after_worker"] == [cores[1 % len(cores)]]
    # an index past the number of cores wraps around instead of failing
    r = _run(index=len(cores) + 1, worker=0)
    assert r["after_pin"] == [cores[1 % len(cores)]] and r["after_worker"] == [cores[0]]
