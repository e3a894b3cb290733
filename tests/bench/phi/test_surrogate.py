"""bench/phi/surrogate.py and its baselines (issue 27): the smoke run, the interpolants, the GPU script's CPU path.

Provenance: the interpolants are checked on laws whose log is a polynomial in y (a log-space
interpolant of high enough degree reproduces them exactly); the sparse-grid node counts against
the known Clenshaw–Curtis counts 1, 5, 13, 29, 65 in d = 2 and 1, 2d + 1, 2d² + 2d + 1 in any d
(levels 0, 1, 2).
"""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]

from bench.phi._baselines import (  # noqa: E402
    ChebyshevSurrogate,
    smolyak_count,
    smolyak_levels,
    tensor_levels,
)


def _load(name: str):
    """The benchmark module `bench.<name>` (its functions are tested without running the script)."""
    return importlib.import_module(f"bench.{name}")


def _law(y, degree=2):
    """A 5-state law with log p a polynomial of total degree `degree` in y (softmax of it)."""
    y = np.asarray(y, float)
    k = np.arange(5.0)
    logits = k * y.sum() + (k**2 / 10) * (y.prod() if degree >= 2 else 0.0)
    p = np.exp(logits - logits.max())
    return p / p.sum()


def test_sparse_grid_node_counts_match_clenshaw_curtis():
    assert [smolyak_count(2, L) for L in range(5)] == [1, 5, 13, 29, 65]
    for d in (3, 5):
        assert smolyak_count(d, 1) == 2 * d + 1 and smolyak_count(d, 2) == 2 * d * d + 2 * d + 1


@pytest.mark.parametrize("kind", ["tensor", "smolyak"])
def test_log_space_interpolants_reproduce_exponential_laws(kind):
    lower, upper = np.array([-0.5, 0.2]), np.array([0.5, 1.0])
    levels = tensor_levels(2, 2) if kind == "tensor" else smolyak_levels(2, 3)   # degree 4 in y₁y₂ reached
    sur = ChebyshevSurrogate(_law, lower, upper, levels)
    ys = np.random.default_rng(1).uniform(lower, upper, (20, 2))
    ref = np.stack([_law(y) for y in ys])
    assert np.abs(sur.predict(ys) - ref).sum(axis=1).max() < 1e-12
    # and the check can fail: level 0 (one node) is a constant law
    crude = ChebyshevSurrogate(_law, lower, upper, tensor_levels(2, 0) if kind == "tensor" else smolyak_levels(2, 0))
    assert crude.solves == 1 and np.abs(crude.predict(ys) - ref).sum(axis=1).max() > 1e-2


def test_bench_smoke_writes_fresh_records(tmp_path, capsys):
    bench = _load("phi.surrogate")
    assert bench.main(["--smoke", "--only", "targets", "--out", str(tmp_path)]) == 0
    rec = json.loads((tmp_path / "target_d3_n64_factored_kl1.json").read_text())
    assert rec["n"] == 64 and rec["d"] == 3 and rec["check_summary"]["certificate_holds_everywhere"]
    assert rec["certified"]["n_points"] == 16 and len(rec["certified"]["surrogate_certificate"]) == 16
    assert {"evaluate_seconds", "certification_seconds", "speedup_evaluate_vs_exact", "train_seconds"} <= set(rec)
    d8 = json.loads((tmp_path / "target_d8_n64_factored_kl1.json").read_text())
    assert d8["d"] == 8 and len(d8["domain"]) == 8
    # a second run never overwrites the first record
    assert bench.main(["--smoke", "--only", "targets", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "target_d3_n64_factored_kl1_2.json").is_file()
    assert "certified_predict" in capsys.readouterr().out


def test_gpu_script_cpu_path(tmp_path):
    gpu = _load("phi.gpu_surrogate")
    out = tmp_path / "gpu.json"
    assert gpu.main(["--device", "cpu", "--smoke", "--out", str(out)]) == 0
    rec = json.loads(out.read_text())
    assert rec["device"] == "cpu" and rec["n"] == 100 and rec["check_holds"] and rec["steps_done"] > 0
    assert rec["certified"]["n_points"] == 8


def test_bench_smoke_baseline_and_reduced_stages(tmp_path):
    bench = _load("phi.surrogate")
    assert bench.main(["--smoke", "--only", "baseline", "--out", str(tmp_path)]) == 0
    base = json.loads((tmp_path / "baseline.json").read_text())
    assert [r["d"] for r in base["rows"]] == [1, 2]
    for row in base["rows"]:
        for kind in ("tensor_chebyshev", "smolyak"):
            errs = [x["max_error_l1"] for x in row[kind]["ladder"] if "max_error_l1" in x]
            assert errs and errs[-1] <= errs[0]          # refining the grid does not make it worse
    assert bench.main(["--smoke", "--only", "reduced", "--out", str(tmp_path)]) == 0
    red = json.loads((tmp_path / "reduced.json").read_text())
    assert red["status"] == [0, 0] and red["within_bound"]
    assert red["max_difference"] <= red["max_bound"]


def test_anchor_reach_smoke_is_exact_at_the_anchor_and_measures_away_from_it(tmp_path):
    """c = min_i (G(y)ĥ)_i is 1 at the anchor itself (ĥ is its own hitting-time vector: closed form), not 1 beside it."""
    reach = importlib.import_module("bench.phi.anchor_reach")
    out = tmp_path / "reach.json"
    assert reach.main(["--smoke", "--out", str(out)]) == 0
    at, near = json.loads(out.read_text())["d3"]["rows"]
    assert at["delta"] == 0.0 and near["delta"] == 0.02
    assert all(abs(at[k] - 1.0) < 1e-9 for k in ("min_c_axis", "median_c_axis", "min_c_corners", "max_c_corners"))
    assert abs(near["min_c_axis"] - 1.0) > 1e-3


def test_the_checkpoint_readers_name_the_missing_checkpoint_and_the_command_that_writes_it(tmp_path):
    for name in ("looseness", "timing"):
        with pytest.raises(SystemExit, match=r"ckpt_d3_n10000_factored_kl1\.pt: no such checkpoint; `python -m "
                                              r"bench\.phi\.surrogate --only targets --out "):
            importlib.import_module(f"bench.phi.{name}").main(["--dir", str(tmp_path)])
