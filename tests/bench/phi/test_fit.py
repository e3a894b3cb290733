"""bench/phi/fit.py --smoke runs, prints its table and writes its JSON (so the benchmark cannot rot)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_bench_phi_smoke(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "bench.phi.fit", "--smoke", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "target 1" in proc.stdout and "baselines" in proc.stdout
    record = json.loads((tmp_path / "phi_fit.json").read_text())
    assert record["summary"]["certificate_holds_everywhere"] is True
    systems = {r["system"] for r in record["runs"]}
    assert {"cycle3", "cycle3_2d", "ring10"} <= systems
    assert (tmp_path / "cycle3_2d_kl" / "error_certificate.png").is_file()
