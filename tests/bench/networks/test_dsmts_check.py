"""bench/networks/dsmts_check.py on a small suite written here (mirrors of DSMTS 001-01 with its published rows, and of
00028's time-triggered reset on the same model)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

# dsmts-001-01 (sbml-test-suite cases/stochastic/00001): X → 2X at 0.1 X, X → ∅ at 0.11 X, X(0) = 100;
# published analytic mean and SD at t = 0, 1, 2 (the suite's -mean.csv / -sd.csv rows).
MEAN = "time,X\n0,100.00000\n1,99.00498\n2,98.01987\n"
SD = "time,X\n0,0.00000\n1,4.54834\n2,6.38431\n"
SETTINGS = "start: 0\nduration: 2\nsteps: 2\nvariables: X\namount: X\noutput: X-mean, X-sd\n"


def _model(lam: float) -> str:
    law = lambda k: (f'<kineticLaw><math xmlns="http://www.w3.org/1998/Math/MathML"><apply><times/><ci>{k}</ci>'
                     '<ci>X</ci></apply></math></kineticLaw>')
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<sbml xmlns="http://www.sbml.org/sbml/level3/version2/core" level="3" version="2"><model id="bd">
<listOfCompartments><compartment id="Cell" size="1" constant="true"/></listOfCompartments>
<listOfSpecies><species id="X" compartment="Cell" initialAmount="100" hasOnlySubstanceUnits="true"
 boundaryCondition="false" constant="false"/></listOfSpecies>
<listOfParameters><parameter id="Lambda" value="{lam}" constant="true"/><parameter id="Mu" value="0.11" constant="true"/>
</listOfParameters><listOfReactions>
<reaction id="Birth" reversible="false"><listOfReactants><speciesReference species="X" stoichiometry="1" constant="true"/>
</listOfReactants><listOfProducts><speciesReference species="X" stoichiometry="2" constant="true"/></listOfProducts>
{law("Lambda")}</reaction>
<reaction id="Death" reversible="false"><listOfReactants><speciesReference species="X" stoichiometry="1" constant="true"/>
</listOfReactants>{law("Mu")}</reaction></listOfReactions></model></sbml>"""


def _suite(root: Path, lam: float) -> Path:
    case = root / "cases" / "stochastic" / "00001"
    case.mkdir(parents=True)
    (case / "00001-sbml-l3v2.xml").write_text(_model(lam))
    (case / "00001-settings.txt").write_text(SETTINGS)
    (case / "dsmts-001-01-mean.csv").write_text(MEAN)
    (case / "dsmts-001-01-sd.csv").write_text(SD)
    # DSMTS 00028's form on this model: a time-triggered reset X := 100 at t >= 1 (so t = 1 is post-reset,
    # and t = 2 is the t = 1 row of 00001); a delayed copy of it is refused by name
    t = '<csymbol encoding="text" definitionURL="http://www.sbml.org/sbml/symbols/time"> t </csymbol>'
    event = ('</listOfReactions><listOfEvents><event id="reset" useValuesFromTriggerTime="true">{delay}'
             '<trigger initialValue="false" persistent="true"><math xmlns="http://www.w3.org/1998/Math/MathML">'
             f'<apply><geq/>{t}<cn>1</cn></apply></math></trigger><listOfEventAssignments>'
             '<eventAssignment variable="X"><math xmlns="http://www.w3.org/1998/Math/MathML"><cn>100</cn></math>'
             '</eventAssignment></listOfEventAssignments></event></listOfEvents>')
    delay = '<delay><math xmlns="http://www.w3.org/1998/Math/MathML"><cn>0.5</cn></math></delay>'
    for name, body in (("00028", event.format(delay="")), ("00040", event.format(delay=delay))):
        case = root / "cases" / "stochastic" / name
        case.mkdir()
        (case / f"{name}-sbml-l3v2.xml").write_text(_model(lam).replace("</listOfReactions>", body))
        (case / f"{name}-settings.txt").write_text(SETTINGS)
        (case / f"{name}-mean.csv").write_text("time,X\n0,100.00000\n1,100.00000\n2,99.00498\n")
        (case / f"{name}-sd.csv").write_text("time,X\n0,0.00000\n1,0.00000\n2,4.54834\n")
    return root


def test_dsmts_check_passes_refuses_by_name_and_fails_a_wrong_model(tmp_path):
    out, table = tmp_path / "dsmts.json", tmp_path / "table.md"
    run = lambda root: subprocess.run([sys.executable, "-m", "bench.networks.dsmts_check", str(root), "--json",
                                       str(out), "--table", str(table)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    r = run(_suite(tmp_path / "good", 0.1))
    assert r.returncode == 0, r.stdout + r.stderr
    rec = json.loads(out.read_text())
    assert rec["counts"] == {"passed": 2, "refused": 1, "disputed": 0, "FAILED": 0}
    rows = {row["case"]: row for row in rec["cases"]}
    assert rows["00001"]["status"] == "passed" and rows["00001"]["worst"] <= 1.0
    assert rows["00028"]["status"] == "passed"                         # the reset, through the jump map
    assert rows["00040"]["status"] == "refused" and "delay of event 'reset'" in rows["00040"]["why"]
    assert "| stochastic/00001 | passed |" in table.read_text()
    # negative control: a birth rate 1e-4 off moves the mean outside the certified interval (00001 and 00028)
    r = run(_suite(tmp_path / "bad", 0.1001))
    assert r.returncode == 1 and json.loads(out.read_text())["counts"]["FAILED"] == 2
