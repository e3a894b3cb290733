"""The issue-14 experiment on one GPU: 100M tokens per run, a ≈ 10M-parameter model, bf16, compiled.

Runs ``examples/when_coupling_matters.py`` at its ``gpu`` scale (T = 256, P = 16, 6 layers,
6 heads, width 384: 10.9M parameters with the slow path; batch 256 windows, lr 1e-3 → 1e-4)
on the hard source (δ from the CPU floors, docs/findings.md §3) for the main comparison —
dense-full, dense-W16, coupled-W16, frozen-W16 — one seed, so that the four runs fit in about
10 minutes on one H200 (bf16 autocast, ``torch.compile``).  Before training it times a few
steps of the slowest arm and shrinks the token budget to fit ``--budget-s``, and says so in the
record (``tokens_planned`` vs ``tokens``).

    python -m bench.lm.coupling_gpu                     # on a machine with a GPU
    python -m bench.lm.coupling_gpu --smoke             # its CPU path at smoke size (the test suite)

Writes the example's ``coupling.json``/``coupling.md``/figures plus ``gpu_bench.json`` under ``--out``.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

from bench._common import ROOT

HARD_DELTA = 0.9
"""δ of the hard source, selected from the floors on the CPU (docs/findings.md §3)."""

GPU_ARMS = "dense-full,dense-W16,coupled-W16,frozen-W16"


def _example():
    spec = importlib.util.spec_from_file_location("when_coupling_matters", ROOT / "examples" / "when_coupling_matters.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # the example defines a dataclass, which looks its module up
    spec.loader.exec_module(module)
    return module


def _tokens_that_fit(example, budget_s: float, tokens: int, n_runs: int, device: str, compile_model: bool) -> tuple[int, float]:
    """Time the slowest arm (coupled, windowed) for a few steps and scale the budget to fit."""
    import torch

    from neural.lm.data import eval_starts

    scale = example.SCALES["gpu"]
    train = torch.randint(0, 8, (1 << 20,), dtype=torch.uint8)
    val = torch.randint(0, 8, (1 << 14,), dtype=torch.uint8)
    starts = eval_starts(len(val), scale.seq_len, 8)
    probe_tokens = 30 * scale.batch_size * scale.seq_len
    example.train_run(f"coupled-W{scale.pool}", 0, probe_tokens // 3, scale, train, val, starts, device,
                      compile_model)  # compile and warm up
    t0 = time.perf_counter()
    example.train_run(f"coupled-W{scale.pool}", 0, probe_tokens, scale, train, val, starts, device, compile_model)
    per_token = (time.perf_counter() - t0) / probe_tokens
    fit = int(0.85 * budget_s / n_runs / per_token)
    return min(tokens, fit), 1.0 / per_token


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=100_000_000, help="tokens per run (default 100M)")
    parser.add_argument("--budget-s", type=float, default=420.0,
                        help="training time for all runs (default 420 s: sampling, floors and compiles take the rest of 10 min)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--out", default="out/coupling_gpu")
    parser.add_argument("--smoke", action="store_true", help="CPU, smoke scale, no compile, no budget probe")
    args = parser.parse_args(argv)

    import torch

    example = _example()
    out = Path(args.out)
    if args.smoke:
        argv_ex = ["--smoke", "--threads", "1", "--sources", "hard", "--arms", "dense-full,dense-W4,coupled-W4,frozen-W4",
                   "--seeds", "1", "--out", str(out)]
        record = {"smoke": True, "device": "cpu", "tokens_planned": None, "tokens": 2048}
    else:
        if args.device == "cuda" and not torch.cuda.is_available():
            print("coupling_gpu: error: no CUDA device; use --smoke for the CPU path", file=sys.stderr)
            return 3
        torch.backends.cuda.matmul.allow_tf32 = True
        tokens, probe_rate = _tokens_that_fit(example, args.budget_s, args.tokens, 4, args.device, True)
        record = {"smoke": False, "device": torch.cuda.get_device_name(0) if args.device == "cuda" else args.device,
                  "tokens_planned": args.tokens, "tokens": tokens, "probe_tokens_per_s": probe_rate}
        argv_ex = ["--scale", "gpu", "--device", args.device, "--compile", "--sources", "hard", "--arms", GPU_ARMS,
                   "--seeds", "1", "--tokens", str(tokens), "--delta", str(HARD_DELTA), "--out", str(out)]
    t0 = time.perf_counter()
    rc = example.main(argv_ex)
    record["wall_s"] = time.perf_counter() - t0
    out.mkdir(parents=True, exist_ok=True)
    summary = json.loads((out / "coupling.json").read_text())
    record["arms"] = summary["sources"].get("hard", {}).get("arms", {})
    record["floors"] = summary["floors"]["hard"]
    (out / "gpu_bench.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    print(f"coupling_gpu: {record['tokens']:,} tokens per run on {record['device']}, {record['wall_s']:.0f} s; "
          f"wrote {out / 'gpu_bench.json'}")
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
