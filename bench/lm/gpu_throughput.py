"""bf16 training throughput of the dense and coupled fast–slow LM on one CUDA GPU (issue 5).

At T = 2048 (default) it builds ``dense`` and ``coupled`` models of the same width and
depth (same seed: same fast-path weights), and times full training steps — forward and
backward under ``torch.autocast(dtype=torch.bfloat16)``, fused AdamW — interleaved:
every round times each model for ``--steps`` steps between CUDA events, in a shuffled
order.  It prints tokens/s per arm, the ratio coupled/dense (median over rounds and
best-of) and peak memory.

    python -m bench.lm.gpu_throughput                      # GPT-2-small shape, T=2048, P ∈ {4,16,32}
    python -m bench.lm.gpu_throughput --compile            # the same under torch.compile
    python -m bench.lm.gpu_throughput --device cpu --smoke # exercises the code path on a CPU (tests)

Without CUDA (and without ``--device cpu``) it prints that it was skipped and exits 0:
there is nothing to measure.
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import torch

from bench._common import default_record
from neural import FastSlowLM, ModelConfig
from sp_ode.core.files import dumps, write_json


def cuda_timer(device: torch.device):
    """Seconds elapsed around a callable, measured with CUDA events on a GPU."""
    def time_it(fn) -> float:
        if device.type == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            return start.elapsed_time(end) / 1e3
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0
    return time_it


def run(args: argparse.Namespace) -> dict:
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    shape = dict(n_layer=args.layers, n_head=args.heads, d_model=args.width, dropout=0.0)
    T = args.T
    arms = {"dense": ModelConfig(seq_len=T, pool=args.P[0], arm="dense", **shape)}
    for P in args.P:
        arms[f"coupled_P{P}"] = ModelConfig(seq_len=T, pool=P, arm="coupled", **shape)
    idx = torch.randint(0, 256, (args.batch, T + 1), device=device)
    x, y = idx[:, :-1], idx[:, 1:]  # T inputs, T next-token targets
    steps, models, opts = {}, {}, {}
    for name, cfg in arms.items():
        model = FastSlowLM(cfg, seed=args.seed).to(device)
        models[name] = model
        opts[name] = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")
        fwd = torch.compile(model) if args.compile else model

        def step(fwd=fwd, opt=opts[name]):
            for _ in range(args.steps):
                opt.zero_grad(set_to_none=True)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                    _, loss = fwd(x, y)
                loss.backward()
                opt.step()
        steps[name] = step
    time_it = cuda_timer(device)
    for name in arms:  # warm-up: compilation, kernel selection, optimiser state
        for _ in range(args.warmup):
            time_it(steps[name])
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times: dict = {name: [] for name in arms}
    peak: dict = {}
    for _ in range(args.repeats):
        order = list(arms)
        rng.shuffle(order)
        for name in order:
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            times[name].append(time_it(steps[name]))
            if device.type == "cuda":
                peak[name] = max(peak.get(name, 0), torch.cuda.max_memory_allocated())
    tokens = args.batch * T * args.steps
    dense = times["dense"]
    rows = []
    for name in arms:
        ratios = [t / d for t, d in zip(times[name], dense)]
        rows.append({
            "arm": name, "pool": arms[name].pool if name != "dense" else None,
            "tokens_per_s_best": tokens / min(times[name]),
            "tokens_per_s_median": tokens / statistics.median(times[name]),
            "ratio_median": statistics.median(ratios), "ratio_best": min(times[name]) / min(dense),
            "peak_mem_gib": peak.get(name, 0) / 2**30, "params": models[name].num_params(),
        })
    return {
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "status": "ok", "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "dtype": "bfloat16 autocast", "compile": args.compile,
        "seq_len": T, "batch": args.batch, "steps_per_sample": args.steps, "repeats": args.repeats,
        "model": shape, "rows": rows,
    }


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (code-path check only)")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, seconds")
    p.add_argument("--T", type=int, default=2048)
    p.add_argument("--P", type=int, nargs="+", default=[4, 16, 32])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--heads", type=int, default=12)
    p.add_argument("--width", type=int, default=768)
    p.add_argument("--steps", type=int, default=5, help="training steps per timed sample")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--compile", action="store_true", help="wrap the models in torch.compile")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="write the JSON record here")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = p.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.smoke:
        args.T, args.P, args.batch, args.layers, args.heads, args.width = 64, [8], 2, 2, 2, 32
        args.steps, args.repeats, args.warmup = 1, 2, 1
    for P in args.P:
        if args.T % P:
            p.error(f"--T {args.T} is not divisible by --P {P}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        msg = ("skipped: no CUDA device visible to torch; this benchmark needs a GPU "
               "(use --device cpu for a code-path check).")
        print(msg, file=sys.stderr)
        record = {"status": "skipped", "reason": msg}
        if args.json:
            print(dumps(record))
        return 0
    record = run(args)
    if args.out:
        write_json(args.out, record)
    if args.json:
        print(dumps(record))
        return 0
    print(f"# bf16 training throughput, {record['device']}, torch {record['torch']}, T={record['seq_len']}, "
          f"batch {record['batch']}, compile={record['compile']}, {record['repeats']} interleaved rounds")
    print(f"{'arm':>12} {'tok/s best':>11} {'tok/s med':>10} {'ratio med':>9} {'ratio best':>10} {'peak GiB':>8}")
    for r in record["rows"]:
        print(f"{r['arm']:>12} {r['tokens_per_s_best']:>11.0f} {r['tokens_per_s_median']:>10.0f} "
              f"{r['ratio_median']:>9.3f} {r['ratio_best']:>10.3f} {r['peak_mem_gib']:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
