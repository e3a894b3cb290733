"""One fit-result type for φ_θ (issue 33): `fit_phi` and `fit_surrogate` both return `neural.phi.result.PhiFit`,
and its `evaluate` returns one `PhiEvaluation` for a dense and for a sparse family.

Provenance of the expected numbers: for the sparse family, the closed form of a truncated birth–death
chain (births λ(y) = 3y, deaths k per molecule on {0, …, N−1}: detailed balance gives
p_k ∝ λ^k/k! exactly on the truncated chain), and the residual against scipy's ``Q.T @ q``; for the
dense family, GTH (``sp_ode.stationary_distribution``).  The anchored certificate is compared with
`certified_predict`, which computes it by its own loop (`neural.phi.certificate`).
"""
from __future__ import annotations

import math
from dataclasses import fields

import numpy as np
import pytest
import scipy.sparse as sp

import sp_ode
from neural.phi.families import PhiSystem
from neural.phi.fit import fit_phi
from neural.phi.result import PhiEvaluation, PhiFit, evaluate_phi
from neural.phi.sparse import SparseFamily, design_points
from neural.phi.surrogate import fit_surrogate

N = 12
pytestmark = pytest.mark.filterwarnings("ignore:.*cannot beat the exact solve")


def _bd_Q(y, rate=3.0):
    lam = rate * float(np.asarray(y).ravel()[0])
    k = np.arange(N, dtype=float)
    up, down = np.full(N - 1, lam), k[1:]
    R = sp.diags_array([up, down], offsets=[1, -1], shape=(N, N), format="csr")
    return R - sp.diags_array(np.asarray(R.sum(axis=1)).ravel())


def _bd_closed(y, rate=3.0) -> np.ndarray:
    lam = rate * float(np.asarray(y).ravel()[0])
    logw = np.array([k * math.log(lam) - math.lgamma(k + 1) for k in range(N)])
    w = np.exp(logw - logw.max())
    return w / w.sum()


def _bd_family() -> SparseFamily:
    return SparseFamily.from_callable("bd", _bd_Q, N, [0.5], [2.0])


@pytest.fixture(scope="module")
def sparse_fit() -> PhiFit:
    return fit_surrogate(_bd_family(), steps=8, width=8, n_train=24, n_anchors=4, n_monitor=3, seed=2)


@pytest.fixture(scope="module")
def dense_fit() -> PhiFit:
    return fit_phi("cycle3", loss="kl", steps=6, n_train=24, monitor=False)


def test_both_fits_return_the_one_type_and_evaluate_returns_one_type(sparse_fit, dense_fit):
    import neural
    import neural.phi.surrogate

    via_fit_phi = fit_phi(_bd_Q, loss="residual", domain=[(0.5, 2.0)], steps=2, n_train=8, width=4, n_anchors=1,
                          n_monitor=0)
    for fit, system_type in [(dense_fit, PhiSystem), (sparse_fit, SparseFamily), (via_fit_phi, SparseFamily)]:
        assert type(fit) is PhiFit and isinstance(fit.system, system_type)
        assert repr(fit).startswith("PhiFit: ")
    ys = np.linspace(0.6, 1.9, 4)[:, None]
    ev_s, ev_d = sparse_fit.evaluate(ys), dense_fit.evaluate()
    assert type(ev_s) is PhiEvaluation and type(ev_d) is PhiEvaluation
    assert (ev_s.norm, ev_d.norm) == ("l1", "l2")
    # the fields of the other kind are None, never a stale array
    assert ev_d.exact_bound is None and ev_d.solve_seconds is None and ev_d.certificate_max is None
    assert ev_s.sharp_certificate is None and ev_d.sharp_certificate is not None
    # the removed class and the removed check are gone, not aliased
    assert not hasattr(neural, "SurrogateFit") and not hasattr(neural.phi.surrogate, "SurrogateFit")
    assert not hasattr(neural.phi.surrogate, "check_against_exact")
    assert neural.PhiFit is PhiFit and neural.PhiEvaluation is PhiEvaluation and neural.evaluate_phi is evaluate_phi


