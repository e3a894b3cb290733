"""Training-step cost of windowed attention against T: the chunked kernel beside the masked one and full attention.

For each context T it builds, from one seed (so the same fast-path weights), the arms

* ``dense-full`` — full causal attention (``is_causal=True``): the baseline of every ratio;
* ``dense-W`` and ``coupled-W`` (P = 16 slow path) for each window W, each with the
  ``chunked`` kernel (cost ∝ T·W, :mod:`neural.lm.attention`) and the ``masked`` T × T kernel it
  replaces,

and times full training steps (forward, backward, AdamW) side by side: every round times each
arm once, in a shuffled order, and ratios are taken within a round (both saw the same machine
load).  With one torch thread the process CPU time of a step counts its own work and not the
time it waited for a core, so the CPU-time ratio is the verdict; wall time is recorded beside it.

Peak memory: each (T, arm) runs once more in a fresh subprocess (two training steps); its peak
resident set (VmHWM) minus the resident set before the first step (VmRSS) is the step's peak
memory.  It counts the scores, activations and gradients the step holds at its peak, plus
allocator slack.

FlexAttention: in torch 2.13 ``flex_attention`` has no backward pass on CPU, so it cannot train
here; its forward pass (compiled, block-sparse) is timed against the chunked and masked
forwards of the ``dense-W`` arm (inference, ``torch.no_grad``).

    python -m bench.lm.attention --out results/lm/attention_cpu_a.json   # T = 256 … 8192, W ∈ {16, 64}
    python -m bench.lm.attention --smoke                                  # seconds (the test suite)

Targets (a training step of coupled-W16, chunked, against dense-full): ≤ 0.5× at T = 2048 and
≤ 0.2× at T = 8192.  A record is never overwritten (``--out`` must be a new file).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

from bench._common import child_env, default_record, module_command
from neural import FastSlowLM, ModelConfig
from sp_ode.core.files import dumps, write_json

TARGETS = ({"seq_len": 2048, "arm": "coupled-W16", "kernel": "chunked", "max_ratio": 0.5},
           {"seq_len": 8192, "arm": "coupled-W16", "kernel": "chunked", "max_ratio": 0.2})
BASELINE = "dense-full"


def arm_list(windows: list[int]) -> list[tuple[str, str]]:
    """(arm name, kernel) pairs: dense-full, then per W dense-W and coupled-W with each kernel."""
    arms = [(BASELINE, "none")]
    for W in windows:
        for arm in (f"dense-W{W}", f"coupled-W{W}"):
            arms += [(arm, "chunked"), (arm, "masked")]
    return arms


def build(arm: str, kernel: str, T: int, shape: dict, seed: int) -> FastSlowLM:
    model_arm, _, fast = arm.partition("-")
    window = None if fast == "full" else int(fast[1:])
    cfg = ModelConfig(seq_len=T, arm=model_arm, window=window, **shape)
    return FastSlowLM(cfg, seed=seed, window_kernel="auto" if kernel == "none" else kernel)


def train_step(model: FastSlowLM, opt: torch.optim.Optimizer, idx: torch.Tensor) -> tuple[float, float]:
    """One optimiser step; returns (wall seconds, process CPU seconds)."""
    t0, c0 = time.perf_counter(), time.process_time()
    opt.zero_grad(set_to_none=True)
    _, loss = model(idx[:, :-1], idx[:, 1:])
    loss.backward()
    opt.step()
    return time.perf_counter() - t0, time.process_time() - c0


def _shape(args) -> dict:
    return dict(pool=args.P, n_layer=args.layers, n_head=args.heads, d_model=args.width, dropout=0.0)


def _batch(args, T: int) -> int:
    return max(1, args.tokens // T)


def time_training(args, T: int, arms: list[tuple[str, str]], rng: random.Random) -> dict:
    """Interleaved training-step times of every arm at context T: {(arm, kernel): (wall list, cpu list)}."""
    shape = _shape(args)
    idx = torch.randint(0, 256, (_batch(args, T), T + 1), generator=torch.Generator().manual_seed(args.seed))
    models = {key: build(*key, T, shape, args.seed) for key in arms}
    opts = {key: torch.optim.AdamW(m.parameters(), lr=1e-4) for key, m in models.items()}
    for key, m in models.items():  # warm-up: allocator, kernels, optimiser state
        for _ in range(args.warmup):
            train_step(m, opts[key], idx)
    times = {key: ([], []) for key in models}
    for _ in range(args.repeats):
        order = list(models)
        rng.shuffle(order)
        for key in order:
            w, c = train_step(models[key], opts[key], idx)
            times[key][0].append(w)
            times[key][1].append(c)
    return times


def time_inference(args, T: int, windows: list[int], rng: random.Random) -> list[dict]:
    """Forward-only (no_grad) time of dense-W with the chunked, masked and flex kernels, interleaved."""
    shape = _shape(args)
    idx = torch.randint(0, 256, (_batch(args, T), T), generator=torch.Generator().manual_seed(args.seed))
    rows = []
    for W in windows:
        kernels = ["chunked", "masked"] + (["flex"] if args.flex else [])
        models = {k: build(f"dense-W{W}", k, T, shape, args.seed).eval() for k in kernels}
        models["full"] = build(BASELINE, "none", T, shape, args.seed).eval()
        times: dict = {k: [] for k in models}
        status = {}
        with torch.no_grad():
            for k, m in list(models.items()):
                try:
                    t0 = time.perf_counter()
                    with warnings.catch_warnings():  # a silent fall-back to unfused flex would time a T × T kernel
                        warnings.filterwarnings("error", message="flex_attention called without torch.compile")
                        m(idx)  # the flex kernel compiles here
                    status[k] = {"ok": True, "first_call_s": time.perf_counter() - t0}
                except Exception as exc:  # record why a kernel cannot run here, never hide it
                    status[k] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:300]}
                    del models[k]
            for _ in range(args.repeats):
                order = list(models)
                rng.shuffle(order)
                for k in order:
                    c0 = time.process_time()
                    models[k](idx)
                    times[k].append(time.process_time() - c0)
        row = {"seq_len": T, "window": W, "batch": _batch(args, T), "status": status}
        for k, ts in times.items():
            if ts:
                row[f"{k}_cpu_ms"] = 1e3 * statistics.median(ts)
                row[f"{k}_tokens_per_cpu_s"] = _batch(args, T) * T / statistics.median(ts)
        for k in ("chunked", "masked", "flex"):
            if times.get(k) and times.get("full"):
                row[f"{k}_over_full"] = statistics.median(a / b for a, b in zip(times[k], times["full"]))
        rows.append(row)
    return rows


def peak_memory(args, T: int, arm: str, kernel: str) -> float | None:
    """Peak resident memory (MB) of two training steps of one arm, in a fresh process."""
    cmd = [*module_command(__spec__.name), "--_probe", str(T), arm, kernel,
           "--P", str(args.P), "--layers", str(args.layers), "--heads", str(args.heads), "--width", str(args.width),
           "--tokens", str(args.tokens), "--seed", str(args.seed), "--threads", str(args.threads)]
    env = child_env(OMP_NUM_THREADS=str(args.threads or os.cpu_count()))
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        print(f"memory probe T={T} {arm} {kernel} failed: {done.stderr[-500:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])["peak_mb"]


def _probe(args) -> int:
    """The subprocess of :func:`peak_memory`: prints {"peak_mb": …}."""
    T, arm, kernel = int(args._probe[0]), args._probe[1], args._probe[2]
    model = build(arm, kernel, T, _shape(args), args.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    idx = torch.randint(0, 256, (_batch(args, T), T + 1), generator=torch.Generator().manual_seed(args.seed))
    before = _rss_kib("VmRSS")
    for _ in range(2):
        train_step(model, opt, idx)
    print(json.dumps({"peak_mb": (_rss_kib("VmHWM") - before) / 1024}))
    return 0


def _rss_kib(field: str) -> int:
    """VmRSS (now) or VmHWM (peak) of this process in KiB, from /proc/self/status.

    Not ``ru_maxrss``: Linux carries the parent's peak into a child across fork and exec, so a
    probe started by a large benchmark process would read the parent's peak.  VmHWM belongs to
    the process's own address space, which exec makes new.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # elsewhere: the best available


