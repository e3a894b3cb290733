"""neural.phi: φ_θ, its two losses (T4), the certificate, and bad input.

Provenance of expected numbers: p_st from GTH (``sp_ode.stationary_distribution``,
an independent solver) or the switch2 closed form p = (b, a)/(a + b) with
‖A^#‖₂ = √2·√(a² + b²)/(a + b)² (A = Qᵀ satisfies A² = −(a + b)A, so A^# = A/(a + b)²,
and A = (−1, 1)ᵀ(a, −b) is rank one).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import sp_ode
from neural import phi as phimod
from neural.phi.families import evaluation_points, resolve_system, sample, sigma_min_on_complement
from neural.phi.fit import PhiMLP, fit_phi, kl_loss, phi_certificate, residual_loss
from neural.phi.result import evaluate_phi

RNG = np.random.default_rng(20261130)


def random_generator(n: int, rng) -> np.ndarray:
    """A dense irreducible generator with rates in (0.01, 10) on a log scale."""
    R = np.exp(rng.uniform(np.log(0.01), np.log(10.0), (n, n)))
    np.fill_diagonal(R, 0.0)
    return R - np.diag(R.sum(1))


# --- the group-inverse identity and the certificate inequality (T4) ----------------------

@pytest.mark.parametrize("n", [2, 3, 5, 10])
def test_group_inverse_maps_residual_back_to_the_error(n):
    # For q on the simplex, 1ᵀ(q − p) = 0, so q − p ∈ 1^⊥ = range(A) and A^#(Aq) = (I − p1ᵀ)q = q − p.
    for _ in range(5):
        Q = random_generator(n, RNG)
        p = sp_ode.stationary_distribution(Q)
        q = RNG.dirichlet(np.ones(n))
        G = sp_ode.group_inverse(Q)
        assert abs(np.sum(q - p)) <= 16 * n * np.finfo(float).eps
        np.testing.assert_allclose(G @ (Q.T @ q), q - p, rtol=0, atol=1e-12 * max(1.0, np.abs(G).max()))
        cert = phi_certificate(Q, q)
        err = np.linalg.norm(q - p)
        assert err <= cert.sharp_bound * (1 + 1e-10) and err <= cert.bound * (1 + 1e-10)
        # 1/σ_min(QᵀU) is the norm of A^# restricted to 1^⊥, hence ≤ ‖A^#‖₂.
        assert 1.0 / cert.sigma <= cert.ginv_norm * (1 + 1e-12)


def test_switch2_closed_forms():
    s = resolve_system("switch2")
    ys = np.linspace(-2, 2, 9).reshape(-1, 1)
    smp = sample(s, ys)
    a, b = np.exp(ys[:, 0]), np.ones(9)
    closed = sp_ode.FAMILIES["switch2"].closed_form
    np.testing.assert_allclose(smp.p, np.stack([closed(y) for y in ys]), rtol=1e-14)
    np.testing.assert_allclose(smp.ginv_norm, np.sqrt(2 * (a**2 + b**2)) / (a + b) ** 2, rtol=1e-12)
    # n = 2: 1^⊥ is a line, so the sharp bound is the exact 2-norm error for any q.
    q = np.array([0.3, 0.7])
    for Q, p in zip(smp.Q, smp.p):
        np.testing.assert_allclose(phi_certificate(Q, q).sharp_bound, np.linalg.norm(q - p), rtol=1e-12)


def test_switch2_fit_against_closed_form():
    fit = fit_phi("switch2", loss="kl", steps=40, n_train=32, monitor=False)
    ys = np.linspace(-2, 2, 41).reshape(-1, 1)
    closed = np.stack([sp_ode.FAMILIES["switch2"].closed_form(y) for y in ys])
    err = np.abs(fit.model.predict(ys) - closed).max()
    assert err < 1e-3, err  # from 0.38 at the uniform start (|1/2 − e²/(1+e²)|)
    ev = fit.evaluate(ys)
    assert ev.holds.all()
    np.testing.assert_allclose(ev.sharp_certificate, ev.error_2, rtol=1e-6)  # exact for n = 2


def test_vectorised_certificate_matches_reference():
    s = resolve_system("ring10")
    model = PhiMLP(1, 10, lower=s.lower, upper=s.upper, seed=3)
    with torch.no_grad():
        model.out.weight.normal_(0, 0.3)  # leave the uniform start: a q that is far from p_st
    ys = np.linspace(-1, 1, 7).reshape(-1, 1)
    ev = evaluate_phi(model, s, ys)
    for k, y in enumerate(ys):
        ref = phi_certificate(s.Q(y), ev.phi[k] / ev.phi[k].sum())
        np.testing.assert_allclose([ev.certificate[k], ev.sharp_certificate[k], ev.residual[k]],
                                   [ref.bound, ref.sharp_bound, ref.residual], rtol=1e-10)


@pytest.mark.parametrize("system, loss", [("cycle3", "kl"), ("ring10", "residual"), ("cycle3_2d", "kl")])
def test_certificate_bounds_the_true_error_at_every_point(system, loss):
    fit = fit_phi(system, loss=loss, steps=15, n_train=40, monitor=False)
    s = fit.system
    inside, outside = evaluation_points(s, n_eval=61 if s.d == 1 else 15**2)
    for ys, extra in [(inside, False), (outside, True)]:
        ev = evaluate_phi(fit.model, s, ys, extrapolation=extra)
        assert len(ev.y) == len(ys)
        assert ev.holds.all()
        # Without the rounding allowance too: the errors here are far above rounding.
        assert np.all(ev.error_2 <= ev.sharp_certificate * (1 + 1e-9))
        assert np.all(ev.sharp_certificate <= ev.certificate * (1 + 1e-9))
        assert np.all(ev.abs_error <= ev.certificate * (1 + 1e-9))  # ‖·‖∞ ≤ ‖·‖₂


# --- training -----------------------------------------------------------------------------

def test_kl_training_reduces_error_substantially():
    fit = fit_phi("cycle3", loss="kl", steps=40, n_train=64, n_monitor=41)
    h = fit.history
    assert fit.status == "ok"
    assert h["step"][0] == 0 and h["step"][-1] == 40
    # The uniform start is 0.37 off p_st on cycle3 (p_st ranges 0.03…0.71); 40 L-BFGS steps cut it 50×.
    assert h["max_abs_error"][0] > 0.3
    assert h["max_abs_error"][-1] < h["max_abs_error"][0] / 50
    assert h["loss"][-1] < h["loss"][0] / 1e3
    # print(fit) is a short summary (it dumped ~300 history numbers): the last held-out error, no history
    text = repr(fit)
    assert text == fit.summary() and len(text.splitlines()) <= 10 and "cycle3" in text
    assert f"{h['max_abs_error'][-1]:.4g}" in text and "list of 41" in text
    assert "<table>" in fit._repr_html_()


def test_residual_loss_never_sees_p_st(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("p_st was computed")

    import neural.phi.families

    monkeypatch.setattr(neural.phi.families, "stationary_distribution", forbidden)  # where fit_phi looks it up
    fit = fit_phi("cycle3", loss="residual", steps=25, n_train=48, monitor=False)
    with pytest.raises(AssertionError, match="p_st was computed"):
        fit_phi("cycle3", loss="kl", steps=1, n_train=8, monitor=False)
    monkeypatch.undo()
    ev = fit.evaluate(np.linspace(-2, 2, 31))
    assert ev.abs_error.max() < 0.02  # from 0.37 at the uniform start
    assert ev.holds.all()


def test_losses_vanish_at_p_st_and_are_positive_elsewhere():
    s = resolve_system("cycle3")
    smp = sample(s, np.linspace(-2, 2, 5))
    Q, p, sigma = (torch.as_tensor(a) for a in (smp.Q, smp.p, smp.sigma))
    assert float(kl_loss(torch.log(p), p)) <= 1e-15
    assert float(residual_loss(p, Q, sigma)) <= 1e-28
    q = torch.full_like(p, 1 / 3)
    # residual loss is the mean squared sharp bound, which is ≥ the mean squared 2-norm error
    assert float(residual_loss(q, Q, sigma)) >= float(((q - p) ** 2).sum(-1).mean()) > 0
    assert float(kl_loss(torch.log(q), p)) > 0
    np.testing.assert_allclose(smp.sigma, sigma_min_on_complement(smp.Q))


def test_model_shapes_and_simplex_output():
    m = PhiMLP(2, 4, width=8, depth=3, lower=[-1, 0], upper=[1, 2])
    out = m.predict(np.zeros((5, 2)))
    assert out.shape == (5, 4) and out.dtype == np.float64
    np.testing.assert_allclose(out, 0.25)  # zero output layer: the uniform start
    assert m.predict([0.5, 1.0]).shape == (4,)
    m1 = PhiMLP(1, 3)
    assert m1.predict(np.linspace(-1, 1, 6)).shape == (6, 3)
    assert m1.predict(0.2).shape == (3,)
    assert sum(isinstance(layer, torch.nn.Linear) for layer in m.body) == 3
    with pytest.raises(ValueError, match="last dimension d = 2"):
        m(torch.zeros(5, 3, dtype=torch.float64))


# --- bad input ----------------------------------------------------------------------------

def _switch_with(bad):
    """A 2-state generator family that misbehaves (per `bad`) for y > 0.5."""
    def Q(y):
        a = float(np.exp(y[0]))
        M = np.array([[-a, a], [1.0, -1.0]])
        if y[0] > 0.5:
            if bad == "negative":
                M = np.array([[a, -a], [1.0, -1.0]])
            elif bad == "reducible":
                M = np.array([[-a, a], [0.0, 0.0]])
            elif bad == "nan":
                M[0, 1] = np.nan
            elif bad == "shape":
                M = np.zeros((3, 3))
        return M
    return Q


# n_train = 5 Chebyshev–Lobatto nodes on [−1, 1]: −cos(πk/4) = −1, −0.707107, 0, 0.707107, 1;
# the first sampled y past 0.5 is 0.707107, and the message must name it.
@pytest.mark.parametrize("bad, exc, match", [
    ("negative", ValueError, r"y = \[0\.707107\]"),
    ("reducible", sp_ode.NotIrreducibleError, r"y = \[0\.707107\].*irreducible"),
    ("nan", ValueError, r"y = \[0\.707107\].*finite"),
    ("shape", ValueError, r"y = \[0\.707107\].*\(2, 2\)"),
])
def test_bad_generator_at_a_sampled_y_names_that_y(bad, exc, match):
    with pytest.raises(exc, match=match):
        fit_phi(_switch_with(bad), domain=[(-1, 1)], steps=1, n_train=5, monitor=False)


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(loss="mse"), ValueError, r"`loss` must be one of \('kl', 'residual'\)"),
    (dict(system="cycle4"), ValueError, r"`system` must be one of"),
    (dict(system=42), TypeError, r"`system` must be"),
    (dict(system=_switch_with(None)), ValueError, r"`domain` is required"),
    (dict(domain=[(-1, 1), (0, 1)]), ValueError, r"d = 1"),
    (dict(domain=[(1, -1)]), ValueError, r"lo < hi"),
    (dict(domain=[(-1, np.inf)]), ValueError, r"`domain` must be finite"),
    (dict(width=2.5), TypeError, r"`width`"),
    (dict(steps=0), ValueError, r"`steps`"),
    (dict(optimizer="sgd"), ValueError, r"`optimizer`"),
    (dict(lr=-1.0), ValueError, r"`lr`"),
])
def test_bad_arguments(kwargs, exc, match):
    kwargs = {"steps": 1, "n_train": 5, "monitor": False, **kwargs}
    with pytest.raises(exc, match=match):
        fit_phi(**kwargs)


def test_mismatched_model_and_system():
    with pytest.raises(ValueError, match="d = 2, n = 3"):
        evaluate_phi(PhiMLP(1, 3), "cycle3_2d", np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"`ys` must have shape \(N, d\) with d = 1"):
        evaluate_phi(PhiMLP(1, 3), "cycle3", np.zeros((2, 2)))
    with pytest.raises(TypeError, match="PhiMLP"):
        evaluate_phi(object(), "cycle3")
    Q = sp_ode.FAMILIES["cycle3"](0.0)
    with pytest.raises(ValueError, match="sum to 1"):
        phi_certificate(Q, [0.5, 0.5, 0.5])
    with pytest.raises(ValueError, match=r"shape \(3,\)"):
        phi_certificate(Q, [0.5, 0.5])
    with pytest.raises(ValueError, match="finite"):
        phi_certificate(Q, [np.nan, 0.5, 0.5])


def test_public_names():
    import neural

    for name in ["PhiMLP", "fit_phi", "evaluate_phi", "phi_certificate", "PhiFit", "PhiEvaluation"]:
        assert getattr(neural, name) is getattr(phimod, name)


def test_jax_fn_returns_float64_without_the_user_enabling_it():
    # issue 25: jax_fn() gave float32 outside sp_ode's scope (a user's process has no float64)
    import jax
    import jax.numpy as jnp

    m = PhiMLP(1, 3, width=8, depth=1, lower=[-1.0], upper=[1.0], seed=0)
    fn = m.jax_fn()
    y = np.array([0.25])
    direct = fn(y)
    assert direct.dtype == jnp.float64 and direct.shape == (3,)
    with torch.no_grad():
        ref = m(torch.as_tensor(y[None])).numpy()[0]
    np.testing.assert_allclose(np.asarray(direct), ref, rtol=1e-13)     # the torch forward, to rounding
    with sp_ode.float64():
        assert jax.jit(fn)(jnp.asarray(y)).dtype == jnp.float64         # traced inside the scope: float64
    assert "float64" in type(m).jax_fn.__doc__                         # and the docstring says so


def test_torch_threads_are_set_only_when_asked_and_put_back():
    import torch

    from neural.phi.model import torch_threads

    before = torch.get_num_threads()
    with torch_threads(None):
        assert torch.get_num_threads() == before
    other = 1 if before != 1 else 2
    try:
        with torch_threads(other):
            assert torch.get_num_threads() == other
            raise KeyError("inside")
    except KeyError:
        pass
    assert torch.get_num_threads() == before          # restored, even when the body raised
