"""Training loop of the fast–slow attention LM: AdamW, warmup + cosine, clipping, accumulation, DDP.

The optimisation (nanoGPT's recipe, stated here because it is what is measured):

* AdamW with decoupled weight decay on matrices only (Linear weights and the
  embedding); biases, LayerNorm parameters, the null vector and the **gates g_ℓ
  are not decayed** — decay would pull every gate towards 0 and bias the very
  quantity the ablation reports (does the gate open?);
* learning rate: linear warmup to `lr` over `warmup` steps, then cosine decay
  to `min_lr` at the last step;
* gradient clipping at global norm `grad_clip`; `accum` micro-batches per step;
* a token budget: steps = ⌈tokens / (B · T · accum · world_size)⌉.

Losses are mean cross-entropy in nats per byte; bits per byte = nats / ln 2.  On
the built-in Markov source every evaluation also reports the Bayes-optimal loss on
the same validation targets and the excess loss over it (`neural.lm.data`).

Reproducibility: the model is initialised from `seed`; batches come from a
seeded `torch.Generator` (one stream per DDP rank); CPU runs use
`torch.use_deterministic_algorithms(True)`.  A checkpoint stores every RNG
state, so a resumed run repeats the uninterrupted one (`neural.lm.checkpoint`).

No lost work: a run stops at the first non-finite loss (or non-finite weights) and
keeps its last finite checkpoint (`TrainResult.status == "diverged"`); temp files
left by a killed checkpoint write are removed when the next run starts; a finished run
resumed with a larger budget is extended at its final learning rate (the cosine
schedule of the original run is kept, `schedule_steps` in the checkpoint); and
`check_run_folder` (called by `sp-ode train`) refuses to start afresh in a
folder that holds a run unless asked to overwrite it.

Data-parallel: `torchrun --nproc_per_node=N -m neural.lm.train [sp-ode train flags]`
starts N ranks (gloo on CPU, nccl on CUDA); each draws its own windows and DDP
averages gradients; only rank 0 writes files.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from neural.lm.checkpoint import (
    FORMAT,
    CheckpointError,
    capture_rng,
    check_compatible,
    check_state,
    clean_stale_temps,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
)
from neural.lm.config import ConfigDict, ModelConfig
from neural.lm.data import ByteCorpus, eval_starts, get_batch, load_corpus, windows
from neural.lm.model import FastSlowLM
from sp_ode.core.errors import Error
from sp_ode.core.files import atomic_write_bytes, write_json
from sp_ode.core.reporting import figures, progress
from sp_ode.core.summary import Summarised, first_line, number, shape_of
from sp_ode.core.validation import check_choice, check_nonnegative, check_positive, check_positive_int

__all__ = ["TrainConfig", "TrainResult", "RunFolderError", "train", "check_run_folder", "lr_at", "evaluate",
           "build_optimizer", "resolve_device", "NATS_TO_BITS", "FIGURE_FORMATS"]

NATS_TO_BITS = 1.0 / math.log(2.0)
FIGURE_FORMATS = ("png", "pdf", "svg")
# Files a run writes into its folder (what --overwrite replaces).
RUN_FILES = ("checkpoint.pt", "metrics.jsonl", "config.json", "summary.json",
             *(f"loss.{fmt}" for fmt in FIGURE_FORMATS))


class RunFolderError(Error, ValueError):
    """The run folder holds a run that a fresh start would replace (or is not a folder)."""
DEVICES = ("cpu", "cuda", "auto")


@dataclass(frozen=True)
class TrainConfig(ConfigDict):
    """Optimisation settings (the model's shape is [`neural.ModelConfig`][neural.lm.config.ModelConfig]).

    Attributes
    ----------
    tokens
        Token budget, counted over all ranks and micro-batches.
    steps
        Optimiser steps; overrides `tokens` when given (nanoGPT counts iterations).
    batch_size : B
        Windows per micro-batch per rank.
    accum
        Micro-batches per optimiser step (gradient accumulation).
    lr, min_lr
        Peak and final learning rate (min_lr None → lr/10).
    warmup
        Linear-warmup steps.
    weight_decay, beta1, beta2
        AdamW.
    grad_clip
        Global gradient-norm clip; 0 disables it.
    eval_every
        Steps between evaluations (and checkpoints); the last step is always evaluated.
    eval_windows
        Validation windows per evaluation (fixed, evenly spaced: every
        evaluation of every run scores the same targets).
    seed
        Model init, data stream, dropout.
    device : "cpu"
        "cuda" or "auto" (CUDA when available).
    compile
        Wrap the model in `torch.compile`.
    deterministic
        `torch.use_deterministic_algorithms(True)` on CPU.
    """

    tokens: int = 500_000
    steps: int | None = None
    batch_size: int = 12
    accum: int = 1
    lr: float = 1e-3
    min_lr: float | None = None
    warmup: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0
    eval_every: int = 250
    eval_windows: int = 256
    seed: int = 0
    device: str = "cpu"
    compile: bool = False
    deterministic: bool = True

    def __post_init__(self) -> None:
        check_positive_int("tokens", self.tokens)
        if self.steps is not None:
            check_positive_int("steps", self.steps)
        for name in ("batch_size", "accum", "eval_every", "eval_windows"):
            check_positive_int(name, getattr(self, name))
        if isinstance(self.warmup, bool) or not isinstance(self.warmup, int) or self.warmup < 0:
            raise ValueError(f"`warmup` must be an integer >= 0; got {self.warmup!r}.")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"`seed` must be an integer >= 0; got {self.seed!r}.")
        check_positive("lr", self.lr)
        if self.min_lr is not None:
            check_nonnegative("min_lr", self.min_lr)
            if self.min_lr > self.lr:
                raise ValueError(f"`min_lr` must be <= `lr` ({self.lr}); got {self.min_lr}.")
        check_nonnegative("weight_decay", self.weight_decay)
        check_nonnegative("grad_clip", self.grad_clip)
        for name in ("beta1", "beta2"):
            value = check_nonnegative(name, getattr(self, name))
            if value >= 1.0:
                raise ValueError(f"`{name}` must be in [0, 1); got {value}.")
        check_choice("device", self.device, DEVICES)
        for name in ("compile", "deterministic"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"`{name}` must be a bool; got {getattr(self, name)!r}.")

    @property
    def final_lr(self) -> float:
        return self.lr / 10 if self.min_lr is None else self.min_lr

    def total_steps(self, seq_len: int, world_size: int = 1) -> int:
        """Optimiser steps of the run: `steps`, else ⌈tokens / (B·T·accum·world_size)⌉."""
        if self.steps is not None:
            return self.steps
        return -(-self.tokens // (self.batch_size * seq_len * self.accum * world_size))


@dataclass(repr=False)
class TrainResult(Summarised):
    """What `train` did.

    Attributes
    ----------
    step, tokens
        Counters at the end (absolute, including resumed steps).
    total_steps
        The run's planned length.
    losses
        Train loss (nats) of every step run by *this* call, in order.
    evals
        One dict per evaluation of this call (the lines of metrics.jsonl).
    val_loss, bayes_loss, excess_loss
        The last evaluation (bayes/excess None for text).
    gates
        Per-layer mean |g_ℓ| at the end (empty for the dense arm).
    tokens_per_s
        Training throughput of this call (all ranks).
    elapsed_s
        Wall time of the training steps of this call.
    finished
        True when the run reached `total_steps`.
    out
        The run directory, or None.
    status : "ok"
        Or "diverged" (a non-finite loss or weights stopped the run).
    message
        Why the run stopped early ("" when ok).
    cleaned
        Stale temp files (from a killed checkpoint write) removed at the start.
    """

    step: int
    tokens: int
    total_steps: int
    losses: list[float] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    val_loss: float | None = None
    bayes_loss: float | None = None
    excess_loss: float | None = None
    gates: list[float] = field(default_factory=list)
    tokens_per_s: float = 0.0
    elapsed_s: float = 0.0
    finished: bool = False
    out: Path | None = None
    num_params: int = 0
    status: str = "ok"
    message: str = ""
    cleaned: list[Path] = field(default_factory=list)

    def _summary_title(self) -> str:
        return f"TrainResult: {self.status}, step {self.step} of {self.total_steps}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        rows = [("tokens", str(self.tokens)), ("last train loss", number(self.losses[-1]) if self.losses else "none"),
                ("val loss", number(self.val_loss))]
        if self.excess_loss is not None:
            rows.append(("excess loss", f"{number(self.excess_loss)} (Bayes {number(self.bayes_loss)})"))
        rows += [("losses", shape_of(self.losses)), ("evals", shape_of(self.evals)),
                 ("tokens/s", number(self.tokens_per_s, 3)), ("elapsed s", number(self.elapsed_s, 3)),
                 ("out", str(self.out))]
        if self.message:
            rows.append(("message", first_line(self.message)))
        return rows


# --------------------------------------------------------------------------- pieces


def lr_at(step: int, cfg: TrainConfig, total_steps: int) -> float:
    """nanoGPT's schedule: warmup lr·(step+1)/(warmup+1), then cosine from lr to min_lr at the last step."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / (cfg.warmup + 1)
    span = max(total_steps - cfg.warmup, 1)
    ratio = min((step - cfg.warmup) / span, 1.0)
    return cfg.final_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (cfg.lr - cfg.final_lr)


def build_optimizer(model: torch.nn.Module, cfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW over the trainable parameters; weight decay on matrices only, never on gates."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if not p.requires_grad:
            continue  # the frozen arm's slow path
        (decay if p.dim() >= 2 and "gate" not in name else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), foreach=False)


def resolve_device(device: str) -> torch.device:
    """"auto" → CUDA when available, else CPU; "cuda" without a GPU is an error."""
    check_choice("device", device, DEVICES)
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("`device` is 'cuda' but torch sees no CUDA device; use --device cpu or auto.")
    return torch.device(device)


def _autocast(device: torch.device):
    # bf16 autocast on GPUs (the weights and optimiser stay float32); plain float32 on CPU.
    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.no_grad()
def evaluate(model: torch.nn.Module, data: torch.Tensor, starts: np.ndarray, seq_len: int,
             device: torch.device, batch_size: int = 64) -> float:
    """Mean next-token cross-entropy (nats) over the windows starting at `starts` (targets s+1 … s+T)."""
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    starts_t = torch.as_tensor(starts)
    for i in range(0, len(starts_t), batch_size):
        x, y = windows(data, starts_t[i:i + batch_size], seq_len, device)
        with _autocast(device):
            _, loss = model(x, y)
        total += float(loss) * y.numel()
        count += y.numel()
    model.train(was_training)
    return total / count


def _forward_backward(model, x, y, accum: int, device, sync: bool):
    """One micro-batch: loss/accum backpropagated; DDP all-reduces only when `sync`."""
    ctx = contextlib.nullcontext() if sync or not hasattr(model, "no_sync") else model.no_sync()
    with ctx:
        with _autocast(device):
            _, loss = model(x, y)
        (loss / accum).backward()
    return loss.detach()


def _distributed() -> tuple[int, int, bool]:
    """(rank, world_size, started_here): join the torchrun process group when WORLD_SIZE > 1."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, False
    import torch.distributed as dist

    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size(), False
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend=backend)
    return dist.get_rank(), dist.get_world_size(), True


def _data_seed(seed: int, rank: int) -> int:
    # Distinct, reproducible window streams per rank (rank 0 = the single-process stream).
    return seed + 1_000_003 * rank


def _data_descriptor(corpus: ByteCorpus) -> dict:
    return {"name": corpus.name, "n_train": int(corpus.train.shape[0]), "n_val": int(corpus.val.shape[0]),
            "sha256": corpus.sha256}


@contextlib.contextmanager
def _deterministic(enabled: bool):
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(enabled, warn_only=True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)


# --------------------------------------------------------------------------- the loop


def train(model_config: ModelConfig, train_config: TrainConfig, *, data: ByteCorpus | str | Path | None = None,
          out: str | Path | None = None, resume: bool = False, stop_after: int | None = None,
          show_progress: bool = True, figure: bool = True, figure_format: str = "png",
          dpi: int = 150) -> TrainResult:
    """Train [`neural.FastSlowLM`][neural.lm.model.FastSlowLM] and write the run directory.

    Parameters
    ----------
    model_config
        The model (arm, shapes).
    train_config
        The optimisation.
    data
        A [`ByteCorpus`][neural.lm.data.ByteCorpus], a text-file path, or None for the built-in Markov source.
    out : run directory; receives `config.json`, `metrics.jsonl`, `checkpoint.pt`
        and `loss.png` (rank 0 only).  None writes nothing (no resume possible).
    resume
        Continue from `out/checkpoint.pt` exactly where it stopped.
    stop_after
        Stop (after writing a checkpoint) once this many steps have run in
        this call, as if the job had been killed; the schedule still targets the full run.
    show_progress
        A tqdm bar on stderr (when stderr is a terminal).
    figure
        Write `out/loss.<figure_format>` at the end (matplotlib; ~1 s).
    figure_format : "png", "pdf" or "svg"
    dpi
        Its resolution.

    Returns
    -------
    TrainResult

    Raises
    ------
    TypeError
        If `model_config`/`train_config` are not the config dataclasses.
    ValueError
        For `resume` without `out`, a bad device or data path.
    neural.lm.checkpoint.CheckpointError
        If the checkpoint to resume is missing or unreadable; its subclass
        `CheckpointMismatchError` if it was written with other settings.
    """

    if not isinstance(model_config, ModelConfig):
        raise TypeError(f"`model_config` must be a neural.ModelConfig; got {type(model_config).__name__}.")
    if not isinstance(train_config, TrainConfig):
        raise TypeError(f"`train_config` must be a neural.TrainConfig; got {type(train_config).__name__}.")
    if resume and out is None:
        raise ValueError("`resume` needs `out`, the run directory holding checkpoint.pt.")
    if stop_after is not None:
        check_positive_int("stop_after", stop_after)
    check_choice("figure_format", figure_format, FIGURE_FORMATS)
    check_positive_int("dpi", dpi)
    cfg = train_config
    device = resolve_device(cfg.device)
    corpus = data if isinstance(data, ByteCorpus) else load_corpus(data)
    T = model_config.seq_len
    if corpus.train.shape[0] < T + 1 or corpus.val.shape[0] < T + 1:
        raise ValueError(f"`data` splits ({corpus.train.shape[0]}, {corpus.val.shape[0]} tokens) are shorter than "
                         f"`seq_len`+1 = {T + 1}.")

    rank, world, started_dist = _distributed()
    if device.type == "cuda":  # this rank's GPU (torchrun: LOCAL_RANK, set by _distributed)
        device = torch.device("cuda", torch.cuda.current_device())
    is_main = rank == 0
    out = Path(out) if out is not None else None
    try:
        with _deterministic(cfg.deterministic and device.type == "cpu"):
            return _run(FastSlowLM, model_config, cfg, corpus, device, rank, world, is_main, out, resume,
                        stop_after, show_progress, (figure_format, dpi) if figure else None)
    finally:
        if started_dist:
            import torch.distributed as dist

            dist.destroy_process_group()


def _run(model_cls, mcfg: ModelConfig, cfg: TrainConfig, corpus: ByteCorpus, device, rank: int, world: int,
         is_main: bool, out: Path | None, resume: bool, stop_after: int | None, show_progress: bool,
         figure: tuple[str, int] | None) -> TrainResult:
    T = mcfg.seq_len
    total_steps = cfg.total_steps(T, world)
    tokens_per_step = cfg.batch_size * T * cfg.accum * world

    raw_model = model_cls(mcfg, seed=cfg.seed).to(device)
    optimizer = build_optimizer(raw_model, cfg)
    data_gen = torch.Generator().manual_seed(_data_seed(cfg.seed, rank))
    torch.manual_seed(_data_seed(cfg.seed, rank))  # dropout stream, distinct per rank

    step, history = 0, []
    descriptor = _data_descriptor(corpus)
    ckpt_path = out / "checkpoint.pt" if out is not None else None
    cleaned = clean_stale_temps(out) if (is_main and out is not None) else []
    schedule_steps = total_steps  # the cosine schedule's length; kept when a finished run is extended
    if resume:
        state = load_checkpoint(ckpt_path)
        step = state["step"] if isinstance(state["step"], int) else -1  # check_state names a bad one below
        old_schedule = int(state.get("schedule_steps", _planned_steps(state, T, world, ckpt_path)))
        extending = step >= old_schedule and total_steps > step
        check_compatible(state, model_config=mcfg.to_dict(), train_config=cfg.to_dict(), data=descriptor,
                         world_size=world, path=ckpt_path, extend=extending)
        check_state(state, raw_model, world_size=world, path=ckpt_path)
        schedule_steps = old_schedule if (extending or step >= old_schedule) else total_steps
        raw_model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        restore_rng(state["rng"][rank], data_gen)
        history = [rec for rec in _read_metrics(out / "metrics.jsonl") if rec["step"] <= step]

    model = raw_model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(raw_model, device_ids=[device.index] if device.type == "cuda" else None)
    if cfg.compile:
        model = torch.compile(model)
    model.train()

    starts = eval_starts(corpus.val.shape[0], T, cfg.eval_windows)
    bayes = corpus.bayes_loss(starts, T)
    if is_main and out is not None:
        out.mkdir(parents=True, exist_ok=True)
        write_json(out / "config.json", {
            "model": mcfg.to_dict(), "train": cfg.to_dict(), "data": descriptor, "world_size": world,
            "total_steps": total_steps, "tokens_per_step": tokens_per_step, "num_params": raw_model.num_params(),
            "torch": torch.__version__, "threads": torch.get_num_threads(), "device": str(device),
            "source": corpus.source.to_dict() if corpus.source is not None else None,
        })
        _write_metrics(out / "metrics.jsonl", history)  # drops records past the checkpoint on resume

    result = TrainResult(step=step, tokens=step * tokens_per_step, total_steps=total_steps, out=out,
                         num_params=raw_model.num_params(), cleaned=cleaned)
    last_saved = first_step = step
    bar = progress(total=total_steps, initial=step, desc=f"train {mcfg.arm}",
                   disable=None if (show_progress and is_main) else True)
    interval_losses: list[float] = []
    t_interval = time.perf_counter()
    t_start = t_interval
    steps_this_call = 0
    while step < total_steps:
        lr = lr_at(step, cfg, schedule_steps)  # = final lr past the schedule (an extended run)
        for group in optimizer.param_groups:
            group["lr"] = lr
        loss_sum = torch.zeros((), device=device)
        for micro in range(cfg.accum):
            x, y = get_batch(corpus.train, cfg.batch_size, T, data_gen, device)
            loss_sum += _forward_backward(model, x, y, cfg.accum, device, sync=micro == cfg.accum - 1)
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(raw_model.parameters(), cfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        step_loss = loss_sum / cfg.accum
        if world > 1:  # the logged loss is the mean over ranks (the loss of the full batch)
            import torch.distributed as dist

            dist.all_reduce(step_loss, op=dist.ReduceOp.SUM)  # SUM: every backend has it (gloo lacks AVG)
            step_loss = step_loss / world
        step_loss = float(step_loss)
        step += 1
        if not math.isfinite(step_loss):
            result.status = "diverged"
            result.message = _diverged(f"the training loss became {step_loss}", step, last_saved, out)
            break
        steps_this_call += 1
        result.losses.append(step_loss)
        interval_losses.append(step_loss)
        bar.update(1)
        if step % 10 == 0 or step == total_steps:
            elapsed = time.perf_counter() - t_start
            bar.set_postfix(loss=f"{step_loss:.3f}", tok_s=f"{steps_this_call * tokens_per_step / max(elapsed, 1e-9):.0f}")

        stopping = stop_after is not None and steps_this_call >= stop_after
        if step % cfg.eval_every == 0 or step == total_steps or stopping:
            now = time.perf_counter()
            record = {"step": step, "tokens": step * tokens_per_step, "lr": lr,
                      "train_loss": float(np.mean(interval_losses)),
                      "tokens_per_s": len(interval_losses) * tokens_per_step / max(now - t_interval, 1e-9)}
            if is_main:
                val = evaluate(raw_model, corpus.val, starts, T, device)
                record.update({"val_loss": val, "bayes_loss": bayes,
                               "excess_loss": None if bayes is None else val - bayes})
            record["train_bpb"] = record["train_loss"] * NATS_TO_BITS
            if "val_loss" in record:
                record["val_bpb"] = record["val_loss"] * NATS_TO_BITS
            record["gates"] = raw_model.gate_magnitudes()
            record["elapsed_s"] = now - t_start
            if not all(bool(torch.isfinite(p).all()) for p in raw_model.parameters()):
                result.status = "diverged"
                result.message = _diverged("the weights became non-finite", step, last_saved, out)
                break
            history.append(record)
            result.evals.append(record)
            _save(out, ckpt_path, raw_model, optimizer, data_gen, mcfg, cfg, descriptor, world, rank, step,
                  step * tokens_per_step, record, is_main, schedule_steps)
            last_saved = step
            interval_losses = []
            t_interval = time.perf_counter()  # evaluation and checkpoint time excluded from tokens/s
        if stopping:
            break
    bar.close()

    result.elapsed_s = time.perf_counter() - t_start
    result.step, result.tokens = step, step * tokens_per_step
    result.tokens_per_s = steps_this_call * tokens_per_step / max(result.elapsed_s, 1e-9)
    result.finished = step >= total_steps
    result.gates = raw_model.gate_magnitudes()
    if result.evals:
        last = result.evals[-1]
        result.val_loss, result.bayes_loss, result.excess_loss = last.get("val_loss"), bayes, last.get("excess_loss")
    elif is_main:  # resumed a finished run: nothing trained, report the checkpoint's model
        result.val_loss, result.bayes_loss = evaluate(raw_model, corpus.val, starts, T, device), bayes
        result.excess_loss = None if bayes is None else result.val_loss - bayes
    if figure is not None and is_main and out is not None and history:
        fmt, dpi = figure
        per_step = ([(first_step + k + 1) * tokens_per_step for k in range(len(result.losses))], result.losses)
        plot_run(history, out / f"loss.{fmt}", title=f"{mcfg.arm} ({corpus.name})", dpi=dpi, step_losses=per_step)
    return result


def _diverged(what: str, step: int, last_saved: int, out: Path | None) -> str:
    kept = (f"the last finite checkpoint (step {last_saved}) is kept in {out}" if out is not None and last_saved
            else "no checkpoint was written")
    return (f"{what} at step {step}; training stopped there and {kept}. Lower --lr, raise --warmup or "
            "keep --grad-clip on, then resume or start afresh.")


def _planned_steps(state: dict, seq_len: int, world: int, path) -> int:
    """The planned length of the run that wrote `state` (from its saved TrainConfig)."""
    try:
        return TrainConfig(**state["train_config"]).total_steps(seq_len, world)
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"checkpoint {str(path)!r}: field `train_config` is not a valid TrainConfig ({exc}).") from None


def check_run_folder(out: str | Path, *, resume: bool, overwrite: bool) -> Path:
    """Refuse to start a fresh run where one already lives (no lost work); return `out` as a Path.

    A fresh start (neither `resume` nor `overwrite`) in a folder holding `checkpoint.pt` or
    `metrics.jsonl` raises; with `overwrite` the run's files (`RUN_FILES`) are deleted first.

    Raises
    ------
    RunFolderError
        `out` is a file; or it holds a run and neither `resume` nor `overwrite` was given;
        or both were given.
    """
    out = Path(out)
    if resume and overwrite:
        raise RunFolderError("`--resume` and `--overwrite` exclude each other: continue the run or replace it.")
    if out.exists() and not out.is_dir():
        raise RunFolderError(f"run folder {str(out)!r} is a file; give a folder.")
    held = [name for name in ("checkpoint.pt", "metrics.jsonl") if (out / name).is_file()]
    if held and not resume:
        if not overwrite:
            raise RunFolderError(
                f"run folder {str(out)!r} already holds a run ({', '.join(held)}); pass --resume to continue it "
                "(with a larger --tokens to extend a finished run) or --overwrite to replace it."
            )
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
    return out


def _save(out, ckpt_path, raw_model, optimizer, data_gen, mcfg, cfg, descriptor, world, rank, step, tokens,
          record, is_main, schedule_steps) -> None:
    rng = capture_rng(data_gen)
    if world > 1:  # every rank's RNG streams, gathered on all ranks (rank 0 writes them)
        import torch.distributed as dist

        gathered = [None] * world
        dist.all_gather_object(gathered, rng)
        rngs = gathered
    else:
        rngs = [rng]
    if not is_main or out is None:
        return
    with open(out / "metrics.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(_jsonable(record)) + "\n")
    save_checkpoint(ckpt_path, {
        "format": FORMAT, "model_config": mcfg.to_dict(), "train_config": cfg.to_dict(), "data": descriptor,
        "world_size": world, "step": step, "tokens": tokens, "model": raw_model.state_dict(),
        "optimizer": optimizer.state_dict(), "rng": rngs, "schedule_steps": schedule_steps,
    })


def _jsonable(record: dict) -> dict:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in record.items()}


def _read_metrics(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write_metrics(path: Path, records: list[dict]) -> None:

    atomic_write_bytes(path, "".join(json.dumps(_jsonable(r)) + "\n" for r in records).encode())


def plot_run(history: list[dict], path: Path, *, title: str = "", dpi: int = 150,
             step_losses: tuple[list, list] | None = None) -> Path:
    """Loss (train, validation, Bayes limit) and per-layer gate magnitude against tokens.

    The format follows `path`'s suffix (png, pdf, svg).  `step_losses` (tokens, loss) adds
    the loss of every optimiser step as a thin line, and a short run (≤ 30 evaluations)
    gets a marker on every evaluation, so a run with one or two evaluations still reads.
    """
    plt = figures()
    tokens = [r["tokens"] / 1e3 for r in history]
    marker = "s" if len(history) <= 30 else None
    fig, (ax_loss, ax_gate) = plt.subplots(1, 2, figsize=(10, 4))
    if step_losses is not None and len(step_losses[1]):
        ax_loss.plot([t / 1e3 for t in step_losses[0]], step_losses[1], color="0.6", lw=0.8,
                     label="train (each step)")
    ax_loss.plot(tokens, [r["train_loss"] for r in history], marker=marker, ms=4,
                 label="train (mean since last eval)")
    vals = [(r["tokens"], r["val_loss"]) for r in history if r.get("val_loss") is not None]
    if vals:
        ax_loss.plot([t / 1e3 for t, _ in vals], [v for _, v in vals], marker="o", label="validation")
    bayes = next((r.get("bayes_loss") for r in history if r.get("bayes_loss") is not None), None)
    if bayes is not None:
        ax_loss.axhline(bayes, color="k", linestyle="--", label=f"Bayes limit {bayes:.3f}")
    ax_loss.set_xlabel("tokens (thousands)")
    ax_loss.set_ylabel("loss (nats/byte)")
    ax_loss.legend()
    n_layers = max((len(r["gates"]) for r in history), default=0)
    for layer in range(n_layers):
        ax_gate.plot(tokens, [r["gates"][layer] for r in history], marker=marker, ms=4, label=f"layer {layer}")
    ax_gate.set_xlim(ax_loss.get_xlim())  # one token axis for both panels (a short run has few evaluations)
    if n_layers:
        ax_gate.set_ylim(bottom=0.0)  # gates start at 0: their size reads against it
    ax_gate.set_xlabel("tokens (thousands)")
    ax_gate.set_ylabel("mean |g_ℓ|")
    if n_layers:
        ax_gate.legend()
    else:
        ax_gate.text(0.5, 0.5, "dense arm: no gates", ha="center", va="center", transform=ax_gate.transAxes)
    fig.suptitle(title)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
