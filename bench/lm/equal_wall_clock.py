"""Equal wall-clock (H5, pre-registered in docs/findings.md): windowed coupled attention against full attention at T = 1024.

Per source and seed s, two runs with the same fast-path initialisation and data order:

* ``dense-full`` trained for N_D tokens, final validation loss L_D(s), training time t_D(s);
* ``coupled-W16`` (chunked window kernel, P = 16) trained for N_C = round(f · ρ · N_D) tokens,
  with its own full warmup-and-cosine schedule, final loss L_C(s), where f = 0.6 is the
  pre-registered time fraction and ρ the measured throughput ratio (tokens/s of coupled-W16 over
  tokens/s of dense-full, training steps at this model's shape, one thread, from a committed
  ``bench/lm/attention.py`` record).  So coupled-W16 gets f × dense-full's training time.

H5 holds on a source when coupled-W16 at f × the time reaches dense-full's loss: with
d_s = L_C(s) − L_D(s) over n ≥ 5 paired seeds and the one-sided 95 % t-bounds [lo, hi] of mean d,

* **supported** if hi ≤ +MARGIN (0.002 nats): at f × the time it is no worse than dense-full by more
  than the margin;
* **not supported** if lo > 0 (it is significantly worse) and hi > MARGIN;
* **inconclusive** otherwise, or with fewer than 5 paired seeds.

H5 holds if supported on both sources, fails if not supported on either, else is inconclusive.  If
the realised mean ratio t_C/t_D exceeds f × 1.05, the rule is applied to coupled-W16's loss read on
its own curve at f·t_D(s) (linear between evaluations; conservative, being mid-schedule).

Training time is the sum over training steps (forward, backward, clipping, AdamW; evaluations
excluded) of the process CPU time (one thread: immune to other processes' load); wall time is
recorded beside it.  The realised ratio t_C/t_D is reported per seed.  Loss-against-seconds curves
(each run evaluated at 10 points of its schedule) go to ``loss_vs_seconds.png``.

    python -m bench.lm.equal_wall_clock --threads 1 --tokens 2000000 --rho-record results/lm/attention_cpu_T1024.json \\
        --out out/h5                 # the pre-registered runs (resumable: one JSON per finished run)
    python -m bench.lm.equal_wall_clock --smoke      # seconds (the test suite)

Tiny Shakespeare (``../shared/data/tinyshakespeare.txt``) is optional: without it that source is
skipped, and said so.
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

TIME_FRACTION = 0.6
"""f of H5: coupled-W16 gets this fraction of dense-full's training time."""
MARGIN = 0.002
"""Non-inferiority margin of H5 (nats/token)."""
MIN_SEEDS = 5
HARD_DELTA = 0.9
"""δ of the hard source, selected from the floors (docs/findings.md §3)."""
BASE, CHALLENGER = "dense-full", "coupled-W16"
SOURCES = ("hard", "shakespeare")


