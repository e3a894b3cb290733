"""sp_ode.verification.network and `sp-ode verify` on reaction-network models: the identity by independent
routes (sparse solver vs subtraction-free elimination vs the attractor of the frozen fast flow), the
certificate slopes, negative controls."""
from __future__ import annotations

import json

import numpy as np
import pytest

from sp_ode.cli import main
from sp_ode.markov.attractor import attractor_distribution
from sp_ode.networks.models import get_network_model
from sp_ode.networks.network import ReactionNetwork
from sp_ode.systems.network import NetworkSystem
from sp_ode.verification.network import DEFAULT_EPS, verify_network
from sp_ode.verification.network_steps import network_identity

STATUS = ("ok", "FAIL", "skipped")
PNG = b"\x89PNG\r\n\x1a\n"


def _system(name, eps=1e-2, **kw):
    m = get_network_model(name, **kw)
    return m, NetworkSystem(m.network, m.space(), m.slow, eps=eps, name=name)


def _split():
    """A reducible network: X → Y or X → Z (both absorbing), an mRNA M besides: two closed classes."""
    net = ReactionNetwork("X -> Y, k*y; X -> Z, 1; 0 -> M, 5; M -> 0, 1", parameters={"k": 1.0}, slow=["y"],
                          name="split")
    return NetworkSystem(net, net.state_space({"M": 20}, initial={"X": 1}), {"y": "-y*E[Y]"}, eps=1e-2)


def _check_lines(lines):
    return [ln for ln in lines if ln.startswith(("(1)", "(2) identity:", "(3)", "verify "))]


