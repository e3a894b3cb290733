"""``sp-ode fit-phi`` on sparse families (issue 27): a network catalogue name and ``file.py:OBJECT``."""
from __future__ import annotations

import json

from sp_ode.cli import main


def test_fit_phi_network_catalogue_name(tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(["fit-phi", "--system", "network:birth_death", "--smoke", "--json", "--out", str(out)])
    record = json.loads(capsys.readouterr().out)
    assert rc == 0 and record["sparse"] and record["n"] == 61 and record["d"] == 1
    assert record["domain"] == [[0.5, 1.5]]           # the catalogue default: [y0/2, 3·y0/2], y0 = 1
    assert record["held_out"]["certificate_holds"]
    assert (out / "phi" / "phi.json").is_file() and (out / "training.png").stat().st_size > 0


def test_fit_phi_file_object_network_system_and_bad_loss(tmp_path, capsys):
    src = tmp_path / "net.py"
    src.write_text(
        "import sp_ode\n"
        "net = sp_ode.ReactionNetwork('0 => A, 4*y; A -> 0, 1; 0 => B, 1 + A; B -> 0, 1', slow=['y'])\n"
        "SYSTEM = sp_ode.NetworkSystem(net, net.state_space({'A': 5, 'B': 9}), {'y': '1 - y'}, eps=1e-3)\n")
    out = tmp_path / "o"
    rc = main(["fit-phi", "--system", f"{src}:SYSTEM", "--domain", "0.5", "1.5", "--head", "factored", "--smoke",
               "--json", "--out", str(out)])
    record = json.loads(capsys.readouterr().out)
    assert rc == 0 and record["n"] == 60 and record["config"]["head"] == "factored"
    assert main(["fit-phi", "--system", f"{src}:SYSTEM", "--domain", "0.5", "1.5", "--loss", "kl", "--smoke",
                 "--out", str(tmp_path / "o2")]) == 2
    assert "'residual'" in capsys.readouterr().err
    assert main(["fit-phi", "--system", "network:nonexistent", "--smoke", "--out", str(tmp_path / "o3")]) == 2
    assert "no network model 'nonexistent'" in capsys.readouterr().err
