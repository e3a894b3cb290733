"""The dense arm against a public reference: nanoGPT's character-level CPU recipe on tiny Shakespeare.

nanoGPT (karpathy/nanoGPT, README "I only have a macbook"):

    python train.py config/train_shakespeare_char.py --device=cpu --compile=False --eval_iters=20
        --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128
        --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0

reports a validation loss of about 1.88 (nats per character).  The same recipe here:
4 layers, 4 heads, width 128, context T = 64, batch 12, 2000 iterations, no dropout,
no biases (nanoGPT's default), AdamW (β = 0.9, 0.99, weight decay 0.1 on matrices),
100 warmup iterations, cosine to min_lr = lr/10 at iteration 2000, gradient clip 1.0,
the 90/10 split.  Target: validation loss ≤ 1.88 nats/byte.

Learning rate.  The recipe fixes the model, context, batch and iteration count, not the
learning rate; nanoGPT's 1e-3 is the default of its GPU config (6 layers, width 384,
5000 iterations).  At lr 1e-3 this model scores 1.891 ± 0.008 (3 seeds, the same as a
third-party rerun of nanoGPT itself, 1.886).  The default here, **lr 4e-3**, was chosen
on a selection seed (10) from {1, 2, 3, 4, 5}·1e-3 (val 1.811, 1.788, 1.765, 1.766 for
2–5e-3) and is reported on fresh seeds 0, 1, 2 (docs/bench/neural_training.md);
``--lr 1e-3 --min-lr 1e-4`` runs nanoGPT's own setting.

Bytes vs characters: tiny Shakespeare is pure ASCII, so every character is one byte
and nats/byte = nats/char; the only difference is the output layer (256 byte
classes here, 65 characters in nanoGPT), which can only make our task harder.
Validation: the headline number scores the final model on the **whole validation
split** (non-overlapping windows, every byte a target once: 111,488 targets); during
training a 512-window subsample monitors progress.  nanoGPT's 1.88 is its estimator
``--eval_iters=20``: 20 random batches of 12 windows (15,360 targets), whose spread over
random draws is measured here too (``--noise-draws``).

    python -m bench.lm.nanogpt                 # the full run (a few minutes on an idle 2-core CPU)
    python -m bench.lm.nanogpt --smoke         # a few iterations (the test suite)
    python -m bench.lm.nanogpt --evaluate-only --out DIR   # re-score DIR/checkpoint.pt, no training
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from bench._common import ROOT

NANOGPT_VAL_LOSS = 1.88  # nanoGPT README, CPU recipe above (nats/char)
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"


def configs(smoke: bool, seed: int = 0, lr: float = 4e-3, min_lr: float = 4e-4, warmup: int = 100):
    from neural import ModelConfig, TrainConfig

    model = ModelConfig(seq_len=64, pool=16, n_layer=4, n_head=4, d_model=128, arm="dense", dropout=0.0, bias=False)
    train = TrainConfig(steps=5 if smoke else 2000, batch_size=12, lr=lr, min_lr=min_lr, warmup=2 if smoke else warmup,
                        weight_decay=0.1, beta1=0.9, beta2=0.99, grad_clip=1.0, eval_every=5 if smoke else 250,
                        eval_windows=16 if smoke else 512, seed=seed)
    return model, train


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help=f"text file (default {DEFAULT_DATA})")
    parser.add_argument("--out", default="out/bench_nanogpt", help="run directory")
    parser.add_argument("--smoke", action="store_true", help="5 iterations; falls back to the Markov source without data")
    parser.add_argument("--evaluate-only", action="store_true",
                        help="score the final checkpoint already in --out (no training)")
    parser.add_argument("--noise-draws", type=int, default=None,
                        help="draws of nanoGPT's 20x12-window estimator to measure its spread (default 40; 2 with --smoke)")
    parser.add_argument("--seed", type=int, default=0, help="model init and batch stream (default 0)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch CPU threads (default torch's; 1 is fastest on a shared, loaded machine)")
    parser.add_argument("--lr", type=float, default=4e-3,
                        help="peak AdamW learning rate (default 4e-3, chosen on seed 10; nanoGPT's is 1e-3)")
    parser.add_argument("--min-lr", type=float, default=4e-4, help="cosine floor at the last iteration (default 4e-4)")
    parser.add_argument("--warmup", type=int, default=100, help="linear warmup iterations (default 100)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    import numpy as np
    import torch

    if args.threads is not None:
        torch.set_num_threads(args.threads)

    from neural import FastSlowLM, ModelConfig, load_text, markov_corpus
    from neural.lm.checkpoint import load_checkpoint
    from neural.lm.data import tiling_starts
    from neural.lm.train import NATS_TO_BITS, evaluate, train
    from sp_ode.core.files import dumps, write_json

    data = Path(args.data) if args.data else DEFAULT_DATA
    if data.is_file():
        corpus = load_text(data)
    elif args.smoke:
        print(f"bench_nanogpt: {data} not found; smoke run on the built-in Markov source", file=sys.stderr)
        corpus = markov_corpus(n_train=1 << 14, n_val=1 << 12)
    else:
        print(f"bench_nanogpt: error: {data} not found (tiny Shakespeare is needed for the reference); "
              "pass --data PATH", file=sys.stderr)
        return 2
    model_cfg, train_cfg = configs(args.smoke, args.seed, args.lr, args.min_lr, args.warmup)
    out = Path(args.out)
    t0 = time.perf_counter()
    if args.evaluate_only:
        result = None
        record = json.loads((out / "bench_nanogpt.json").read_text()) if (out / "bench_nanogpt.json").is_file() else {}
    else:
        result = train(model_cfg, train_cfg, data=corpus, out=out)
        record = {
            "iterations": result.step, "tokens": result.tokens, "num_params": result.num_params,
            "final_train_loss": result.losses[-1], "tokens_per_s": result.tokens_per_s,
            "wall_s": time.perf_counter() - t0, "threads": torch.get_num_threads(),
            "val_curve_512_windows": [(r["step"], r.get("val_loss")) for r in result.evals],
        }
    # Score the final checkpoint: the whole validation split, then nanoGPT's estimator's spread.
    state = load_checkpoint(out / "checkpoint.pt")
    model = FastSlowLM(ModelConfig.from_dict(state["model_config"]), seed=0)
    model.load_state_dict(state["model"])
    cpu = torch.device("cpu")
    T, n_val = model_cfg.seq_len, corpus.val.numel()
    full = evaluate(model, corpus.val, tiling_starts(n_val, T), T, cpu, batch_size=256)
    draws = args.noise_draws if args.noise_draws is not None else (2 if args.smoke else 40)
    gen = torch.Generator().manual_seed(1337)
    nano = [evaluate(model, corpus.val, torch.randint(n_val - T, (20 * 12,), generator=gen).numpy(), T, cpu,
                     batch_size=240) for _ in range(draws)]
    met = full <= NANOGPT_VAL_LOSS
    record.update({
        "data": corpus.name, "smoke": args.smoke, "seed": args.seed, "checkpoint_step": int(state["step"]),
        "val_loss": full, "val_bpb": full * NATS_TO_BITS, "val_targets": len(tiling_starts(n_val, T)) * T,
        "nanogpt_estimator_mean": float(np.mean(nano)),
        "nanogpt_estimator_std": float(np.std(nano, ddof=1)) if draws > 1 else None,
        "nanogpt_estimator_draws": draws,
        "reference_val_loss": NANOGPT_VAL_LOSS, "ratio_to_reference": full / NANOGPT_VAL_LOSS,
        "target_met": bool(met), "torch": torch.__version__,
        "model": state["model_config"], "train": state["train_config"],  # what the scored checkpoint was trained with
    })
    write_json(Path(args.out) / "bench_nanogpt.json", record)
    if args.json:
        print(dumps(record))
        return 0
    print(f"nanoGPT char-level CPU recipe, dense arm ({'SMOKE, ' if args.smoke else ''}{corpus.name}, seed {args.seed})")
    if result is not None:
        print(f"  iterations / tokens   {result.step} / {result.tokens:,}   parameters {result.num_params:,}")
        for step, val in record["val_curve_512_windows"]:
            print(f"  step {step:>5}  val loss {val:.4f} nats/byte (monitor: {train_cfg.eval_windows} windows)")
        print(f"  final train loss      {record['final_train_loss']:.4f} (last step)")
    print(f"  val loss, full split  {full:.4f} nats/byte ({record['val_bpb']:.4f} bits/byte, "
          f"{record['val_targets']:,} targets)")
    if draws > 1:
        print(f"  nanoGPT's estimator   {record['nanogpt_estimator_mean']:.4f} ± {record['nanogpt_estimator_std']:.4f} "
              f"(20 random batches of 12; {draws} draws)")
    print(f"  nanoGPT reference     {NANOGPT_VAL_LOSS:.2f} nats/char  ratio {record['ratio_to_reference']:.3f}  "
          f"target <= 1.88: {'met' if met else 'MISSED'}")
    if result is not None:
        print(f"  throughput            {result.tokens_per_s:,.0f} tokens/s on {record['threads']} threads, "
              f"wall {record['wall_s']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
