"""The mapping, measured: does a trained layer's fast map, with the slow state frozen, have a fixed point φ(y)?

For P ∈ {4, 8, 16, 32} (ε = 1/P) it trains coupled models with the fast path windowed at W = 16
(the fast path is the same at every P; only the slow clock changes) on the hard source (δ = 0.9,
T = 256, 2 layers × 4 heads × width 64 — the scale of docs/findings.md §5), and for each trained
model and layer runs :func:`neural.lm.fast_map.iterate_fast_map` on validation sequences: freeze the
slow state y (block means of LN₁ of the layer's input) and its feedback c(y), iterate the layer's
map x ↦ Φ_y(x) from the layer's input, and record whether it converges, the distance D of the
trained layer's output to the limit, and D without the feedback.  The same measurement on each
model at initialisation (gates 0, so c = 0) is the control.  Across P it fits log D against log ε
(slope with SE): the ODE's Tikhonov estimate would be D = O(ε), slope 1 (docs/theory.md §3.2).

    python -m bench.lm.fast_map_fixed_point --threads 1 --tokens 1000000 --seeds 3 --n-iter 300 --n-seqs 8 \
        --out out/fast_map
    python -m bench.lm.fast_map_fixed_point --threads 1 --n-iter 3000 --remeasure P16-seed0 --out out/fast_map
    python -m bench.lm.fast_map_fixed_point --threads 1 --n-iter 1000 --remeasure P4-seed0,P4-seed1,…,P32-seed2 \
        --out out/fast_map
    python -m bench.lm.fast_map_fixed_point --smoke

(the first wrote results/lm/fast_map/; the next two re-measure saved models with more iterations,
a convergence check of the limit and of D: runs/*-iter3000.json, runs/*-iter1000.json there).

Resumable: each (P, seed) writes ``runs/P<P>-seed<s>.json`` (training record and measurements) and
its weights ``models/P<P>-seed<s>.pt``; finished ones are skipped.  Writes ``fast_map.json``,
``fast_map.md`` and ``distance_vs_eps.png``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path

from bench._common import ROOT

POOLS = (4, 8, 16, 32)
WINDOW = 16
HARD_DELTA = 0.9


def _example():
    spec = importlib.util.spec_from_file_location("when_coupling_matters", ROOT / "examples" / "when_coupling_matters.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def fit_slope(eps: list[float], dist: list[float]) -> dict:
    """Least-squares slope of log D on log ε, with its standard error (n ≥ 3 points)."""
    import numpy as np

    x, y = np.log(np.asarray(eps, float)), np.log(np.asarray(dist, float))
    n = len(x)
    if n < 3:
        return {"n": n, "slope": None, "se": None}
    A = np.stack([np.ones(n), x], 1)
    coef, res, *_ = np.linalg.lstsq(A, y, rcond=None)
    resid = y - A @ coef
    s2 = float(resid @ resid) / (n - 2)
    se = math.sqrt(s2 * np.linalg.inv(A.T @ A)[1, 1])
    return {"n": n, "slope": float(coef[1]), "se": se, "intercept": float(coef[0])}


def measure(model, idx, n_iter: int) -> list[dict]:
    from neural import iterate_fast_map

    return [r.to_dict() for r in iterate_fast_map(model.double(), idx, n_iter=n_iter)]


def summarise(records: list[dict], pools: list[int]) -> dict:
    import numpy as np

    out = {"by_P": [], "fits": {}}
    n_layers = len(records[0]["trained"]) if records else 0
    for P in pools:
        mine = [r for r in records if r["pool"] == P]
        if not mine:
            continue
        row = {"pool": P, "eps": 1.0 / P, "seeds": [r["seed"] for r in mine],
               "val_loss": float(np.mean([r["val_loss"] for r in mine])), "layers": []}
        for layer in range(n_layers):
            def col(kind, key):
                return [r[kind][layer][key] for r in mine]
            row["layers"].append({
                "layer": layer,
                "converged": all(col("trained", "converged")),
                "direction_converged_all": all(col("trained", "direction_converged")),
                "raw_step_last": float(np.mean(col("trained", "raw_step_last"))),
                "drift_rate": float(np.mean(col("trained", "drift_rate"))),
                "normalised_step_last": float(np.mean(col("trained", "normalised_step_last"))),
                "normalised_step_decay": float(np.mean(col("trained", "normalised_step_decay"))),
                "limit_error": float(np.max(col("trained", "limit_error"))),
                "distance": float(np.mean(col("trained", "distance"))),
                "distance_se": float(np.std(col("trained", "distance"), ddof=1) / math.sqrt(len(mine)))
                if len(mine) > 1 else None,
                "distance_pooled": float(np.mean(col("trained", "distance_pooled"))),
                "distance_no_feedback": float(np.mean(col("trained", "distance_no_feedback"))),
                "distance_init": float(np.mean(col("init", "distance"))),
                "feedback_norm": float(np.mean(col("trained", "feedback_norm"))),
                "gate": float(np.mean([r["gates"][layer] for r in mine])),
            })
        out["by_P"].append(row)
    for layer in range(n_layers):
        for key in ("distance", "distance_pooled", "distance_no_feedback"):
            pts = [(row["eps"], row["layers"][layer][key]) for row in out["by_P"]]
            out["fits"][f"layer{layer}_{key}"] = fit_slope([p[0] for p in pts], [p[1] for p in pts])
    return out


def markdown(summary: dict, meta: dict) -> str:
    lines = [f"### Frozen-y fast map of trained coupled-W{meta['window']} models (hard source, T = {meta['seq_len']}, "
             f"{meta['tokens']:,} tokens, {meta['n_iter']} iterations, {meta['n_seqs']} validation sequences)", "",
             "| P (ε) | layer | val loss | gate \\|g\\| | fixed point of Φ_y? | raw step, last (rms/token) | "
             "normalised step, last | decay exponent p | D (trained output vs limit) | D pooled | D without feedback | "
             "D at init |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for row in summary["by_P"]:
        for L in row["layers"]:
            se = "" if L["distance_se"] is None else f" ± {L['distance_se']:.4f}"
            lines.append(f"| {row['pool']} (1/{row['pool']}) | {L['layer']} | {row['val_loss']:.4f} | {L['gate']:.3f} | "
                         f"{'yes' if L['converged'] else 'no (drifts)'} | {L['raw_step_last']:.3f} | "
                         f"{L['normalised_step_last']:.1e} | {L['normalised_step_decay']:.2f} | {L['distance']:.4f}{se} | "
                         f"{L['distance_pooled']:.4f} | {L['distance_no_feedback']:.4f} | {L['distance_init']:.4f} |")
    lines += ["", f"Slopes of log D against log ε ({len(summary['by_P'])} values of P; the ODE's O(ε) would be 1):", ""]
    for key, f in summary["fits"].items():
        if f["slope"] is not None:
            lines.append(f"- {key}: {f['slope']:+.3f} ± {f['se']:.3f}")
    return "\n".join(lines) + "\n"


def plot(plt, summary: dict, path: Path) -> None:
    fig, ax = plt.subplots(1, 1, figsize=(6.4, 4.6))
    eps = [row["eps"] for row in summary["by_P"]]
    for layer in range(len(summary["by_P"][0]["layers"])):
        d = [row["layers"][layer]["distance"] for row in summary["by_P"]]
        se = [row["layers"][layer]["distance_se"] or 0.0 for row in summary["by_P"]]
        d0 = [row["layers"][layer]["distance_no_feedback"] for row in summary["by_P"]]
        di = [row["layers"][layer]["distance_init"] for row in summary["by_P"]]
        ax.errorbar(eps, d, yerr=se, marker="o", capsize=3, color=f"C{layer}", label=f"layer {layer}: trained")
        ax.plot(eps, d0, ls="--", marker="s", ms=4, color=f"C{layer}", alpha=0.7,
                label=f"layer {layer}: trained, feedback removed")
        ax.plot(eps, di, ls=":", marker="^", ms=4, color=f"C{layer}", alpha=0.7, label=f"layer {layer}: at init")
    ref = summary["by_P"][0]["layers"][0]["distance"]
    ax.plot(eps, [ref * e / eps[0] for e in eps], color="0.5", lw=0.8, label="slope 1 (ODE: O(ε))")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("ε = 1/P")
    ax.set_ylabel("D = ‖LN(layer output) − limit‖ / ‖limit‖")
    ax.set_title("distance of the trained layer's output to the\nlimit of its frozen-y fast map", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pools", default=",".join(map(str, POOLS)))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=1_000_000)
    parser.add_argument("--n-iter", type=int, default=400)
    parser.add_argument("--n-seqs", type=int, default=8, help="validation sequences whose slow states are frozen")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", default="out/fast_map")
    parser.add_argument("--remeasure", default="", metavar="P16-seed0,…",
                        help="re-measure these saved models with --n-iter iterations (a convergence check); "
                             "writes runs/<name>-iter<N>.json and trains nothing")
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)

    import dataclasses

    import torch

    from neural import FastSlowLM, ModelConfig
    from neural.lm.data import eval_starts, windows
    from sp_ode.core.files import write_json
    from sp_ode.core.reporting import figures

    if args.threads is not None:
        torch.set_num_threads(args.threads)  # the script's entry point
    example = _example()
    pools = [int(p) for p in args.pools.split(",") if p]
    if args.smoke:
        base = example.SCALES["smoke"]
        pools, seeds, tokens, n_iter, n_seqs, window = [2, 4], 1, 1024, 8, 2, 4
    else:
        base = example.SCALES["cpu"]
        seeds, tokens, n_iter, n_seqs, window = args.seeds, args.tokens, args.n_iter, args.n_seqs, WINDOW
    if any(base.seq_len % P for P in pools):
        parser.error(f"every P must divide T = {base.seq_len}; got {pools}")
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "models").mkdir(parents=True, exist_ok=True)
    train, val, _ = example.load_data("hard", base, HARD_DELTA, None)
    starts = eval_starts(base.n_val, base.seq_len, base.eval_windows)
    probe, _ = windows(val, torch.as_tensor(starts[:: max(1, len(starts) // n_seqs)][:n_seqs]), base.seq_len,
                       torch.device("cpu"))
    if args.remeasure:
        results = {}
        for name in [n for n in args.remeasure.split(",") if n]:
            P, seed = int(name.split("-")[0][1:]), int(name.split("seed")[1])
            cfg = ModelConfig(seq_len=base.seq_len, pool=P, n_layer=base.n_layer, n_head=base.n_head,
                              d_model=base.d_model, arm="coupled", window=window)
            model = FastSlowLM(cfg, seed=seed)
            model.load_state_dict(torch.load(out / "models" / f"{name}.pt"))
            t0 = time.perf_counter()
            results[name] = measure(model, probe, n_iter)
            write_json(out / "runs" / f"{name}-iter{n_iter}.json", {"model": name, "n_iter": n_iter, "n_seqs": n_seqs,
                                                                     "trained": results[name]})
            print(f"  {name}, {n_iter} iterations: " + "; ".join(
                f"layer {r['layer']}: D {r['distance']:.4f}, limit error {r['limit_error']:.4f}, normalised step "
                f"{r['normalised_step_last']:.1e} (decay n^-{r['normalised_step_decay']:.2f})" for r in results[name])
                + f" ({time.perf_counter() - t0:.0f} s)")
        return 0
    records = []
    for P in pools:
        scale = dataclasses.replace(base, pool=P)
        for seed in range(seeds):
            path = out / "runs" / f"P{P}-seed{seed}.json"
            if not path.is_file():
                t0 = time.perf_counter()
                run, model = example.train_run(f"coupled-W{window}", seed, tokens, scale, train, val, starts,
                                               return_model=True)
                torch.save(model.state_dict(), out / "models" / f"P{P}-seed{seed}.pt")
                init = FastSlowLM(ModelConfig(seq_len=scale.seq_len, pool=P, n_layer=scale.n_layer, n_head=scale.n_head,
                                              d_model=scale.d_model, arm="coupled", window=window), seed=seed)
                record = {"pool": P, "eps": 1 / P, "seed": seed, "window": window, "tokens": run["tokens"],
                          "val_loss": run["val_loss"], "gates": run["gates"], "slow_influence": run["slow_influence"],
                          "train_cpu_s": run["train_cpu_s"], "n_iter": n_iter, "n_seqs": n_seqs,
                          "trained": measure(model, probe, n_iter), "init": measure(init, probe, n_iter)}
                write_json(path, record)
                print(f"  P={P} seed {seed}: val {run['val_loss']:.4f}, D per layer "
                      f"{[round(r['distance'], 4) for r in record['trained']]} ({time.perf_counter() - t0:.0f} s)",
                      file=sys.stderr)
            records.append(json.loads(path.read_text()))
    summary = summarise(records, pools)
    meta = {"seq_len": base.seq_len, "tokens": tokens, "n_iter": n_iter, "n_seqs": n_seqs, "window": window,
            "pools": pools, "seeds": seeds, "delta": HARD_DELTA, "threads": torch.get_num_threads(), "smoke": args.smoke}
    write_json(out / "fast_map.json", {**meta, **summary, "runs": records})
    table = markdown(summary, meta)
    (out / "fast_map.md").write_text(table, encoding="utf-8")
    plot(figures(), summary, out / "distance_vs_eps.png")
    print(table)
    print(f"wrote {out / 'fast_map.json'}, {out / 'fast_map.md'}, {out / 'distance_vs_eps.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