def test_verdict_passes_on_the_telegraph_model(tmp_path):
    # telegraph, N = 40 (n = 82), t ∈ [0, 2], ε = 10^-1.5 … 10^-3.5 (6 values).  Measured (this machine):
    # identity max difference 1.3e-15 (tolerance ~3e-12), slope |y − y_reduced| 0.996 ± 0.001,
    # slope |y − y_corrected| 1.998 ± 0.000 (6 points each); ~3 s.
    m, s = _system("telegraph", N=40)
    v = verify_network(s, (0.0, 2.0), m.y0, out=tmp_path)
    assert v.passed, v.format()
    assert v.checks == {"paths": "ok", "identity": "ok", "rate_reduced": "ok", "rate_corrected": "ok"}
    ident = v.identity
    assert ident.independent and {meth.kind for meth in ident.methods} == {
        "iterative linear solve", "subtraction-free elimination", "attractor"}
    assert all(r["compared"] == ["elimination", "attractor"] for r in ident.points)
    assert len(ident.points) == 5 and ident.max_error <= 1e-12
    lo, hi = v.visited
    assert [r["y"][0] for r in ident.points] == pytest.approx(np.linspace(lo[0], hi[0], 5).tolist())
    assert abs(v.fits["reduced"].slope - 1) <= 0.05 and abs(v.fits["corrected"].slope - 2) <= 0.05
    assert v.fits["reduced"].n_points >= 4 and v.fits["corrected"].n_points >= 4
    assert np.all(v.errors["corrected"] < v.errors["reduced"])
    lines = v.summary()
    checks = _check_lines(lines)
    assert len(checks) == 5 and all(ln.rstrip().endswith(STATUS) for ln in checks)
    assert lines[-1] == "verify PASSED: paths ok, identity ok, rate_reduced ok, rate_corrected ok"
    for name in ("marginals.png", "convergence.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["kind"] == "network" and report["passed"] is True
    assert report["slope_corrected"] == pytest.approx(v.fits["corrected"].slope)
    # the figure's markers are the full solve at the largest ε, close to p_st (O(ε) apart)
    assert v.full_eps == pytest.approx(10 ** -1.5)
    assert np.abs(v.full_marginals["M"] - v.marginals["M"]).max() < 0.05
    # one save loop with sp_ode.verify's report (StepsView.write): an earlier report is refused, at the door
    # of verify_network before any work as well; overwrite=True writes the same files again
    with pytest.raises(FileExistsError, match="overwrite=True"):
        verify_network(s, (0.0, 2.0), m.y0, out=tmp_path)
    with pytest.raises(FileExistsError, match="overwrite=True"):
        v.write(tmp_path)
    assert sorted(v.write(tmp_path, overwrite=True)) == sorted(str(tmp_path / f) for f in
                                                               ("marginals.png", "convergence.png", "report.json"))


def test_identity_fails_on_a_deliberately_wrong_p():
    m, s = _system("telegraph", N=30)
    ys = np.array([[0.6], [0.9]])
    p_true = np.stack([s.stationary(y)[0] for y in ys])
    good = network_identity(s, ys, p=p_true)                      # the control: the right answer passes
    assert good.status == "ok" and good.max_error <= 1e-12
    wrong = p_true * (1 + 1e-6 * np.sin(np.arange(s.n)))           # a relative error of 1e-6
    wrong /= wrong.sum(axis=1, keepdims=True)
    bad = network_identity(s, ys, p=wrong)
    assert bad.status == "FAIL" and "differ by" in bad.message
    assert 1e-9 < bad.max_error < 1e-5 and all(r["status"] == "FAIL" for r in bad.points)


def test_attractor_that_has_not_settled_is_inconclusive_and_alone_a_fail():
    m, s = _system("telegraph", N=30)
    att = attractor_distribution(s.Q(m.y0), [0, s.n - 1], max_steps=64)
    assert not att.converged and att.steps == 64
    # with the elimination the identity is still decided; the attractor is reported as inconclusive
    r = network_identity(s, [m.y0], max_steps=64)
    point = r.points[0]
    assert r.status == "ok" and point["attractor_status"] == "inconclusive"
    assert point["compared"] == ["elimination"] and "did not settle" in r.message
    # the spectral gap predicts more steps than the budget allows: the attractor is not even run
    assert 4 * point["attractor_predicted_steps"] > 64 and point["attractor_steps"] == 0
    assert any("was not run" in note and "spectral gap" in note for note in point["notes"])
    # without the elimination, nothing independent is left: a FAIL that says why, never a pass
    r = network_identity(s, [m.y0], max_steps=64, elimination=False)
    assert r.status == "FAIL" and "no independent comparison" in r.message and "metastable" in r.message


def test_reducible_network_generator_is_reported_not_passed():
    s = _split()
    r = network_identity(s, [[1.0], [0.5]])
    assert r.status == "FAIL" and "reducible" in r.message and "2 closed" in r.message
    # the attractor alone also refuses it: the starts end in different closed classes
    att = attractor_distribution(s.Q(np.array([1.0])), [0, s.n - 1])
    assert not att.converged and att.spread > 0.01 and att.steps < 2**18
    v = verify_network(s, (0.0, 1.0), [1.0], smoke=True)
    assert not v.passed and v.checks["paths"] == "FAIL"
    assert v.checks["identity"] == "FAIL" and "reducible" in v.messages["identity"]
    assert all(ln.rstrip().endswith(STATUS) for ln in _check_lines(v.summary())[:-1])


@pytest.mark.slow
def test_cli_smoke_json_on_a_catalogue_network(tmp_path, capsys):
    rc = main(["verify", "--system", "network:cascade", "--smoke", "--json", "--out", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["passed"] is True and out["failure"] is None and out["kind"] == "network"
    methods = out["identity_methods"]
    assert len(methods) == 3 and {m["kind"] for m in methods} == {"iterative linear solve",
                                                                  "subtraction-free elimination", "attractor"}
    assert out["identity_independent"] is True and any("no linear solve" in m["note"] for m in methods)
    assert out["identity_max_error"] <= out["identity_tolerance"] <= 1e-9
    assert abs(out["slope_reduced"] - 1) <= 0.15 and abs(out["slope_corrected"] - 2) <= 0.15
    assert len(out["eps_values"]) == 5
    for name in ("marginals.png", "convergence.png"):
        path = tmp_path / name
        assert path.stat().st_size > 1000 and path.read_bytes()[:8] == PNG
    assert json.loads((tmp_path / "report.json").read_text())["checks"] == out["checks"]


@pytest.mark.slow
def test_cli_user_file_network_system_and_exit_codes(tmp_path, capsys):
    path = tmp_path / "net.py"
    path.write_text(
        "from sp_ode.networks.models import get_network_model\n"
        "from sp_ode.systems.network import NetworkSystem\n"
        "m = get_network_model('birth_death', N=30)\n"
        "SYSTEM = NetworkSystem(m.network, m.space(), m.slow, eps=0.01, name='mine')\n"
        "def factory():\n    return SYSTEM\n")
    # a bare NetworkSystem needs --y0 and --t-span (usage error, exit 2); --x0 is refused
    assert main(["verify", "--system", f"{path}:SYSTEM", "--out", str(tmp_path)]) == 2
    assert main(["verify", "--system", f"{path}:SYSTEM", "--t-span", "0", "2", "--y0", "0.5", "--x0", "1",
                 "--out", str(tmp_path)]) == 2
    capsys.readouterr()
    rc = main(["verify", "--system", f"{path}:factory", "--t-span", "0", "2", "--y0", "0.5", "--smoke",
               "--out", str(tmp_path)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "verify PASSED: paths ok, identity ok, rate_reduced ok, rate_corrected ok" in text
    assert all(ln.rstrip().endswith(STATUS) for ln in _check_lines(text.splitlines())[:-1])
    # y0 = 1 is an equilibrium of the catalogue birth–death model: nothing to measure — skipped, exit 1
    rc = main(["verify", "--system", "network:birth_death", "--smoke", "--out", str(tmp_path / "bd")])
    cap = capsys.readouterr()
    assert rc == 1 and "rate_reduced skipped" in cap.out and cap.err.startswith("sp-ode verify: a check was skipped")
    # --set goes to the network builder (integers stay integers); unknown names are usage errors
    assert main(["verify", "--system", "network:telegraph", "--set", "Q=3", "--out", str(tmp_path)]) == 2
    assert "not a parameter" in capsys.readouterr().err


def test_toggle_switch_identity_is_decided_by_elimination():
    # A small bistable toggle switch (N = 16): the sparse answer agrees entrywise with subtraction-free
    # elimination within the sum of their certified bounds; the spectral gap is reported at every y.
    m, s = _system("toggle_switch", N=16, a=14.0, K=4.0)
    r = network_identity(s, [[1.0], [0.9]])
    assert r.status == "ok" and r.independent
    for point in r.points:
        assert "elimination" in point["compared"] and point["elimination_kind"] == "componentwise"
        assert point["elimination_difference"] <= point["elimination_tolerance"] <= 1e-6
        assert 0 < point["spectral_gap"] < 0.1


@pytest.mark.slow
def test_failed_rates_name_the_spectral_gap_when_eps_is_not_small_against_it(monkeypatch):
    # The rate fits are made to fail (slope tolerance 1e-9); the message blames the model only when the
    # fast chain's spectral gap is not large against the ε tested (here planted: γ = 1e-3).
    import sp_ode.verification.network_steps as vn  # where the identity computes the gap

    m, s = _system("telegraph", N=10)
    v = verify_network(s, (0.0, 2.0), m.y0, smoke=True, slope_tol=1e-9)
    assert v.checks["rate_reduced"] == "FAIL" and "spectral gap is only" not in v.messages["rate_reduced"]
    monkeypatch.setattr(vn, "_gap", lambda Q: 1e-3)
    v = verify_network(s, (0.0, 2.0), m.y0, smoke=True, slope_tol=1e-9)
    assert v.checks["rate_reduced"] == "FAIL"
    assert "spectral gap is only γ ≈ 0.001" in v.messages["rate_reduced"] and "ε ≪ γ" in v.messages["rate_reduced"]


def test_marginal_figure_marks_the_uncertified_band_of_a_normwise_answer(tmp_path, monkeypatch):
    # A normwise stationary answer (level 2β) gets a grey band up to that level; a componentwise one none.
    from types import SimpleNamespace

    import matplotlib.axes

    from sp_ode.verification.plotting import plot_network_marginals

    calls = []
    original = matplotlib.axes.Axes.axhspan

    def spy(self, *a, **k):
        calls.append((a, k))
        return original(self, *a, **k)

    monkeypatch.setattr(matplotlib.axes.Axes, "axhspan", spy)
    v = SimpleNamespace(name="telegraph", passed=True, species=["M"], marginals={"M": np.full((2, 5), 0.2)},
                        full_marginals={}, marginal_times=[0.0, 1.0], marginal_ys=[[1.0], [0.9]],
                        marginal_uncertified=[None, 3e-9], full_eps=None)
    assert plot_network_marginals(v, tmp_path / "m.png").read_bytes().startswith(PNG)
    assert len(calls) == 1 and calls[0][0] == (0.0, 3e-9) and "not certified" in calls[0][1]["label"]
    calls.clear()
    v.marginal_uncertified = [None, None]
    plot_network_marginals(v, tmp_path / "c.png")
    assert not calls


def test_toggle_switch_at_n_2500_identity_by_elimination_and_a_slow_chain():
    # The bistable toggle switch at N = 50 (n = 2500), y where the verdict's paths go: the sparse answer
    # agrees with subtraction-free elimination entrywise (the identity needs no attractor), and the fast
    # chain's spectral gap is small (γ ≈ 0.006 measured): ε ≪ γ fails for the default ε, the model's reason.
    m, s = _system("toggle_switch", N=50)
    r = network_identity(s, [[0.93]])
    assert s.n == 2500 and r.status == "ok" and r.independent
    (point,) = r.points
    assert point["elimination_kind"] == "componentwise"
    assert point["elimination_difference"] <= point["elimination_tolerance"] <= 1e-4
    assert 1e-3 < point["spectral_gap"] < 1e-2
    assert min(DEFAULT_EPS) > 0.05 * point["spectral_gap"]          # the rule that names the model's reason


@pytest.mark.slow
def test_toggle_switch_at_n_2500_gets_a_verdict_for_a_reason_about_the_model():
    # The whole verdict at N = 50 (smoke: ε = 10^-1.5 … 10^-3): identity ok by elimination, the rates FAIL
    # and the message blames the model: the spectral gap γ and the ε to test instead.
    m, s = _system("toggle_switch", N=50)
    v = verify_network(s, (0.0, 2.0), m.y0, smoke=True, num=2)
    assert v.checks["identity"] == "ok" and not v.passed
    for key in ("rate_reduced", "rate_corrected"):
        assert v.checks[key] == "FAIL"
        assert "spectral gap is only γ ≈" in v.messages[key] and "ε ≪ γ" in v.messages[key]
        assert "test ε below" in v.messages[key]
