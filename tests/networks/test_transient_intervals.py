"""Certified moment intervals of `transient_distribution` against closed forms: no miss, and tight.

Provenance of every expected number:
- immigration–death 0 → A (a), A → 0 (m A) from A(0) = 0: A(t) ~ Poisson((a/m)(1 − e^{−mt})) exactly;
- linear birth–death X → 2X (λX), X → 0 (μX) from X(0) = x0: E X(t) = x0 e^{(λ−μ)t},
  Var X(t) = x0 (λ+μ)/(λ−μ) e^{(λ−μ)t}(e^{(λ−μ)t} − 1) (Kendall 1948);
- the M/P network 0 → M (4), M → M + P (6 M), M → 0 (M), P → 0 (0.5 P) from (0, 0): its moment
  equations integrated in closed form (variation of constants; `sympy.integrate` gave the same) —
  E M = Var M = 4(1 − e^{−t}), E P = 48 − 96e^{−t/2} + 48e^{−t}, Cov(M, P) = 16 − 48e^{−t} + 32e^{−3t/2},
  Var P = 240 − 96e^{−t/2} + 624e^{−t} − 576t e^{−t} − 768e^{−3t/2}; the test checks with sympy that they
  solve the equations, and evaluates them to 30 digits;
- the toggle switch (Hill repression, bounded propensities): a projection whose leak is below 1e-25,
  whose moments are then exact to that level (an independent, much larger FSP solve).
"""
from __future__ import annotations

import numpy as np
import pytest

from sp_ode.networks.cme.transient import MomentIntervals, fsp_transient, transient_distribution
from sp_ode.networks.network import ReactionNetwork, TruncationError


def _inside(iv, mean, sd, slack=0.0):
    (mlo, mhi), (slo, shi) = iv
    return ((mlo - slack <= mean) & (mean <= mhi + slack)), ((slo - slack <= sd) & (sd <= shi + slack))


def test_immigration_death_a50_interval_contains_the_poisson_mean_at_t2():
    """The case of the defect report: tol = 1e-2, t = 2 — the old interval [43.19648, 43.22569] missed 43.23324."""
    net = ReactionNetwork("0 -> A, 50; A -> 0, 1")
    ts = np.array([1.0, 1.5, 2.0])
    lam = 50 * (1 - np.exp(-ts))
    r = transient_distribution(net, {"A": 0}, ts, tol=1e-2)
    assert r.leaked[-1] > 1e-4                       # mass did leave: the escaped moments matter here
    for source in ("auto", "projection", "moments"):
        iv = r.intervals("A", source=source)
        assert isinstance(iv, MomentIntervals) and iv.status == "certified"
        ok_m, ok_s = _inside(iv, lam, np.sqrt(lam))
        assert ok_m.all() and ok_s.all(), (source, iv)
    # the exact moments are tight (~1e-12), the projection's interval has the width of its leak × the largest
    # exit state (a worst case, not zero)
    iv = r.intervals("A")
    assert iv.source == "moment equations ∩ projection" and np.all(iv.mean[1] - iv.mean[0] <= 1e-9 * lam)
    proj = r.intervals("A", source="projection")
    assert proj.mean[1][-1] - proj.mean[0][-1] >= r.leaked[-1] * 50
    # negative control: the old bound that takes the escaped moments as zero excludes the truth at t = 2
    zero = r.intervals("A", source="projection", escaped="zero")
    assert zero.mean[1][-1] < lam[-1]


@pytest.mark.parametrize("tol", [1e-1, 1e-2, 1e-4, 1e-8])
def test_immigration_death_intervals_never_miss_over_tolerances_and_horizons(tol):
    net = ReactionNetwork("0 -> A, 10; A -> 0, 1")
    ts = np.array([0.0, 0.2, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0])
    lam = 10 * (1 - np.exp(-ts))
    r = transient_distribution(net, {"A": 0}, ts, tol=tol, bounds={"A": 12})
    for source in ("auto", "projection"):
        iv = r.intervals("A", source=source)
        ok_m, ok_s = _inside(iv, lam, np.sqrt(lam), slack=1e-12)
        assert ok_m.all() and ok_s.all() and iv.status == "certified", (tol, source)
    # every projection along the way (each a different leak) keeps the truth inside too
    for ex in r.expansions[:-1]:
        space = net.state_space(ex["bounds"])
        rr = fsp_transient(net, space, np.eye(space.n)[0], ts)
        ok_m, ok_s = _inside(rr.intervals("A", source="projection"), lam, np.sqrt(lam), slack=1e-12)
        assert ok_m.all() and ok_s.all(), ex


