"""
# When the slow coupling matters

The pre-registered experiment of the Findings page: when does the slow path of the fast–slow
language model help?

Arms (docs/theory.md §4): dense with full causal attention (``dense-full``), coupled with full
attention (``coupled-full``), and dense / coupled / frozen with the fast path windowed at
W ∈ {P, 2P} (``dense-W16``, ``coupled-W16``, ``frozen-W16``, … at P = 16).  Sources:

* ``easy``  — the built-in two-timescale source (``neural.lm.data.MarkovSource.default``; block
  switching, regimes identifiable from a few tokens), sampled by ``neural.lm.sources.RegimeSource``;
* ``hard``  — ``RegimeSource.perturbed(δ)``: 16 regimes perturbing one generator by exp(δ·N(0,1)),
  switching at any token with hazard 1/1024; δ is the smallest value of a fixed grid whose
  floor gap Bayes-W − Bayes-T at W = P is ≥ 0.03 nats (found from the floors, no training);
* ``shakespeare`` — tiny Shakespeare (``../shared/data/tinyshakespeare.txt``), skipped when absent.

Every run on a regime source reports its validation loss against the exact floors on the same
targets (docs/theory.md §8): Bayes-∞, Bayes-T (the model's context), Bayes-W and Bayes-RF (the
receptive field L(W−1)+1 of L windowed layers).  Per run: final validation loss, excess over the
floors, gate trajectory and slow influence ‖g_ℓ ⊙ W_o z‖/‖h‖ per layer over training, analytic
training FLOPs per token and measured wall-clock.  Arms of one seed share the data order and the
fast-path initialisation, so differences are paired across seeds (mean ± SE, 95 % interval,
paired t-test and exact sign-flip permutation test).

    python examples/when_coupling_matters.py --threads 1                          # the full grid (CPU-hours)
    python examples/when_coupling_matters.py --threads 1 --sources hard --arms dense-W16,coupled-W16 \\
        --seeds 2 --tokens 300000                                                 # a pilot
    python examples/when_coupling_matters.py --threads 1 --sources hard --seeds 3 \\
        --arms dense-full,dense-W16,coupled-W16 --delta-sweep 0.3,0.6,1.5          # gap closed vs δ
    python examples/when_coupling_matters.py --smoke                              # seconds (the test suite)

Resumable: each run writes ``runs/<source>/<arm>-seed<s>-tok<N>.json`` (``runs/hard_delta<δ>/…``
for the δ sweep) when it finishes and is skipped when that file exists.  Writes ``coupling.json`` (every number printed), ``coupling.md``
(the tables) and figures under ``--out``.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_TEXT = ROOT.parent / "shared" / "data" / "tinyshakespeare.txt"
SOURCES = ("hard", "easy", "shakespeare")
DELTA_GRID = (0.3, 0.6, 0.9, 1.2, 1.5)
GAP_TARGET = 0.03
"""Pre-registered: the hard source's δ is the smallest grid value with Bayes-W − Bayes-T ≥ this at W = P."""


@dataclass(frozen=True)
class Scale:
    """Model shape, data sizes and optimisation of one experiment size."""

    seq_len: int
    pool: int
    n_layer: int
    n_head: int
    d_model: int
    batch_size: int
    lr: float
    warmup: int
    n_train: int
    n_val: int
    eval_windows: int
    n_evals: int
    hard: dict


SCALES = {
    # ≈ 0.1M parameters (2 layers, width 64), T = 256, P = 16 (issue 14)
    "cpu": Scale(seq_len=256, pool=16, n_layer=2, n_head=4, d_model=64, batch_size=16, lr=2e-3, warmup=20,
                 n_train=1 << 21, n_val=1 << 16, eval_windows=128, n_evals=12,
                 hard=dict(n_regimes=16, n_symbols=8, switch_prob=1 / 1024, mode="hazard", sparsity=2.0, seed=0)),
    "smoke": Scale(seq_len=32, pool=4, n_layer=1, n_head=2, d_model=16, batch_size=4, lr=3e-3, warmup=2,
                   n_train=1 << 13, n_val=1 << 11, eval_windows=8, n_evals=2,
                   hard=dict(n_regimes=4, n_symbols=4, switch_prob=1 / 64, mode="hazard", sparsity=2.0, seed=0)),
    # ≈ 10M parameters for one H200 (bench/lm/coupling_gpu.py)
    "gpu": Scale(seq_len=256, pool=16, n_layer=6, n_head=6, d_model=384, batch_size=256, lr=1e-3, warmup=200,
                 n_train=1 << 24, n_val=1 << 16, eval_windows=256, n_evals=10,
                 hard=dict(n_regimes=16, n_symbols=8, switch_prob=1 / 1024, mode="hazard", sparsity=2.0, seed=0)),
}


def arm_names(pool: int) -> list[str]:
    """The eight arms, main comparison first: dense-W, coupled-W, dense-full, frozen-W at W = P, then the rest."""
    w1, w2 = pool, 2 * pool
    return [f"dense-W{w1}", f"coupled-W{w1}", "dense-full", f"frozen-W{w1}", "coupled-full",
            f"dense-W{w2}", f"coupled-W{w2}", f"frozen-W{w2}"]


def parse_arm(name: str) -> tuple[str, int | None]:
    """'coupled-W16' → ('coupled', 16); 'dense-full' → ('dense', None)."""
    arm, _, fast = name.partition("-")
    if arm not in ("dense", "coupled", "frozen") or not (fast == "full" or (fast[:1] == "W" and fast[1:].isdigit())):
        raise ValueError(f"arm names are <dense|coupled|frozen>-<full|W<int>>; got {name!r}.")
    return arm, None if fast == "full" else int(fast[1:])


# --------------------------------------------------------------------------- sources and floors


