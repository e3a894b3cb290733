"""
# The 500k-token ablation

Dense against coupled against frozen, 3 seeds each (docs/theory.md §4).

The source paper reports that at 500k tokens the gate g_ℓ stays (nearly) closed,
coupled and frozen runs are within noise of each other, and the wall-clock cost is
comparable to a dense baseline.  This script measures exactly those quantities:

* mean ± std (over seeds) of the final validation loss per arm — and, on the
  built-in Markov source, the excess over its exact Bayes limit;
* per-layer mean |g_ℓ| at the end of training (coupled, frozen);
* training wall-clock per arm relative to dense (arms interleaved seed by seed, so
  a slow patch of a shared machine does not land on one arm only).

Data: tiny Shakespeare (../shared/data/tinyshakespeare.txt) when present, else the
built-in two-timescale Markov source.  Model (chosen so 9 × 500k tokens fit in about
10–15 minutes on 2 CPU cores): T = 128, P = 16, 2 layers, 4 heads, width 64; batch 16,
AdamW lr 2e-3 → 2e-4 (cosine), 20 warmup steps.

    python examples/ablation_500k.py --threads 1            # full run
    python examples/ablation_500k.py --smoke                # seconds (the test suite)

Writes ``ablation.json`` (every number printed, plus every run's curve) and
``ablation.png`` under ``--out``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
ARMS = ("dense", "coupled", "frozen")


def configs(smoke: bool, tokens: int | None, overrides: list[str]):
    from neural.lm.config import ModelConfig
    from neural.lm.train import TrainConfig

    if smoke:
        model = ModelConfig(seq_len=16, pool=4, n_layer=1, n_head=2, d_model=16)
        train = TrainConfig(tokens=tokens or 640, batch_size=4, lr=3e-3, warmup=2, eval_every=1000, eval_windows=8)
    else:
        model = ModelConfig(seq_len=128, pool=16, n_layer=2, n_head=4, d_model=64)
        train = TrainConfig(tokens=tokens or 500_000, batch_size=16, lr=2e-3, min_lr=2e-4, warmup=20,
                            eval_every=50, eval_windows=256)
    return model.with_overrides(overrides), train


def _mean_std(values):
    import numpy as np

    arr = np.asarray(values, dtype=float)
    return float(arr.mean()), float(arr.std(ddof=1)) if len(arr) > 1 else 0.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=None, help="tokens per run (default 500000)")
    parser.add_argument("--seeds", type=int, default=3, help="seeds per arm (default 3; >= 2 for a std)")
    parser.add_argument("--data", default=None, help="text file, or 'markov' (default: tiny Shakespeare if present)")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a ModelConfig field")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (1 is fastest on a loaded machine)")
    parser.add_argument("--out", default="out/ablation_500k")
    parser.add_argument("--smoke", action="store_true", help="tiny model, 640 tokens, 2 seeds, Markov source")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")

    import dataclasses

    import numpy as np
    import torch

    from neural.lm.data import load_corpus, markov_corpus
    from neural.lm.train import train
    from sp_ode.core.files import dumps, write_json
    from sp_ode.core.reporting import figures, progress

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    seeds = 2 if args.smoke and args.seeds == 3 else args.seeds
    if args.smoke and args.data is None:
        corpus = markov_corpus(n_train=1 << 13, n_val=1 << 11, block=4)
    elif args.data is None:
        corpus = load_corpus(DEFAULT_DATA if DEFAULT_DATA.is_file() else None)
    else:
        corpus = load_corpus(args.data)
    model_cfg, train_cfg = configs(args.smoke, args.tokens, args.overrides)
    out = Path(args.out)

    runs = []
    bar = progress(total=len(ARMS) * seeds, desc="ablation")
    for seed in range(seeds):
        for arm in ARMS:  # interleaved: arms share the machine's state seed by seed
            cfg_m = dataclasses.replace(model_cfg, arm=arm)
            cfg_t = dataclasses.replace(train_cfg, seed=seed)
            result = train(cfg_m, cfg_t, data=corpus, out=None if args.smoke else out / f"{arm}-seed{seed}",
                           show_progress=False)
            runs.append({"arm": arm, "seed": seed, "val_loss": result.val_loss, "excess_loss": result.excess_loss,
                         "gates": result.gates, "train_s": result.elapsed_s, "tokens": result.tokens,
                         "tokens_per_s": result.tokens_per_s, "num_params": result.num_params,
                         "curve": [(r["tokens"], r["train_loss"], r.get("val_loss"), r["gates"]) for r in result.evals]})
            bar.update(1)
            print(f"  {arm:<8} seed {seed}: val {result.val_loss:.4f}  gates "
                  f"{[round(g, 5) for g in result.gates]}  {result.elapsed_s:.1f} s", file=sys.stderr)
    bar.close()

    summary = {}
    for arm in ARMS:
        mine = [r for r in runs if r["arm"] == arm]
        loss_m, loss_s = _mean_std([r["val_loss"] for r in mine])
        time_m, time_s = _mean_std([r["train_s"] for r in mine])
        gates = np.array([r["gates"] for r in mine]) if mine[0]["gates"] else np.zeros((len(mine), 0))
        summary[arm] = {
            "val_loss_mean": loss_m, "val_loss_std": loss_s,
            "excess_mean": None if mine[0]["excess_loss"] is None else _mean_std([r["excess_loss"] for r in mine])[0],
            "gates_mean": gates.mean(axis=0).tolist(), "gates_std": (gates.std(axis=0, ddof=1) if len(mine) > 1 else 0 * gates[0]).tolist(),
            "train_s_mean": time_m, "train_s_std": time_s, "num_params": mine[0]["num_params"],
        }
    for arm in ARMS:
        summary[arm]["time_vs_dense"] = summary[arm]["train_s_mean"] / summary["dense"]["train_s_mean"]
        # the median resists one run slowed by a neighbour on a shared machine
        summary[arm]["time_vs_dense_median"] = float(
            np.median([r["train_s"] for r in runs if r["arm"] == arm])
            / np.median([r["train_s"] for r in runs if r["arm"] == "dense"]))
    c, f = summary["coupled"], summary["frozen"]
    se = float(np.sqrt((c["val_loss_std"] ** 2 + f["val_loss_std"] ** 2) / seeds))
    diff = c["val_loss_mean"] - f["val_loss_mean"]
    record = {
        "data": corpus.name,
        # the Bayes limit on the scored validation targets (same for every run): val − excess
        "bayes_loss": None if runs[0]["excess_loss"] is None else runs[0]["val_loss"] - runs[0]["excess_loss"],
        "tokens_per_run": runs[0]["tokens"], "seeds": seeds, "smoke": args.smoke, "threads": torch.get_num_threads(),
        "model": model_cfg.to_dict(), "train": train_cfg.to_dict(), "arms": summary,
        "coupled_minus_frozen": diff, "coupled_minus_frozen_se": se,
        "coupled_frozen_within_noise": bool(abs(diff) <= 2 * se) if seeds > 1 else None,
        "runs": runs,
    }
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "ablation.json", record)
    _plot(figures(), summary, runs, out / "ablation.png", corpus.name)

    if args.json:
        print(dumps({k: v for k, v in record.items() if k != "runs"}))
        return 0
    print(f"500k-token ablation on {corpus.name}: {runs[0]['tokens']:,} tokens/run, {seeds} seeds, "
          f"{record['threads']} thread(s){' (SMOKE)' if args.smoke else ''}")
    print(f"{'arm':<8} {'val loss (nats/byte)':>22} {'gate |g_l| per layer':>30} {'train s':>9} {'vs dense':>9} "
          f"{'(median)':>9}")
    for arm in ARMS:
        s = summary[arm]
        gates = ", ".join(f"{m:.4f}±{d:.4f}" for m, d in zip(s["gates_mean"], s["gates_std"])) or "-"
        print(f"{arm:<8} {s['val_loss_mean']:>13.4f} ± {s['val_loss_std']:.4f} {gates:>30} "
              f"{s['train_s_mean']:>9.1f} {s['time_vs_dense']:>8.2f}x {s['time_vs_dense_median']:>8.2f}x")
    if record["bayes_loss"] is not None:
        print(f"Bayes limit of the Markov source: {record['bayes_loss']:.4f} nats/byte")
    print(f"coupled − frozen: {diff:+.4f} nats (standard error {se:.4f}); within noise (|Δ| ≤ 2 SE): "
          f"{record['coupled_frozen_within_noise']}")
    print(f"wrote {out / 'ablation.json'} and {out / 'ablation.png'}")
    return 0


def _plot(plt, summary, runs, path, data_name):
    fig, (ax_loss, ax_gate) = plt.subplots(1, 2, figsize=(10, 4))
    for i, arm in enumerate(ARMS):
        s = summary[arm]
        ax_loss.bar(i, s["val_loss_mean"], yerr=s["val_loss_std"], capsize=6, color=f"C{i}")
        for r in runs:
            if r["arm"] == arm:
                ax_loss.plot(i, r["val_loss"], "k.", zorder=3)
    ax_loss.set_xticks(range(len(ARMS)), ARMS)
    lo = min(r["val_loss"] for r in runs)
    hi = max(r["val_loss"] for r in runs)
    ax_loss.set_ylim(lo - 0.5 * (hi - lo + 0.01), hi + 0.5 * (hi - lo + 0.01))
    ax_loss.set_ylabel("final validation loss (nats/byte)")
    ax_loss.set_title(f"mean ± std over seeds ({data_name.split('/')[-1]})")
    for i, arm in enumerate(ARMS):
        for r in runs:
            if r["arm"] == arm and r["gates"]:
                tokens = [0] + [c[0] / 1e3 for c in r["curve"]]  # every gate starts at g = 0
                for layer in range(len(r["gates"])):
                    ax_gate.plot(tokens, [0.0] + [c[3][layer] for c in r["curve"]], color=f"C{i}",
                                 linestyle=["-", "--", ":", "-."][layer % 4], marker=".",
                                 label=f"{arm} layer {layer}" if r["seed"] == 0 else None)
    ax_gate.set_xlabel("tokens (thousands)")
    ax_gate.set_ylabel("mean |g_ℓ|")
    ax_gate.set_title("gate magnitude per layer (all seeds)")
    ax_gate.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