@pytest.mark.parametrize("lam_mu", [(0.1, 0.11), (1.0, 0.8)])
def test_linear_birth_death_intervals_contain_kendalls_moments_from_small_projections(lam_mu):
    lb, mu = lam_mu
    net = ReactionNetwork("X -> 2 X, l; X -> 0, mu", parameters={"l": lb, "mu": mu})
    ts = np.array([0.0, 0.5, 1.0, 2.0, 4.0])
    g = lb - mu
    mean = 5 * np.exp(g * ts)
    sd = np.sqrt(5 * ((lb + mu) / g) * np.exp(g * ts) * (np.exp(g * ts) - 1))
    for bound in (8, 15, 40):                            # leaks from large to negligible
        space = net.state_space({"X": bound})
        r = fsp_transient(net, space, np.eye(space.n)[5], ts)
        for source in ("auto", "projection"):
            iv = r.intervals("X", source=source)
            ok_m, ok_s = _inside(iv, mean, sd, slack=1e-12 * mean.max())
            assert ok_m.all() and ok_s.all() and iv.status == "certified", (bound, source, iv, mean, sd)


def _mp_exact(times):
    """(E M, E P, SD M, SD P) at `times`: the closed forms, checked here to solve the moment equations."""
    import mpmath
    import sympy

    t = sympy.symbols("t", nonnegative=True)
    e = sympy.exp
    mM = 4 * (1 - e(-t))
    mP = 48 - 96 * e(-t / 2) + 48 * e(-t)
    cov = 16 - 48 * e(-t) + 32 * e(-3 * t / 2)
    vP = 240 - 96 * e(-t / 2) + 624 * e(-t) - 576 * t * e(-t) - 768 * e(-3 * t / 2)
    # E P' = 6 E M − E P/2; Cov' = −3/2 Cov + 6 Var M; Var P' = −Var P + 12 Cov + 6 E M + E P/2; all 0 at t = 0
    for lhs, rhs in ((mP, 6 * mM - mP / 2), (cov, -sympy.Rational(3, 2) * cov + 6 * mM),
                     (vP, -vP + 12 * cov + 6 * mM + mP / 2)):
        assert sympy.simplify(sympy.diff(lhs, t) - rhs) == 0 and lhs.subs(t, 0) == 0
    mpmath.mp.dps = 30
    f = [sympy.lambdify(t, x, "mpmath") for x in (mM, mP, vP)]
    out = np.array([[float(fn(mpmath.mpf(x))) for fn in f] for x in times])
    return out[:, 0], out[:, 1], np.sqrt(out[:, 0]), np.sqrt(out[:, 2])


def test_mp_network_intervals_are_exact_to_1e_minus_6_at_t10_and_t100():
    net = ReactionNetwork("0 -> M, 4; M -> M + P, 6; M -> 0, 1; P -> 0, 0.5")
    ts = np.array([1.0, 10.0, 100.0])
    r = transient_distribution(net, {}, ts, tol=1e-3, bounds={"M": 20, "P": 150})
    mM, mP, sM, sP = _mp_exact(ts)
    for name, mean, sd in (("M", mM, sM), ("P", mP, sP)):
        iv = r.intervals(name)
        assert iv.status == "certified" and "moment equations" in iv.source
        ok_m, ok_s = _inside(iv, mean, sd)
        assert ok_m.all() and ok_s.all(), (name, iv, mean, sd)
        for lo, hi in (iv.mean, iv.sd):
            assert np.all((hi - lo) / hi <= 1e-6) and np.all(np.isfinite(hi))
        # the projection alone is certified too (a weighted Lyapunov function: no e^{βt} blow-up)
        proj = r.intervals(name, source="projection")
        ok_m, ok_s = _inside(proj, mean, sd)
        assert ok_m.all() and ok_s.all() and np.all(np.isfinite(proj.sd[1]))
    assert r.growth["beta"] < 0 and r.growth["gamma2"] < 0       # degradation credited
    # negative control: the exact mean of P nudged by 1e-6 relative is outside the interval
    iv = r.intervals("P")
    assert not np.all((iv.mean[0] <= mP * (1 + 1e-6)) & (mP * (1 + 1e-6) <= iv.mean[1]))


