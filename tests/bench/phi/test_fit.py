"""bench/phi/fit.py --smoke runs, prints its table and writes its JSON (so the benchmark cannot rot)."""
from __future__ import annotations

import json

from bench.phi import fit


def test_bench_phi_smoke(tmp_path, capsys):
    # in this process: the script sets no global state (torch's thread count is set and restored by fit_phi)
    assert fit.main(["--smoke", "--out", str(tmp_path)]) == 0
    stdout = capsys.readouterr().out
    assert "target 1" in stdout and "baselines" in stdout
    record = json.loads((tmp_path / "phi_fit.json").read_text())
    assert record["summary"]["certificate_holds_everywhere"] is True
    systems = {r["system"] for r in record["runs"]}
    assert {"cycle3", "cycle3_2d", "ring10"} <= systems
    assert (tmp_path / "cycle3_2d_kl" / "error_certificate.png").is_file()
