"""bench/systems/initial_layer.py --smoke runs end to end (so the benchmark cannot rot) and its record holds."""
from __future__ import annotations

import json

from bench.systems import initial_layer


def test_bench_initial_layer_smoke(tmp_path):
    out = tmp_path / "bench.json"
    # in this process: the script sets no global state (float64 in `with` blocks; its timed builds are children)
    assert initial_layer.main(["--smoke", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())["mm"]["order1"]
    # Michaelis–Menten from v(0) = 0 at ε = 1e-2: the unprojected start is off by ~0.375ε, the projected ones ~ε²
    assert rec["none"]["0.01"]["error"] > 3e-3
    assert rec["first_order"]["0.01"]["error"] < 1e-5 and rec["projected"]["0.01"]["error"] < 1e-5
    assert abs(rec["first_order"]["0.01"]["shift_over_eps"] + 0.375) < 1e-9
