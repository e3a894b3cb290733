"""
# Training the fast–slow language model

A short run of the fast–slow attention language model.
`neural.FastSlowLM` (docs/theory.md §4) attends over the T tokens (fast clock)
and over the T/P causal block means (slow clock, ε = 1/P) fed back one block late
through a gate that starts at zero.  This short run trains the `coupled` arm on
the built-in two-timescale Markov source, whose Bayes-optimal loss is known
exactly, so the validation loss is reported against that floor; the run folder
holds `config.json`, `metrics.jsonl`, an atomic checkpoint and the loss figure
(`sp-ode train --out DIR` writes the same).

    python examples/lm_short_run.py [--smoke] [--out DIR]
"""
# %%
# Train
# -----
import argparse
import dataclasses
import json
from pathlib import Path

import torch

parser = argparse.ArgumentParser(description="a short run of the fast-slow attention LM")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run (seconds)")
parser.add_argument("--out", default="out/examples/lm_short_run", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)
torch.set_num_threads(1)  # a small model: one thread is fastest on a shared machine

import neural
from neural.lm.train import TrainConfig, check_run_folder, train

model = dataclasses.replace(neural.tiny(), arm="coupled")
if args.smoke:
    model = dataclasses.replace(model, seq_len=32, pool=4, n_layer=1, n_head=2, d_model=16)
config = TrainConfig(tokens=6_000 if args.smoke else 150_000, batch_size=8, warmup=5, lr=2e-3,
                     eval_every=5 if args.smoke else 50, eval_windows=32 if args.smoke else 128)
corpus = neural.markov_corpus(n_train=1 << 15, n_val=1 << 12)
run_dir = check_run_folder(OUT / "run", resume=False, overwrite=True)  # this example always starts afresh
result = train(model, config, data=corpus, out=run_dir, show_progress=False)
print(f"{result.step} steps, {result.tokens:,} tokens, {result.num_params:,} parameters, {result.status}")
print(f"validation loss {result.val_loss:.4f} nats/byte; Bayes limit {result.bayes_loss:.4f}; "
      f"excess {result.excess_loss:.4f}")
print("gate magnitudes |g_ℓ| per layer:", ", ".join(f"{g:.2e}" for g in result.gates))

# %%
# The curves
# ----------
from sp_ode.core.reporting import figures

history = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
plt = figures()
fig, ax = plt.subplots(figsize=(6.5, 4.2))
tokens = [r["tokens"] / 1e3 for r in history]
ax.plot(tokens, [r["train_loss"] for r in history], "o-", ms=4, label="train (mean since last evaluation)")
ax.plot(tokens, [r["val_loss"] for r in history], "s-", ms=4, label="validation")
ax.axhline(result.bayes_loss, color="k", ls="--", label=f"Bayes limit {result.bayes_loss:.3f}")
ax.set_xlabel("tokens (thousands)")
ax.set_ylabel("loss (nats/byte)")
ax.set_title(f"coupled arm, {result.num_params:,} parameters")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(OUT / "lm_short_run.png", dpi=120)
