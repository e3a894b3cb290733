"""sp_ode.verify: one entry point for general, master-equation and network systems, one report type.

Expected verdicts: the toy ε x' = −x + y², y' = −x has slopes 1, 2, 1 (docs/theory.md §6, closed forms);
me3 is a master equation (T1: φ = p_st); the birth–death network is checked by the sparse solver against
the uniformised attractor (docs/theory.md §7.7).  The statuses are read off the report itself.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

import sp_ode
from sp_ode.verification.report import STATUSES


def _lines_end_in_a_status(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.startswith(("(1)", "(2) identity:", "(3) certificate:", "(3) rate"))]
    return bool(lines) and all(ln.rstrip().endswith(STATUSES) for ln in lines)


@pytest.mark.parametrize("name, kind", [("toy", "general"), ("me3", "master")])
def test_verify_a_catalogue_system(name, kind, tmp_path):
    report = sp_ode.verify(sp_ode.get_system(name), smoke=True)
    assert isinstance(report, sp_ode.VerifyReport) and report.kind == kind
    assert report.passed and report.failure is None
    assert report.checks == {"hyperbolicity": "ok", "identity": "ok", "certificate": "ok"}
    record = json.loads(report.to_json())
    assert record["checks"] == report.checks and abs(record["slope_corrected"] - 2.0) <= 0.15
    assert _lines_end_in_a_status(report.format()) and str(report) == report.format()
    # a system without a description: the header ends with its name, not with a dangling dash
    from sp_ode.verification.report import format_report
    assert format_report({**record, "description": ""}).splitlines()[0] == f"sp-ode verify: {record['system']}"
    files = report.write(tmp_path)
    assert {p.rsplit("/", 1)[-1] for p in files} == {"manifold.png", "convergence.png", "report.json"}
    with pytest.raises(FileExistsError, match="overwrite=True"):
        report.write(tmp_path)


def test_verify_a_bare_system_needs_its_initial_data():
    e = sp_ode.get_system("toy")
    with pytest.raises(ValueError, match="`t_span`, `x0`, `y0`"):
        sp_ode.verify(e.system)
    report = sp_ode.verify(e.system, t_span=e.t_span, x0=e.x0, y0=e.y0, smoke=True, phi=e.phi)
    assert report.passed and "closed form" in json.dumps(report.record["identity_methods"])


@pytest.mark.slow
def test_verify_a_network_model():
    model = sp_ode.get_network_model("birth_death", N=40)
    report = sp_ode.verify(model, y0=[0.5], smoke=True)
    assert report.kind == "network" and set(report.checks) == {"paths", "identity", "rate_reduced", "rate_corrected"}
    assert report.passed, report.failure
    assert all(v in STATUSES for v in report.checks.values())
    assert report.record["identity_independent"] and report.record["identity_max_error"] <= 1e-10
    with pytest.raises(ValueError, match="`x0` does not apply"):
        sp_ode.verify(model, x0=np.ones(3), smoke=True)


def test_a_failed_check_is_named_first():
    # FitzHugh–Nagumo with I = 0.5 reaches the fold w = −1/6: hyperbolicity FAIL, the rest skipped, said so
    report = sp_ode.verify(sp_ode.get_system("fitzhugh_nagumo", I=0.5), smoke=True)
    assert not report.passed and report.checks == {"hyperbolicity": "FAIL", "identity": "skipped",
                                                    "certificate": "skipped"}
    assert report.failure.startswith("normal hyperbolicity:") and report.format().splitlines()[0] == report.failure
    # the catalogue names y of FitzHugh–Nagumo `w`: the message says where w lost hyperbolicity
    assert " at w* = " in report.failure and "y*" not in report.failure
    assert report["slow_names"] == ["w"]                          # and report.json records the name


def _manifold_legend(monkeypatch, tmp_path, states):
    """The legend texts of verify's manifold figure for a 3-state master equation (labelled or not)."""
    from types import SimpleNamespace

    from matplotlib.figure import Figure

    from sp_ode.verification.plotting import plot_manifold

    seen = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: seen.extend(
        t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()))
    ys = np.linspace(0.0, 1.0, 5)[:, None]
    phi = np.full((5, 3), 1 / 3)
    system = SimpleNamespace(d=1, states=states, Q_of_y=None)
    case = SimpleNamespace(system=system, name="channel")
    region = SimpleNamespace(y_star=None, lower=[0.0], upper=[1.0], notes=[])
    ident = SimpleNamespace(ys=ys, phi=phi, reference=phi, error_per_point=np.zeros(5))
    report = {"passed": True, "identity_tolerance": 1e-10,
              "checks": {"identity": "ok", "hyperbolicity": "ok", "certificate": "ok"}}
    plot_manifold(case, region, ident, report, tmp_path / "manifold.png")
    return seen


