"""Every result object prints a few lines (`Summarised`): its key numbers, never its arrays.

Each object is built cheaply: the network ones by tiny solves (a birth–death chain, Poisson(2) at
stationarity, closed form), the others directly from their fields, so that the key figure each repr
must show is known exactly.  The check: at most 15 lines, the key figure present, no array dumped,
and a notebook view that is HTML.
"""
from __future__ import annotations

import numpy as np
import pytest
import sympy

from sp_ode.core.summary import number

MAX_LINES = 15


def _birth_death():
    from sp_ode.networks.network import ReactionNetwork

    return ReactionNetwork("0 -> X, k; X -> 0, g", parameters={"k": 2.0, "g": 1.0})


def _stationary_cme():
    from sp_ode.networks import cme_stationary

    res = cme_stationary(_birth_death(), tol=1e-6)
    return res, [res.status, number(res.bound)]


def _transient():
    from sp_ode.networks import transient_distribution

    res = transient_distribution(_birth_death(), {"X": 0}, np.linspace(0.0, 2.0, 41), tol=1e-10)
    return res, ["uniformization", "41 in [0, 2]", number(float(np.max(res.leaked)))]


def _truncation():
    net = _birth_death()
    space = net.state_space({"X": 12})
    Q = net.generator(space).toarray()
    from sp_ode.markov.stationary import stationary_distribution

    report = net.truncation(space, stationary_distribution(Q), horizon=1.0)
    return report, [number(report.outflow_rate), number(report.leaked_mass), "by t = 1"]


def _sweep():
    from sp_ode.sweeps.sweep import PATH_FULL, STATUS_FAILED, STATUS_OK, STATUS_RESOLVED, SweepResult

    n = 300
    path = np.zeros(n, int)
    path[:100] = PATH_FULL
    status = np.full(n, STATUS_OK)
    status[0], status[1] = STATUS_FAILED, STATUS_RESOLVED
    estimate = np.full(n, 1e-8)
    estimate[5] = 3.25e-7
    validated = np.zeros(n, bool)
    validated[:4] = True
    nan = np.full(n, np.nan)
    r = SweepResult(params={"eps": np.logspace(-4, -2, n), "kappa": np.ones(n)}, ts=np.linspace(0, 1, 5),
                    y=np.zeros((n, 5, 1)), path=path, estimate=estimate, status=status, reason=np.zeros(n, int),
                    validated=validated, true_error=nan, ratio=nan, path_first=path, tol=1e-6, seconds=1.5)
    return r, ["300 points", "full 100, reduced0 200", "3.25e-07", "eps, kappa", "re-solved"]


def _verify_report():
    from sp_ode.verification.report import VerifyReport
    from sp_ode.verification.steps import Steps

    checks = {"hyperbolicity": "ok", "identity": "ok", "certificate": "ok"}
    record = {"slope_manifold": 1.0012, "slope_corrected": 2.0061, "slope_slow": 0.99987,
              "identity_max_error": 6.7e-16, "identity_grid": np.zeros((41, 1))}
    r = VerifyReport("toy", "general", "the toy", Steps.from_checks(checks, dict.fromkeys(checks, "fine")), record)
    return r, ["toy, verify PASSED", "2.006", "6.7e-16", "identity ok"]


def _network_verdict():
    from sp_ode.verification.network import NetworkVerdict
    from sp_ode.verification.rates import fit_rate
    from sp_ode.verification.steps import Steps

    eps = np.logspace(-1.5, -3.5, 5)
    fit = fit_rate(eps, 0.4 * eps, 1e-14, expected=1.0)          # exactly d = 0.4 ε: slope 1
    checks = {"paths": "ok", "identity": "ok", "rate_reduced": "ok", "rate_corrected": "ok"}
    v = NetworkVerdict("telegraph", 42, 1, 0.01, (0.0, 5.0), np.array([1.0]),
                       Steps.from_checks(checks, {k: f"{k}: fine" for k in checks}), fits={"reduced": fit, "corrected": fit}, eps_values=eps,
                       errors={"reduced": 0.4 * eps, "corrected": 0.4 * eps}, slow_names=("k_on",))
    return v, ["telegraph, verify passed", "n = 42", "(k_on)", f"{number(fit.slope, 3)} ± "]


