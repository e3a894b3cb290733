"""bf16 training-step cost of windowed attention against T on one CUDA GPU, T up to 32k.

For each T it builds (one seed: the same fast-path weights) dense-full (``is_causal=True``, the
flash kernel), and dense-W / coupled-W (P = 16) for each window W with the ``chunked`` kernel
(W queries against 2W keys, :mod:`neural.lm.attention`), the ``flex`` kernel (FlexAttention with a
block-sparse mask, compiled; on a GPU it has a backward pass) and, up to ``--masked-max-T``, the
``masked`` T × T kernel.  Training steps (forward and backward under
``torch.autocast(dtype=torch.bfloat16)``, fused AdamW) are timed with CUDA events, interleaved in
shuffled rounds; ratios against dense-full are taken within a round.  Peak memory is
``torch.cuda.max_memory_allocated`` over the arm's steps.  A kernel that fails (out of memory,
a compile error) is recorded with its error, never dropped silently.

    python -m bench.lm.gpu_attention --out results/lm/attention_gpu.json    # on a machine with a GPU
    python -m bench.lm.gpu_attention --device cpu --smoke                   # its code path on a CPU (tests)

Without CUDA (and without ``--device cpu``) it prints that it was skipped and exits 0.
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
from bench.lm.gpu_throughput import cuda_timer  # the same CUDA-event timer
from neural import FastSlowLM, ModelConfig
from sp_ode.core.files import dumps, write_json

BASELINE = "dense-full"


def arms_at(T: int, windows: list[int], kernels: list[str], masked_max_T: int) -> list[tuple[str, str]]:
    """(arm, kernel) pairs at context T; the T × T masked kernel only up to `masked_max_T`."""
    out = [(BASELINE, "none")]
    for W in windows:
        for arm in (f"dense-W{W}", f"coupled-W{W}"):
            out += [(arm, k) for k in kernels if k != "masked" or T <= masked_max_T]
    return out


def run_T(args, T: int, device: torch.device, rng: random.Random) -> list[dict]:
    shape = dict(pool=args.P, n_layer=args.layers, n_head=args.heads, d_model=args.width, dropout=0.0)
    batch = max(1, args.tokens // T)
    idx = torch.randint(0, 256, (batch, T + 1), device=device, generator=None)
    x, y = idx[:, :-1], idx[:, 1:]
    steps, status, params = {}, {}, {}
    time_it = cuda_timer(device)
    for arm, kernel in arms_at(T, args.W, args.kernels, args.masked_max_T):
        model_arm, _, fast = arm.partition("-")
        cfg = ModelConfig(seq_len=T, arm=model_arm, window=None if fast == "full" else int(fast[1:]), **shape)
        key = (arm, kernel)
        try:
            model = FastSlowLM(cfg, seed=args.seed, window_kernel="auto" if kernel == "none" else kernel).to(device)
            opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=device.type == "cuda")

            def step(model=model, opt=opt):
                opt.zero_grad(set_to_none=True)
                with torch.autocast(device_type=device.type, dtype=torch.bfloat16):
                    _, loss = model(x, y)
                loss.backward()
                opt.step()
            t0 = time.perf_counter()
            for _ in range(args.warmup):  # compiles the flex kernel, selects kernels, allocates optimiser state
                time_it(step)
            steps[key] = step
            params[key] = model.num_params()
            status[key] = {"ok": True, "warmup_s": time.perf_counter() - t0}
        except Exception as exc:  # out of memory, compile failure: recorded, not hidden
            status[key] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
            if device.type == "cuda":
                torch.cuda.empty_cache()
    times: dict = {k: [] for k in steps}
    peak: dict = {}
    for _ in range(args.repeats):
        order = list(steps)
        rng.shuffle(order)
        for key in order:
            if device.type == "cuda":
                torch.cuda.reset_peak_memory_stats()
            try:
                times[key].append(time_it(steps[key]))
            except Exception as exc:
                status[key] = {"ok": False, "error": f"{type(exc).__name__}: {exc}"[:400]}
                steps.pop(key)
                continue
            if device.type == "cuda":
                peak[key] = max(peak.get(key, 0), torch.cuda.max_memory_allocated())
    base = times.get((BASELINE, "none"), [])
    rows = []
    for key, st in status.items():
        arm, kernel = key
        row = {"seq_len": T, "batch": batch, "arm": arm, "kernel": kernel, **st}
        ts = times.get(key, [])
        if st["ok"] and ts:
            row.update({"ms": 1e3 * statistics.median(ts), "tokens_per_s": batch * T / statistics.median(ts),
                        "peak_gib": peak.get(key, 0) / 2**30 if device.type == "cuda" else None,
                        "params": params[key]})
            if base and len(base) == len(ts):
                row["over_full"] = statistics.median(a / b for a, b in zip(ts, base))
        rows.append(row)
    del steps
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return rows


def run(args) -> dict:
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
    record = {"command": " ".join(["python", "-m", "bench.lm.gpu_attention", *sys.argv[1:]]), "status": "ok",
              "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
              "torch": torch.__version__, "dtype": "bfloat16 autocast", "tokens_per_step": args.tokens,
              "repeats": args.repeats, "model": {"pool": args.P, "n_layer": args.layers, "n_head": args.heads,
                                                  "d_model": args.width}, "rows": []}
    for T in args.T:
        t0 = time.perf_counter()
        record["rows"] += run_T(args, T, device, rng)
        print(f"T={T} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)
    return record


def print_table(record: dict) -> None:
    print(f"# bf16 training step, {record['device']}, torch {record['torch']}, {record['tokens_per_step']} tokens/step, "
          f"{record['repeats']} interleaved rounds, model {record['model']}")
    print(f"{'T':>6} {'arm':<12} {'kernel':<8} {'ms':>9} {'tok/s':>11} {'× dense-full':>12} {'peak GiB':>9}")
    for r in record["rows"]:
        if not r["ok"]:
            print(f"{r['seq_len']:>6} {r['arm']:<12} {r['kernel']:<8} failed: {r['error'][:80]}")
            continue
        peak = "–" if r.get("peak_gib") is None else f"{r['peak_gib']:.2f}"
        print(f"{r['seq_len']:>6} {r['arm']:<12} {r['kernel']:<8} {r['ms']:>9.2f} {r['tokens_per_s']:>11.0f} "
              f"{r.get('over_full', float('nan')):>12.3f} {peak:>9}")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (code-path check only)")
    p.add_argument("--smoke", action="store_true", help="tiny sizes, seconds")
    p.add_argument("--T", type=int, nargs="+", default=[1024, 2048, 4096, 8192, 16384, 32768])
    p.add_argument("--W", type=int, nargs="+", default=[16, 64])
    p.add_argument("--P", type=int, default=16)
    p.add_argument("--kernels", nargs="+", default=["chunked", "flex", "masked"], choices=["chunked", "flex", "masked"])
    p.add_argument("--masked-max-T", type=int, default=8192, help="largest T for the T × T masked kernel")
    p.add_argument("--tokens", type=int, default=65536, help="tokens per training step (B = tokens // T)")
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=6)
    p.add_argument("--width", type=int, default=384)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="write the JSON record here (a new file)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = p.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.smoke:
        args.T, args.W, args.P, args.tokens = [32, 64], [4], 8, 128
        args.layers, args.heads, args.width, args.repeats, args.warmup = 1, 2, 16, 2, 1
        if args.device == "cpu":  # flex has no CPU backward in torch 2.13: its failure is recorded, not run
            args.masked_max_T = 64
    for T in args.T:
        if T % args.P:
            p.error(f"--T {T} is not divisible by --P {args.P}")
    if args.out is not None and args.out.exists():
        p.error(f"--out {args.out} exists; records are never overwritten, give a new path")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        msg = "skipped: no CUDA device visible to torch; this benchmark needs a GPU (use --device cpu for a code-path check)."
        print(msg, file=sys.stderr)
        if args.json:
            print(dumps({"status": "skipped", "reason": msg}))
        return 0
    record = run(args)
    if args.out:
        write_json(args.out, record)
    if args.json:
        print(dumps(record))
    else:
        print_table(record)
    return 0


if __name__ == "__main__":
    sys.exit(main())
