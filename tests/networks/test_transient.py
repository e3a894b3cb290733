"""sp_ode.networks.cme.transient: p(t) of a CME with its FSP bound, against closed forms.

Provenance of every expected number:
- immigration–death 0 → X (a), X → 0 (m X) from X(0) = 0: X(t) ~ Poisson((a/m)(1 − e^{−mt})) exactly;
- linear birth–death X → 2X (λX), X → 0 (μX) from X(0) = x0: E X(t) = x0 e^{(λ−μ)t},
  Var X(t) = x0 (λ+μ)/(λ−μ) e^{(λ−μ)t}(e^{(λ−μ)t} − 1) (Kendall 1948; the DSMTS-001 closed forms);
- the FSP identity ‖p(t) − p_J(t)‖₁ = leaked mass, checked against a much larger projection.
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import poisson

import sp_ode
from sp_ode.networks.cme.transient import fsp_transient, transient_distribution
from sp_ode.networks.network import NetworkError, ReactionNetwork, TruncationError


def _immigration_death(a=10.0, m=0.1):
    return ReactionNetwork("0 -> X, a; X -> 0, m", parameters={"a": a, "m": m}, name="immigration_death")


def test_immigration_death_is_poisson_at_every_time_with_its_fsp_bound():
    net = _immigration_death()
    ts = np.array([0.0, 0.5, 2.0, 10.0, 30.0])
    r = transient_distribution(net, {"X": 0}, ts, tol=1e-12)
    lam = 100.0 * (1 - np.exp(-0.1 * ts))
    assert r.method == "uniformization" and r.leaked[-1] <= 1e-12 and r.mass_defect <= 1e-12
    for i, t in enumerate(ts):
        pm, l1 = r.marginal("X", i)
        exact = poisson.pmf(np.arange(pm.size), lam[i]) if t > 0 else (np.arange(pm.size) == 0).astype(float)
        assert np.abs(pm - exact).sum() <= l1 + 1e-13                 # the ℓ1 bound holds …
        # … and the lower tail (far from the projection's bound) is right relatively down to 1e-25, the
        # upper part above 1e-8 (near the bound p_J is depleted by the mass that left: §7.6)
        k = np.arange(pm.size)
        far = ((exact > 1e-25) & (k <= lam[i])) | (exact > 1e-8)
        assert np.max(np.abs(pm[far] - exact[far]) / exact[far]) <= 1e-9
    lo, hi = r.mean_bounds()["X"]
    assert np.all((lo <= lam) & (lam <= hi)) and np.max(hi - lo) <= 1e-8
    slo, shi = r.sd_bounds()["X"]
    assert np.all((slo <= np.sqrt(lam) + 1e-12) & (np.sqrt(lam) <= shi + 1e-12)) and np.max(shi - slo) <= 1e-6
    # negative control: a mean off by 1e-6 relative is outside the certified interval
    assert not np.all((lo <= lam * (1 + 1e-6)) & (lam * (1 + 1e-6) <= hi))
    assert sp_ode.transient_distribution is transient_distribution


def test_linear_birth_death_moments_inside_certified_intervals():
    net = ReactionNetwork("X -> 2 X, l; X -> 0, mu", parameters={"l": 0.1, "mu": 0.11})
    ts = np.array([0.0, 1.0, 5.0, 20.0])
    r = transient_distribution(net, {"X": 20}, ts, tol=1e-12, moment_tol=1e-9)
    g = 0.1 - 0.11
    mean = 20 * np.exp(g * ts)
    sd = np.sqrt(20 * (0.21 / g) * np.exp(g * ts) * (np.exp(g * ts) - 1))
    (lo, hi), (slo, shi) = r.mean_bounds()["X"], r.sd_bounds()["X"]
    assert np.all((lo <= mean * (1 + 1e-13)) & (mean <= hi * (1 + 1e-13)))
    assert np.all((slo <= sd + 1e-12) & (sd <= shi + 1e-12)) and np.max(shi - slo) <= 1e-6
    # the exact drift of an affine network: d E[X]/dt = (λ − μ)E[X], d E[X²]/dt ≤ 2(λ − μ)E[X²] + (λ + μ)E[X]
    assert r.growth["beta"] == pytest.approx(g) and r.growth["gamma2"] == pytest.approx(2 * g)
    assert r.growth["gamma1"] == pytest.approx(0.21) and r.growth["alpha"] == 0.0
    # the moment equations close: the intervals are exact whatever the projection, so moment_tol grows nothing
    assert r.intervals("X").source == "moment equations ∩ projection" and r.intervals("X").status == "certified"
    assert "moment_leak" in r.expansions[-1] and r.moment_status == ""


def test_leaked_mass_is_the_l1_distance_to_a_much_larger_projection():
    net = _immigration_death(a=8.0, m=0.5)
    small = net.state_space({"X": 25})
    big = net.state_space({"X": 120})
    ts = np.array([1.0, 4.0])
    p0s, p0b = np.eye(small.n)[0], np.eye(big.n)[0]
    rs = fsp_transient(net, small, p0s, ts)
    rb = fsp_transient(net, big, p0b, ts)
    assert rs.leaked[-1] > 1e-6 and rb.leaked[-1] < 1e-30           # the small one leaks, measurably
    pad = np.zeros((2, big.n))
    pad[:, :small.n] = rs.p
    dist = np.abs(rb.p - pad).sum(axis=1)
    # ‖p − p_J‖₁ = ε(t) (Munsky–Khammash), up to the two integrations' certified ℓ1 errors
    assert np.all(np.abs(dist - rs.leaked) <= rs.integration_error + rb.integration_error)
    assert np.all(rs.p <= rb.p[:, :small.n] * (1 + 1e-12))           # 0 ≤ p_J ≤ p on J
    assert set(rs.leaked_by) == {"X"} and rs.leaked_by["X"][-1] == pytest.approx(rs.leaked[-1])


def test_adaptive_projection_grows_the_leaking_species_and_refuses_by_name():
    net = ReactionNetwork("0 -> A, 30; A -> 0, 1; 0 -> B, 1; B -> 0, 1")
    r = transient_distribution(net, {}, [5.0], bounds={"A": 10, "B": 10}, tol=1e-10)
    first, last = r.expansions[0]["bounds"], r.expansions[-1]["bounds"]
    assert last["A"] > first["A"] and r.leaked[-1] <= 1e-10
    with pytest.raises(TruncationError, match=r"still leaks .* after 1 projections.*through 'A'") as exc:
        transient_distribution(net, {}, [5.0], bounds={"A": 10, "B": 10}, tol=1e-10, max_expansions=1)
    assert exc.value.species == "A" and exc.value.leaked > 1e-10


def test_no_moment_bound_without_affine_growth_and_an_affine_network_keeps_its_exact_intervals():
    net = ReactionNetwork("2 A -> 3 A, 0.01; A -> 0, 1")
    r = transient_distribution(net, {"A": 3}, [0.5], tol=1e-8)
    assert r.mean_bounds() is None and "not affine" in r.moment_bound_reason
    assert np.all(np.isfinite(r.means()["A"]))                        # the point values are still there
    assert r.to_dict()["mean_bounds"] is None and r.to_dict()["moment_bound_reason"]
    # past max_steps the projection is integrated by collocation, whose two-sided ℓ1 bound still certifies;
    # an affine network intersects that with the exact intervals of its moment equations
    r = transient_distribution(_immigration_death(), {"X": 0}, [5.0], tol=1e-8, max_steps=10)
    assert r.method == "collocation" and r.fsp_bound_reason == "" and r.moment_bound_reason == ""
    iv = r.intervals("X")
    lam = 100.0 * (1 - np.exp(-0.5))
    assert iv.source == "moment equations ∩ projection" and iv.mean[0][0] <= lam <= iv.mean[1][0]
    assert iv.sd[0][0] <= np.sqrt(lam) <= iv.sd[1][0] and iv.mean[1][0] - iv.mean[0][0] <= 1e-10 * lam


def test_bad_input_is_named():
    net = _immigration_death()
    with pytest.raises(ValueError, match="`times` must be finite, ≥ 0 and nondecreasing"):
        transient_distribution(net, {"X": 0}, [2.0, 1.0])
    with pytest.raises(NetworkError, match="`initial` names 'Y'"):
        transient_distribution(net, {"Y": 1}, [1.0])
    space = net.state_space({"X": 10})
    with pytest.raises(ValueError, match="`p0` must be a distribution on the 11 states"):
        fsp_transient(net, space, np.ones(11), [1.0])
    with pytest.raises(ValueError, match="`tol`"):
        transient_distribution(net, {"X": 0}, [1.0], tol=0.0)


def test_a_projection_nothing_leaves_needs_no_moment_bound():
    # DSMTS 003-04's form: P2 made at (k1/2)(100 − 2P2)(99 − 2P2), which vanishes at P2 = 50: the mass never
    # reaches the bound, ε(t) = 0 exactly, so the intervals hold although the propensity is not affine.
    net = ReactionNetwork("0 => P2, 0.5*k1*(100 - 2*P2)*(99 - 2*P2); P2 -> 0, k2", parameters={"k1": 0.001, "k2": 0.01})
    r = transient_distribution(net, {"P2": 0}, [0.0, 10.0, 50.0], tol=1e-12)
    assert r.growth is None and np.all(r.leaked == 0.0) and r.moment_bound_reason == ""
    (lo, hi), _ = r.intervals("P2")
    assert np.all(hi - lo <= 1e-9 * np.maximum(hi, 1.0)) and lo[-1] > 10


def test_the_output_of_many_times_on_many_states_is_refused_before_it_is_allocated(monkeypatch):
    # 10^4 states × 10^5 output times: p(t) alone is 8 GB (issue 35, item 8); the budget here is 4 GB
    from sp_ode.core import memory
    from sp_ode.core.memory import MemoryBudgetError

    monkeypatch.setattr(memory, "available_memory", lambda: (5 * 10**9, "test limit"))
    net = ReactionNetwork("0 -> A, 50; A -> 0, 1")
    space = net.state_space({"A": 9999})
    p0 = np.zeros(space.n)
    p0[0] = 1.0
    with pytest.raises(MemoryBudgetError, match="100000 output times on 10000 states"):
        fsp_transient(net, space, p0, np.linspace(0.0, 1.0, 10**5))
    with pytest.raises(MemoryBudgetError):
        transient_distribution(net, {"A": 0}, np.linspace(0.0, 1.0, 10**5), bounds={"A": 9999})
    assert fsp_transient(net, space, p0, np.linspace(0.0, 0.1, 10)).p.shape == (10, space.n)   # negative control
