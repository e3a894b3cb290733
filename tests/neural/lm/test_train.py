"""neural.lm.train / neural.lm.checkpoint / `sp-ode train`: schedule, optimiser groups, exact resume, typed errors."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from neural.lm.checkpoint import CheckpointError, CheckpointMismatchError, load_checkpoint
from neural.lm.config import ModelConfig
from neural.lm.data import markov_corpus
from neural.lm.model import FastSlowLM
from neural.lm.train import TrainConfig, _forward_backward, build_optimizer, lr_at, train
from sp_ode.cli import main as cli_main

# Seconds-sized model and data (tests budget): 1 layer, width 16, T = 16, P = 4.
MODEL = ModelConfig(seq_len=16, pool=4, n_layer=1, n_head=2, d_model=16, arm="coupled")
TRAIN = TrainConfig(steps=6, batch_size=4, warmup=2, eval_every=3, eval_windows=8, lr=3e-3)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    # Tiny models: one thread is faster, and far faster when the 2 cores are shared.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def corpus():
    return markov_corpus(seed=0, n_train=4096, n_val=1024, block=4)


def test_lr_schedule_closed_form():
    cfg = TrainConfig(lr=1e-3, min_lr=1e-4, warmup=100)
    assert lr_at(0, cfg, 2000) == pytest.approx(1e-3 / 101)  # nanoGPT: lr·(it+1)/(warmup+1)
    assert lr_at(100, cfg, 2000) == pytest.approx(1e-3)  # cosine starts at the peak
    assert lr_at(1050, cfg, 2000) == pytest.approx(1e-4 + 0.5 * 9e-4)  # half way: cos(π/2) = 0
    assert lr_at(2000, cfg, 2000) == pytest.approx(1e-4)
    assert TrainConfig(lr=2e-3).final_lr == pytest.approx(2e-4)


def test_total_steps_from_token_budget():
    cfg = TrainConfig(tokens=10_000, batch_size=4, accum=2)
    assert cfg.total_steps(seq_len=16) == math.ceil(10_000 / (4 * 16 * 2))
    assert cfg.total_steps(seq_len=16, world_size=2) == math.ceil(10_000 / (4 * 16 * 2 * 2))
    assert dataclasses.replace(cfg, steps=7).total_steps(16) == 7


def test_optimizer_groups_decay_matrices_only_never_gates():
    model = FastSlowLM(MODEL, seed=0)
    opt = build_optimizer(model, TRAIN)
    decayed = {id(p) for p in opt.param_groups[0]["params"]}
    names = dict(model.named_parameters())
    for name, p in names.items():
        assert (id(p) in decayed) == (p.dim() >= 2 and "gate" not in name), name
    assert all(id(g) not in decayed for g in model.gate_parameters())
    frozen = FastSlowLM(dataclasses.replace(MODEL, arm="frozen"), seed=0)
    in_opt = {id(p) for g in build_optimizer(frozen, TRAIN).param_groups for p in g["params"]}
    assert frozen.slow_parameters() and all(id(p) not in in_opt for p in frozen.slow_parameters())


def test_gradient_accumulation_equals_full_batch():
    """Two half batches with accum = 2 give the full-batch gradient (mean of equal-size means)."""
    torch.manual_seed(0)
    x = torch.randint(0, 256, (8, 16))
    y = torch.randint(0, 256, (8, 16))
    grads = []
    for chunks in (1, 2):
        model = FastSlowLM(MODEL, seed=1)
        model.set_gates(0.5)  # open gates: the slow path contributes to every gradient
        for xc, yc in zip(x.chunk(chunks), y.chunk(chunks)):
            _forward_backward(model, xc, yc, chunks, torch.device("cpu"), sync=True)
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    torch.testing.assert_close(grads[0], grads[1], rtol=1e-5, atol=1e-7)  # float32 summation order only


def test_training_writes_run_dir_and_reduces_loss(tmp_path, corpus):
    cfg = dataclasses.replace(TRAIN, steps=12, eval_every=6)
    result = train(MODEL, cfg, data=corpus, out=tmp_path, show_progress=False)
    assert result.finished and result.step == 12 and result.tokens == 12 * 4 * 16
    for name in ("config.json", "metrics.jsonl", "checkpoint.pt", "loss.png"):
        assert (tmp_path / name).is_file(), name
    records = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [6, 12]
    last = records[-1]
    assert last["val_bpb"] == pytest.approx(last["val_loss"] / math.log(2))
    assert last["excess_loss"] == pytest.approx(last["val_loss"] - last["bayes_loss"])
    assert len(last["gates"]) == MODEL.n_layer and last["tokens_per_s"] > 0
    # At init the loss is near ln 256 = 5.545 (logits ~0.1: near-uniform over bytes; tied embeddings
    # slightly favour repeating the input byte, which this source often does); training must lower it.
    assert result.losses[0] == pytest.approx(math.log(256), abs=0.25)
    assert result.val_loss < result.losses[0] - 0.2
    assert result.excess_loss > 0  # nothing beats the Bayes limit (a 0.5+ nats margin at this stage)
    config = json.loads((tmp_path / "config.json").read_text())
    assert ModelConfig.from_dict(config["model"]) == MODEL and TrainConfig.from_dict(config["train"]) == cfg


def test_resume_reproduces_uninterrupted_run_bitwise(tmp_path, corpus):
    """6 steps straight == 3 steps, stop, resume to 6: every loss and parameter equal bitwise.

    Bitwise because on CPU with deterministic algorithms the same operations run on the same
    inputs in the same order: model/optimiser state and every RNG (dropout, data windows)
    are restored from the checkpoint.  Dropout 0.1 makes the torch RNG matter.
    """
    model_cfg = dataclasses.replace(MODEL, dropout=0.1)
    straight = train(model_cfg, TRAIN, data=corpus, out=tmp_path / "a", show_progress=False, figure=False)
    first = train(model_cfg, TRAIN, data=corpus, out=tmp_path / "b", stop_after=3, show_progress=False, figure=False)
    assert not first.finished and first.step == 3
    second = train(model_cfg, TRAIN, data=corpus, out=tmp_path / "b", resume=True, show_progress=False, figure=False)
    assert second.finished and second.step == 6
    assert first.losses + second.losses == straight.losses
    assert second.val_loss == straight.val_loss
    a = load_checkpoint(tmp_path / "a" / "checkpoint.pt")["model"]
    b = load_checkpoint(tmp_path / "b" / "checkpoint.pt")["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)
    steps = [json.loads(line)["step"] for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert steps == [3, 6]


def test_frozen_slow_weights_unchanged_in_checkpoint(tmp_path, corpus):
    cfg = dataclasses.replace(MODEL, arm="frozen")
    init = FastSlowLM(cfg, seed=TRAIN.seed).state_dict()
    train(cfg, TRAIN, data=corpus, out=tmp_path, show_progress=False, figure=False)
    final = load_checkpoint(tmp_path / "checkpoint.pt")["model"]
    slow = [k for k in init if ".slow." in k and not k.endswith("gate")]
    assert slow and all(torch.equal(init[k], final[k]) for k in slow)
    gates = [k for k in init if k.endswith("gate")]
    assert gates and all(not torch.equal(init[k], final[k]) for k in gates)


def test_corrupted_missing_and_mismatched_checkpoints(tmp_path, corpus):
    with pytest.raises(CheckpointError, match="no checkpoint to resume"):
        train(MODEL, TRAIN, data=corpus, out=tmp_path / "none", resume=True, show_progress=False, figure=False)
    train(MODEL, TRAIN, data=corpus, out=tmp_path, stop_after=1, show_progress=False, figure=False)
    with pytest.raises(CheckpointMismatchError, match=r"model\.d_model"):
        train(dataclasses.replace(MODEL, d_model=32), TRAIN, data=corpus, out=tmp_path, resume=True, show_progress=False, figure=False)
    with pytest.raises(CheckpointMismatchError, match=r"train\.lr"):
        train(MODEL, dataclasses.replace(TRAIN, lr=1e-2), data=corpus, out=tmp_path, resume=True, show_progress=False, figure=False)
    path = tmp_path / "checkpoint.pt"
    blob = path.read_bytes()
    path.write_bytes(blob[: len(blob) // 2])  # truncated, as by a crash without atomic writes
    with pytest.raises(CheckpointError, match="unreadable"):
        train(MODEL, TRAIN, data=corpus, out=tmp_path, resume=True, show_progress=False, figure=False)
    torch.save({"format": "something-else"}, path)
    with pytest.raises(CheckpointError, match="format"):
        load_checkpoint(path)


def test_checkpoint_loads_with_weights_only(tmp_path, corpus):
    train(MODEL, TRAIN, data=corpus, out=tmp_path, stop_after=1, show_progress=False, figure=False)
    state = torch.load(tmp_path / "checkpoint.pt", weights_only=True)  # no arbitrary pickles inside
    assert state["step"] == 1 and isinstance(state["rng"], list) and "data" in state["rng"][0]


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(tokens=0), ValueError, "`tokens`"),
    (dict(batch_size=2.5), TypeError, "`batch_size`"),
    (dict(lr=-1.0), ValueError, "`lr`"),
    (dict(min_lr=1.0, lr=1e-3), ValueError, "`min_lr`"),
    (dict(beta2=1.0), ValueError, "`beta2`"),
    (dict(warmup=-1), ValueError, "`warmup`"),
    (dict(device="tpu"), ValueError, "`device`"),
    (dict(grad_clip=float("nan")), ValueError, "`grad_clip`"),
    (dict(compile="yes"), TypeError, "`compile`"),
])
def test_train_config_validation(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        TrainConfig(**kwargs)


def test_train_rejects_wrong_kinds(corpus):
    with pytest.raises(TypeError, match="`model_config`"):
        train({"arm": "dense"}, TRAIN, data=corpus)
    with pytest.raises(ValueError, match="`resume` needs `out`"):
        train(MODEL, TRAIN, data=corpus, resume=True)


def test_cli_train_json_and_usage_errors(tmp_path, capsys):
    argv = ["train", "--smoke", "--steps", "3", "--batch-size", "4", "--set", "seq_len=16", "--set", "pool=4",
            "--set", "d_model=16", "--set", "n_layer=1", "--arm", "dense", "--out", str(tmp_path), "--json"]
    assert cli_main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["arm"] == "dense" and summary["steps"] == 3 and summary["gates"] == []
    assert summary["excess_loss"] == pytest.approx(summary["val_loss"] - summary["bayes_loss"])
    assert cli_main(["train", "--set", "nope=1", "--out", str(tmp_path)]) == 2
    assert cli_main(["train", "--data", str(tmp_path / "missing.txt"), "--out", str(tmp_path)]) == 2
    assert "`data`" in capsys.readouterr().err


def test_text_file_training_has_no_bayes_limit(tmp_path):
    text = tmp_path / "text.txt"
    text.write_bytes(b"the quick brown fox jumps over the lazy dog. " * 40)
    result = train(MODEL, dataclasses.replace(TRAIN, steps=2), data=text, out=None, show_progress=False, figure=False)
    assert result.finished and math.isfinite(result.val_loss)
    assert result.bayes_loss is None and result.excess_loss is None


@pytest.mark.gpu
def test_cuda_bf16_training_step(corpus):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    result = train(MODEL, dataclasses.replace(TRAIN, steps=2, device="cuda"), data=corpus, show_progress=False, figure=False)
    assert result.finished and math.isfinite(result.val_loss)


def test_resuming_a_finished_run_trains_nothing_and_reports(tmp_path, corpus):
    done = train(MODEL, dataclasses.replace(TRAIN, steps=2), data=corpus, out=tmp_path, show_progress=False, figure=False)
    again = train(MODEL, dataclasses.replace(TRAIN, steps=2), data=corpus, out=tmp_path, resume=True,
                  show_progress=False, figure=False)
    assert again.finished and again.losses == [] and again.step == 2
    assert again.val_loss == done.val_loss  # same weights, same fixed validation windows


# --- no lost work (issue 13) ----------------------------------------------------------------

CLI_TINY = ["--smoke", "--batch-size", "4", "--set", "seq_len=16", "--set", "pool=4", "--set", "d_model=16",
            "--set", "n_layer=1", "--arm", "dense", "--json"]


def test_fresh_run_into_an_existing_run_folder_is_refused(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert cli_main(["train", *CLI_TINY, "--steps", "2", "--out", out]) == 0
    capsys.readouterr()
    before = (tmp_path / "run" / "checkpoint.pt").read_bytes()
    assert cli_main(["train", *CLI_TINY, "--steps", "2", "--out", out]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("sp-ode train: error: run folder") and "--resume" in err and "--overwrite" in err
    assert (tmp_path / "run" / "checkpoint.pt").read_bytes() == before  # untouched
    assert cli_main(["train", *CLI_TINY, "--steps", "2", "--out", out, "--resume", "--overwrite"]) == 2
    assert "exclude each other" in capsys.readouterr().err
    assert cli_main(["train", *CLI_TINY, "--steps", "2", "--out", out, "--overwrite", "--format", "svg"]) == 0
    assert (tmp_path / "run" / "loss.svg").is_file() and not (tmp_path / "run" / "loss.png").exists()


def test_default_out_is_a_fresh_run_folder_and_resume_continues_the_latest(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli_main(["train", *CLI_TINY, "--steps", "1"]) == 0
    first = Path(json.loads(capsys.readouterr().out)["out"])
    assert first.parts[:2] == ("out", "train") and (tmp_path / first / "checkpoint.pt").is_file()
    assert cli_main(["train", *CLI_TINY, "--steps", "1"]) == 0   # the same command again: a new folder
    second = Path(json.loads(capsys.readouterr().out)["out"])
    assert second != first and (tmp_path / first / "checkpoint.pt").is_file()
    assert (tmp_path / "out" / "train" / "latest").resolve() == (tmp_path / second).resolve()
    assert cli_main(["train", *CLI_TINY, "--steps", "2", "--resume"]) == 0   # continues out/train/latest
    assert Path(json.loads(capsys.readouterr().out)["out"]).resolve() == (tmp_path / second).resolve()


def _nan_at(monkeypatch, call: int):
    """Make the `call`-th micro-batch loss NaN (a diverging run, deterministically)."""
    import neural.lm.train as nt

    real, calls = nt._forward_backward, {"n": 0}

    def fake(*a, **kw):
        calls["n"] += 1
        loss = real(*a, **kw)
        return loss * float("nan") if calls["n"] >= call else loss

    monkeypatch.setattr(nt, "_forward_backward", fake)


def test_diverging_run_stops_and_keeps_the_last_finite_checkpoint(tmp_path, corpus, monkeypatch):
    _nan_at(monkeypatch, 5)  # eval_every = 3: the checkpoint at step 3 is the last finite one
    result = train(MODEL, TRAIN, data=corpus, out=tmp_path, show_progress=False, figure=False)
    assert result.status == "diverged" and not result.finished and result.step == 5
    assert "at step 5" in result.message and "(step 3)" in result.message
    state = load_checkpoint(tmp_path / "checkpoint.pt")
    assert state["step"] == 3
    assert all(bool(torch.isfinite(t).all()) for t in state["model"].values())
    metrics = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [3]


def test_diverging_cli_run_exits_1_naming_the_step(tmp_path, monkeypatch, capsys):
    _nan_at(monkeypatch, 2)
    assert cli_main(["train", *CLI_TINY, "--steps", "3", "--out", str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert "sp-ode train: error: the training loss became nan at step 2" in err


def test_stale_temp_file_is_cleaned_on_the_next_start(tmp_path, corpus):
    train(MODEL, TRAIN, data=corpus, out=tmp_path, stop_after=3, show_progress=False, figure=False)
    stale = tmp_path / ".checkpoint.pt.k1ll3d.tmp"  # what atomic_write_bytes leaves when killed
    stale.write_bytes(b"half a checkpoint")
    resumed = train(MODEL, TRAIN, data=corpus, out=tmp_path, resume=True, show_progress=False, figure=False)
    assert resumed.cleaned == [stale] and not stale.exists() and resumed.finished


def test_resume_extends_a_finished_run_at_its_final_lr(tmp_path, corpus):
    short = dataclasses.replace(TRAIN, steps=3)
    train(MODEL, short, data=corpus, out=tmp_path, show_progress=False, figure=False)
    longer = dataclasses.replace(TRAIN, steps=6)
    result = train(MODEL, longer, data=corpus, out=tmp_path, resume=True, show_progress=False, figure=False)
    assert result.finished and result.step == 6 and len(result.losses) == 3
    metrics = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    # the original 3-step cosine schedule ended at min_lr = lr/10; the extension stays there.
    assert metrics[-1]["step"] == 6 and metrics[-1]["lr"] == pytest.approx(TRAIN.lr / 10, rel=1e-15)
    assert load_checkpoint(tmp_path / "checkpoint.pt")["schedule_steps"] == 3


def test_unfinished_run_cannot_change_its_budget(tmp_path, corpus):
    train(MODEL, TRAIN, data=corpus, out=tmp_path, stop_after=3, show_progress=False, figure=False)
    with pytest.raises(CheckpointMismatchError, match=r"train.steps: checkpoint 6, now 9"):
        train(MODEL, dataclasses.replace(TRAIN, steps=9), data=corpus, out=tmp_path, resume=True,
              show_progress=False, figure=False)


def _rewrite_checkpoint(path, edit):
    state = torch.load(path, weights_only=True)
    edit(state)
    torch.save(state, path)


def test_wrong_shaped_weight_and_empty_rng_are_one_line_errors(tmp_path, corpus, capsys):
    out = tmp_path / "run"
    assert cli_main(["train", *CLI_TINY, "--steps", "2", "--out", str(out)]) == 0
    capsys.readouterr()
    ckpt = out / "checkpoint.pt"
    original = ckpt.read_bytes()
    key = next(k for k in torch.load(ckpt, weights_only=True)["model"] if k.endswith("weight"))
    _rewrite_checkpoint(ckpt, lambda s: s["model"].__setitem__(key, torch.zeros(3, 5)))
    assert cli_main(["train", *CLI_TINY, "--steps", "4", "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and f"weight `model.{key}` must have shape" in err and "got (3, 5)" in err
    ckpt.write_bytes(original)
    _rewrite_checkpoint(ckpt, lambda s: s.__setitem__("rng", [{}]))
    assert cli_main(["train", *CLI_TINY, "--steps", "4", "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "field `rng[0]` is empty" in err and str(ckpt) in err


def test_reports_follow_the_umask(tmp_path):
    import os

    from sp_ode.core.files import write_json

    old = os.umask(0o027)
    try:
        path = write_json(tmp_path / "r.json", {"a": 1})
    finally:
        os.umask(old)
    assert (path.stat().st_mode & 0o777) == 0o640  # 0o666 & ~0o027, as open() would give


def test_short_run_loss_figure_has_markers(tmp_path):
    from neural.lm.train import plot_run

    history = [{"tokens": 1000 * k, "train_loss": 3.0 - k * 0.1, "val_loss": 3.1 - k * 0.1, "gates": [0.01 * k]}
               for k in (1, 2)]
    path = plot_run(history, tmp_path / "loss.pdf", title="two evaluations", dpi=72)
    assert path.read_bytes()[:4] == b"%PDF"


# --- issue 25: resume on changed data, absurd budgets, a killed run's temp file ----------------------

def test_resume_on_changed_data_is_refused(tmp_path):
    from neural.lm.data import load_text

    text = tmp_path / "data.txt"
    rng = np.random.default_rng(0)
    text.write_bytes(bytes(rng.integers(97, 123, 6000, dtype=np.uint8)))
    train(MODEL, TRAIN, data=load_text(text), out=tmp_path / "run", stop_after=3, show_progress=False, figure=False)
    raw = bytearray(text.read_bytes())
    raw[100] = ord("A")                             # edited in place: same path, same length
    text.write_bytes(bytes(raw))
    with pytest.raises(CheckpointMismatchError, match=r"data\.sha256: checkpoint '[0-9a-f]{64}', now '[0-9a-f]{64}'"):
        train(MODEL, TRAIN, data=load_text(text), out=tmp_path / "run", resume=True, show_progress=False, figure=False)


def test_absurd_token_budget_is_refused_at_once(tmp_path, capsys):
    # before: `--tokens 10**30` trained "forever" with nothing said
    assert cli_main(["train", "--smoke", "--tokens", str(10**30), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "`--tokens` must be between 1 and 1e+12" in err and "got 1e+30" in err
    assert not (tmp_path / "r").exists()


def test_sigterm_during_a_checkpoint_write_leaves_no_temp_file(tmp_path):
    import os
    import signal
    import subprocess
    import sys

    # the child blocks inside the first atomic write (the temp file exists) until it is killed
    script = tmp_path / "child.py"
    script.write_text(
        "import os, sys, time\n"
        "import sp_ode.core.files as files\n"
        "def slow_fsync(fd):\n"
        "    sys.stderr.write('WRITING\\n'); sys.stderr.flush(); time.sleep(120)\n"
        "files.os.fsync = slow_fsync\n"
        "from sp_ode.cli import main\n"
        f"sys.exit(main(['train', {', '.join(repr(a) for a in CLI_TINY)}, '--steps', '2', '--out', sys.argv[1]]))\n")
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, str(script), str(out)], stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stderr:
        if line.strip() == "WRITING":
            break
    assert list(out.glob(".*.tmp")), "the child should be inside an atomic write"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 130                 # "interrupted", not killed mid-write
    assert not list(out.glob(".*.tmp"))
