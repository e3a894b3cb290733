"""bench/systems/batched.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json

import jax
import pytest

import bench.systems.batched as bench


@pytest.mark.slow
def test_bench_batched_smoke(tmp_path, capsys):
    out = tmp_path / "bench.json"
    # in this process (the benchmark's float64 is scoped to its main(), so the suite's JAX flag is untouched)
    assert not jax.config.jax_enable_x64
    assert bench.main(["--smoke", "--json", "--out", str(out)]) == 0
    assert not jax.config.jax_enable_x64  # no process-wide JAX setting left behind
    rec = json.loads(capsys.readouterr().out)
    assert rec == json.loads(out.read_text())  # the file records every printed number
    assert rec["batch"] == 4 and rec["scipy_subset"] == 2
    assert rec["diffrax_vmap"]["all_succeeded"]
    # every path was run at an rtol whose error on the reference sets meets the common target,
    # and that rtol is the loosest such one on the ladder (the one before it missed)
    for name, choice in rec["rtol_choice"].items():
        assert choice["reached"], name
        assert choice["error"] <= rec["target_error"]
        errors = [e for _, e in choice["tried"]]
        assert errors[-1] == choice["error"] and all(e > rec["target_error"] for e in errors[:-1])
    loops = rec["scipy_loops"]
    assert set(loops) == {"Radau", "BDF", "LSODA"} and all(v["all_succeeded"] for v in loops.values())
    fastest = rec["fastest_scipy"]
    assert loops[fastest]["loop_s"] == min(v["loop_s"] for v in loops.values())
    assert rec["ratio_fastest_scipy_loop_over_vmap"] == loops[fastest]["loop_s"] / rec["diffrax_vmap"]["solve_s"]
    # the vmapped diffrax sweep and the scipy loops solve the same problems
    assert rec["max_abs_diff_vmap_vs_scipy"] <= 1e-6
    assert rec["diffrax_vmap"]["compile_s"] > 0 and rec["diffrax_vmap"]["solve_s"] > 0
    assert isinstance(rec["target"]["met"], bool)
