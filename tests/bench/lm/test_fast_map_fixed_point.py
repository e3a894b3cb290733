"""bench/lm/fast_map_fixed_point.py: its slope fit on known data, and a smoke run (resumable)."""
from __future__ import annotations

import importlib
import json
import math

import pytest

from tests.docs.test_sources import stray_pipes


@pytest.fixture(scope="module")
def fm():
    module = importlib.import_module("bench.lm.fast_map_fixed_point")
    return module


def test_slope_of_a_power_law_is_its_exponent(fm):
    eps = [1 / 4, 1 / 8, 1 / 16, 1 / 32]
    fit = fm.fit_slope(eps, [0.3 * e for e in eps])
    assert fit["slope"] == pytest.approx(1.0, abs=1e-12) and fit["se"] == pytest.approx(0.0, abs=1e-10)
    flat = fm.fit_slope(eps, [0.1, 0.1, 0.1, 0.1])
    assert flat["slope"] == pytest.approx(0.0, abs=1e-12)
    noisy = fm.fit_slope(eps, [0.1 * e**0.5 * f for e, f in zip(eps, (1.1, 0.9, 1.05, 0.95))])
    assert abs(noisy["slope"] - 0.5) < 3 * noisy["se"] and noisy["se"] > 0
    assert fm.fit_slope(eps[:2], [0.1, 0.2])["slope"] is None


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_smoke_run(fm, tmp_path, capsys):
    out = tmp_path / "fm"
    assert fm.main(["--smoke", "--threads", "1", "--out", str(out)]) == 0
    rec = json.loads((out / "fast_map.json").read_text())
    assert [row["pool"] for row in rec["by_P"]] == [2, 4]
    for row in rec["by_P"]:
        for layer in row["layers"]:
            assert layer["distance"] > 0 and math.isfinite(layer["distance_init"])
    assert (out / "distance_vs_eps.png").stat().st_size > 0
    header = (out / "fast_map.md").read_text().split("\n")[2]
    assert header.startswith("| P (ε) |") and not stray_pipes(header)  # |g| escaped: the table keeps its columns
    assert sorted(p.name for p in (out / "models").iterdir()) == ["P2-seed0.pt", "P4-seed0.pt"]
    before = {p: p.stat().st_mtime_ns for p in (out / "runs").iterdir()}
    assert fm.main(["--smoke", "--threads", "1", "--out", str(out)]) == 0  # resumes: trains nothing
    assert {p: p.stat().st_mtime_ns for p in (out / "runs").iterdir()} == before

    assert fm.main(["--smoke", "--threads", "1", "--out", str(out), "--remeasure", "P4-seed0"]) == 0
    again = json.loads((out / "runs" / "P4-seed0-iter8.json").read_text())
    first = json.loads((out / "runs" / "P4-seed0.json").read_text())
    assert again["trained"] == first["trained"]  # the saved weights reproduce the measurement exactly
