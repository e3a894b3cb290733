"""`sp-ode train`: train the fast–slow attention LM (also `python -m neural.commands.train`, which torchrun launches)."""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading

from neural.lm.config import ARMS, PRESETS

HELP = "train the fast-slow attention language model"

#: The largest token budget (and step count) accepted: 10¹² tokens at the ~10⁵ tokens/s of a CPU run
#: take about four months; anything larger is a typo (``--tokens 10**30`` once ran "forever", silently).
MAX_TOKENS = 10**12
MAX_STEPS = 10**9


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--preset", choices=sorted(PRESETS), default="tiny", help="model size (default tiny)")
    parser.add_argument("--arm", choices=ARMS, default=None, help="ablation arm (default: the preset's, coupled)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a ModelConfig field, e.g. --set pool=8 (repeatable)")
    parser.add_argument("--data", default=None, metavar="PATH",
                        help="a text file (bytes are tokens; last 10%% = validation); default: the built-in "
                             "two-timescale Markov source, whose Bayes-optimal loss is known exactly")
    parser.add_argument("--tokens", type=int, default=None, help="token budget (default 500000; 20000 with --smoke)")
    parser.add_argument("--steps", type=int, default=None, help="optimiser steps (overrides --tokens)")
    parser.add_argument("--batch-size", type=int, default=12)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--min-lr", type=float, default=None, help="final learning rate (default lr/10)")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--weight-decay", type=float, default=0.1)
    parser.add_argument("--grad-clip", type=float, default=1.0, help="0 disables clipping")
    parser.add_argument("--accum", type=int, default=1, help="gradient-accumulation micro-batches per step")
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--eval-windows", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", choices=("cpu", "cuda", "auto"), default="cpu")
    parser.add_argument("--compile", action="store_true", help="torch.compile the model")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default torch's; 1 is often fastest for small models on a busy machine)")
    parser.add_argument("--out", default=None, help="run directory (default: a fresh out/train/DATE/TIME, linked as "
                        "out/train/latest; --resume without --out continues the latest)")
    parser.add_argument("--resume", action="store_true",
                        help="continue from OUT/checkpoint.pt (a larger --tokens extends a finished run)")
    parser.add_argument("--overwrite", action="store_true", help="replace the run already in OUT")
    parser.add_argument("--format", default="png", help="figure format: png (default) | pdf | svg")
    parser.add_argument("--dpi", type=int, default=150, help="figure resolution in dots per inch (default 150)")
    parser.add_argument("--smoke", action="store_true", help="a tiny, seconds-long run (20k tokens, short warmup)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def configs_from_args(args: argparse.Namespace):
    """(ModelConfig, TrainConfig) from parsed arguments; ValueError/TypeError on bad values."""
    from neural.lm.train import TrainConfig

    model_config = PRESETS[args.preset]()
    if args.arm is not None:
        model_config = model_config.with_overrides({"arm": args.arm})
    model_config = model_config.with_overrides(args.overrides)
    for flag, value, limit in (("--tokens", args.tokens, MAX_TOKENS), ("--steps", args.steps, MAX_STEPS)):
        if value is not None and not 1 <= value <= limit:
            raise ValueError(f"`{flag}` must be between 1 and {limit:.0e} (a budget a run can finish: 10¹² tokens "
                             f"at ~10⁵ tokens/s on a CPU take about four months); got {value:.3g}.")
    tokens = args.tokens if args.tokens is not None else (20_000 if args.smoke else 500_000)
    warmup = min(args.warmup, 5) if args.smoke else args.warmup
    eval_every = min(args.eval_every, 10) if args.smoke else args.eval_every
    eval_windows = min(args.eval_windows, 32) if args.smoke else args.eval_windows
    train_config = TrainConfig(
        tokens=tokens, steps=args.steps, batch_size=args.batch_size, accum=args.accum, lr=args.lr,
        min_lr=args.min_lr, warmup=warmup, weight_decay=args.weight_decay, grad_clip=args.grad_clip,
        eval_every=eval_every, eval_windows=eval_windows, seed=args.seed, device=args.device,
        compile=args.compile,
    )
    return model_config, train_config


def run(args: argparse.Namespace) -> int:
    import torch

    from neural.lm.data import load_corpus, markov_corpus
    from neural.lm.train import FIGURE_FORMATS, NATS_TO_BITS, check_run_folder, train
    from sp_ode.cli.common import EXIT_FAILED, UsageError, run_folder
    from sp_ode.core.files import dumps, write_json
    from sp_ode.core.validation import check_choice

    check_choice("--format", args.format, FIGURE_FORMATS)
    if args.dpi <= 0:
        raise UsageError(f"`--dpi` must be a positive integer; got {args.dpi}.")
    args.out = args.out if args.out is not None else str(run_folder("train", resume=args.resume))
    model_config, train_config = configs_from_args(args)
    if args.threads is not None:
        if args.threads < 1:
            raise ValueError(f"`--threads` must be >= 1; got {args.threads}.")
        torch.set_num_threads(args.threads)
    if args.data is None and args.smoke:
        corpus = markov_corpus(n_train=1 << 16, n_val=1 << 13)
    else:
        corpus = load_corpus(args.data)
    if int(os.environ.get("RANK", "0")) == 0:  # one rank decides (and, with --overwrite, deletes)
        check_run_folder(args.out, resume=args.resume, overwrite=args.overwrite)
    with _terminate_as_interrupt():
        result = train(model_config, train_config, data=corpus, out=args.out, resume=args.resume,
                       figure_format=args.format, dpi=args.dpi)
    if int(os.environ.get("RANK", "0")) != 0:
        return 0  # under torchrun only rank 0 reports
    for stale in result.cleaned:
        print(f"sp-ode train: removed {stale}, left by an interrupted checkpoint write", file=sys.stderr)
    summary = {
        "arm": model_config.arm, "data": corpus.name, "num_params": result.num_params,
        "steps": result.step, "tokens": result.tokens, "val_loss": result.val_loss,
        "val_bpb": None if result.val_loss is None else result.val_loss * NATS_TO_BITS,
        "bayes_loss": result.bayes_loss, "excess_loss": result.excess_loss, "gates": result.gates,
        "tokens_per_s": result.tokens_per_s, "elapsed_s": result.elapsed_s,
        "final_train_loss": result.losses[-1] if result.losses else None, "out": str(args.out),
        "finished": result.finished, "status": result.status, "message": result.message,
    }
    write_json(f"{args.out}/summary.json", summary)
    if args.json:
        print(dumps(summary))
    else:
        rows = [("arm", model_config.arm), ("data", corpus.name), ("parameters", f"{result.num_params:,}"),
                ("steps / tokens", f"{result.step} / {result.tokens:,}"),
                ("val loss", _fmt(result.val_loss, " nats/byte")),
                ("val bits/byte", _fmt(summary["val_bpb"], "")),
                ("Bayes loss", _fmt(result.bayes_loss, " nats/byte")),
                ("excess loss", _fmt(result.excess_loss, " nats/byte")),
                ("gates |g_l|", ", ".join(f"{g:.2e}" for g in result.gates) or "(dense: none)"),
                ("tokens/s", f"{result.tokens_per_s:,.0f}"), ("run dir", str(args.out))]
        width = max(len(k) for k, _ in rows)
        for key, value in rows:
            print(f"{key:<{width}}  {value}")
    if result.status != "ok":
        print(f"sp-ode train: error: {result.message}", file=sys.stderr)
        return EXIT_FAILED
    if result.val_loss is None or result.val_loss != result.val_loss:
        print("sp-ode train: no finite validation loss", file=sys.stderr)
        return 1
    return 0


@contextlib.contextmanager
def _terminate_as_interrupt():
    """SIGTERM (`kill`, a scheduler's time limit) raises KeyboardInterrupt while training runs.

    Python's default for SIGTERM ends the process at once, so an atomic checkpoint write in
    progress left its temp file behind (6.9 MB for the tiny preset); as an interrupt, the
    write's cleanup runs and the checkpoint on disk stays the last complete one.  The
    command line owns the process, so it may set the handler; it restores the previous one.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _fmt(value, unit: str) -> str:
    return "n/a" if value is None else f"{value:.4f}{unit}"


def main(argv: list[str] | None = None) -> int:
    """`python -m neural.commands.train` (what torchrun launches): the `sp-ode train` command line."""
    from sp_ode.cli import main as cli_main

    return cli_main(["train", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
