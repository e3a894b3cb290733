"""examples/ablation_500k.py --smoke: the 500k-token ablation script runs end to end and reports every figure."""
from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_ablation_smoke(tmp_path, capsys):
    script = _load(ROOT / "examples" / "ablation_500k.py")
    threads = torch.get_num_threads()
    try:  # one thread: the smoke run is tiny, and the suite shares 2 cores
        assert script.main(["--smoke", "--threads", "1", "--out", str(tmp_path)]) == 0
    finally:
        torch.set_num_threads(threads)
    printed = capsys.readouterr().out
    record = json.loads((tmp_path / "ablation.json").read_text())
    assert (tmp_path / "ablation.png").stat().st_size > 0
    assert record["smoke"] and record["seeds"] == 2 and len(record["runs"]) == 6
    arms = record["arms"]
    assert set(arms) == {"dense", "coupled", "frozen"}
    assert arms["dense"]["time_vs_dense"] == 1.0 and arms["dense"]["gates_mean"] == []
    for arm in ("coupled", "frozen"):
        assert len(arms[arm]["gates_mean"]) == record["model"]["n_layer"]
        assert all(g > 0 for g in arms[arm]["gates_mean"])  # a trained gate moves off its zero init
    for run in record["runs"]:
        assert math.isfinite(run["val_loss"]) and run["excess_loss"] > 0  # nothing beats the Bayes limit
        assert run["val_loss"] - run["excess_loss"] == record["bayes_loss"] or math.isclose(
            run["val_loss"] - run["excess_loss"], record["bayes_loss"], rel_tol=1e-12)
    # The printed table carries the same numbers as the JSON record.
    assert f"{arms['coupled']['val_loss_mean']:.4f}" in printed
    assert "coupled − frozen" in printed and "vs dense" in printed
