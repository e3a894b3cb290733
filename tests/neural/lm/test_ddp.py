"""DDP on 2 CPU processes (gloo, 127.0.0.1): averaged gradients equal one process on the full batch.

The workers are launched with torchrun (``python -m torch.distributed.run``) in a
subprocess, as a user would; the same launch then runs ``python -m neural.commands.train``'s
entry point (the ``sp-ode train`` command line) data-parallel, and only rank 0 writes.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import torch

from neural.lm.config import ModelConfig
from neural.lm.model import FastSlowLM
from neural.lm.train import _forward_backward

ROOT = Path(__file__).resolve().parents[3]
MODEL = ModelConfig(seq_len=16, pool=4, n_layer=1, n_head=2, d_model=16, arm="coupled")

WORKER = textwrap.dedent("""
    import sys
    from pathlib import Path
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    from neural.lm.config import ModelConfig
    from neural.lm.model import FastSlowLM
    from neural.commands.train import main
    from neural.lm.train import _distributed, _forward_backward

    out = Path(sys.argv[1])
    rank, world, _ = _distributed()          # joins torchrun's gloo group
    model = FastSlowLM(ModelConfig(**{cfg}), seed=0)
    model.set_gates(0.5)                      # open gates: slow-path gradients are non-zero too
    ddp = DDP(model)
    g = torch.Generator().manual_seed(123)
    x = torch.randint(0, 256, (8, 16), generator=g)
    y = torch.randint(0, 256, (8, 16), generator=g)
    _forward_backward(ddp, x.chunk(world)[rank], y.chunk(world)[rank], 1, torch.device("cpu"), sync=True)
    grads = {{n: p.grad for n, p in model.named_parameters()}}
    torch.save(grads, out / f"grads{{rank}}.pt")
    # The trainer's own entry point, data-parallel; both ranks get the same --out.
    code = main(["--smoke", "--steps", "2", "--batch-size", "2", "--set", "seq_len=16", "--set", "pool=4",
                 "--set", "d_model=16", "--set", "n_layer=1", "--out", str(out / "run"), "--json"])
    dist.destroy_process_group()
    sys.exit(code)
""")


def test_ddp_gradients_equal_single_process_full_batch(tmp_path):
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER.format(cfg=repr({k: v for k, v in MODEL.to_dict().items()})))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOO_SOCKET_IFNAME": "lo", "PYTHONPATH": str(ROOT)}
    # --standalone: torchrun's own rendezvous on a port it binds itself (a port picked here and released
    # could be taken by another test's server before the workers bind it)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(worker), str(tmp_path)]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]

    # Single process, full batch of 8: the reference gradient.
    model = FastSlowLM(MODEL, seed=0)
    model.set_gates(0.5)
    g = torch.Generator().manual_seed(123)
    x = torch.randint(0, 256, (8, 16), generator=g)
    y = torch.randint(0, 256, (8, 16), generator=g)
    _forward_backward(model, x, y, 1, torch.device("cpu"), sync=True)
    for rank in (0, 1):
        grads = torch.load(tmp_path / f"grads{rank}.pt", weights_only=True)
        for name, p in model.named_parameters():
            # DDP averages the two half-batch gradients = the full-batch mean; float32 order only.
            torch.testing.assert_close(grads[name], p.grad, rtol=1e-5, atol=1e-6, msg=name)
    gate = dict(model.named_parameters())["blocks.0.slow.gate"]
    assert gate.grad.abs().max() > 0  # the comparison includes a non-trivial slow-path gradient

    # The DDP training run: rank 0 alone wrote the run directory, tokens counted over both ranks.
    run = tmp_path / "run"
    config = json.loads((run / "config.json").read_text())
    assert config["world_size"] == 2
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["tokens"] == 2 * 2 * 16 * 2
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    assert len(state["rng"]) == 2 and not torch.equal(state["rng"][0]["data"], state["rng"][1]["data"])
    assert proc.stdout.count('"arm"') == 1  # one JSON summary: rank 0 reports, rank 1 stays silent
