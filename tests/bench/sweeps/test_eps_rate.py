"""bench/sweeps/eps_rate.py --smoke runs end to end and its record holds (so the benchmark cannot rot)."""
from __future__ import annotations

import json

from bench.sweeps import eps_rate


def test_bench_sweep_eps_rate_smoke(tmp_path):
    """ε with k_m on the telegraph gene (n = 80, 4 points, route reduced): every point on a table path, within
    tol of the independent Radau solve, and bit-identical at chunk size 8."""
    out = tmp_path / "bench.json"
    assert eps_rate.main(["--smoke", "--out", str(out)]) == 0   # in this process: the script sets no global state
    [row] = json.loads(out.read_text())["rows"]
    assert row["n"] == 80 and row["points"] == 4 and row["paths"] == {"reduced1": 4}
    assert row["max_error_vs_radau"] <= 1e-6 and row["identical_at_chunk_size_8"] and row["failed"] == 0