def _manifold_axes(monkeypatch, tmp_path, slow_names, ident=True):
    """(x labels, y labels, x of the vertical lines) of verify's manifold figure for a d = 1 system whose
    region notes a fold at 0.5 outside the visited range."""
    from types import SimpleNamespace

    from matplotlib.figure import Figure

    from sp_ode.verification.plotting import plot_manifold

    seen = {}
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: seen.update(
        x=[ax.get_xlabel() for ax in fig.axes], y=[ax.get_ylabel() for ax in fig.axes],
        v=[float(ln.get_xdata()[0]) for ax in fig.axes for ln in ax.get_lines()
           if len(set(np.ravel(ln.get_xdata()))) == 1]))
    ys = np.linspace(0.0, 0.4, 5)[:, None]
    phi = ys ** 2
    system = SimpleNamespace(d=1, states=None, slow_names=slow_names)
    case = SimpleNamespace(system=system, name="toy")
    region = SimpleNamespace(y_star=None if ident else np.array([0.5]), lower=[0.0], upper=[0.4], kind="fold",
                             t_star=None, ys=ys, max_real=-np.ones(5),
                             notes=[f"fold at {slow_names[0] if slow_names else 'y'} = 0.5, outside the visited "
                                    "range [0, 0.4] plus margin: not reached (a note, not a failure)"])
    ident = SimpleNamespace(ys=ys, phi=phi, reference=phi, error_per_point=np.zeros(5)) if ident else None
    report = {"passed": True, "identity_tolerance": 1e-10,
              "checks": {"identity": "ok", "hyperbolicity": "ok", "certificate": "ok"}}
    plot_manifold(case, region, ident, report, tmp_path / "manifold.png")
    return seen


def test_the_manifold_figure_names_the_slow_variable(monkeypatch, tmp_path):
    """`slow_names=("w",)` labels the horizontal axis (the slow variable) `w`, and φ(w); without names: y.  The fold
    noted at w = 0.5 is drawn whichever name the note uses."""
    named = _manifold_axes(monkeypatch, tmp_path, ("w",))
    assert named["x"][-1].startswith("w (slow variable") and named["y"][0].startswith("x = φ(w)")
    assert 0.5 in named["v"]
    plain = _manifold_axes(monkeypatch, tmp_path, None)
    assert plain["x"][-1].startswith("$y$ (slow variable") and 0.5 in plain["v"]
    stopped = _manifold_axes(monkeypatch, tmp_path, ("w",), ident=False)   # verify stopped at the fold
    assert stopped["x"] == ["w (slow variable)"]


def test_the_manifold_figure_legend_names_the_states(monkeypatch, tmp_path):
    """`states=[...]` labels one legend entry per state (colour); without labels the entries are indices."""
    named = _manifold_legend(monkeypatch, tmp_path, ["closed", "open", "inactive"])
    assert {"closed", "open", "inactive"} <= set(named)
    plain = _manifold_legend(monkeypatch, tmp_path, None)
    assert {"state 0", "state 1", "state 2"} <= set(plain) and "closed" not in plain
