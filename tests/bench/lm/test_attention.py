"""bench/lm/attention.py runs (``--smoke``), so it cannot rot; its record says what it measured.

Timings are not asserted (machine load swings them); the structure is: every arm at every T,
ratios against dense-full (1 for dense-full itself), each chunked row beside its masked row,
the peak-memory probe's subprocess path, the forward-only FlexAttention row, and the targets.
"""
from __future__ import annotations

import importlib
import json

import pytest


def _load(name):
    """The benchmark module `bench.<name>` (its functions are tested without running the script)."""
    return importlib.import_module(f"bench.{name}")


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_bench_attention_smoke(capsys, tmp_path):
    bench = _load("lm.attention")
    out = tmp_path / "record.json"
    # --no-flex: compiling flex_attention costs ~15 s (cold inductor cache), and a failure of it was recorded, never
    # asserted; the flex kernel itself is tested in tests/neural/lm/test_windowed_attention.py
    assert bench.main(["--smoke", "--no-flex", "--json", "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == json.loads(out.read_text())
    assert record["threads"] == 1 and record["baseline"] == "dense-full"
    keys = [(r["seq_len"], r["arm"], r["kernel"]) for r in record["rows"]]
    assert keys == [(T, a, k) for T in (32,) for a, k in bench.arm_list([4])]
    for r in record["rows"]:
        assert r["cpu_ms"] > 0 and r["tokens_per_cpu_s"] > 0
        if r["arm"] == "dense-full":
            assert r["cpu_over_full"] == 1.0
        if r["kernel"] == "chunked":
            assert r["cpu_over_masked"] > 0
    probed = [r for r in record["rows"] if r["peak_mb"] is not None]
    assert [(r["seq_len"], r["arm"], r["kernel"]) for r in probed] == [(32, "dense-W4", "chunked")]
    assert all(r["peak_mb"] >= 0 for r in probed)
    (inf,) = record["inference"]
    assert inf["status"]["chunked"]["ok"] and inf["status"]["masked"]["ok"] and "flex" not in inf["status"]
    assert record["targets"] == []  # the smoke grid has no T = 2048 / 8192 row


def test_bench_attention_refuses_to_overwrite_a_record(tmp_path):
    bench = _load("lm.attention")
    out = tmp_path / "old.json"
    out.write_text("{}")
    with pytest.raises(SystemExit):
        bench.parse_args(["--smoke", "--out", str(out)])
    assert out.read_text() == "{}"


def test_targets_are_judged_on_the_chunked_coupled_row():
    bench = _load("lm.attention")
    assert [(t["seq_len"], t["arm"], t["kernel"], t["max_ratio"]) for t in bench.TARGETS] == [
        (2048, "coupled-W16", "chunked", 0.5), (8192, "coupled-W16", "chunked", 0.2)]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gpu_attention_code_path_on_cpu(capsys):
    gpu = _load("lm.gpu_attention")
    assert gpu.main(["--device", "cpu", "--smoke", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "ok" and record["dtype"] == "bfloat16 autocast"
    rows = {(r["seq_len"], r["arm"], r["kernel"]): r for r in record["rows"]}
    assert set(rows) == {(T, a, k) for T in (32, 64) for a, k in gpu.arms_at(T, [4], ["chunked", "flex", "masked"], 64)}
    for (_T, _arm, kernel), r in rows.items():
        if kernel == "flex":  # no CPU backward in torch 2.13: recorded as a failure with its reason
            assert not r["ok"] and "no backward pass on CPU" in r["error"]
        else:
            assert r["ok"] and r["tokens_per_s"] > 0 and r["over_full"] > 0


def test_gpu_attention_without_cuda_is_skipped(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the skip path is not taken")
    gpu = _load("lm.gpu_attention")
    assert gpu.main(["--smoke", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "skipped"


def test_gpu_attention_drops_the_masked_kernel_past_its_limit():
    gpu = _load("lm.gpu_attention")
    assert ("dense-W16", "masked") in gpu.arms_at(8192, [16], ["chunked", "masked"], 8192)
    assert ("dense-W16", "masked") not in gpu.arms_at(16384, [16], ["chunked", "masked"], 8192)


def test_plot_only_draws_a_record(tmp_path):
    bench = _load("lm.attention")
    rows = [{"seq_len": T, "arm": a, "kernel": k, "tokens_per_cpu_s": 1e4 / T, "peak_mb": 100.0 + T}
            for T in (256, 512) for a, k in bench.arm_list([16])]
    record = tmp_path / "r.json"
    record.write_text(json.dumps({"rows": rows, "tokens_per_step": 8192,
                                  "model": {"n_layer": 2, "d_model": 64, "pool": 16}}))
    assert bench.main(["--plot-only", str(record), "--figure", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").stat().st_size > 10_000
    assert bench.main(["--plot-only", str(record)]) == 2  # a figure path is required