def _bridge():
    from sp_ode.symbolic.stationary import numeric_bridge, symbolic_stationary

    y = sympy.Symbol("y", positive=True)
    Q = sympy.Matrix([[-1, 1], [y, -y]])                         # p = (y, 1)/(1 + y)
    r = numeric_bridge(symbolic_stationary(Q), y, np.linspace(0.5, 2.0, 7))
    return r, ["BridgeReport: passed", "points", " 7", number(r.max_rel_error)]


def _claim():
    from sp_ode.cli.claims import ClaimResult

    r = ClaimResult("T1.tree", "φ(y) = p_st(y) for every generator", "exact arithmetic", True,
                    "n = 2..6 checked\nsecond line not shown", 0.25)
    return r, ["ClaimResult T1.tree: passed", "n = 2..6 checked", "0.25"]


def _train():
    from neural.lm.train import TrainResult

    r = TrainResult(step=500, tokens=64000, total_steps=1000, losses=[2.5 - 1e-3 * i for i in range(500)],
                    val_loss=2.0312, status="diverged", message="non-finite loss at step 500")
    return r, ["TrainResult: diverged, step 500 of 1000", "list of 500", "2.031", "non-finite loss"]


def _fast_map():
    from neural.lm.fast_map import FastMapResult

    r = FastMapResult(layer=2, n_iter=64, converged=False, direction_converged=True, raw_step_first=0.5,
                      raw_step_last=0.01, state_norm_first=1.0, state_norm_last=3.0, drift_rate=0.03,
                      normalised_step_last=1e-9, normalised_step_decay=4.5, limit_error=2e-9, distance=0.0123,
                      distance_pooled=0.01, distance_no_feedback=0.5, feedback_norm=0.7)
    return r, ["layer 2, direction converged after 64", "0.0123", "2e-09"]


def _network_path():
    from sp_ode.networks.network import ReactionNetwork
    from sp_ode.systems.network import NetworkSystem

    net = ReactionNetwork("0 -> X, k*y; X -> 0, 1", parameters={"k": 2.0}, slow=["y"])
    s = NetworkSystem(net, net.state_space({"X": 15}), {"y": "1 - y"}, eps=0.1)
    path = s.simulate((0.0, 1.0), [1.0], t_eval=np.linspace(0.0, 1.0, 11))
    # y' = 1 − y from y = 1 stays at 1 (closed form)
    return path, ["NetworkPath: full, success", "11 in [0, 1]", "y at the end  1"]


BUILDERS = {"StationaryCME": _stationary_cme, "TransientDistribution": _transient, "TruncationReport": _truncation,
            "SweepResult": _sweep, "VerifyReport": _verify_report, "NetworkVerdict": _network_verdict,
            "BridgeReport": _bridge, "ClaimResult": _claim, "TrainResult": _train, "FastMapResult": _fast_map,
            "NetworkPath": _network_path}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_result_prints_a_few_lines_with_its_key_numbers(name):
    obj, figures = BUILDERS[name]()
    text = repr(obj)
    lines = text.splitlines()
    assert type(obj).__name__ == name and lines[0].startswith(name)
    assert len(lines) <= MAX_LINES, text
    missing = [f for f in figures if f not in text]
    assert not missing, f"{missing} not in\n{text}"
    assert "array([" not in text and "[[" not in text              # no array printed
    html = obj._repr_html_()
    assert html.startswith("<div>") and "<table>" in html


def test_the_long_repr_is_gone():
    """Before: the dataclass repr of a stationary CME printed p entry by entry (~157 lines for this chain)."""
    res, _ = _stationary_cme()
    assert len(repr(res).splitlines()) <= MAX_LINES and str(res.p[3])[:8] not in repr(res)


def test_sweep_and_network_verdict_keep_their_own_summary():
    """`SweepResult.summary()` stays the dict of numbers, `NetworkVerdict.summary()` the report's lines;
    only repr and the notebook view changed."""
    r, _ = _sweep()
    assert isinstance(r.summary(), dict) and r.summary()["points"] == 300 and r.summary()["failed"] == 1
    assert str(r) == r.report() != repr(r)
    v, _ = _network_verdict()
    assert isinstance(v.summary(), list) and v.summary()[0].startswith("sp-ode verify: telegraph")
