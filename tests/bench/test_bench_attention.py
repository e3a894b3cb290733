"""bench/bench_attention.py runs (``--smoke``), so it cannot rot; its record says what it measured.

Timings are not asserted (machine load swings them); the structure is: every arm at every T,
ratios against dense-full (1 for dense-full itself), each chunked row beside its masked row,
the peak-memory probe's subprocess path, the forward-only FlexAttention row, and the targets.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_bench_attention_smoke(capsys, tmp_path):
    bench = _load("bench_attention")
    out = tmp_path / "record.json"
    assert bench.main(["--smoke", "--json", "--out", str(out)]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record == json.loads(out.read_text())
    assert record["threads"] == 1 and record["baseline"] == "dense-full"
    keys = [(r["seq_len"], r["arm"], r["kernel"]) for r in record["rows"]]
    assert keys == [(T, a, k) for T in (32, 64) for a, k in bench.arm_list([4])]
    for r in record["rows"]:
        assert r["cpu_ms"] > 0 and r["tokens_per_cpu_s"] > 0
        if r["arm"] == "dense-full":
            assert r["cpu_over_full"] == 1.0
        if r["kernel"] == "chunked":
            assert r["cpu_over_masked"] > 0
    probed = [r for r in record["rows"] if r["peak_mb"] is not None]
    assert [(r["seq_len"], r["arm"], r["kernel"]) for r in probed] == [(32, "dense-full", "none"), (32, "dense-W4", "chunked")]
    assert all(r["peak_mb"] >= 0 for r in probed)
    (inf,) = record["inference"]
    assert inf["status"]["chunked"]["ok"] and inf["status"]["masked"]["ok"] and "flex" in inf["status"]
    assert record["targets"] == []  # the smoke grid has no T = 2048 / 8192 row


def test_bench_attention_refuses_to_overwrite_a_record(tmp_path):
    bench = _load("bench_attention")
    out = tmp_path / "old.json"
    out.write_text("{}")
    with pytest.raises(SystemExit):
        bench.parse_args(["--smoke", "--out", str(out)])
    assert out.read_text() == "{}"


def test_targets_are_judged_on_the_chunked_coupled_row():
    bench = _load("bench_attention")
    assert [(t["seq_len"], t["arm"], t["kernel"], t["max_ratio"]) for t in bench.TARGETS] == [
        (2048, "coupled-W16", "chunked", 0.5), (8192, "coupled-W16", "chunked", 0.2)]