def regime_source(name: str, scale: Scale, delta: float | None = None):
    from neural.lm.data import MarkovSource
    from neural.lm.sources import RegimeSource

    if name == "easy":
        return RegimeSource.from_markov(MarkovSource.default(seed=0, block=scale.pool))
    return RegimeSource.perturbed(delta, **scale.hard)


def sample_streams(source, scale: Scale, seed: int = 0):
    import numpy as np

    rng_train, rng_val = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    return source.sample(scale.n_train, rng_train)[0], source.sample(scale.n_val, rng_val)[0]


def floors(source, val, starts, scale: Scale, windows: list[int]) -> dict:
    """Bayes-∞, Bayes-T and, per fast window W, Bayes-W and Bayes-RF on the scored targets (nats)."""
    from neural.lm.sources import receptive_field

    T = scale.seq_len
    out = {"bayes_inf": source.window_floor(val, starts, T, None), "bayes_T": source.window_floor(val, starts, T, T)}
    for W in windows:
        rf = receptive_field(W, scale.n_layer)
        out[f"bayes_W{W}"] = source.window_floor(val, starts, T, W)
        out[f"bayes_RF{W}"] = source.window_floor(val, starts, T, min(rf, T))
        out[f"receptive_field_W{W}"] = rf
    return out


def select_delta(scale: Scale, starts, grid=DELTA_GRID) -> tuple[float, list[dict]]:
    """Floors of the hard family over the δ grid; the smallest δ with Bayes-W − Bayes-T ≥ GAP_TARGET at W = P."""
    table = []
    for delta in grid:
        src = regime_source("hard", scale, delta)
        _, val = sample_streams(src, scale)
        f = floors(src, val, starts, scale, [scale.pool])
        table.append({"delta": delta, **f, "gap_W": f[f"bayes_W{scale.pool}"] - f["bayes_T"],
                      "gap_RF": f[f"bayes_RF{scale.pool}"] - f["bayes_T"]})
    chosen = next((row["delta"] for row in table if row["gap_W"] >= GAP_TARGET), None)
    if chosen is None:  # the target is out of reach on this grid: take the largest gap, and say so
        chosen = max(table, key=lambda row: row["gap_W"])["delta"]
    return chosen, table


# --------------------------------------------------------------------------- one run


def flops_per_token(arm: str, window: int | None, scale: Scale, vocab: int = 256) -> dict:
    """Analytic matmul FLOPs per token: forward, and training (forward + backward ≈ 3 × forward).

    Per layer: fast projections 24d², fast attention 4d·c̄ (c̄ = mean keys per query over the T
    positions: min(i+1, W)), and for coupled/frozen the slow path per token (8d² + 4d·k̄)/P
    (qkv + W_o on the T/P pooled tokens, block attention with k̄ keys).  Head 2dV.
    """
    d, L, T, P = scale.d_model, scale.n_layer, scale.seq_len, scale.pool
    keys = sum(min(i + 1, window or T) for i in range(T)) / T
    fast = L * (24 * d * d + 4 * d * keys)
    slow = 0.0
    if arm != "dense":
        nb = T // P
        slow = L * (8 * d * d + 4 * d * (nb + 1) / 2) / P
    fwd = fast + slow + 2 * d * vocab
    return {"forward": fwd, "train": 3 * fwd, "slow_share": slow / fwd}


def train_run(arm_name: str, seed: int, tokens: int, scale: Scale, train_data, val_data, starts,
              device: str = "cpu", compile_model: bool = False, return_model: bool = False):
    """Train one arm; evaluate on the fixed windows `starts` at n_evals points; return the run record.

    With ``return_model`` it returns ``(record, model)``: the trained model (evaluation mode), for
    measurements made after training (bench/lm/fast_map_fixed_point.py).
    """
    import contextlib

    import numpy as np
    import torch

    from neural.lm.config import ModelConfig
    from neural.lm.data import get_batch, windows
    from neural.lm.model import FastSlowLM
    from neural.lm.train import TrainConfig, build_optimizer, evaluate, lr_at

    arm, window = parse_arm(arm_name)
    mcfg = ModelConfig(seq_len=scale.seq_len, pool=scale.pool, n_layer=scale.n_layer, n_head=scale.n_head,
                       d_model=scale.d_model, arm=arm, window=window)
    tcfg = TrainConfig(tokens=tokens, batch_size=scale.batch_size, lr=scale.lr, min_lr=scale.lr / 10,
                       warmup=scale.warmup, seed=seed)
    dev = torch.device(device)
    model = FastSlowLM(mcfg, seed=seed).to(dev)  # same seed → same fast-path weights in every arm
    optimizer = build_optimizer(model, tcfg)
    step_model = torch.compile(model) if compile_model else model
    data_gen = torch.Generator().manual_seed(seed)  # same seed → same data order in every arm
    T = scale.seq_len
    total = tcfg.total_steps(T)
    eval_at = sorted({max(1, round(total * (k + 1) / scale.n_evals)) for k in range(scale.n_evals)})
    probe, _ = windows(val_data, torch.as_tensor(starts[: min(len(starts), 16)]), T, dev)
    autocast = (lambda: torch.autocast("cuda", dtype=torch.bfloat16)) if dev.type == "cuda" else contextlib.nullcontext
    curve, losses, train_s, train_cpu_s = [], [], 0.0, 0.0
    model.train()
    for step in range(total):
        t0, c0 = time.perf_counter(), time.process_time()
        for group in optimizer.param_groups:
            group["lr"] = lr_at(step, tcfg, total)
        x, y = get_batch(train_data, scale.batch_size, T, data_gen, dev)
        with autocast():
            _, loss = step_model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), tcfg.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))  # synchronises, so the step time below is complete
        train_s += time.perf_counter() - t0
        train_cpu_s += time.process_time() - c0  # one thread: the step's own work, immune to machine load
        if step + 1 in eval_at:
            with autocast():
                val = evaluate(model, val_data, starts, T, dev)
                influence = model.slow_influence(probe)
            curve.append({"step": step + 1, "tokens": (step + 1) * scale.batch_size * T,
                          "train_loss": float(np.mean(losses[-50:])), "val_loss": val,
                          "gates": model.gate_magnitudes(), "slow_influence": influence, "train_s": train_s,
                          "train_cpu_s": train_cpu_s})
    last = curve[-1]
    model.eval()
    attention = slow_attention_stats(model, probe)
    record = {"slow_attention": attention, "arm": arm_name, "model_arm": arm, "window": window, "seed": seed,
              "tokens": total * scale.batch_size * T,
              "steps": total, "val_loss": last["val_loss"], "gates": last["gates"],
              "slow_influence": last["slow_influence"], "train_s": train_s, "train_cpu_s": train_cpu_s,
              "tokens_per_s": total * scale.batch_size * T / max(train_s, 1e-9), "num_params": model.num_params(),
              "flops_per_token": flops_per_token(arm, window, scale), "curve": curve}
    return (record, model) if return_model else record


