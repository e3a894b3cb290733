"""bench/networks/stiff_transient.py --smoke runs end to end and its record holds (the collocation bound contains
the product-Poisson law; expm_multiply, the uncertified baseline, is timed beside it)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_bench_stiff_transient_smoke(tmp_path):
    out = tmp_path / "bench.json"
    run = subprocess.run([sys.executable, "-m", "bench.networks.stiff_transient", "--smoke", "--json",
                          "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         env={"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert run.returncode == 0, run.stderr[-3000:]
    rec = json.loads(run.stdout)
    assert rec == json.loads(out.read_text())  # the file records every printed number
    (row,) = rec["isomer"]["rows"]
    coll = row["collocation"]
    assert coll["holds"] and max(coll["bound"]) <= row["integration_tol"]
    # the baseline is accurate too (no bound, but the law says so): both routes reach the same law
    assert max(row["expm_multiply"]["l1_error_vs_law_on_J"]) <= 1e-6
    assert rec["tyson"] is None
