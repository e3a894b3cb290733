"""The equal-wall-clock experiment (H5): its pre-registered rule, the token budget, and a smoke run."""
from __future__ import annotations

import importlib
import json

import pytest


@pytest.fixture(scope="module")
def h5():
    module = importlib.import_module("bench.lm.equal_wall_clock")
    return module


def test_rule_supported_when_no_worse_than_the_margin(h5):
    v = h5.verdict([-0.004, -0.002, -0.003, -0.001, -0.005])
    assert v["verdict"] == "supported" and v["hi95"] <= h5.MARGIN


def test_rule_not_supported_when_significantly_worse(h5):
    v = h5.verdict([0.006, 0.008, 0.007, 0.009, 0.005])
    assert v["verdict"] == "not supported" and v["lo95"] > 0


def test_rule_inconclusive_when_the_interval_straddles(h5):
    assert h5.verdict([0.01, -0.01, 0.004, -0.006, 0.002])["verdict"] == "inconclusive"


def test_rule_needs_five_seeds(h5):
    assert h5.verdict([-0.004, -0.002, -0.003, -0.001])["verdict"].startswith("inconclusive (n = 4")


def test_rule_margin_is_the_boundary(h5):
    # the same spread, shifted: just inside the margin is supported, just outside is not
    base = [-0.0005, 0.0005, 0.0, 0.0002, -0.0002]
    assert h5.verdict([x + 0.001 for x in base])["verdict"] == "supported"
    assert h5.verdict([x + 0.003 for x in base])["verdict"] == "not supported"


def test_budget_is_fraction_times_rho(h5):
    assert h5.challenger_tokens(2_000_000, 2.5) == 3_000_000
    assert h5.challenger_tokens(1000, 1.0, 0.6) == 600


def test_rho_is_read_from_a_bench_record(h5, tmp_path):
    record = {"rows": [{"seq_len": 1024, "arm": "coupled-W16", "kernel": "chunked", "cpu_over_full": 0.4},
                       {"seq_len": 1024, "arm": "coupled-W16", "kernel": "masked", "cpu_over_full": 1.7}]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record))
    assert h5.rho_from_record(path, 1024) == pytest.approx(2.5)
    with pytest.raises(ValueError, match="no coupled-W16 chunked row at T = 2048"):
        h5.rho_from_record(path, 2048)


def test_crossing_time_interpolates(h5):
    curve = [{"train_cpu_s": 10.0, "val_loss": 2.0}, {"train_cpu_s": 20.0, "val_loss": 1.0}]
    assert h5.crossing_time(curve, 1.5) == pytest.approx(15.0)
    assert h5.crossing_time(curve, 0.5) is None
    assert h5.crossing_time(curve, 3.0) == 10.0


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_smoke_run_writes_pairs_and_resumes(h5, tmp_path, capsys):
    out = tmp_path / "h5"
    assert h5.main(["--smoke", "--threads", "1", "--sources", "hard", "--out", str(out)]) == 0
    rep = json.loads((out / "h5.json").read_text())
    rows = rep["sources"]["hard"]["rows"]
    assert [r["seed"] for r in rows] == [0, 1]
    assert rep["tokens_challenger"] == round(0.6 * rep["tokens_base"])  # ρ = 1 at smoke size
    assert all(r["t_C_cpu_s"] > 0 and r["d"] == pytest.approx(r["L_C"] - r["L_D"]) for r in rows)
    assert rep["sources"]["hard"]["H5"]["verdict"].startswith("inconclusive (n = 2")
    assert (out / "loss_vs_seconds.png").stat().st_size > 0
    before = {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("*.json")}
    assert len(before) == 4
    assert h5.main(["--smoke", "--threads", "1", "--sources", "hard", "--out", str(out)]) == 0  # resumes: trains nothing
    assert {p: p.stat().st_mtime_ns for p in (out / "runs").rglob("*.json")} == before


def test_loss_at_interpolates_and_holds_past_the_end(h5):
    curve = [{"train_cpu_s": 10.0, "val_loss": 2.0}, {"train_cpu_s": 20.0, "val_loss": 1.0}]
    assert h5.loss_at(curve, 15.0) == pytest.approx(1.5)
    assert h5.loss_at(curve, 5.0) == 2.0 and h5.loss_at(curve, 30.0) == 1.0


def _run(loss, t, curve_losses):
    ts = [t * (k + 1) / len(curve_losses) for k in range(len(curve_losses))]
    return {"val_loss": loss, "train_cpu_s": t, "train_s": t, "tokens": 1, "gates": [], "slow_influence": [],
            "curve": [{"train_cpu_s": a, "val_loss": b} for a, b in zip(ts, curve_losses)]}


def test_report_uses_the_curve_when_the_challenger_ran_too_long(h5):
    meta = {"time_fraction": 0.6, "margin": h5.MARGIN, "min_seeds": 5}
    base = {s: _run(1.0, 100.0, [2.0, 1.0]) for s in range(5)}
    # ended below dense-full, but took 0.9 × the time; at 0.6 × t_D its curve is still at 1.1
    slow = {s: _run(0.99 - 0.001 * s, 90.0, [1.3, 1.1, 0.99 - 0.001 * s]) for s in range(5)}
    rep = h5.report({"hard": {h5.BASE: base, h5.CHALLENGER: slow}}, {}, meta)
    src = rep["sources"]["hard"]
    assert src["H5"]["verdict"] == "supported" and src["ratio_over_target"]
    assert src["verdict"] == "not supported" and rep["H5_overall"].startswith("inconclusive (1 of 2")
    fast = {s: _run(0.99 - 0.001 * s, 60.0, [1.3, 1.1, 0.99 - 0.001 * s]) for s in range(5)}
    rep = h5.report({"hard": {h5.BASE: base, h5.CHALLENGER: fast}, "shakespeare": {h5.BASE: base, h5.CHALLENGER: fast}},
                    {}, meta)
    assert not rep["sources"]["hard"]["ratio_over_target"] and rep["H5_overall"] == "supported"


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_text_source_with_a_short_validation_split_is_scored_inside_it(h5, tmp_path):
    # the validation split (10 % of 8000 bytes) is shorter than the scale's n_val: windows must lie inside it
    text = tmp_path / "small.txt"
    text.write_bytes(bytes((i * 7919) % 97 + 32 for i in range(8000)))
    out = tmp_path / "h5"
    assert h5.main(["--smoke", "--threads", "1", "--sources", "shakespeare", "--seeds", "1", "--text", str(text),
                    "--out", str(out)]) == 0
    rows = json.loads((out / "h5.json").read_text())["sources"]["shakespeare"]["rows"]
    assert len(rows) == 1 and rows[0]["L_D"] > 0
