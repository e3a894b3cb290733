"""sp_ode.networks.cme._collocation: p(t) of a stiff projection by Radau collocation, with its a posteriori ℓ1 bound.

Provenance of every expected number:
* a monomolecular network started empty (0 → A (k), A ⇌ B (f each way), A → 0 (1), B → 0 (1/2)): its law at
  every t is the product of Poissons whose means solve m' = K m + b, m(0) = 0 (Jahnke & Huisinga 2007),
  m(t) = K⁻¹(e^{Kt} − I) b — a 2 × 2 matrix exponential, no CME solve;
* immigration–death with the reset X := 50 at t = 25 (DSMTS 00028): the binomial ⊕ Poisson closed form
  (tests/networks/test_events.py);
* where no closed form exists, uniformization (a different algorithm: nonnegative Poisson series, one-sided
  error) on the same projection.
Collocation is forced with a small `max_steps` (the chains are stiff: Λt is 10⁴–10⁵, where uniformization is
still affordable for the comparison).
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import expm

from sp_ode.networks.cme import _collocation
from sp_ode.networks.cme.transient import _extended_generator, _sink_generator, fsp_transient, transient_distribution
from sp_ode.networks.events import Event
from sp_ode.networks.network import ReactionNetwork

F = 300.0      # the fast isomerisation rate: Λ ≈ 1.125 · 2F · 24 ≈ 1.6·10⁴ per unit time
TIMES = np.array([0.05, 0.5, 2.0])


def _isomer() -> ReactionNetwork:
    return ReactionNetwork("make: 0 -> A, 10; ab: A -> B, f; ba: B -> A, f; da: A -> 0, 1; db: B -> 0, 0.5",
                           parameters={"f": F}, name="stiff_isomer")


def _poisson_means(t: float) -> np.ndarray:
    K = np.array([[-F - 1.0, F], [F, -F - 0.5]])
    return np.linalg.solve(K, (expm(K * t) - np.eye(2)) @ np.array([10.0, 0.0]))


def _solve(integration_tol: float, **kw):
    net = _isomer()
    space = net.state_space({"A": 24, "B": 24}, initial={"A": 0, "B": 0})
    p0 = (np.abs(space.states).sum(axis=1) == 0).astype(float)
    return space, fsp_transient(net, space, p0, TIMES, max_steps=1000, integration_tol=integration_tol, **kw)


def _true_l1(space, res) -> np.ndarray:
    """‖p(t) − p̃(t)‖₁ over all of ℕ²: on J against the product Poisson, plus the true mass outside J."""
    out = []
    for i, t in enumerate(TIMES):
        m = _poisson_means(t)
        exact = stats.poisson.pmf(space.states[:, 0], m[0]) * stats.poisson.pmf(space.states[:, 1], m[1])
        out.append(np.abs(res.p[i] - exact).sum() + (1.0 - exact.sum()))
    return np.array(out)


@pytest.mark.parametrize("integration_tol", [1e-3, 1e-8])
def test_the_bound_contains_the_closed_form_from_loose_to_tight_targets(integration_tol):
    space, res = _solve(integration_tol)
    assert res.method == "collocation" and res.two_sided and res.relative_rounding is None
    assert np.all(res.integration_error <= integration_tol) and res.integration_status == ""
    true = _true_l1(space, res)
    assert np.all(true <= res.leaked + 2 * res.integration_error)             # the certificate holds …
    assert np.all(res.integration_error <= 1e5 * np.maximum(true, 1e-15))     # … and is not vacuous
    pm, err = res.marginal("A", -1)
    m = _poisson_means(TIMES[-1])
    assert np.abs(pm - stats.poisson.pmf(np.arange(pm.size), m[0])).sum() <= err + stats.poisson.sf(24, m[0])
    # the projection's intervals (the two-sided bound lowers the lower end too) contain the exact moments
    iv = res.intervals("A", source="projection")
    means = np.array([_poisson_means(t)[0] for t in TIMES])
    assert iv.status == "certified" and np.all((iv.mean[0] <= means) & (means <= iv.mean[1]))
    assert np.all((iv.sd[0] <= np.sqrt(means)) & (np.sqrt(means) <= iv.sd[1]))


def test_negative_control_a_corrupted_integrator_is_caught_by_its_own_bound(monkeypatch):
    # after the tenth step 1e-4 of mass moves between two states of the stepper's solution: a wrong trajectory
    # that the solver's error estimate knows nothing about; the defect bound of that pass must grow past it
    class Corrupted(_collocation.Radau):
        def _step_impl(self):
            ok, msg = super()._step_impl()
            self.count = getattr(self, "count", 0) + 1
            if self.count == 10:
                self.y = self.y.copy()
                self.y[0] -= 1e-4
                self.y[1] += 1e-4
            return ok, msg

    net = _isomer()
    space = net.state_space({"A": 24, "B": 24}, initial={"A": 0, "B": 0})
    p0 = (np.abs(space.states).sum(axis=1) == 0).astype(float)
    Q, exits, _, _ = _sink_generator(net, space, net._y(None), np.ones(2))
    G, z0 = _extended_generator(Q, exits), np.concatenate([p0, np.zeros(exits.shape[0])])
    runs = {}
    for name, cls in (("honest", _collocation.Radau), ("corrupted", Corrupted)):
        monkeypatch.setattr(_collocation, "Radau", cls)
        Z, err, _ = _collocation._radau(G, z0, np.concatenate([[0.0], TIMES]), 1e-8)
        Z, err = Z[1:], err[1:]
        true = _true_l1(space, SimpleNamespace(p=Z[:, :space.n]))
        runs[name] = true, err
        assert np.all(true <= Z[:, space.n:].sum(axis=1) + 2 * err), name     # inside the pass's own bound
    (true_h, err_h), (true_c, _) = runs["honest"], runs["corrupted"]
    assert true_c[0] > true_h[0] + 100 * err_h[0]           # the corruption is real, far above the honest bound


def test_collocation_agrees_with_uniformization_on_a_non_affine_chain():
    # 2A → A is not affine: no closed moments; the projection's intervals after collocation must contain the
    # uniformization answer (a different algorithm on the same projection)
    net = ReactionNetwork("0 -> A, 5; 2 A -> A, 0.1")
    coll = transient_distribution(net, {"A": 0}, [1.0, 5.0], tol=1e-8, max_steps=10)
    unif = transient_distribution(net, {"A": 0}, [1.0, 5.0], tol=1e-8, bounds=dict(zip(coll.species, coll.space.bounds.tolist())))
    assert coll.method == "collocation" and unif.method == "uniformization"
    assert coll.space.n == unif.space.n
    gap = np.abs(coll.p - unif.p).sum(axis=1)
    assert np.all(gap <= 2 * coll.integration_error + unif.integration_error)
    (lo, hi), _ = coll.intervals("A")
    assert coll.moment_bound_reason == "" and np.all((lo <= unif.mean("A")) & (unif.mean("A") <= hi))


def test_collocation_across_a_time_event_contains_the_closed_form():
    net = ReactionNetwork("0 -> X, 1; X -> 0, 0.1")
    times = np.array([10.0, 26.0, 40.0])
    res = transient_distribution(net, {"X": 0}, times, tol=1e-10, max_steps=10, integration_tol=1e-7,
                                 events=[Event("reset", {"X": 50}, time=25.0)])
    assert res.method == "collocation" and res.integration_status == ""
    k = np.arange(res.space.n)
    for i, t in enumerate(times):
        if t < 25:
            exact = stats.poisson.pmf(k, 10 * (1 - np.exp(-0.1 * t)))
        else:
            q = np.exp(-0.1 * (t - 25))
            exact = np.convolve(stats.binom.pmf(k, 50, q), stats.poisson.pmf(k, 10 * (1 - q)))[: k.size]
        pm, err = res.marginal("X", i)
        assert np.abs(pm - exact[: pm.size]).sum() <= err + 1e-12
