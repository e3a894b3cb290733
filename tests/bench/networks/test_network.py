"""bench/networks/network.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_bench_network_smoke(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "-m", "bench.networks.network", "--smoke", "--json",
                          "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text())  # the file records every printed number
    (eps,) = rec["eps"]
    rows = eps["rows"]
    assert [r["eps"] for r in rows] == [1e-2, 1e-3]
    # O(ε²) corrected vs O(ε) reduced, measured against the tight full solve
    assert rows[1]["corrected_error"] < rows[0]["corrected_error"] / 50
    assert all(r["corrected_error"] < 0.1 * r["reduced_error"] for r in rows)
    assert eps["table"]["error_estimate"] <= 1e-12
    (warm,) = rec["warm"]
    assert all(r["max_abs_diff_vs_public"] < 1e-7 for r in warm["amg_warm"] if "max_abs_diff_vs_public" in r)
    assert warm["amg_warm"][-1]["rebuilds"] == 1          # the hierarchy is reused
    (st,) = rec["stationary"]
    assert st["negatives"] == 0 and st["mean_A"] == __import__("pytest").approx(st["mean_A_closed_form"], abs=1e-3)
    (pinned,) = rec["pinned"]
    # each setting solves the same pinned system to the stated tolerance
    assert set(pinned["rows"]) == {"rs_restart20", "air_restart20", "air_adjoint_restart40"}
    assert all(r["converged"] and r["relative_residual"] <= 1e-12 for r in pinned["rows"].values())
    assert pinned["rows"]["air_adjoint_restart40"]["hitting_converged"]
    (memory,) = rec["memory"]
    # Q holds ≈ 5 nonzeros per state at 12 B each plus its row pointer; the hierarchies hold more than Q
    assert 40 < memory["Q_bytes_per_state"] < 70
    assert memory["amg_bytes_per_state"] > memory["Q_bytes_per_state"] < memory["air_cycles_bytes_per_state"]
