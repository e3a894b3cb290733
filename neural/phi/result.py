"""A fitted φ_θ and its check against p_st, one type for dense and sparse families: `PhiFit`, `PhiEvaluation`.

`neural.phi.fit.fit_phi` (a small dense family, `PhiSystem`) and `neural.phi.surrogate.fit_surrogate`
(a large sparse one, `SparseFamily`) both return a `PhiFit`; its `evaluate` returns a `PhiEvaluation`
for either, with the true errors against p_st(y) and the certificate.  What differs between the two
is only what can be afforded at each size:

- a dense family: p_st(y) by GTH and T4's 2-norm certificate ‖A^#‖₂·‖Q(y)ᵀφ_θ(y)‖₂ (with the
  sharper ‖Q(y)ᵀφ_θ(y)‖₂/σ(y)), which needs the dense group inverse A^# (docs/theory.md T4);
- a sparse family: p_st(y) by the exact sparse solve (`neural.phi.certificate.exact_solve`, with its own
  certified ℓ1 bound) and the anchored ℓ1 certificate 2·(ĥ/c)ᵀ|Q(y)ᵀφ_θ(y)| of docs/theory.md §7.8,
  which needs no dense matrix.

Why a module of its own: `fit_phi` trains a sparse family through `fit_surrogate`, so `neural.phi.fit`
imports `neural.phi.surrogate`; the one result type both return must sit below both (the import
contracts forbid a cycle between sibling modules).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import torch

from neural.phi.certificate import Anchor, CertifiedPrediction, certified_predict, certify, exact_solve
from neural.phi.families import PhiSample, PhiSystem, evaluation_points, resolve_system, sample
from neural.phi.model import FitSummary, PhiMLP
from neural.phi.sparse import SparseFamily
from sp_ode.core.validation import check_finite_array, check_positive

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

    from sp_ode.core.typing import ArrayLike, Float
    from sp_ode.markov.families import GeneratorFamily
    from sp_ode.systems.catalogue import CatalogueEntry
    from sp_ode.systems.network import NetworkSystem
    from sp_ode.systems.system import MasterEquationSystem

    # what neural.phi.families.resolve_system accepts
    PhiSystemLike = str | GeneratorFamily | MasterEquationSystem | CatalogueEntry | NetworkSystem | Callable

__all__ = ["PhiEvaluation", "PhiFit", "evaluate_phi", "evaluate_sample", "SURROGATE_FORMAT"]

EPS = np.finfo(np.float64).eps
# Rounding allowance in the certificate check, in units of n·eps (see `_rounding_slack`).
SLACK_C = 64.0
#: the format tag of a `fit_surrogate` checkpoint (written there, read by `PhiFit.load`)
SURROGATE_FORMAT = "sp-ode-phi-surrogate/1"
# anchors tried per point by the exact check, as `certified_predict`'s default `tries`
NEAREST = 3


# --- the evaluation --------------------------------------------------------------------

@dataclass(frozen=True)
class PhiEvaluation:
    """φ_θ against p_st at N points, with the certificate (all arrays (N,) unless noted).

    The true errors, for a dense or a sparse family alike:
    y (N, d), phi (N, n), p_st (N, n);
    abs_error = max_i |φ_i − p_i|;  error_2 = ‖φ − p‖₂;  error_l1 = ‖φ − p‖₁;  tv = ½‖φ − p‖₁;
    kl = KL(p ‖ φ);  residual = ‖Qᵀφ‖₂.

    The certificate, `norm` naming the error it bounds:

    - `norm = "l2"` (a dense `PhiSystem`, p_st by GTH): certificate = ‖A^#‖₂·residual (T4);
      sharp_certificate = residual/σ; slack the rounding allowance;
      holds = error_2 ≤ sharp_certificate + slack and error_2 ≤ certificate + slack.
    - `norm = "l1"` (a `SparseFamily`, p_st by the exact sparse solve): certificate = the anchored
      2·(ĥ/c)ᵀ|Qᵀφ| of docs/theory.md §7.8, the smallest over the nearest anchors (inf where none
      certifies); certificate_max = its T4 form 2·max(ĥ)/c·‖Qᵀφ‖₁; exact_bound = the exact solve's
      certified bound on its own ‖p − p_st‖₁; solve_seconds = the exact solves' times;
      slack = exact_bound; holds = error_l1 ≤ certificate + exact_bound (the certificate was not
      beaten, up to the reference's own error).

    The fields of the other kind are None.  extrapolation : whether the points lie outside the
    training domain; skipped (K, d) : extrapolation points dropped because Q(y) is not an irreducible
    generator there.
    """

    y: np.ndarray
    phi: np.ndarray
    p_st: np.ndarray
    abs_error: np.ndarray
    error_2: np.ndarray
    error_l1: np.ndarray
    tv: np.ndarray
    kl: np.ndarray
    residual: np.ndarray
    certificate: np.ndarray
    slack: np.ndarray
    holds: np.ndarray
    norm: str = "l2"
    sharp_certificate: np.ndarray | None = None
    certificate_max: np.ndarray | None = None
    exact_bound: np.ndarray | None = None
    solve_seconds: np.ndarray | None = None
    extrapolation: bool = False
    skipped: np.ndarray | None = None

    @property
    def error(self) -> np.ndarray:
        """The error the certificate bounds: `error_2` (norm "l2") or `error_l1` (norm "l1")."""
        return self.error_2 if self.norm == "l2" else self.error_l1

    def subset(self, index) -> PhiEvaluation:
        """The evaluation at the points `index` selects (a mask, indices or a slice); `skipped` is kept whole."""
        per_point = {f.name: getattr(self, f.name)[index] for f in fields(self)
                     if f.name != "skipped" and isinstance(getattr(self, f.name), np.ndarray)}
        return replace(self, **per_point)

    def summary(self) -> dict:
        """Scalars for reports: maxima over the points, and whether the certificate held everywhere."""
        skipped = 0 if self.skipped is None else int(len(self.skipped))
        if len(self.y) == 0:
            return {"n_points": 0, "extrapolation": self.extrapolation, "norm": self.norm, "skipped": skipped}
        out = {
            "n_points": int(len(self.y)),
            "extrapolation": self.extrapolation,
            "norm": self.norm,
            "max_abs_error": float(self.abs_error.max()),
            "argmax_abs_error_y": self.y[int(np.argmax(self.abs_error))].tolist(),
            "max_error_2": float(self.error_2.max()),
            "max_error_l1": float(self.error_l1.max()),
            "max_tv": float(self.tv.max()),
            "max_kl": float(self.kl.max()),
            "mean_kl": float(self.kl.mean()),
            "max_residual": float(self.residual.max()),
            "max_certificate": float(self.certificate.max()),
        }
        if self.sharp_certificate is not None:
            out["max_sharp_certificate"] = float(self.sharp_certificate.max())
        if self.certificate_max is not None:
            out["max_certificate_max"] = float(self.certificate_max.max())
        if self.exact_bound is not None:
            out["max_exact_bound"] = float(self.exact_bound.max())
        if self.solve_seconds is not None:
            out["mean_exact_solve_seconds"] = float(self.solve_seconds.mean())
        out.update({
            # how loose the bound is where it matters: certificate / the true error it bounds
            "median_certificate_ratio": float(np.median(self.certificate / np.maximum(self.error, 1e-300))),
            "certificate_holds": bool(self.holds.all()),
            "certificate_violations": int((~self.holds).sum()),
            "uncertified": int(np.isinf(self.certificate).sum()),
            "skipped": skipped,
        })
        return out


def _empty(d: int, n: int, *, norm: str, extrapolation: bool, skipped: np.ndarray | None) -> PhiEvaluation:
    z = np.zeros(0)
    return PhiEvaluation(np.zeros((0, d)), np.zeros((0, n)), np.zeros((0, n)), z, z, z, z, z, z, z, z,
                         np.zeros(0, dtype=bool), norm=norm, sharp_certificate=z if norm == "l2" else None,
                         extrapolation=extrapolation, skipped=skipped)


def _rounding_slack(Q: np.ndarray, q: np.ndarray, ginv: np.ndarray) -> np.ndarray:
    """What float64 rounding alone may add to ‖q − p‖₂ beyond the computed bound, per point (N,).

    fl(Qᵀq) differs from Qᵀq by at most n·eps·(|Q|ᵀ|q|) componentwise, and p_st
    (GTH) and 1ᵀq are accurate to a few n·eps; SLACK_C covers the constants.
    """
    n = Q.shape[-1]
    r_err = SLACK_C * n * EPS * np.linalg.norm(np.einsum("kji,kj->ki", np.abs(Q), np.abs(q)), axis=-1)
    return ginv * r_err + SLACK_C * n * EPS


def _kl(p: np.ndarray, log_phi: np.ndarray) -> np.ndarray:
    """KL(p ‖ φ) per row, 0·log 0 = 0, clipped at 0 (rounding can make it slightly negative)."""
    kl = np.sum(np.where(p > 0, p * (np.log(np.where(p > 0, p, 1.0)) - log_phi), 0.0), axis=-1)
    return np.maximum(kl, 0.0)


def evaluate_sample(model: PhiMLP, s: PhiSample, *, extrapolation: bool = False) -> PhiEvaluation:
    """φ_θ against p_st (GTH) with T4's 2-norm certificate at the points of a dense family's sample `s`."""
    with torch.no_grad():
        log_phi = model.log_prob(torch.as_tensor(s.y)).numpy()
    phi = np.exp(log_phi)
    diff = phi - s.p
    error_2 = np.linalg.norm(diff, axis=-1)
    error_l1 = np.abs(diff).sum(-1)
    residual = np.linalg.norm(np.einsum("kji,kj->ki", s.Q, phi), axis=-1)
    certificate = s.ginv_norm * residual
    sharp = residual / s.sigma
    slack = _rounding_slack(s.Q, phi, s.ginv_norm)
    # The sharp bound is the smaller one, so checking it checks T4's bound too.
    holds = (error_2 <= sharp + slack) & (error_2 <= certificate + slack)
    return PhiEvaluation(s.y, phi, s.p, np.abs(diff).max(-1), error_2, error_l1, 0.5 * error_l1, _kl(s.p, log_phi),
                         residual, certificate, slack, holds, norm="l2", sharp_certificate=sharp,
                         extrapolation=extrapolation, skipped=s.skipped)


def nearest_anchors(anchors: Sequence[Anchor], z: np.ndarray, count: int) -> list[Anchor]:
    """The `count` anchors nearest to z (a point mapped to [−1, 1]ᵈ), nearest first."""
    if not anchors:
        return []
    Z = np.stack([a.z for a in anchors])
    return [anchors[j] for j in np.argsort(((Z - z) ** 2).sum(axis=1))[:count]]


def _check_against_exact(model: PhiMLP, family: SparseFamily, ys: np.ndarray, anchors: Sequence[Anchor], *,
                         extrapolation: bool) -> PhiEvaluation:
    """φ_θ against exact sparse solves at the rows of `ys` (N, d), with the anchored ℓ1 certificate.

    The exact solve is `neural.phi.certificate.exact_solve` (SuperLU of the pinned system, pinned at
    φ_θ's most probable state; its own bound is `exact_bound`); the certificate is the smallest of
    `certify` over the `NEAREST` anchors nearest to each point.
    """
    N, n = len(ys), family.n
    if N == 0:
        return _empty(family.d, n, norm="l1", extrapolation=extrapolation, skipped=None)
    q = model.predict(ys)
    with torch.no_grad():
        log_q = model.log_prob(torch.as_tensor(ys, device=model.centre.device)).cpu().numpy()
    P = np.empty((N, n))
    residual, cert, cmax, eb, secs = (np.empty(N) for _ in range(5))
    zs = family.normalised(ys)
    for i, (y, qy) in enumerate(zip(ys, q)):
        Q = family.Q(y)
        t = time.perf_counter()
        P[i], _h, _k, eb[i], _H = exact_solve(Q, k=int(np.argmax(qy)))
        secs[i] = time.perf_counter() - t
        residual[i] = np.linalg.norm(Q.T @ qy)
        outs = [certify(Q, qy, a) for a in nearest_anchors(anchors, zs[i], NEAREST)]
        best = min(outs, key=lambda o: o["certificate"]) if outs else {"certificate": math.inf,
                                                                       "certificate_max": math.inf}
        cert[i], cmax[i] = best["certificate"], best["certificate_max"]
    diff = q - P
    error_l1 = np.abs(diff).sum(-1)
    return PhiEvaluation(ys, q, P, np.abs(diff).max(-1), np.linalg.norm(diff, axis=-1), error_l1, 0.5 * error_l1,
                         _kl(P, log_q), residual, cert, eb, cert + eb >= error_l1, norm="l1", certificate_max=cmax,
                         exact_bound=eb, solve_seconds=secs, extrapolation=extrapolation)


def _check_points(ys, d: int) -> np.ndarray:
    ys = check_finite_array("ys", ys)
    ys = ys.reshape(-1, 1) if (d == 1 and ys.ndim == 1) else ys
    if ys.ndim != 2 or ys.shape[1] != d:
        raise ValueError(f"`ys` must have shape (N, d) with d = {d}; got {ys.shape}.")
    return ys


def _check_match(model: PhiMLP, system: PhiSystem | SparseFamily) -> None:
    if model.d != system.d or model.n != system.n:
        raise ValueError(f"`model` maps ℝ^{model.d} to {model.n} states but system {system.name!r} has "
                         f"d = {system.d}, n = {system.n}.")


def evaluate_phi(model: PhiMLP, system: PhiSystemLike | PhiSystem | SparseFamily = "cycle3",
                 ys: Float[ArrayLike, "N d"] | None = None, *,
                 domain: Float[ArrayLike, "d 2"] | Float[ArrayLike, " 2d"] | None = None,
                 extrapolation: bool = False, anchors: Sequence[Anchor] | None = None) -> PhiEvaluation:
    """Compare φ_θ with p_st at the points `ys` and certify the error.

    A dense family: p_st by GTH and T4's 2-norm certificate (`norm = "l2"`).  A sparse family
    (a `SparseFamily`, or what `resolve_system` turns into one: a network, `"network:NAME"`, a
    callable returning `scipy.sparse`): p_st by the exact sparse solve at each point and the
    anchored ℓ1 certificate from `anchors` (`norm = "l1"`; inf at every point without anchors).
    [`PhiEvaluation`][neural.phi.result.PhiEvaluation] says what each field holds.

    Parameters
    ----------
    model : PhiMLP
    system : family name, GeneratorFamily, SparseFamily, `'file.py:FUNCTION'` or callable (see `fit_phi`)
    ys : array_like (N, d), optional
        Default, for a dense family: the held-out grid inside the domain, or with
        `extrapolation=True` the shell outside it (there, points where Q(y) is not an irreducible
        generator are skipped and listed in `skipped`, since A1–A2 are only assumed on the domain).
        Required for a sparse family (it has no held-out grid).
    domain : optional, as in `fit_phi`
    extrapolation : bool
        Whether the points lie outside the training domain (recorded; for a dense family it also
        picks the default points and skips invalid Q(y)).
    anchors : sequence of neural.phi.certificate.Anchor, optional
        A sparse family's certifying exact solves (a fit's `anchors`); ignored for a dense family.

    Returns
    -------
    PhiEvaluation

    Raises
    ------
    TypeError
        `model` is not a PhiMLP.
    ValueError
        `ys` of the wrong shape or not finite, or missing for a sparse family; model and system
        disagree on d or n; a Q(y) inside the domain that is not a generator (the message names y).
    sp_ode.NotIrreducibleError
        Q(y) reducible at some y inside the domain (the message names y).
    """
    if not isinstance(model, PhiMLP):
        raise TypeError(f"`model` must be a neural.PhiMLP; got {type(model).__name__}.")
    sys_ = system if isinstance(system, (PhiSystem, SparseFamily)) else resolve_system(system, domain)
    _check_match(model, sys_)
    if isinstance(sys_, SparseFamily):
        if ys is None:
            raise ValueError(f"`ys` is required for the sparse family {sys_.name!r} (n = {sys_.n}): it has no "
                             "held-out grid (PhiFit.evaluate() uses the fit's monitor points).")
        return _check_against_exact(model, sys_, _check_points(ys, sys_.d), list(anchors or []),
                                    extrapolation=extrapolation)
    if ys is None:
        inside, outside = evaluation_points(sys_)
        ys = outside if extrapolation else inside
    else:
        ys = _check_points(ys, sys_.d)
    s = sample(sys_, ys, skip_invalid=extrapolation)
    if len(s) == 0:
        return _empty(sys_.d, sys_.n, norm="l2", extrapolation=extrapolation, skipped=s.skipped)
    return evaluate_sample(model, s, extrapolation=extrapolation)


# --- the checkpoint's anchors ----------------------------------------------------------

def anchors_to_state(anchors: Sequence[Anchor]) -> dict:
    """Anchors as tensors and lists for a `fit_surrogate` checkpoint (`torch.load(weights_only=True)` reads them)."""
    return {"y": torch.as_tensor(np.stack([a.y for a in anchors])), "k": [int(a.k) for a in anchors],
            "h": torch.as_tensor(np.stack([a.h for a in anchors])), "p": torch.as_tensor(np.stack([a.p for a in anchors])),
            "H": [float(a.H) for a in anchors], "bound": [float(a.bound) for a in anchors],
            "seconds": [float(a.seconds) for a in anchors]} if anchors else {}


def anchors_from_state(state: dict, family: SparseFamily) -> list[Anchor]:
    """The anchors `anchors_to_state` wrote, on `family` (which maps their points to [−1, 1]ᵈ)."""
    if not state:
        return []
    ys = state["y"].numpy()
    zs = family.normalised(ys)
    return [Anchor(ys[i], zs[i], state["k"][i], state["h"][i].numpy(), state["H"][i], state["p"][i].numpy(),
                   state["bound"][i], state["seconds"][i]) for i in range(len(ys))]


# --- the fit ---------------------------------------------------------------------------

@dataclass(repr=False)
class PhiFit(FitSummary):
    """The result of [`fit_phi`][neural.phi.fit.fit_phi] and of [`fit_surrogate`][neural.phi.surrogate.fit_surrogate].

    Attributes
    ----------
    model : PhiMLP (trained)
    system : PhiSystem or SparseFamily
        The dense family `fit_phi` trained on, or the sparse family (`fit_surrogate`)
    loss : "kl" or "residual"
    final_loss : float
        The training loss after the last step
    history : dict of lists
        `step`, `loss` at every recorded step; a dense fit, when monitored, `max_abs_error` and
        `max_certificate` (T4, 2-norm) on the held-out monitor grid; a sparse fit `seconds`,
        `loss_residual`, `loss_kl` (recorded separately), and on the monitor points `max_error_l1`
        (true) and `max_certificate` (anchored, ℓ1)
    status : "ok"
        Or "nonfinite" when the loss stopped being finite (training stopped there)
    message : str
    train_seconds, setup_seconds : float
        Optimisation time; validation and precomputation time
    config : dict
        Every setting used
    anchors : list of neural.phi.certificate.Anchor
        Exact solves that certify (docs/theory.md §7.8): a sparse fit's design of them; a dense fit
        starts without and keeps the fallback solves of `certified_predict`
    monitor : list of Anchor
        A sparse fit's held-out exact solves behind its learning curve (empty for a dense fit)
    """

    model: PhiMLP
    system: PhiSystem | SparseFamily
    loss: str
    final_loss: float
    history: dict
    status: str
    message: str
    train_seconds: float
    setup_seconds: float
    config: dict = field(default_factory=dict)
    anchors: list = field(default_factory=list)
    monitor: list = field(default_factory=list)

    @cached_property
    def sparse_family(self) -> SparseFamily:
        """`system` as a SparseFamily: itself for a sparse fit; a dense `PhiSystem` converted once, on first use."""
        s = self.system
        if isinstance(s, SparseFamily):
            return s
        return SparseFamily.from_callable(s.name, s.Q, s.n, s.lower, s.upper)

    def evaluate(self, ys: Float[ArrayLike, "N d"] | None = None, *, extrapolation: bool = False) -> PhiEvaluation:
        """[`evaluate_phi`][neural.phi.result.evaluate_phi] on this fit's system (a sparse one with this fit's anchors).

        `ys` defaults to the held-out grid of a dense family (the shell outside it with
        `extrapolation=True`) and to the monitor points of a sparse fit.

        Raises
        ------
        ValueError
            As `evaluate_phi`; no `ys` for a sparse fit without monitor points, or with `extrapolation=True`.
        """
        if isinstance(self.system, SparseFamily) and ys is None:
            if extrapolation or not self.monitor:
                raise ValueError(f"`ys` is required: the sparse fit of {self.system.name!r} has "
                                 + ("no points outside its box to default to." if extrapolation
                                    else "no monitor points to default to."))
            ys = np.stack([a.y for a in self.monitor])
        return evaluate_phi(self.model, self.system, ys, extrapolation=extrapolation, anchors=self.anchors)

    def certified_predict(self, ys: Float[ArrayLike, "N d"], tol: float = 1e-3, *, tries: int = 3,
                          add_anchors: bool = True, max_anchors: int = 512,
                          show_progress: bool = False) -> CertifiedPrediction:
        """φ_θ at the rows of `ys` (N, d), each with a certified bound on ‖φ_θ(y) − p_st(y)‖₁.

        The certificate is 2·Σ_j h_j(y)|(Q(y)ᵀφ_θ(y))_j| with the hitting times h(y) of a
        pinned state bounded through this fit's anchors (docs/theory.md §7.1, §7.8): one
        sparse product with Q(y) per anchor tried (the `tries` nearest), no solve.  Points whose
        certificate exceeds `tol` (or that no anchor certifies) get the exact sparse solve instead,
        and become anchors for later calls when `add_anchors`, up to `max_anchors` in all.  A dense
        fit's system is used through `sparse_family`.  What a sweep's "surrogate" path would call.

        Returns
        -------
        neural.phi.certificate.CertifiedPrediction
            `values` (N, n), `certificate` (N,) on what is returned, `surrogate_certificate`
            (N,) of φ_θ, `fell_back` (N,) bool, `anchor` (N,), `seconds`.

        Raises
        ------
        ValueError
            `ys` not of shape (N, d) or not finite; `tol` not > 0; Q(y) not a generator at some y.
        """
        tol = check_positive("tol", tol)
        family = self.sparse_family
        return certified_predict(self.model, family, self.anchors, _check_points(ys, family.d), tol=tol,
                                 tries=tries, add_anchors=add_anchors, max_anchors=max_anchors,
                                 show_progress=show_progress)

    @classmethod
    def load(cls, checkpoint: str | Path, family: SparseFamily) -> PhiFit:
        """The fit saved in a `fit_surrogate` checkpoint (its `checkpoint=` file), on the family it was trained on.

        The checkpoint holds the network, its settings, the learning curve and the anchors'
        exact solves (y, p_st(y), the hitting times h of docs/theory.md §7.8), but not y ↦ Q(y),
        which is code: `family` supplies it and must be the one trained on (same n, d and box).
        Nothing is re-solved, so the loaded fit certifies exactly as the trained one did.
        `train_seconds` is the training time recorded in the checkpoint; `setup_seconds` is 0.

        Raises
        ------
        ValueError
            `checkpoint` is not a φ_θ surrogate checkpoint, or `family` is not the family it
            was trained on (its n, d or box differ from the checkpoint's).
        """
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or state.get("format") != SURROGATE_FORMAT:
            raise ValueError(f"`checkpoint` {str(checkpoint)!r} is not a φ_θ surrogate checkpoint "
                             f"(format {SURROGATE_FORMAT!r}).")
        st = state["settings"]
        box = np.stack([family.lower, family.upper], 1).tolist()
        seen = {"n": family.n, "d": family.d, "domain": box}
        diff = {k: (st.get(k), v) for k, v in seen.items() if st.get(k) != v}
        if diff:
            raise ValueError(f"`family` {family.name!r} is not the family `checkpoint` {str(checkpoint)!r} was trained "
                             f"on: {', '.join(f'{k} {a!r} there, {b!r} here' for k, (a, b) in diff.items())}.")
        model = PhiMLP(family.d, family.n, width=st["width"], depth=st["depth"], lower=family.lower,
                       upper=family.upper, activation=st["activation"], head=st["head"], coords=family.coords,
                       rank=st["rank"])
        model.load_state_dict(state["model"])
        history = state["history"]
        return cls(model.eval(), family, st["loss"], float(history["loss"][-1]) if history.get("loss") else math.nan,
                   history, "ok", f"loaded from {checkpoint} (step {state['step']})", float(state["train_seconds"]),
                   0.0, {**st, "steps_done": int(state["step"])}, anchors_from_state(state["anchors"], family),
                   anchors_from_state(state["monitor"], family))
