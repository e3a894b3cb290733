"""φ_θ at scale (issue 27): sparse families, the matrix-free residual, the anchored certificate, the factored head.

Provenance of every expected number: the residual against scipy's ``Q.T @ q``; p_st and hitting times
against dense GTH / dense solves (an independent method) or the Poisson closed form of the
birth–death model; the certificate against the true error from those.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import sp_ode
from neural.phi.certificate import Anchor, certify, exact_solve, supersolution_constant
from neural.phi.fit import fit_phi
from neural.phi.model import PhiMLP
from neural.phi.sparse import SparseFamily, design_points, residual_numpy, residual_torch
from sp_ode.networks.models import get_network_model
from sp_ode.systems.network import NetworkSystem


def _two_species(N=8):
    net = sp_ode.ReactionNetwork("0 => A, 6*y1; A -> 0, 1; 0 => B, 1 + 2*y2*A/(3 + A); B -> 0, 1",
                                 slow=["y1", "y2"], name="two_small")
    system = NetworkSystem(net, net.state_space({"A": N - 1, "B": N - 1}), {"y1": "0", "y2": "0"}, eps=1e-3)
    return SparseFamily.from_network(system, [0.5, 0.5], [1.5, 1.5])


def _hitting_dense(Q: np.ndarray, k: int) -> np.ndarray:
    keep = np.arange(Q.shape[0]) != k
    h = np.zeros(Q.shape[0])
    h[keep] = np.linalg.solve(-Q[np.ix_(keep, keep)], np.ones(keep.sum()))
    return h


# --- the matrix-free residual ------------------------------------------------------------

def test_residual_matches_scipy_transpose_product_and_not_the_untransposed():
    fam = _two_species()
    ys = np.array([[0.7, 1.2], [1.4, 0.6]])
    src, dst, V = fam.rates(ys)
    q = np.random.default_rng(0).random((2, fam.n))
    q /= q.sum(1, keepdims=True)
    ref = np.stack([fam.Q(y).T @ qb for y, qb in zip(ys, q)])
    scale = np.abs(ref).max()
    assert np.abs(residual_numpy(q, src, dst, V) - ref).max() < 1e-14 * scale * fam.n
    got = residual_torch(torch.as_tensor(q), torch.as_tensor(src), torch.as_tensor(dst), torch.as_tensor(V))
    assert np.abs(got.numpy() - ref).max() < 1e-14 * scale * fam.n
    # the check can fail: Q q (no transpose) is a different vector
    wrong = np.stack([fam.Q(y) @ qb for y, qb in zip(ys, q)])
    assert np.abs(got.numpy() - wrong).max() > 1e-3 * scale


def test_torch_propensities_equal_numpy_ones():
    fam = _two_species()
    ys = design_points(fam.lower, fam.upper, 5, seed=1)
    Vn = fam._props.numpy(ys)
    Vt = fam._props.torch(torch.as_tensor(ys)).numpy()
    assert np.abs(Vn - Vt).max() <= 1e-13 * Vn.max()


def test_callable_returning_scipy_sparse_is_accepted_and_trained():
    # issue 27: "Q(y) must be a square (n, n) matrix; … shape ()" for a callable returning scipy.sparse
    def Q(y):
        a, b = np.exp(y[0]), np.exp(y[1])
        R = sp.csr_array(np.array([[0, a, 0, b], [b, 0, a, 0], [0, b, 0, a], [a + 1, 0, b, 0]], dtype=float))
        return R - sp.diags_array(R.sum(axis=1))

    fit = fit_phi(Q, loss="residual", domain=[(-0.5, 0.5), (-0.5, 0.5)], steps=15, n_train=32, width=8,
                  n_anchors=2, n_monitor=2)
    assert isinstance(fit.system, SparseFamily) and fit.system.n == 4 and fit.status == "ok"
    assert fit.history["loss_residual"][-1] < fit.history["loss_residual"][0] / 10
    with pytest.raises(ValueError, match="'residual' for the sparse family"):
        fit_phi(Q, loss="kl", domain=[(-0.5, 0.5), (-0.5, 0.5)], steps=1)


# --- exact solves, hitting times and the certificate -------------------------------------

def test_exact_solve_matches_poisson_closed_form_and_dense_hitting_times():
    model = get_network_model("birth_death", N=40)
    Q = model.network.generator(model.space(), [1.3])
    p, h, k, bound, H = exact_solve(Q)
    ref = model.closed_form["marginal M"]([1.3])
    assert np.abs(p - ref).sum() < 1e-12
    assert bound < 1e-10 and k == int(np.argmax(ref))
    hd = _hitting_dense(Q.toarray(), k)
    assert np.abs(h - hd).max() < 1e-10 * hd.max()
    assert hd.max() <= H <= hd.max() * (1 + 1e-8)


def test_supersolution_lemma_bounds_hitting_times_at_another_point_and_needs_c():
    fam = _two_species()
    ya, yb = np.array([0.9, 1.0]), np.array([1.1, 1.2])
    Qa, Qb = fam.Q(ya), fam.Q(yb)
    _, ha, k, _, _ = exact_solve(Qa)
    c = supersolution_constant(Qb, ha, k)
    hb = _hitting_dense(Qb.toarray(), k)
    assert 0 < c < 1
    assert np.all(hb <= ha / c + 1e-12 * hb.max())
    # without the factor 1/c the anchor's vector is not a bound at yb: the check is needed
    assert np.any(hb > ha * (1 + 1e-6))
    # and two points too far apart (rates 50 % larger) fail the check instead of giving a wrong bound
    assert supersolution_constant(fam.Q(np.array([1.3, 1.4])), exact_solve(fam.Q(np.array([0.7, 0.8])))[1],
                                  exact_solve(fam.Q(np.array([0.7, 0.8])))[2]) <= 0
    # a vector that is not a supersolution anywhere is refused: c ≤ 0 makes the certificate infinite
    bad = np.zeros(fam.n)
    bad[(k + 1) % fam.n] = 1.0
    assert supersolution_constant(Qb, bad, k) <= 0
    anchor = Anchor(ya, fam.normalised(ya[None])[0], k, bad, 1.0, np.ones(fam.n) / fam.n, 0.0, 0.0)
    assert certify(Qb, np.ones(fam.n) / fam.n, anchor)["certificate"] == np.inf


@pytest.mark.parametrize("scale", [1e-1, 1e-3, 1e-6])
def test_certificate_bounds_true_error_and_is_below_the_max_form(scale):
    fam = _two_species()
    ya, yb = np.array([0.9, 1.0]), np.array([1.1, 1.2])
    p_a, ha, k, _, H = exact_solve(fam.Q(ya))
    anchor = Anchor(ya, fam.normalised(ya[None])[0], k, ha, H, p_a, 0.0, 0.0)
    Qb = fam.Q(yb)
    p = sp_ode.stationary_distribution(Qb.toarray())          # dense GTH: an independent method
    rng = np.random.default_rng(3)
    q = p * np.exp(scale * rng.standard_normal(fam.n))
    q /= q.sum()
    out = certify(Qb, q, anchor)
    err = np.abs(q - p).sum()
    assert err <= out["certificate"] <= out["certificate_max"]
    assert out["certificate"] < 200 * err   # and it is informative, not a blanket bound
    # at p_st itself the certificate is at rounding level
    assert certify(Qb, p, anchor)["certificate"] < 1e-12


# --- the factored head --------------------------------------------------------------------

def test_factored_head_represents_a_product_of_poissons_exactly():
    from scipy.stats import poisson

    fam = _two_species(N=12)
    m = PhiMLP(1, fam.n, width=2, depth=1, head="factored", coords=fam.coords, rank=0)
    # features h = tanh(z): set the body to the identity-ish and read out log-Poisson profiles
    a = np.arange(12.0)
    lam = (3.0, 5.0)
    with torch.no_grad():
        m.body[0].weight.zero_()
        m.body[0].bias.zero_()
        for s, f in enumerate(m.factors):
            f.bias.copy_(torch.as_tensor(poisson.logpmf(a, lam[s])))
    q = m.predict(np.array([0.3]))
    ref = np.outer(poisson.pmf(a, lam[0]), poisson.pmf(a, lam[1])).ravel()
    ref /= ref.sum()
    assert np.abs(q - ref).max() < 1e-14
    # the dense head with the same zero body is uniform, far from it
    dense = PhiMLP(1, fam.n, width=2, depth=1).predict(np.array([0.3]))
    assert np.abs(dense - ref).max() > 1e-2


def test_factored_head_jax_copy_and_save_load_round_trip(tmp_path):
    import jax

    from neural.phi.files import load_phi, save_phi

    fam = _two_species(N=6)
    m = PhiMLP(2, fam.n, width=5, depth=2, head="factored", coords=fam.coords, rank=2, lower=fam.lower,
               upper=fam.upper, seed=4)
    with torch.no_grad():
        for prm in m.parameters():
            prm.add_(0.3 * torch.randn(prm.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1)))
    ys = np.array([[0.7, 1.1], [1.3, 0.6]])
    with jax.enable_x64(True):
        jx = np.asarray(jax.vmap(m.jax_fn())(ys))
    assert np.abs(jx - m.predict(ys)).max() < 1e-14
    back = load_phi(save_phi(m, tmp_path / "phi"))
    assert back.head == "factored" and back.sizes == m.sizes
    assert np.array_equal(back.predict(ys), m.predict(ys))
    assert torch.equal(back.coords, m.coords)


# --- training: checkpoints, the KL term, certified_predict ---------------------------------

def test_resume_from_checkpoint_reproduces_an_uninterrupted_run(tmp_path):
    from neural.phi.surrogate import fit_surrogate

    fam = _two_species(N=6)
    kw = dict(width=8, n_train=16, n_anchors=2, n_monitor=0, kl_weight=0.5, seed=3)
    whole = fit_surrogate(fam, steps=6, **kw)
    ck = tmp_path / "ck.pt"
    fit_surrogate(fam, steps=3, checkpoint=ck, **kw)
    resumed = fit_surrogate(fam, steps=6, checkpoint=ck, resume=True, **kw)
    for a, b in zip(whole.model.state_dict().values(), resumed.model.state_dict().values()):
        assert torch.equal(a, b)
    assert resumed.history["step"] == whole.history["step"]
    with pytest.raises(ValueError, match="other settings"):
        fit_surrogate(fam, steps=6, checkpoint=ck, resume=True, **{**kw, "width": 9})
    with pytest.raises(ValueError, match="needs an existing"):
        fit_surrogate(fam, steps=6, checkpoint=tmp_path / "none.pt", resume=True, **kw)


@pytest.mark.filterwarnings("ignore:.*cannot beat the exact solve")
def test_a_loaded_checkpoint_is_the_trained_fit_and_refuses_another_family(tmp_path):
    """PhiFit.load gives back the network bit for bit, the anchors' exact solves and the certificate."""
    from neural.phi.result import PhiFit
    from neural.phi.surrogate import fit_surrogate

    fam = _two_species(N=6)
    ck = tmp_path / "ck.pt"
    fit = fit_surrogate(fam, steps=4, width=8, n_train=16, n_anchors=3, n_monitor=2, seed=1, checkpoint=ck)
    back = PhiFit.load(ck, fam)
    ys = design_points(fam.lower, fam.upper, 5, seed=4)
    assert np.array_equal(back.model.predict(ys), fit.model.predict(ys))
    assert [a.y.tolist() for a in back.anchors] == [a.y.tolist() for a in fit.anchors] and len(back.monitor) == 2
    assert all(np.array_equal(a.h, b.h) and np.array_equal(a.p, b.p) for a, b in zip(back.anchors, fit.anchors))
    assert back.history == fit.history and back.final_loss == fit.final_loss and back.loss == "residual"
    c1 = fit.certified_predict(ys, tol=1e3, add_anchors=False)
    c2 = back.certified_predict(ys, tol=1e3, add_anchors=False)
    assert np.array_equal(c1.surrogate_certificate, c2.surrogate_certificate)
    with pytest.raises(ValueError, match=r"`family` .* n 36 there, 49 here"):
        PhiFit.load(ck, _two_species(N=7))
    torch.save({"something": 1}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a φ_θ surrogate checkpoint"):
        PhiFit.load(tmp_path / "other.pt", fam)


def test_certified_predict_falls_back_to_exact_solves_exactly_where_tol_is_missed():
    from neural.phi.surrogate import fit_surrogate

    fam = _two_species(N=6)
    fit = fit_surrogate(fam, steps=30, width=8, n_train=32, n_anchors=16, n_monitor=0, kl_weight=1.0)
    ys = design_points(fam.lower, fam.upper, 6, seed=9)
    loose = fit.certified_predict(ys, tol=1e3, add_anchors=False, tries=16)
    assert not loose.fell_back.any() and np.isfinite(loose.surrogate_certificate).all()
    exact = np.stack([sp_ode.stationary_distribution(fam.Q(y).toarray()) for y in ys])   # dense GTH
    err = np.abs(loose.values - exact).sum(axis=1)
    assert np.all(err <= loose.surrogate_certificate)
    tol = float(np.median(loose.surrogate_certificate))
    mixed = fit.certified_predict(ys, tol=tol, add_anchors=False, tries=16)
    assert np.array_equal(mixed.fell_back, mixed.surrogate_certificate > tol)
    assert np.abs(mixed.values[mixed.fell_back] - exact[mixed.fell_back]).sum(axis=1).max() < 1e-12
    assert np.all(mixed.certificate <= tol)
    before = len(fit.anchors)
    fit.certified_predict(ys, tol=1e-14)           # everything falls back and becomes an anchor
    assert len(fit.anchors) == before + len(ys)
    with pytest.raises(ValueError, match="shape"):
        fit.certified_predict(np.zeros((2, 3)), tol=1e-3)


def test_reduced_flow_with_phi_matches_the_exact_flow_and_a_wrong_phi_does_not():
    fam = _two_species(N=6)
    net = fam.system.network
    system = NetworkSystem(net, fam.system.space, {"y1": "0.5*(1.2 - y1*E[B]/3)", "y2": "0.5*(1 - y2*E[A]/3)"},
                           eps=1e-3)

    def p_exact(y):       # the exact manifold as a plain callable: the same flow, no surrogate
        return sp_ode.stationary_distribution(system.Q(y).toarray())

    ts = np.linspace(0, 2, 5)
    ref = system.simulate_reduced((0, 2), [0.8, 1.2], t_eval=ts, rtol=1e-10, atol=1e-12)
    via = sp_ode.simulate_reduced(system, (0, 2), [0.8, 1.2], phi=p_exact, ts=ts, rtol=1e-10, atol=1e-12)
    assert via.status == 0 and np.abs(via.y - ref.y).max() < 1e-7
    uniform = sp_ode.simulate_reduced(system, (0, 2), [0.8, 1.2], phi=lambda y: np.full(system.n, 1 / system.n),
                                      ts=ts)
    assert np.abs(uniform.y - ref.y).max() > 1e-2
    with pytest.raises(ValueError, match="order=0"):
        system.simulate_reduced((0, 2), [0.8, 1.2], phi=p_exact, order=1)


def test_factored_head_grid_path_equals_the_gather_path():
    fam = _two_species(N=7)
    m = PhiMLP(2, fam.n, width=6, depth=1, head="factored", coords=fam.coords, rank=3, lower=fam.lower,
               upper=fam.upper, seed=2)
    with torch.no_grad():
        for prm in m.parameters():
            prm.add_(0.5 * torch.randn(prm.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(5)))
    assert m._grid
    ys = torch.as_tensor(design_points(fam.lower, fam.upper, 4, seed=2))
    fast = m.logits(ys)
    m._grid = False
    slow = m.logits(ys)
    assert torch.allclose(fast, slow, rtol=0, atol=1e-13)
    # a space that is not the whole box (a total-count bound) takes the gather path
    net = sp_ode.ReactionNetwork("0 -> A, y; A -> 0, 1; 0 -> B, 1; B -> 0, 1", slow=["y"])
    J = net.state_space({"A": 4, "B": 4}, total=5)
    assert not PhiMLP(1, J.n, head="factored", coords=J.states)._grid


def test_a_surrogate_that_cannot_beat_the_exact_solve_says_so(monkeypatch):
    # a newcomer's defaults on a network returned φ_θ off by 1.9 in ℓ1, certified nowhere, without a word
    import neural.phi.surrogate as surrogate

    fam = _two_species(N=6)
    with pytest.warns(surrogate.UselessSurrogateWarning, match="cannot beat the exact solve"):
        fit = surrogate.fit_surrogate(fam, steps=4, width=4, n_train=16, n_anchors=2, n_monitor=4)
    use = fit.config["usefulness"]
    assert not use["useful"] and use["certified"] < 2 and use["held_out"] == 4
    assert "cannot beat the exact solve" in fit.message and "held-out points" in fit.message
    # the verdict follows the certificates: all four held-out points certified -> useful, nothing said
    monkeypatch.setattr(surrogate, "_monitor_errors", lambda *a: ([1e-5] * 4, [1e-4] * 4))
    history = {"step": [0, 1, 2, 3, 4], "max_certificate": [1.0, 0.1, 0.01, 1e-3, 1e-4]}
    good = surrogate._usefulness(None, fam, fit.monitor, fit.anchors, history)
    assert good["useful"] and good["certified"] == 4 and good["steps_needed"] is None
    # a falling learning curve ∝ step^-1 at 1e-1 after 10 steps reaches 1e-3 after ~1000 steps
    monkeypatch.setattr(surrogate, "_monitor_errors", lambda *a: ([0.5] * 4, [0.1] * 4))
    steps = np.arange(1, 11, dtype=float)
    bad = surrogate._usefulness(None, fam, fit.monitor, fit.anchors,
                                {"step": list(steps), "max_certificate": list(1.0 / steps)})
    assert not bad["useful"] and bad["steps_needed"] == pytest.approx(1000.0, rel=1e-6)
