"""bench/systems/eps_cost.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json

import jax
import pytest

import bench.systems.eps_cost as bench


@pytest.mark.slow
def test_bench_eps_cost_smoke(tmp_path, capsys):
    out = tmp_path / "bench.json"
    # in this process (the benchmark's float64 is scoped to its main(), so the suite's JAX flag is untouched)
    assert not jax.config.jax_enable_x64
    assert bench.main(["--smoke", "--json", "--out", str(out)]) == 0
    assert not jax.config.jax_enable_x64  # no process-wide JAX setting left behind
    rec = json.loads(capsys.readouterr().out)
    assert rec == json.loads(out.read_text())  # the file records every printed number
    (row,) = rec["rows"]
    assert row["eps"] == 1e-2
    # every full solver was run and timed at the corrected path's accuracy
    assert set(row["full"]) == {"Kvaerno5", "Radau", "BDF", "LSODA"}
    assert all(v["reached"] and v["error"] <= row["accuracy_target"] for v in row["full"].values())
    # O(ε) for the plain reduced path, O(ε²) for the corrected one, against a Radau reference
    # at rtol 1e-13: at ε = 1e-2 these differ by about two orders of magnitude
    assert row["corrected"]["error"] < 0.05 * row["reduced"]["error"]
    assert row["corrected"]["error"] <= 2 * rec["C"] * row["eps"] ** 2
    assert row["ref_floor"] < 1e-3 * row["corrected"]["error"]
    assert row["speedup_corrected"] > 0 and rec["targets"]["error_le_2C_eps2"]["met"]