def run(args) -> dict:
    rng = random.Random(args.seed)
    arms = arm_list(args.W)
    record = {
        "command": " ".join(["python", "-m", "bench.lm.attention", *sys.argv[1:]]),
        "torch": torch.__version__, "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
        "load_average_start": os.getloadavg(), "tokens_per_step": args.tokens, "repeats": args.repeats,
        "model": _shape(args), "baseline": BASELINE, "rows": [], "inference": [],
    }
    for T in args.T:
        t0 = time.perf_counter()
        times = time_training(args, T, arms, rng)
        base_wall, base_cpu = times[(BASELINE, "none")]
        batch = _batch(args, T)
        # smoke: one probe (a chunked arm) at the first T exercises the subprocess path in seconds
        probed = arms[1:2] if args.smoke else arms
        mem = {key: peak_memory(args, T, *key) for key in probed} if args.memory and (
            not args.smoke or T == args.T[0]) else {}
        for key in arms:
            wall, cpu = times[key]
            arm, kernel = key
            row = {"seq_len": T, "batch": batch, "arm": arm, "kernel": kernel,
                   "cpu_ms": 1e3 * statistics.median(cpu), "wall_ms": 1e3 * statistics.median(wall),
                   "tokens_per_cpu_s": batch * T / statistics.median(cpu),
                   "tokens_per_wall_s": batch * T / statistics.median(wall),
                   # within-round ratios against full attention (both arms under the same load)
                   "cpu_over_full": statistics.median(c / b for c, b in zip(cpu, base_cpu)),
                   "wall_over_full": statistics.median(w / b for w, b in zip(wall, base_wall)),
                   "cpu_over_full_best": min(cpu) / min(base_cpu),
                   "peak_mb": mem.get(key)}
            if kernel == "chunked":  # beside the masked kernel it replaces
                m_cpu = times[(arm, "masked")][1]
                row["cpu_over_masked"] = statistics.median(c / m for c, m in zip(cpu, m_cpu))
            record["rows"].append(row)
        if args.inference and (not args.smoke or T == args.T[-1]):
            record["inference"] += time_inference(args, T, args.W, rng)
        print(f"T={T} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    record["load_average_end"] = os.getloadavg()
    record["targets"] = []
    for target in TARGETS:
        hit = [r for r in record["rows"] if all(r[k] == target[k] for k in ("seq_len", "arm", "kernel"))]
        if hit:
            r = hit[0]
            record["targets"].append({**target, "cpu_over_full": r["cpu_over_full"],
                                      "wall_over_full": r["wall_over_full"],
                                      "met": r["cpu_over_full"] <= target["max_ratio"]})
    return record


def _mb(x) -> str:
    return "–" if x is None else f"{x:.0f}"


def print_tables(record: dict) -> None:
    print(f"# training step (forward, backward, AdamW), torch {record['torch']}, threads {record['threads']}, "
          f"{record['tokens_per_step']} tokens/step, {record['repeats']} interleaved rounds; CPU = process CPU time; "
          f"model {record['model']}")
    print(f"{'T':>5} {'arm':<12} {'kernel':<8} {'CPU ms':>9} {'tok/CPU-s':>10} {'× dense-full':>12} "
          f"{'(wall ×)':>9} {'× masked':>9} {'peak MB':>8} {'masked MB':>9} {'full MB':>8}")
    rows = record["rows"]
    for r in rows:
        if r["kernel"] == "masked":
            continue  # printed beside its chunked row
        masked = next((m for m in rows if m["seq_len"] == r["seq_len"] and m["arm"] == r["arm"]
                       and m["kernel"] == "masked"), None)
        full = next(m for m in rows if m["seq_len"] == r["seq_len"] and m["arm"] == BASELINE)
        print(f"{r['seq_len']:>5} {r['arm']:<12} {r['kernel']:<8} {r['cpu_ms']:>9.1f} {r['tokens_per_cpu_s']:>10.0f} "
              f"{r['cpu_over_full']:>12.3f} {r['wall_over_full']:>9.3f} "
              f"{'' if masked is None else format(r['cpu_over_masked'], '.3f'):>9} {_mb(r['peak_mb']):>8} "
              f"{'' if masked is None else _mb(masked['peak_mb']):>9} {_mb(full['peak_mb']):>8}")
        if masked is not None:
            print(f"{'':>5} {'':<12} {'masked':<8} {masked['cpu_ms']:>9.1f} {masked['tokens_per_cpu_s']:>10.0f} "
                  f"{masked['cpu_over_full']:>12.3f} {masked['wall_over_full']:>9.3f}")
    if record["inference"]:
        print("\n# forward only (no_grad), dense-W: CPU ms per call, and × dense-full's forward")
        print(f"{'T':>5} {'W':>3} {'full':>8} {'chunked':>14} {'masked':>14} {'flex':>22}")
        for r in record["inference"]:
            def cell(k):
                if f"{k}_cpu_ms" not in r:
                    return "not run"
                return f"{r[f'{k}_cpu_ms']:.1f} ({r[f'{k}_over_full']:.2f}×)"
            print(f"{r['seq_len']:>5} {r['window']:>3} {r.get('full_cpu_ms', float('nan')):>8.1f} {cell('chunked'):>14} "
                  f"{cell('masked'):>14} {cell('flex'):>22}")
    for t in record["targets"]:
        print(f"\ntarget: {t['arm']} ({t['kernel']}) training step ≤ {t['max_ratio']} × dense-full at T = {t['seq_len']}: "
              f"CPU-time ratio {t['cpu_over_full']:.3f} (wall {t['wall_over_full']:.3f}) -> "
              f"{'MET' if t['met'] else 'MISSED'}")


def plot_record(record: dict, path: Path) -> Path:
    """Training tokens per CPU-second and peak memory against T, every arm and kernel (log-log)."""
    from sp_ode.core.reporting import figures

    plt = figures()
    rows = record["rows"]
    fig, (ax, ax_m) = plt.subplots(1, 2, figsize=(12, 4.6))
    styles = {"none": "-", "chunked": "-", "masked": ":"}
    arms = list(dict.fromkeys((r["arm"], r["kernel"]) for r in rows))
    colors = {arm: f"C{i}" for i, arm in enumerate(dict.fromkeys(a for a, _ in arms))}
    for arm, kernel in arms:
        mine = sorted((r for r in rows if r["arm"] == arm and r["kernel"] == kernel), key=lambda r: r["seq_len"])
        T = [r["seq_len"] for r in mine]
        label = arm if kernel == "none" else f"{arm}, {kernel}"
        kw = dict(color=colors[arm], ls=styles[kernel], marker="o" if kernel != "masked" else "x", ms=4,
                  lw=2.2 if arm == BASELINE else 1.4, label=label)
        ax.plot(T, [r["tokens_per_cpu_s"] for r in mine], **kw)
        if all(r["peak_mb"] is not None for r in mine):
            ax_m.plot(T, [r["peak_mb"] for r in mine], **kw)
    for a in (ax, ax_m):
        a.set_xscale("log", base=2)
        a.set_xlabel("context T (tokens)")
        a.grid(alpha=0.3, which="both")
    ax.set_yscale("log")
    ax.set_ylabel("training tokens per CPU-second (one thread)")
    ax.set_title(f"training step, {record['tokens_per_step']} tokens/step, model {record['model']['n_layer']} layers × "
                 f"width {record['model']['d_model']}, P = {record['model']['pool']}", fontsize=9)
    ax_m.set_ylabel("peak memory of a training step (MB)")
    ax_m.set_title("solid: chunked kernel (or full attention), dotted: masked T × T kernel", fontsize=9)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="a tiny grid that runs in seconds")
    p.add_argument("--T", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096, 8192])
    p.add_argument("--W", type=int, nargs="+", default=[16, 64])
    p.add_argument("--P", type=int, default=16)
    p.add_argument("--tokens", type=int, default=8192, help="tokens per training step (B = tokens // T)")
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-memory", dest="memory", action="store_false", help="skip the peak-memory subprocesses")
    p.add_argument("--no-inference", dest="inference", action="store_false", help="skip the forward-only timings")
    p.add_argument("--no-flex", dest="flex", action="store_false", help="skip the FlexAttention forward")
    p.add_argument("--out", type=Path, default=None, help="write the JSON record here (a new file)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    p.add_argument("--figure", type=Path, default=None, help="write the tokens/s and memory figure here (PNG)")
    p.add_argument("--plot-only", type=Path, default=None, metavar="RECORD",
                   help="measure nothing: draw --figure from an existing record")
    p.add_argument("--_probe", nargs=3, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.smoke:
        args.T, args.W, args.P, args.tokens = [32], [4], 8, 128
        args.layers, args.heads, args.width, args.repeats, args.warmup = 1, 2, 16, 2, 1
    for T in args.T:
        if T % args.P:
            p.error(f"--T {T} is not divisible by --P {args.P}")
    if any(W < 1 for W in args.W):
        p.error(f"--W values must be positive; got {args.W}")
    if args.out is not None and args.out.exists():
        p.error(f"--out {args.out} exists; records are never overwritten, give a new path")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)  # the script's entry point, never the library
    if args._probe:
        return _probe(args)
    if args.plot_only is not None:
        if args.figure is None:
            print("bench.lm.attention: error: --plot-only needs --figure", file=sys.stderr)
            return 2
        record = json.loads(args.plot_only.read_text())
        print(f"wrote {plot_record(record, args.figure)}")
        return 0
    record = run(args)
    if args.figure:
        plot_record(record, args.figure)
    if args.out:
        write_json(args.out, record)
    if args.json:
        print(dumps(record))
    else:
        print_tables(record)
    if args.strict and not all(t["met"] for t in record["targets"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
