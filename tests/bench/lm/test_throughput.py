"""The throughput benchmarks run (``--smoke``), so they cannot rot (issue 5).

Timings are not asserted (machine load swings them 10×); the FLOP split is: the
attention-core FLOPs counted by torch's FlopCounterMode must equal the analytic
4T²d (fast) and 4K²d, K = T/P − 1 (slow), and slow/fast ≤ 1/P².
"""
from __future__ import annotations

import importlib
import json

import pytest


def _load(name):
    """The benchmark module `bench.<name>` (its functions are tested without running the script)."""
    return importlib.import_module(f"bench.{name}")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_bench_throughput_smoke(capsys, tmp_path):
    bench = _load("lm.throughput")
    out = tmp_path / "record.json"
    assert bench.main(["--smoke", "--json", "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == json.loads(out.read_text())
    assert [(r["seq_len"], r["pool"]) for r in record["rows"]] == [(32, 4), (32, 8), (64, 4), (64, 8)]
    for r in record["rows"]:
        assert r["dense_wall_ms"] > 0 and r["coupled_cpu_ms"] > 0 and r["ratio_cpu_median"] > 0
        assert r["params_coupled"] > r["params_dense"]
    for f in record["flops"]:
        T, P, d = f["seq_len"], f["pool"], record["model"]["d_model"]
        assert f["fast_attention_core"] == 4 * T * T * d
        assert f["slow_attention_core"] == 4 * (T // P - 1) ** 2 * d
        assert f["slow_over_fast_measured"] == f["slow_over_fast_analytic"] <= f["one_over_P2"]
        assert 0 < f["coupled_extra_flops_fraction"] < 0.1


def test_gpu_throughput_code_path_on_cpu(capsys):
    gpu = _load("lm.gpu_throughput")
    assert gpu.main(["--device", "cpu", "--smoke", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "ok" and [r["arm"] for r in record["rows"]] == ["dense", "coupled_P8"]
    assert all(r["tokens_per_s_best"] > 0 for r in record["rows"])


def test_gpu_throughput_skips_cleanly_without_cuda(capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the skip path does not apply")
    gpu = _load("lm.gpu_throughput")
    assert gpu.main(["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "skipped"
