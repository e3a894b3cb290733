"""bench/lm/nanogpt.py --smoke: the nanoGPT reference benchmark runs (the full run is recorded in docs/bench)."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_bench_nanogpt_smoke(tmp_path, capsys):
    bench = importlib.import_module("bench.lm.nanogpt")
    threads = torch.get_num_threads()
    try:
        assert bench.main(["--smoke", "--threads", "1", "--out", str(tmp_path), "--json"]) == 0
    finally:
        torch.set_num_threads(threads)
    record = json.loads(capsys.readouterr().out)
    assert record == json.loads((tmp_path / "bench_nanogpt.json").read_text())
    # The recipe itself (nanoGPT shakespeare_char CPU command), checked field by field.
    model, train = record["model"], record["train"]
    assert (model["n_layer"], model["n_head"], model["d_model"], model["seq_len"]) == (4, 4, 128, 64)
    assert model["arm"] == "dense" and model["dropout"] == 0.0 and model["bias"] is False
    # lr 4e-3 (chosen on selection seed 10, docs/bench/neural_training.md), floor lr/10
    assert (train["batch_size"], train["lr"], train["min_lr"], train["beta2"]) == (12, 4e-3, 4e-4, 0.99)
    assert bench.configs(smoke=False)[1].steps == 2000 and bench.configs(smoke=False)[1].warmup == 100
    assert record["iterations"] == 5 and record["tokens"] == 5 * 12 * 64 and record["checkpoint_step"] == 5
    # The headline loss scores the whole validation split (non-overlapping windows of T = 64).
    assert record["val_targets"] % 64 == 0 and record["nanogpt_estimator_draws"] == 2
    assert record["ratio_to_reference"] == record["val_loss"] / 1.88
    assert record["target_met"] == (record["val_loss"] <= 1.88)