def _example():
    spec = importlib.util.spec_from_file_location("when_coupling_matters", ROOT / "examples" / "when_coupling_matters.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the example defines a dataclass, which looks its module up
    spec.loader.exec_module(module)
    return module


def scale_for(example, smoke: bool):
    """T = 1024, P = 16, 2 layers × 4 heads × width 64, 4 windows (4096 tokens) per step; smoke: tiny."""
    if smoke:
        return example.Scale(seq_len=64, pool=4, n_layer=1, n_head=2, d_model=16, batch_size=4, lr=3e-3, warmup=2,
                             n_train=1 << 13, n_val=1 << 12, eval_windows=8, n_evals=3,
                             hard=dict(n_regimes=4, n_symbols=4, switch_prob=1 / 64, mode="hazard", sparsity=2.0,
                                       seed=0))
    return example.Scale(seq_len=1024, pool=16, n_layer=2, n_head=4, d_model=64, batch_size=4, lr=2e-3, warmup=20,
                         n_train=1 << 21, n_val=1 << 17, eval_windows=64, n_evals=10,
                         hard=dict(n_regimes=16, n_symbols=8, switch_prob=1 / 1024, mode="hazard", sparsity=2.0,
                                   seed=0))


def rho_from_record(path: Path, seq_len: int, window: int = 16) -> float:
    """ρ = tokens/s of coupled-W (chunked) over dense-full at `seq_len` (median in-round CPU-time ratio⁻¹)."""
    record = json.loads(Path(path).read_text())
    row = next((r for r in record["rows"] if r["seq_len"] == seq_len and r["arm"] == f"coupled-W{window}"
                and r["kernel"] == "chunked"), None)
    if row is None:
        raise ValueError(f"`--rho-record` {path}: no coupled-W{window} chunked row at T = {seq_len}.")
    return 1.0 / row["cpu_over_full"]


def challenger_tokens(base_tokens: int, rho: float, fraction: float = TIME_FRACTION) -> int:
    """N_C = round(f · ρ · N_D): the tokens coupled-W16 trains in f × dense-full's time."""
    return int(round(fraction * rho * base_tokens))


def verdict(diffs: list[float], margin: float = MARGIN, min_seeds: int = MIN_SEEDS) -> dict:
    """The pre-registered rule on d_s = L_C(s) − L_D(s): one-sided 95 % t-bounds of mean d against the margin."""
    import numpy as np
    from scipy import stats

    d = np.asarray(diffs, dtype=float)
    n = len(d)
    out = {"n": n, "diffs": d.tolist(), "mean": float(d.mean()) if n else None, "margin": margin}
    if n < 2:
        return {**out, "se": None, "lo95": None, "hi95": None, "verdict": f"inconclusive (n = {n} < {min_seeds})"}
    se = float(d.std(ddof=1) / math.sqrt(n))
    q = float(stats.t.ppf(0.95, n - 1))
    lo, hi = float(d.mean() - q * se), float(d.mean() + q * se)
    out.update(se=se, lo95=lo, hi95=hi, p_worse=float(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
               if se > 0 else None)
    if n < min_seeds:
        v = f"inconclusive (n = {n} < {min_seeds})"
    elif hi <= margin:
        v = "supported"
    elif lo > 0:
        v = "not supported"
    else:
        v = "inconclusive"
    return {**out, "verdict": v}


def crossing_time(curve: list[dict], level: float, clock: str = "train_cpu_s") -> float | None:
    """First time (linear between evaluations) at which a run's validation loss is ≤ `level`; None if never."""
    prev = None
    for point in curve:
        if point["val_loss"] <= level:
            if prev is None:
                return point[clock]
            (t0, l0), (t1, l1) = (prev[clock], prev["val_loss"]), (point[clock], point["val_loss"])
            return t0 + (t1 - t0) * (l0 - level) / (l0 - l1) if l0 != l1 else t1
        prev = point
    return None


def loss_at(curve: list[dict], t: float, clock: str = "train_cpu_s") -> float:
    """Validation loss of a run at time `t`, linear between evaluations (the last one past its end)."""
    pts = [(c[clock], c["val_loss"]) for c in curve]
    if t <= pts[0][0]:
        return pts[0][1]
    for (t0, l0), (t1, l1) in zip(pts, pts[1:]):
        if t <= t1:
            return l0 + (l1 - l0) * (t - t0) / (t1 - t0) if t1 > t0 else l1
    return pts[-1][1]


RATIO_SLACK = 1.05
"""Pre-registered: if the realised mean t_C/t_D exceeds f × this, the verdict reads coupled-W16 on its curve at f·t_D."""


def report(runs: dict, floors: dict, meta: dict) -> dict:
    """Per source: the paired table, realised time ratios, the verdict, crossing times."""
    out = {**meta, "sources": {}}
    for src, by_arm in runs.items():
        base, chal = by_arm.get(BASE, {}), by_arm.get(CHALLENGER, {})
        seeds = sorted(set(base) & set(chal))
        rows = []
        for s in seeds:
            b, c = base[s], chal[s]
            cross = crossing_time(c["curve"], b["val_loss"])
            rows.append({"seed": s, "L_D": b["val_loss"], "L_C": c["val_loss"], "d": c["val_loss"] - b["val_loss"],
                         "t_D_cpu_s": b["train_cpu_s"], "t_C_cpu_s": c["train_cpu_s"],
                         "t_D_wall_s": b["train_s"], "t_C_wall_s": c["train_s"],
                         "cpu_time_ratio": c["train_cpu_s"] / b["train_cpu_s"],
                         "wall_time_ratio": c["train_s"] / b["train_s"],
                         "tokens_D": b["tokens"], "tokens_C": c["tokens"],
                         "crossing_cpu_s": cross,
                         "crossing_over_t_D": None if cross is None else cross / b["train_cpu_s"],
                         "gates_C": c["gates"], "slow_influence_C": c["slow_influence"]})
        entry = {"rows": rows, "floors": floors.get(src),
                 "H5": verdict([r["d"] for r in rows], meta["margin"], meta["min_seeds"])}
        if rows:
            f = meta["time_fraction"]
            mean_ratio = sum(r["cpu_time_ratio"] for r in rows) / len(rows)
            entry["mean_cpu_time_ratio"] = mean_ratio
            # the pre-registered correction: coupled-W16 read at exactly f·t_D on its own curve
            for r in rows:
                r["L_C_at_fraction"] = loss_at(chal[r["seed"]]["curve"], f * r["t_D_cpu_s"])
            entry["H5_at_fraction"] = verdict([r["L_C_at_fraction"] - r["L_D"] for r in rows], meta["margin"],
                                              meta["min_seeds"])
            entry["ratio_over_target"] = mean_ratio > f * RATIO_SLACK
            entry["verdict"] = (entry["H5_at_fraction"] if entry["ratio_over_target"] else entry["H5"])["verdict"]
        else:
            entry["verdict"] = entry["H5"]["verdict"]
        out["sources"][src] = entry
    verdicts = [s["verdict"] for s in out["sources"].values()]
    if len(verdicts) < 2:
        out["H5_overall"] = f"inconclusive ({len(verdicts)} of 2 sources)"
    elif all(v == "supported" for v in verdicts):
        out["H5_overall"] = "supported"
    elif any(v == "not supported" for v in verdicts):
        out["H5_overall"] = "not supported"
    else:
        out["H5_overall"] = "inconclusive"
    return out


def markdown(rep: dict) -> str:
    lines = [f"### H5: {CHALLENGER} at {rep['time_fraction']} × the training time of {BASE} (T = {rep['seq_len']})", "",
             f"N_D = {rep['tokens_base']:,} tokens (dense-full), N_C = {rep['tokens_challenger']:,} tokens (coupled-W16), "
             f"ρ = {rep['rho']:.3f} from `{rep['rho_source']}`; margin {rep['margin']} nats.", ""]
    for src, s in rep["sources"].items():
        lines += [f"#### {src}", "", "| seed | L_D (dense-full) | L_C (coupled-W16) | d = L_C − L_D | t_C/t_D (CPU) | "
                  "t_C/t_D (wall) | coupled reaches L_D at (× t_D) |", "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in s["rows"]:
            cross = "never" if r["crossing_over_t_D"] is None else f"{r['crossing_over_t_D']:.3f}"
            lines.append(f"| {r['seed']} | {r['L_D']:.4f} | {r['L_C']:.4f} | {r['d']:+.4f} | {r['cpu_time_ratio']:.3f} | "
                         f"{r['wall_time_ratio']:.3f} | {cross} |")
        for key, label in (("H5", "at the end of its run"), ("H5_at_fraction", "read on its curve at f·t_D")):
            h = s.get(key)
            if h is None:
                continue
            if h["se"] is not None:
                lines.append(f"\ncoupled-W16 {label}: mean d = {h['mean']:+.4f} ± {h['se']:.4f} (SE), one-sided 95 % "
                             f"bounds [{h['lo95']:+.4f}, {h['hi95']:+.4f}], n = {h['n']} → {h['verdict']}")
            else:
                lines.append(f"\ncoupled-W16 {label}: {h['verdict']}")
        if "mean_cpu_time_ratio" in s:
            used = "its curve at f·t_D" if s["ratio_over_target"] else "the end of its run"
            lines.append(f"\nrealised mean t_C/t_D = {s['mean_cpu_time_ratio']:.3f} (target {rep['time_fraction']}, "
                         f"slack ×{RATIO_SLACK}) → the verdict uses {used}: **{s['verdict']}**")
        if s["floors"]:
            f = s["floors"]
            lines.append(f"\nfloors: Bayes-T {f['bayes_T']:.4f}, Bayes-16 {f['bayes_W16']:.4f}, "
                         f"Bayes-RF {f['bayes_RF16']:.4f} (receptive field {f['receptive_field_W16']})" if "bayes_W16" in f
                         else f"\nfloors: Bayes-T {f['bayes_T']:.4f}")
        lines.append("")
    return "\n".join(lines)


def plot(plt, runs: dict, rep: dict, path: Path) -> None:
    """Validation loss against training CPU seconds, every seed, both arms, per source."""
    import numpy as np

    fig, axes = plt.subplots(1, len(runs), figsize=(6.2 * len(runs), 4.6), squeeze=False)
    for ax, (src, by_arm) in zip(axes[0], runs.items()):
        tops, lows = [], []
        for i, arm in enumerate((BASE, CHALLENGER)):
            for k, (_seed, r) in enumerate(sorted(by_arm.get(arm, {}).items())):
                t = [c["train_cpu_s"] for c in r["curve"]]
                v = [c["val_loss"] for c in r["curve"]]
                ax.plot(t, v, color=f"C{i}", alpha=0.8, lw=1.2, marker="o", ms=3,
                        label=f"{arm} ({r['tokens'] / 1e6:.2f}M tokens)" if k == 0 else None)
                tops.append(v[min(2, len(v) - 1)])
                lows.append(min(v))
        s = rep["sources"].get(src)
        if s and s["rows"]:
            t_d = float(np.mean([r["t_D_cpu_s"] for r in s["rows"]]))
            ax.axvline(rep["time_fraction"] * t_d, color="k", ls=":", lw=1,
                       label=f"{rep['time_fraction']} × dense-full's time")
            ax.axhline(float(np.mean([r["L_D"] for r in s["rows"]])), color="C0", ls="--", lw=1,
                       label="dense-full final loss (mean)")
            h = s["H5"]
            ax.set_title(f"{src}: H5 {s['verdict']}" + (f" (mean d = {h['mean']:+.4f})" if h["mean"] is not None else ""),
                         fontsize=10)
        if tops:
            pad = 0.05 * (max(tops) - min(lows) + 1e-6)
            lo, hi = min(lows) - pad, max(tops) + pad
            ax.set_ylim(lo, hi)
            floors = (s or {}).get("floors") or {}
            for key, name, ls in (("bayes_T", "Bayes-T", "-"), ("bayes_W16", "Bayes-16 (window's floor)", "--"),
                                  ("bayes_RF16", "Bayes-31 (receptive field's floor)", "-.")):
                if key in floors and lo < floors[key] < hi:  # the exact floors that fall inside the zoom
                    ax.axhline(floors[key], color="0.45", ls=ls, lw=0.9, label=name)
        ax.set_xlabel("training time (CPU seconds, one thread; evaluations excluded)")
        ax.set_ylabel("validation loss (nats/token)")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", default=",".join(SOURCES))
    parser.add_argument("--seeds", type=int, default=MIN_SEEDS, help="seeds 0 … N−1 (default 5)")
    parser.add_argument("--tokens", type=int, default=2_000_000, help="N_D, dense-full's tokens per run")
    parser.add_argument("--rho", type=float, default=None, help="throughput ratio ρ (else read from --rho-record)")
    parser.add_argument("--rho-record", type=Path, default=None, help="a bench.lm.attention record holding T = 1024")
    parser.add_argument("--time-fraction", type=float, default=TIME_FRACTION)
    parser.add_argument("--text", default=str(ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"))
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--out", default="out/equal_wall_clock")
    parser.add_argument("--report-only", action="store_true", help="tables and figures from the finished runs")
    parser.add_argument("--smoke", action="store_true", help="tiny model, 2 seeds, a few thousand tokens, ρ = 1")
    args = parser.parse_args(argv)

    import torch

    from neural.lm.data import eval_starts
    from sp_ode.core.files import write_json
    from sp_ode.core.reporting import figures

    if args.threads is not None:
        torch.set_num_threads(args.threads)  # the script's entry point
    example = _example()
    scale = scale_for(example, args.smoke)
    seeds = 2 if args.smoke and args.seeds == MIN_SEEDS else args.seeds
    base_tokens = 4096 if args.smoke and args.tokens == 2_000_000 else args.tokens
    if args.rho is not None:
        rho, rho_source = args.rho, "--rho"
    elif args.rho_record is not None:
        rho, rho_source = rho_from_record(args.rho_record, scale.seq_len), str(args.rho_record)
    elif args.smoke:
        rho, rho_source = 1.0, "smoke (ρ = 1)"
    else:
        parser.error("give --rho or --rho-record (the throughput ratio fixes coupled-W16's token budget)")
    if not (rho > 0 and 0 < args.time_fraction):
        parser.error(f"ρ and --time-fraction must be positive; got {rho}, {args.time_fraction}")
    chal_tokens = challenger_tokens(base_tokens, rho, args.time_fraction)
    sources = [s for s in args.sources.split(",") if s]
    bad = sorted(set(sources) - set(SOURCES))
    if bad:
        parser.error(f"--sources must be among {SOURCES}; got {bad}")
    text = Path(args.text)
    if "shakespeare" in sources and not text.is_file():
        print(f"tiny Shakespeare not found at {text}: skipping that source", file=sys.stderr)
        sources.remove("shakespeare")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"seq_len": scale.seq_len, "pool": scale.pool, "scale": scale.__dict__, "smoke": args.smoke,
            "tokens_base": base_tokens, "tokens_challenger": chal_tokens, "rho": rho, "rho_source": rho_source,
            "time_fraction": args.time_fraction, "margin": MARGIN, "min_seeds": MIN_SEEDS, "delta": HARD_DELTA,
            "threads": torch.get_num_threads()}

    data, floors = {}, {}
    floor_path = out / "floors.json"
    cached = json.loads(floor_path.read_text()) if floor_path.is_file() else {}
    starts = {}
    for src in sources:
        data[src] = example.load_data(src, scale, HARD_DELTA if src == "hard" else None, text)
        # the same evenly spaced windows in every run of a source, within that source's validation split
        starts[src] = eval_starts(len(data[src][1]), scale.seq_len, scale.eval_windows)
        if src == "hard":
            if cached.get("scale") != scale.__dict__:
                t0 = time.perf_counter()
                source = data[src][2]
                cached = {"scale": scale.__dict__, "hard": example.floors(source, data[src][1].numpy(), starts[src], scale,
                                                                          [16 if not args.smoke else 4])}
                write_json(floor_path, cached)
                print(f"floors of the hard source ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
            floors[src] = cached["hard"]
    window = 16 if not args.smoke else 4
    arms = {BASE: base_tokens, f"coupled-W{window}": chal_tokens}

    runs: dict = {src: {BASE: {}, CHALLENGER: {}} for src in sources}
    for seed in range(seeds):  # seed-major: an interrupted job leaves whole pairs on both sources
        for src in sources:
            for arm, tokens in arms.items():
                path = out / "runs" / src / f"{arm}-seed{seed}-tok{tokens}.json"
                if not path.is_file() and not args.report_only:
                    train, val, _ = data[src]
                    record = example.train_run(arm, seed, tokens, scale, train, val, starts[src])
                    record.update({"source": src, "threads": torch.get_num_threads(), "smoke": args.smoke})
                    write_json(path, record)
                    print(f"  {src:<11} {arm:<12} seed {seed} tok {tokens}: val {record['val_loss']:.4f} "
                          f"{record['train_cpu_s']:.0f} CPU-s ({record['train_s']:.0f} s wall)", file=sys.stderr)
                if path.is_file():
                    runs[src][BASE if arm == BASE else CHALLENGER][seed] = json.loads(path.read_text())
    rep = report(runs, floors, meta)
    write_json(out / "h5.json", {**rep, "runs": {s: {a: list(r.values()) for a, r in v.items()} for s, v in runs.items()}})
    table = markdown(rep)
    (out / "h5.md").write_text(table, encoding="utf-8")
    if any(r for v in runs.values() for r in v.values()):
        plot(figures(), runs, rep, out / "loss_vs_seconds.png")
    print(table)
    print(f"H5 overall (both sources): {rep['H5_overall']}")
    print(f"wrote {out / 'h5.json'}, {out / 'h5.md'}, {out / 'loss_vs_seconds.png'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
