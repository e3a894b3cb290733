"""Cold command-line runs: `sp-ode verify` on FitzHugh–Nagumo and `sp-ode demo`, each in a fresh process.

"Cold" means no persistent compilation cache (``SP_ODE_NO_COMPILE_CACHE=1``) and a new
process, so every program is traced and compiled: the time a new user waits for a verdict.
Each command is run ``--repeat`` times, interleaved; the record holds every wall time, the
exit status and the verdict line the command printed.

    python -m bench.systems.cold_commands --repeat 3 --out results/systems/cold_commands.json
    python -m bench.systems.cold_commands --smoke        # demo --smoke once; run by the tests
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._common import default_record

SP_ODE = Path(sys.executable).with_name("sp-ode")
COMMANDS = {
    # the FitzHugh–Nagumo model of the catalogue: ε v' = v − v³/3 − w, w' = 0.08(v + 0.7 − 0.8w), ε = 1e-3,
    # v(0) = −2, w(0) = 0, t ∈ [0, 20]; the certificate at P = 4 … 4096
    "verify_fhn": ["verify", "--system", "fitzhugh_nagumo"],
    "demo": ["demo"],
}
TARGETS = {"verify_fhn": 15.0, "demo": 20.0}


def run_once(args: list[str], folder: Path) -> dict:
    env = {**os.environ, "SP_ODE_NO_COMPILE_CACHE": "1", "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    out = folder / f"out{time.monotonic_ns()}"
    extra = ["--out", str(out)]
    start = time.perf_counter()
    proc = subprocess.run([str(SP_ODE), *args, *extra], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=900)
    wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if "PASSED" in ln or "FAILED" in ln]
    return {"wall": wall, "returncode": proc.returncode, "verdict": lines[-1] if lines else proc.stderr[-300:]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=None, help="JSON record (never overwritten)")
    parser.add_argument("--smoke", action="store_true", help="`sp-ode demo --smoke` once")
    args = parser.parse_args(argv)
    args.out = default_record(args.out, __spec__.name, args.smoke)   # results/<topic>/<name>.json by default
    if args.out and Path(args.out).exists():
        raise SystemExit(f"bench.systems.cold_commands: error: {args.out} exists; choose another --out")
    commands = {"demo_smoke": ["demo", "--smoke"]} if args.smoke else COMMANDS
    repeat = 1 if args.smoke else args.repeat
    folder = Path(tempfile.mkdtemp(prefix="sp_ode_cold_"))
    runs = {name: [] for name in commands}
    for _ in range(repeat):
        for name, cmd in commands.items():
            runs[name].append(run_once(cmd, folder))
            r = runs[name][-1]
            print(f"{name}: {r['wall']:.2f} s, exit {r['returncode']}: {r['verdict']}", flush=True)
    summary = {}
    for name, rs in runs.items():
        med = statistics.median(r["wall"] for r in rs)
        passed = all(r["returncode"] == 0 for r in rs)
        target = TARGETS.get(name)
        summary[name] = {"median_s": med, "all_passed": passed, "target_s": target,
                         "met": None if target is None else bool(passed and med <= target)}
        print(f"{name}: median {med:.2f} s over {len(rs)} cold runs, "
              f"{'all PASSED' if passed else 'NOT all passed'}"
              + ("" if target is None else f"; target ≤ {target:g} s: {'met' if summary[name]['met'] else 'missed'}"))
    record = {"runs": runs, "summary": summary, "repeat": repeat, "threads": 1, "cpus": os.cpu_count(),
              "load": os.getloadavg()[0], "machine": platform.platform(),
              "command": " ".join(["python", "-m", "bench.systems.cold_commands", *(argv if argv is not None else sys.argv[1:])])}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(record, indent=1))
        print(f"wrote {args.out}")
    return 0 if all(s["all_passed"] for s in summary.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