def test_sparse_evaluation_true_errors_match_the_closed_form(sparse_fit):
    ys = np.linspace(0.5, 2.0, 7)[:, None]
    ev = sparse_fit.evaluate(ys)
    phi = sparse_fit.model.predict(ys)
    closed = np.stack([_bd_closed(y) for y in ys])
    diff = phi - closed
    # the reference is the exact sparse solve, within its own certified bound of the closed form
    assert np.all(np.abs(ev.p_st - closed).sum(-1) <= ev.exact_bound + 1e-13)
    assert ev.exact_bound.max() < 1e-10
    tol = ev.exact_bound.max() + 1e-13     # the reported errors are against the exact solve, not the closed form
    np.testing.assert_allclose(ev.error_l1, np.abs(diff).sum(-1), rtol=0, atol=tol)
    np.testing.assert_allclose(ev.error_2, np.linalg.norm(diff, axis=-1), rtol=0, atol=tol)
    np.testing.assert_allclose(ev.abs_error, np.abs(diff).max(-1), rtol=0, atol=tol)
    np.testing.assert_allclose(ev.tv, 0.5 * np.abs(diff).sum(-1), rtol=0, atol=tol)
    # KL(p ‖ φ) moves by at most ‖Δp‖₁·max|log(p/φ)| (+ the Δp log p term) when p moves by Δp
    np.testing.assert_allclose(ev.kl, np.sum(closed * np.log(closed / phi), -1), rtol=1e-8, atol=100 * tol)
    np.testing.assert_allclose(ev.residual, [np.linalg.norm(_bd_Q(y).T @ q) for y, q in zip(ys, phi)], rtol=1e-12)
    assert ev.error_l1.min() > 1e-6          # a short fit: errors far above the reference's own
    # the certificate bounds the true ℓ1 error, and its max form is the weaker one
    assert ev.holds.all() and np.all(ev.error_l1 <= ev.certificate) and np.all(ev.certificate <= ev.certificate_max)
    np.testing.assert_array_equal(ev.slack, ev.exact_bound)
    assert np.all(ev.solve_seconds > 0) and ev.error is ev.error_l1
    # the same anchored certificate as certified_predict's own loop (3 nearest anchors, the smallest)
    pred = sparse_fit.certified_predict(ys, tol=1e300, add_anchors=False, tries=3)
    np.testing.assert_array_equal(ev.certificate, pred.surrogate_certificate)
    np.testing.assert_array_equal(ev.certificate_max, pred.certificate_max)


def test_the_closed_form_check_is_not_vacuous(sparse_fit):
    # negative control: the closed form of another family (rates 10 % higher) is far off the reported errors,
    # and a certificate cut below the error is caught by `holds`
    ys = np.linspace(0.5, 2.0, 7)[:, None]
    ev = sparse_fit.evaluate(ys)
    wrong = np.stack([_bd_closed(y, rate=3.3) for y in ys])
    assert np.abs(np.abs(ev.phi - wrong).sum(-1) - ev.error_l1).max() > 1e-2
    cut = ev.error_l1 * 0.5
    assert not np.any(cut + ev.exact_bound >= ev.error_l1)
    # a sparse family without anchors certifies nothing: inf, never a number
    bare = evaluate_phi(sparse_fit.model, sparse_fit.system, ys)
    assert np.all(np.isinf(bare.certificate)) and bare.summary()["uncertified"] == len(ys)
    np.testing.assert_array_equal(bare.error_l1, ev.error_l1)