def test_toggle_switch_hill_propensities_get_certified_intervals():
    net = ReactionNetwork("0 => A, 8/(1 + (B/3)^2); A -> 0, 1; 0 => B, 8/(1 + (A/3)^2); B -> 0, 1")
    ts = np.array([0.5, 2.0, 6.0])
    r = transient_distribution(net, {"A": 4}, ts, tol=1e-4, bounds={"A": 14, "B": 14})
    assert r.closed is not None and not r.exact_moments and "not affine" in r.closed.reason
    assert r.growth is not None and r.growth["alpha"] == pytest.approx(16.0, rel=1e-12) and r.leaked[-1] > 0
    big = fsp_transient(net, net.state_space({"A": 60, "B": 60}), _point(net, {"A": 60, "B": 60}, 4), ts)
    assert big.leaked[-1] < 1e-25
    for name in ("A", "B"):
        iv = r.intervals(name)
        ref = big.intervals(name)
        assert iv.status == "certified" and iv.source == "projection"
        assert np.all(ref.mean[1] - ref.mean[0] <= 1e-9) and np.all(ref.sd[1] - ref.sd[0] <= 1e-9)
        # the reference is exact to 1e-9, so the interval must reach it (both are enclosures of the truth)
        assert np.all((iv.mean[0] <= ref.mean[1]) & (ref.mean[0] <= iv.mean[1]))
        assert np.all((iv.sd[0] <= ref.sd[1]) & (ref.sd[0] <= iv.sd[1]))
        assert np.all(iv.mean[1] - iv.mean[0] <= 1e-2)


def _point(net, bounds, a0):
    space = net.state_space(bounds)
    p0 = np.zeros(space.n)
    p0[space.index(np.array([[a0, 0]]))[0]] = 1.0
    return p0


def test_unbounded_and_wide_intervals_say_why():
    # the quadratic degradation is not credited by an affine Lyapunov bound: β = λ − μ > 0, and E[X²] of the
    # escaped mass overflows by t = 800 — an infinite end, with the reason, never NaN
    net = ReactionNetwork("X -> 2 X, 1; X -> 0, 0.5; 2 X -> X, 0.05")
    space = net.state_space({"X": 20})
    r = fsp_transient(net, space, np.eye(space.n)[3], [1.0, 800.0])
    iv = r.intervals("X")
    assert iv.status == "unbounded" and "e^(βt)" in iv.reason and not np.any(np.isnan(np.concatenate(iv.sd)))
    assert np.isinf(iv.sd[1][-1]) and np.isfinite(iv.sd[1][0])
    # a moment_tol that the work budget cannot reach: the result is returned, its intervals marked "wide"
    net = ReactionNetwork("0 -> A, 5; 2 A -> A, 0.1")
    r = transient_distribution(net, {"A": 0}, [2.0], tol=1e-6, moment_tol=1e-300, max_expansions=2)
    assert "moment_tol" in r.moment_status and "max_expansions" in r.moment_status
    iv = r.intervals("A")
    assert iv.status == "wide" and iv.reason == r.moment_status and r.to_dict()["moment_status"]
    r = transient_distribution(net, {"A": 0}, [2.0], tol=1e-5, moment_tol=1e-300, max_work=1)
    assert "work budget" in r.moment_status and len(r.expansions) == 1
    # … and a tol it cannot reach within the budget is refused, naming the budget
    with pytest.raises(TruncationError, match="work budget max_work = 1 "):
        transient_distribution(net, {"A": 0}, [2.0], tol=1e-9, max_work=1)


def test_bad_interval_arguments_are_named():
    r = transient_distribution(ReactionNetwork("0 -> A, 5; A -> 0, 1"), {}, [1.0], tol=1e-6)
    with pytest.raises(ValueError, match="`source` must be one of"):
        r.intervals("A", source="fsp")
    with pytest.raises(ValueError, match="`escaped` must be one of"):
        r.intervals("A", escaped="none")


def test_intervals_pickle_and_the_progress_bar_reports_the_projections(capsys):
    import pickle

    r = transient_distribution(ReactionNetwork("0 -> A, 5; A -> 0, 1", name="imm"), {}, [1.0], tol=1e-6,
                               progress=True)
    assert "FSP imm" in capsys.readouterr().err
    iv = r.intervals("A")
    back = pickle.loads(pickle.dumps(iv))
    assert back.status == iv.status and back.source == iv.source and np.array_equal(back.mean[0], iv.mean[0])
    (mlo, mhi), (slo, shi) = back
    assert mlo[0] <= 5 * (1 - np.exp(-1.0)) <= mhi[0]