def slow_attention(model, idx):
    """Layer 0's slow attention matrix A (B, H, K, K) over the pooled tokens, and z = A V projected by W_o.

    A = softmax(q kᵀ/√d_h) with block-causal masking, computed explicitly from the slow path's
    weights, so its rows summing to 1 (a row-stochastic matrix over earlier blocks, as a Markov
    transition matrix) can be checked against what the model computes (docs/theory.md §5).
    Returns (A, W_o z) with W_o z of shape (B, K, d).
    """
    import torch

    from neural.lm.pooling import block_mean_pool

    block = model.blocks[0]
    a = block.ln_1(model.embed(idx))  # layer 0 reads the embeddings
    P, H = model.config.pool, model.config.n_head
    s = block_mean_pool(a, P, idx.shape[1] // P)  # (B, K, d)
    batch, k, d = s.shape
    # (B, K, 3d) -> 3 × (B, H, K, d/H)
    q, kk, v = (x.view(batch, k, H, d // H).transpose(1, 2) for x in block.slow.qkv(s).split(d, dim=2))
    scores = q @ kk.transpose(-1, -2) / (d // H) ** 0.5
    scores = scores.masked_fill(~torch.ones(k, k, dtype=torch.bool).tril(), float("-inf"))
    A = torch.softmax(scores, dim=-1)
    z = (A @ v).transpose(1, 2).reshape(batch, k, d)  # (B, H, K, d/H) -> (B, K, d)
    return A, block.slow.proj(z)


def slow_attention_stats(model, idx) -> dict | None:
    """Row-sum error, mean weight on the own block and mean row entropy of layer 0's slow attention."""
    import torch

    if model.config.arm == "dense":
        return None
    with torch.no_grad():
        A, _ = slow_attention(model, idx)
    A = A.double()
    entropy = -(A * torch.log(A.clamp_min(1e-300))).sum(-1)
    return {"max_row_sum_error": float((A.sum(-1) - 1).abs().max()),
            "mean_weight_on_own_block": float(A.diagonal(dim1=-2, dim2=-1).mean()),
            "mean_row_entropy_nats": float(entropy[..., 1:].mean()),
            "uniform_row_entropy_nats": float(torch.log(torch.arange(2, A.shape[-1] + 1, dtype=torch.float64)).mean())}


# --------------------------------------------------------------------------- statistics


def paired(a, b, alternative: str = "two-sided") -> dict:
    """Paired comparison of a − b across seeds: mean, SE, 95 % t-interval, t-test and sign-flip permutation p.

    ``alternative`` is scipy's: "greater" tests mean(a − b) > 0.
    """
    import itertools

    import numpy as np
    from scipy import stats

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = len(d)
    out = {"n": n, "mean": float(d.mean()) if n else None, "diffs": d.tolist()}
    if n < 2:
        return {**out, "se": None, "ci95": None, "p_t": None, "p_perm": None}
    se = float(d.std(ddof=1) / math.sqrt(n))
    half = float(stats.t.ppf(0.975, n - 1) * se)
    p_t = float(stats.ttest_1samp(d, 0.0, alternative=alternative).pvalue) if se > 0 else None
    # exact sign-flip permutation test over all 2^n sign patterns (n is a handful of seeds)
    observed = d.mean()
    flips = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    means = (flips * np.abs(d)).mean(axis=1)
    if alternative == "greater":
        p_perm = float(np.mean(means >= observed - 1e-15))
    elif alternative == "less":
        p_perm = float(np.mean(means <= observed + 1e-15))
    else:
        p_perm = float(np.mean(np.abs(means) >= abs(observed) - 1e-15))
    return {**out, "se": se, "ci95": [float(observed - half), float(observed + half)], "p_t": p_t, "p_perm": p_perm}


def hypotheses(runs: list[dict], pool: int, floor: dict | None, preregistered: bool = True) -> dict:
    """H1–H3 of docs/findings.md on one source's runs (seeds present in every arm involved).

    H1 and H3 are pre-registered on the hard source only: elsewhere (``preregistered=False``)
    their statistics are reported with the verdict "descriptive".  H1's fraction closed and its
    half-gap test mean nothing when windowing costs no loss (mean gap ≤ 0): the verdict then
    says so instead of passing a test that any positive gain would pass.
    """
    import numpy as np

    def losses(arm):
        return {r["seed"]: r["val_loss"] for r in runs if r["arm"] == arm}

    def common(*arms):
        seeds = set.intersection(*(set(losses(a)) for a in arms))
        return sorted(seeds), [np.array([losses(a)[s] for s in sorted(seeds)]) for a in arms]

    W = f"W{pool}"
    out = {}
    seeds, (dw, cw, df) = common(f"dense-{W}", f"coupled-{W}", "dense-full")
    if len(seeds) >= 1:
        gap = dw - df
        closed = dw - cw
        out["H1"] = {"seeds": seeds, "gap_dense_window_minus_full": paired(dw, df),
                     "coupled_gain": paired(dw, cw, "greater"),
                     "fraction_closed": float(closed.mean() / gap.mean()) if gap.mean() != 0 else None,
                     # H1 proper: gain − 0.5·gap > 0, one-sided
                     "test_half_gap": paired(closed, 0.5 * gap, "greater")}
        if floor is not None:
            floor_gap = floor[f"bayes_{W}"] - floor["bayes_T"]
            out["H1"]["floor_gap_W_minus_T"] = floor_gap
            out["H1"]["fraction_of_floor_gap_closed"] = float(closed.mean() / floor_gap)
        h = out["H1"]["test_half_gap"]
        if gap.mean() <= 0:
            out["H1"]["fraction_closed"] = None
            out["H1"].pop("fraction_of_floor_gap_closed", None)
            out["H1"]["verdict"] = (f"not applicable: windowing costs no loss here (dense-W − dense-full = "
                                    f"{gap.mean():+.4f})")
        elif not preregistered:
            out["H1"]["verdict"] = "descriptive (H1 is pre-registered on the hard source)"
        else:
            out["H1"]["verdict"] = _verdict(h, supported=lambda: h["p_t"] is not None and h["p_t"] < 0.01)
    seeds, (cf, df2) = common("coupled-full", "dense-full")
    if seeds:
        h = paired(cf, df2)
        out["H2"] = {"seeds": seeds, "coupled_minus_dense_full": h,
                     "verdict": _verdict(h, supported=lambda: h["p_t"] is None or h["p_t"] >= 0.05,
                                         against=lambda: h["p_t"] is not None and h["p_t"] < 0.01)}
    seeds, (fw, cw2) = common(f"frozen-{W}", f"coupled-{W}")
    if seeds:
        h = paired(fw, cw2, "greater")
        out["H3"] = {"seeds": seeds, "frozen_minus_coupled": h,
                     "verdict": _verdict(h, supported=lambda: h["p_t"] is not None and h["p_t"] < 0.01)
                     if preregistered else "descriptive (H3 is pre-registered on the hard source)"}
    return out


def _verdict(test: dict, supported, against=None) -> str:
    if test["n"] < 3:
        return f"inconclusive (n = {test['n']} seeds; pre-registered ≥ 3)"
    if supported():
        return "supported"
    if against is not None and not against():
        return "inconclusive"
    return "not supported"


def scaling(runs: list[dict], pool: int) -> list[dict]:
    """H4: coupled gain (dense-W − coupled-W, W = P) per token budget, paired over seeds."""
    import numpy as np

    W = f"W{pool}"
    rows = []
    for tokens in sorted({r["budget"] for r in runs}):
        at = [r for r in runs if r["budget"] == tokens]
        dense = {r["seed"]: r["val_loss"] for r in at if r["arm"] == f"dense-{W}"}
        coupled = {r["seed"]: r["val_loss"] for r in at if r["arm"] == f"coupled-{W}"}
        seeds = sorted(set(dense) & set(coupled))
        if seeds:
            rows.append({"tokens": tokens, **paired(np.array([dense[s] for s in seeds]),
                                                    np.array([coupled[s] for s in seeds]), "greater")})
    return rows


def scaling_verdict(rows: list[dict], runs: list[dict], pool: int) -> str:
    """H4 as pre-registered (docs/findings.md §1): gain larger at the largest budget than at the smallest
    (one-sided paired p < 0.05) and non-decreasing across budgets within one SE."""
    import numpy as np

    rows = [r for r in rows if r["n"] >= 3]
    if len(rows) < 2:
        return "inconclusive (fewer than two budgets with ≥ 3 seeds)"
    first, last = rows[0], rows[-1]

    def gains(budget):
        at = [r for r in runs if r["budget"] == budget]
        dense = {r["seed"]: r["val_loss"] for r in at if r["arm"] == f"dense-W{pool}"}
        coupled = {r["seed"]: r["val_loss"] for r in at if r["arm"] == f"coupled-W{pool}"}
        return {s: dense[s] - coupled[s] for s in set(dense) & set(coupled)}

    g0, g1 = gains(first["tokens"]), gains(last["tokens"])
    seeds = sorted(set(g0) & set(g1))
    test = paired(np.array([g1[s] for s in seeds]), np.array([g0[s] for s in seeds]), "greater")
    monotone = all(b["mean"] >= a["mean"] - (b["se"] or 0.0) for a, b in zip(rows, rows[1:]))
    if test["p_t"] is not None and test["p_t"] < 0.05 and monotone:
        return "supported"
    if last["mean"] <= first["mean"]:
        return "not supported"
    return "inconclusive"


def delta_sweep(runs_by_delta: dict[float, list[dict]], delta_table: list[dict], pool: int, tokens: int) -> list[dict]:
    """Gap closed vs δ (hard family): per δ, paired over seeds, the gap dense-W − dense-full, the gain
    dense-W − coupled-W (W = P) and the fraction closed = mean gain / mean gap, beside the floor gaps."""
    import numpy as np

    floors = {row["delta"]: row for row in delta_table}
    rows = []
    for delta in sorted(runs_by_delta):
        at = [r for r in runs_by_delta[delta] if r["budget"] == tokens]
        loss = {arm: {r["seed"]: r["val_loss"] for r in at if r["arm"] == arm}
                for arm in ("dense-full", f"dense-W{pool}", f"coupled-W{pool}")}
        seeds = sorted(set.intersection(*(set(v) for v in loss.values())))
        if not seeds:
            continue
        df, dw, cw = (np.array([loss[a][s] for s in seeds]) for a in loss)
        gap, gain = paired(dw, df), paired(dw, cw, "greater")
        row = {"delta": delta, "seeds": seeds, "gap_dense_window_minus_full": gap, "coupled_gain": gain,
               "fraction_closed": float(gain["mean"] / gap["mean"]) if gap["mean"] else None,
               "fraction_closed_per_seed": ((dw - cw) / (dw - df)).tolist()}
        if delta in floors:
            row["floor_gap_W"] = floors[delta]["gap_W"]
            row["floor_gap_RF"] = floors[delta]["gap_RF"]
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- driver


def summarise(runs: list[dict], floor: dict | None, pool: int) -> dict:
    import numpy as np

    order = arm_names(pool)
    out = {}
    for arm in sorted({r["arm"] for r in runs}, key=lambda a: (order.index(a) if a in order else len(order), a)):
        mine = [r for r in runs if r["arm"] == arm]
        v = np.array([r["val_loss"] for r in mine])
        row = {"n": len(mine), "val_loss_mean": float(v.mean()),
               "val_loss_se": float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else None,
               "gates_final": np.mean([r["gates"] for r in mine], axis=0).tolist() if mine[0]["gates"] else [],
               "slow_influence_final": np.mean([r["slow_influence"] for r in mine], axis=0).tolist()
               if mine[0]["slow_influence"] else [],
               "train_s_mean": float(np.mean([r["train_s"] for r in mine])),
               "tokens_per_s_mean": float(np.mean([r["tokens_per_s"] for r in mine])),
               "train_flops_per_token": mine[0]["flops_per_token"]["train"], "num_params": mine[0]["num_params"]}
        if floor is not None:
            row["excess_T"] = row["val_loss_mean"] - floor["bayes_T"]
            W = mine[0]["window"]
            if W is not None and f"bayes_W{W}" in floor:
                row["excess_W"] = row["val_loss_mean"] - floor[f"bayes_W{W}"]
                row["excess_RF"] = row["val_loss_mean"] - floor[f"bayes_RF{W}"]
        out[arm] = row
    return out


def load_data(name: str, scale: Scale, delta: float | None, text: Path):
    """(train tensor, val tensor, source or None) for a source name."""
    import torch

    from neural.lm.data import load_text

    if name == "shakespeare":
        corpus = load_text(text)
        return corpus.train, corpus.val, None
    source = regime_source(name, scale, delta)
    train, val = sample_streams(source, scale)
    return torch.from_numpy(train.copy()), torch.from_numpy(val.copy()), source


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sources", default=",".join(SOURCES), help=f"comma list of {SOURCES}")
    parser.add_argument("--arms", default="all", help="comma list of arm names (default: all eight)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0 … N−1 per arm (default 5)")
    parser.add_argument("--tokens", type=int, default=3_000_000, help="tokens per run (default 3M)")
    parser.add_argument("--scaling-tokens", default="", help="comma list of extra budgets for the main pair (H4), "
                        "e.g. 500000,1000000,10000000")
    parser.add_argument("--scaling-seeds", type=int, default=3)
    parser.add_argument("--delta-sweep", default="", help="comma list of extra hard-source δ for the gap-closed-vs-δ "
                        "curve (arms from --arms, seeds from --seeds), e.g. 0.3,0.6,1.5")
    parser.add_argument("--scale", choices=sorted(SCALES), default="cpu")
    parser.add_argument("--delta", type=float, default=None, help="hard source δ (default: selected from the floors)")
    parser.add_argument("--text", default=str(DEFAULT_TEXT), help="tiny Shakespeare path")
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--compile", action="store_true")
    parser.add_argument("--out", default="out/when_coupling_matters")
    parser.add_argument("--floors-only", action="store_true", help="compute the floors and δ, train nothing")
    parser.add_argument("--report-only", action="store_true", help="tables and figures from the finished runs")
    parser.add_argument("--smoke", action="store_true", help="tiny model, 2 seeds, a few thousand tokens")
    args = parser.parse_args(argv)

    import torch

    from neural.lm.data import eval_starts
    from sp_ode.core.files import write_json
    from sp_ode.core.reporting import figures, progress

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    scale = SCALES["smoke" if args.smoke else args.scale]
    seeds = 2 if args.smoke and args.seeds == 5 else args.seeds
    tokens = 2048 if args.smoke and args.tokens == 3_000_000 else args.tokens
    sources = [s for s in args.sources.split(",") if s]
    if args.smoke and args.sources == ",".join(SOURCES):
        sources = ["hard", "easy"]
    bad = sorted(set(sources) - set(SOURCES))
    if bad:
        parser.error(f"--sources must be among {SOURCES}; got {bad}")
    arms = arm_names(scale.pool) if args.arms == "all" else args.arms.split(",")
    for a in arms:
        try:
            parse_arm(a)
        except ValueError as exc:
            parser.error(str(exc))
    try:
        sweep_deltas = [float(d) for d in args.delta_sweep.split(",") if d]
    except ValueError:
        parser.error(f"--delta-sweep must be a comma list of numbers; got {args.delta_sweep!r}")
    if any(d <= 0 for d in sweep_deltas):
        parser.error(f"--delta-sweep values must be > 0; got {sweep_deltas}")
    text = Path(args.text)
    if "shakespeare" in sources and not text.is_file():
        print(f"tiny Shakespeare not found at {text}: skipping that source", file=sys.stderr)
        sources.remove("shakespeare")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    starts = eval_starts(scale.n_val, scale.seq_len, scale.eval_windows)
    windows_ = sorted({w for a in arms if (w := parse_arm(a)[1]) is not None} | {scale.pool, 2 * scale.pool})

    # Floors (cached: they need no training and never change for a given scale)
    floor_path = out / "floors.json"
    cached = json.loads(floor_path.read_text()) if floor_path.is_file() else {}
    if cached.get("scale") != scale.__dict__:
        cached = {"scale": scale.__dict__}
    if "delta_table" not in cached:
        if args.delta is None:
            cached["delta"], cached["delta_table"] = select_delta(scale, starts)
        else:  # δ given (e.g. by bench/lm/coupling_gpu.py from the CPU floors): the grid is not recomputed
            cached["delta"], cached["delta_table"] = args.delta, []
    delta = cached["delta"] if args.delta is None else args.delta
    t0 = time.perf_counter()
    for name in ("hard", "easy"):
        key = f"{name}_delta{delta}" if name == "hard" else name
        if key not in cached:
            src = regime_source(name, scale, delta)
            _, val = sample_streams(src, scale)
            cached[key] = floors(src, val, starts, scale, windows_)
    write_json(floor_path, cached)
    print(f"floors ready ({time.perf_counter() - t0:.1f} s); hard source δ = {delta}", file=sys.stderr)

    all_runs: dict[str, list[dict]] = {}
    if args.report_only:
        for src in sources:
            folder = out / "runs" / src
            all_runs[src] = [_read_run(p) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []
    elif not args.floors_only:
        # (folder, source, arm, seed, budget, δ); the δ sweep's runs live in runs/hard_delta<δ>/
        plan = [(src, src, arm, seed, tokens, delta) for src in sources for seed in range(seeds) for arm in arms]
        main_pair = [f"dense-W{scale.pool}", f"coupled-W{scale.pool}"]
        for budget in [int(b) for b in args.scaling_tokens.split(",") if b]:
            plan += [("hard", "hard", arm, seed, budget, delta) for seed in range(args.scaling_seeds) for arm in main_pair]
        for d in sweep_deltas:
            plan += [(_delta_folder(d, delta), "hard", arm, seed, tokens, d) for seed in range(seeds) for arm in arms]
        data_cache = {}
        bar = progress(total=len(plan), desc="coupling")
        for folder, src, arm, seed, budget, d in plan:
            path = out / "runs" / folder / f"{arm}-seed{seed}-tok{budget}.json"
            if not path.is_file():
                if folder not in data_cache:
                    data_cache[folder] = load_data(src, scale, d if src == "hard" else None, text)
                train, val, _ = data_cache[folder]
                record = train_run(arm, seed, budget, scale, train, val, starts, args.device, args.compile)
                record.update({"source": src, "delta": d if src == "hard" else None, "scale": args.scale,
                               "smoke": args.smoke, "threads": torch.get_num_threads()})
                write_json(path, record)
                print(f"  {folder:<11} {arm:<13} seed {seed} tok {budget}: val {record['val_loss']:.4f} "
                      f"gates {[round(g, 4) for g in record['gates']]} {record['train_s']:.1f} s", file=sys.stderr)
            bar.update(1)
        bar.close()
        for src in sources:
            folder = out / "runs" / src
            all_runs[src] = [_read_run(p) for p in sorted(folder.glob("*.json"))] if folder.is_dir() else []

    # gap closed vs δ: every δ with a runs/hard_delta<δ>/ folder, plus the selected δ's main runs
    runs_by_delta = {float(f.name.removeprefix("hard_delta")): [_read_run(p) for p in sorted(f.glob("*.json"))]
                     for f in sorted((out / "runs").glob("hard_delta*")) if f.is_dir()}
    if runs_by_delta and "hard" in all_runs:
        runs_by_delta[delta] = all_runs["hard"]
    report = {"scale": args.scale if not args.smoke else "smoke", "smoke": args.smoke, "seeds": seeds,
              "tokens": tokens, "delta": delta, "gap_target": GAP_TARGET, "delta_table": cached["delta_table"],
              "floors": {"hard": cached[f"hard_delta{delta}"], "easy": cached["easy"]}, "sources": {}}
    for src, runs in all_runs.items():
        floor = report["floors"].get(src)
        main_runs = [r for r in runs if r["budget"] == tokens]
        report["sources"][src] = {"arms": summarise(main_runs, floor, scale.pool) if main_runs else {},
                                  "hypotheses": hypotheses(main_runs, scale.pool, floor, preregistered=src == "hard"),
                                  "scaling": scaling(runs, scale.pool) if src == "hard" else []}
        if src == "hard":
            report["sources"][src]["H4_verdict"] = scaling_verdict(report["sources"][src]["scaling"], runs, scale.pool)
    report["delta_sweep"] = delta_sweep(runs_by_delta, cached["delta_table"], scale.pool, tokens)
    write_json(out / "coupling.json", {**report, "runs": all_runs,
                                       "delta_sweep_runs": {str(d): r for d, r in runs_by_delta.items() if d != delta}})
    table = markdown(report, scale)
    (out / "coupling.md").write_text(table, encoding="utf-8")
    if all_runs:
        plot(figures(), all_runs, report, out, scale)
    print(table)
    print(f"wrote {out / 'coupling.json'}, {out / 'coupling.md'}")
    return 0


def _delta_folder(d: float, selected: float) -> str:
    """Run folder of hard-source δ = d: the main folder for the selected δ, else hard_delta<d>."""
    return "hard" if d == selected else f"hard_delta{d}"


def _read_run(path: Path) -> dict:
    """A run record; its token budget (as requested, before rounding up to whole steps) is in the file name."""
    record = json.loads(path.read_text())
    record["budget"] = int(path.stem.rsplit("-tok", 1)[1])
    return record


def _fmt(x, digits=4):
    return "–" if x is None else f"{x:.{digits}f}"


def markdown(report: dict, scale: Scale) -> str:
    """The floors, per-arm and hypothesis tables as Markdown (every number is in coupling.json)."""
    lines = [f"### Floors (nats/token, on the scored validation targets; T = {scale.seq_len}, P = {scale.pool}, "
             f"L = {scale.n_layer})", "",
             "| source | Bayes-∞ | Bayes-T | Bayes-W (W=P) | Bayes-RF (W=P) | Bayes-W (W=2P) | Bayes-RF (W=2P) |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    P = scale.pool
    for src, f in report["floors"].items():
        label = f"hard (δ = {report['delta']})" if src == "hard" else src
        lines.append(f"| {label} | {_fmt(f['bayes_inf'])} | {_fmt(f['bayes_T'])} | {_fmt(f[f'bayes_W{P}'])} | "
                     f"{_fmt(f[f'bayes_RF{P}'])} | {_fmt(f.get(f'bayes_W{2 * P}'))} | {_fmt(f.get(f'bayes_RF{2 * P}'))} |")
    lines += ["", "### δ selection (hard family; Bayes-W − Bayes-T at W = P must be ≥ "
              f"{report['gap_target']})", "", "| δ | Bayes-T | Bayes-W | gap W − T | gap RF − T |",
              "| --- | --- | --- | --- | --- |"]
    for row in report["delta_table"]:
        lines.append(f"| {row['delta']} | {_fmt(row['bayes_T'])} | {_fmt(row[f'bayes_W{P}'])} | "
                     f"{_fmt(row['gap_W'])} | {_fmt(row['gap_RF'])} |")
    for src, s in report["sources"].items():
        lines += ["", f"### {src}: final validation loss ({report['tokens']:,} tokens per run)", "",
                  "| arm | n | val loss ± SE | excess over Bayes-T | over Bayes-W | over Bayes-RF | gate \\|g\\| per layer | "
                  "slow influence per layer | train GFLOP/token·1e3 | tokens/s |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for arm, r in s["arms"].items():
            lines.append(
                f"| {arm} | {r['n']} | {_fmt(r['val_loss_mean'])} ± {_fmt(r['val_loss_se'])} | "
                f"{_fmt(r.get('excess_T'))} | {_fmt(r.get('excess_W'))} | {_fmt(r.get('excess_RF'))} | "
                f"{', '.join(f'{g:.4f}' for g in r['gates_final']) or '–'} | "
                f"{', '.join(f'{g:.4f}' for g in r['slow_influence_final']) or '–'} | "
                f"{r['train_flops_per_token'] / 1e6:.3f} | {r['tokens_per_s_mean']:.0f} |")
        for key, h in s["hypotheses"].items():
            test = {"H1": "test_half_gap", "H2": "coupled_minus_dense_full", "H3": "frozen_minus_coupled"}[key]
            t = h[test]
            extra = ""
            if key == "H1":
                extra = f"; fraction of (dense-W − dense-full) closed {_fmt(h['fraction_closed'], 3)}"
                if "fraction_of_floor_gap_closed" in h:
                    extra += f", of (Bayes-W − Bayes-T) {_fmt(h['fraction_of_floor_gap_closed'], 3)}"
            ci = t["ci95"]
            lines.append(f"- **{key}** ({src}): mean {_fmt(t['mean'])} ± {_fmt(t['se'])} (SE), 95 % CI "
                         f"{'–' if ci is None else f'[{ci[0]:.4f}, {ci[1]:.4f}]'}, p_t {_fmt(t['p_t'], 4)}, "
                         f"p_perm {_fmt(t['p_perm'], 4)}, n = {t['n']}{extra} → **{h['verdict']}**")
        if s["scaling"]:
            lines += ["", "H4 (hard source): coupled gain dense-W − coupled-W by token budget", "",
                      "| tokens | n | gain ± SE | p_t (one-sided) |", "| --- | --- | --- | --- |"]
            for row in s["scaling"]:
                lines.append(f"| {row['tokens']:,} | {row['n']} | {_fmt(row['mean'])} ± {_fmt(row['se'])} | "
                             f"{_fmt(row['p_t'])} |")
            lines.append(f"- **H4** (hard): **{s.get('H4_verdict', 'inconclusive')}**")
    if report.get("delta_sweep"):
        lines += ["", f"### Gap closed vs δ (hard family, W = P, {report['tokens']:,} tokens, paired over seeds)", "",
                  "| δ | n | floor gap W − T | floor gap RF − T | dense-W − dense-full ± SE | dense-W − coupled-W ± SE | "
                  "fraction closed (per seed) |", "| --- | --- | --- | --- | --- | --- | --- |"]
        for row in report["delta_sweep"]:
            gap, gain = row["gap_dense_window_minus_full"], row["coupled_gain"]
            per_seed = ", ".join(f"{f:.2f}" for f in row["fraction_closed_per_seed"])
            lines.append(f"| {row['delta']} | {gap['n']} | {_fmt(row.get('floor_gap_W'))} | "
                         f"{_fmt(row.get('floor_gap_RF'))} | {_fmt(gap['mean'])} ± {_fmt(gap['se'])} | "
                         f"{_fmt(gain['mean'])} ± {_fmt(gain['se'])} | {_fmt(row['fraction_closed'], 2)} ({per_seed}) |")
    return "\n".join(lines) + "\n"


def plot(plt, all_runs: dict, report: dict, out: Path, scale: Scale) -> None:
    """loss_vs_tokens.png (per arm, seed bands), slow_influence.png, floors_vs_delta.png."""
    import numpy as np

    for name, key, ylabel in (("loss_vs_tokens", "val_loss", "validation loss (nats/token)"),
                              ("slow_influence", "slow_influence", "slow influence ‖g⊙W_o z‖/‖h‖ (mean over layers)")):
        fig, axes = plt.subplots(1, len(all_runs), figsize=(5.5 * len(all_runs), 4), squeeze=False)
        for ax, (src, runs) in zip(axes[0], all_runs.items()):
            runs = [r for r in runs if r["budget"] == report["tokens"]]
            tops, lows = [], []
            for i, arm in enumerate(dict.fromkeys(r["arm"] for r in runs)):
                mine = [r for r in runs if r["arm"] == arm]
                if key == "slow_influence" and not mine[0]["slow_influence"]:
                    continue
                x = np.array([c["tokens"] for c in mine[0]["curve"]]) / 1e6
                ys = np.array([[np.mean(c[key]) if key == "slow_influence" else c[key] for c in r["curve"]]
                               for r in mine])
                ax.plot(x, ys.mean(axis=0), color=f"C{i}", label=arm)
                ax.fill_between(x, ys.min(axis=0), ys.max(axis=0), color=f"C{i}", alpha=0.2)
                if key == "val_loss":  # zoom past the first steep drop: the differences are small
                    late = ys[:, x >= 0.25 * x[-1]]
                    tops.append(float(late.max()))
                    lows.append(float(late.min()))
            floor = report["floors"].get(src)
            if key == "val_loss" and floor is not None:
                ax.axhline(floor["bayes_T"], color="k", linestyle="--", label="Bayes-T")
                ax.axhline(floor[f"bayes_W{scale.pool}"], color="k", linestyle=":", label="Bayes-W (W=P)")
                lows += [floor["bayes_T"]]
            if key == "val_loss" and tops:
                pad = 0.05 * (max(tops) - min(lows) + 1e-6)
                ax.set_ylim(min(lows) - pad, max(tops) + pad)
            ax.set_title(f"{src} (band: min–max over seeds)")
            ax.set_xlabel("training tokens (millions)")
            ax.set_ylabel(ylabel)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"{name}.png", dpi=100)
        plt.close(fig)
    _plot_gates(plt, all_runs, report, out)
    if report.get("delta_sweep"):
        _plot_delta_sweep(plt, report, out)
    rows = report["delta_table"]
    if not rows:
        return
    fig, ax = plt.subplots(1, 1, figsize=(5.5, 4))
    ax.plot([r["delta"] for r in rows], [r["gap_W"] for r in rows], marker="o", label="Bayes-W − Bayes-T (W = P)")
    ax.plot([r["delta"] for r in rows], [r["gap_RF"] for r in rows], marker="s", label="Bayes-RF − Bayes-T")
    ax.axhline(report["gap_target"], color="k", linestyle=":", label="pre-registered target")
    ax.set_xlabel("δ (regime spread)")
    ax.set_ylabel("floor gap (nats/token)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "floors_vs_delta.png", dpi=100)
    plt.close(fig)


def _plot_delta_sweep(plt, report: dict, out: Path) -> None:
    """gap_closed_vs_delta.png: left, the loss gaps (nats) with the floor gaps; right, the fraction closed."""
    rows = report["delta_sweep"]
    d = [r["delta"] for r in rows]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    for key, label, marker in (("gap_dense_window_minus_full", "dense-W − dense-full (what windowing loses)", "o"),
                               ("coupled_gain", "dense-W − coupled-W (what the coupling wins back)", "s")):
        ax.errorbar(d, [r[key]["mean"] for r in rows], yerr=[r[key]["se"] or 0.0 for r in rows], marker=marker,
                    capsize=3, label=label)
    if all("floor_gap_W" in r for r in rows):
        ax.plot(d, [r["floor_gap_W"] for r in rows], "k:", marker=".", label="floor Bayes-W − Bayes-T")
        ax.plot(d, [r["floor_gap_RF"] for r in rows], "k--", marker=".", label="floor Bayes-RF − Bayes-T")
    ax.axhline(0.0, color="0.7", linewidth=0.8)
    ax.set_xlabel("δ (regime spread)")
    ax.set_ylabel("nats/token (mean ± SE over seeds)")
    ax.set_title(f"hard source, W = P, {report['tokens'] / 1e6:g}M tokens")
    ax.legend(fontsize=7)
    for r in rows:
        ax2.scatter([r["delta"]] * len(r["fraction_closed_per_seed"]), r["fraction_closed_per_seed"], color="C1",
                    alpha=0.5, s=15)
    ax2.plot(d, [r["fraction_closed"] for r in rows], "C1-", marker="s", label="mean gain / mean gap")
    ax2.axhline(0.5, color="k", linestyle=":", label="H1 threshold (50 %)")
    ax2.set_xlabel("δ (regime spread)")
    ax2.set_ylabel("fraction of (dense-W − dense-full) closed")
    ax2.set_title("dots: single seeds")
    ax2.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "gap_closed_vs_delta.png", dpi=100)
    plt.close(fig)


def _plot_gates(plt, all_runs: dict, report: dict, out: Path) -> None:
    """gates.png: mean |g_ℓ| per layer over training (mean over seeds), gated arms of every source."""
    import numpy as np

    fig, axes = plt.subplots(1, len(all_runs), figsize=(5.5 * len(all_runs), 4), squeeze=False)
    for ax, (src, runs) in zip(axes[0], all_runs.items()):
        runs = [r for r in runs if r["budget"] == report["tokens"] and r["gates"]]
        for i, arm in enumerate(dict.fromkeys(r["arm"] for r in runs)):
            mine = [r for r in runs if r["arm"] == arm]
            x = np.array([c["tokens"] for c in mine[0]["curve"]]) / 1e6
            g = np.array([[c["gates"] for c in r["curve"]] for r in mine]).mean(axis=0)  # (evals, layers)
            for layer in range(g.shape[1]):
                ax.plot(x, g[:, layer], color=f"C{i}", linestyle=["-", "--", ":", "-."][layer % 4],
                        label=f"{arm} layer {layer}")
        ax.set_title(f"{src}: gate magnitude (mean over seeds)")
        ax.set_xlabel("training tokens (millions)")
        ax.set_ylabel("mean |g_ℓ|")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "gates.png", dpi=100)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