def test_every_number_of_both_old_results_is_on_the_one_type(sparse_fit, dense_fit):
    # check_against_exact's dict: y, error_l1, certificate, certificate_max, exact_bound, solve_seconds, holds
    ys = np.linspace(0.6, 1.9, 3)[:, None]
    ev = sparse_fit.evaluate(ys)
    for key in ("y", "error_l1", "certificate", "certificate_max", "exact_bound", "solve_seconds", "holds"):
        assert getattr(ev, key).shape[0] == len(ys), key
    # the dense PhiEvaluation's fields, and the ℓ1 error beside them (from GTH)
    d = dense_fit.evaluate()
    for key in ("y", "phi", "p_st", "abs_error", "error_2", "tv", "kl", "residual", "certificate",
                "sharp_certificate", "slack", "holds"):
        assert getattr(d, key).shape[0] == len(d.y), key
    p = sp_ode.stationary_distribution(np.stack([dense_fit.system.Q(y) for y in d.y]))
    np.testing.assert_allclose(d.error_l1, np.abs(d.phi - p).sum(-1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(d.error_l1, 2 * d.tv, rtol=1e-15)
    assert d.error is d.error_2
    s_sum, d_sum = ev.summary(), d.summary()
    assert s_sum["norm"] == "l1" and d_sum["norm"] == "l2"
    assert {"max_error_l1", "max_certificate", "max_certificate_max", "max_exact_bound", "mean_exact_solve_seconds",
            "certificate_holds", "uncertified"} <= set(s_sum)
    assert {"max_abs_error", "max_error_2", "max_error_l1", "max_sharp_certificate", "certificate_holds",
            "median_certificate_ratio"} <= set(d_sum)
    assert s_sum["max_error_l1"] == ev.error_l1.max()


def test_sparse_evaluate_defaults_to_the_monitor_points_and_refuses_what_it_cannot_do(sparse_fit):
    ev = sparse_fit.evaluate()
    np.testing.assert_array_equal(ev.y, np.stack([a.y for a in sparse_fit.monitor]))
    # the learning curve's last held-out error, from the monitor's own exact solves (each within 1e-8)
    assert abs(ev.error_l1.max() - sparse_fit.history["max_error_l1"][-1]) < 1e-7
    with pytest.raises(ValueError, match="no points outside its box"):
        sparse_fit.evaluate(extrapolation=True)
    with pytest.raises(ValueError, match="`ys` is required for the sparse family"):
        evaluate_phi(sparse_fit.model, sparse_fit.system)
    with pytest.raises(ValueError, match=r"shape \(N, d\)"):
        sparse_fit.evaluate(np.zeros((2, 2)))


def test_one_certified_predict_for_both_and_a_dense_system_converted_once(dense_fit, sparse_fit):
    assert sparse_fit.sparse_family is sparse_fit.system
    fam = dense_fit.sparse_family
    assert isinstance(fam, SparseFamily) and fam is dense_fit.sparse_family and fam.n == 3
    fit = fit_phi("cycle3", loss="kl", steps=2, n_train=16, monitor=False)
    ys = np.linspace(-1.5, 1.5, 5)
    pred = fit.certified_predict(ys, tol=1e-14, max_anchors=2)    # everything falls back; only 2 kept
    assert pred.fell_back.all() and len(fit.anchors) == 2
    p = sp_ode.stationary_distribution(np.stack([fit.system.Q(np.array([y])) for y in ys]))
    assert np.abs(pred.values - p).sum(-1).max() < 1e-10
    import inspect

    assert "max_anchors" in inspect.signature(PhiFit.certified_predict).parameters


def test_subset_and_the_empty_evaluation():
    fam = _bd_family()
    fit = fit_surrogate(fam, steps=2, width=4, n_train=8, n_anchors=1, n_monitor=0)
    ev = fit.evaluate(design_points(fam.lower, fam.upper, 4, seed=3))
    part = ev.subset(np.array([True, False, True, False]))
    for f in fields(ev):
        v = getattr(ev, f.name)
        if isinstance(v, np.ndarray) and f.name != "skipped":
            np.testing.assert_array_equal(getattr(part, f.name), v[[0, 2]])
    empty = fit.evaluate(np.zeros((0, 1)))
    assert len(empty.y) == 0 and empty.norm == "l1" and empty.summary()["n_points"] == 0
    dense_empty = evaluate_phi(fit_phi("cycle3", steps=1, n_train=8, monitor=False).model, "cycle3",
                               np.zeros((0, 1)), extrapolation=True)
    assert dense_empty.phi.shape == (0, 3) and dense_empty.summary()["n_points"] == 0
