"""The certificate of φ_θ at every evaluation point, at scale (docs/theory.md §7.1, §7.8).

For a distribution q on the n states and a pinned state k, docs/theory.md §7.1 gives

    ‖q − p_st(y)‖₁ ≤ 2 · Σ_{j≠k} h_j(y) |(Q(y)ᵀq)_j|  ≤  2 · max_j h_j(y) · ‖Q(y)ᵀq‖₁,

h(y) = G(y)⁻¹1 the mean hitting times of k (G = −Q with row and column k deleted).  The
left form (weighted by h) is the sharper one and is what `certificate` means here; the right
form, T4's 2·max E[τ_k]·‖Qᵀq‖₁, is reported beside it as `certificate_max`.

h(y) is one sparse solve.  §7.8 reuses it across points without any Lipschitz constant:
for *any* ĥ ≥ 0 (with ĥ_k = 0) and c := min_{i≠k} (G(y')ĥ)_i > 0, G(y')⁻¹ ≥ 0 gives
h(y') ≤ ĥ / c componentwise.  So an **anchor** — an exact solve at some y_a, keeping its
hitting-time vector ĥ = h(y_a) — certifies the hitting times at any y' where the check
c > 0 passes, at the cost of one sparse matrix–vector product with Q(y').  Every quantity
is evaluated in floating point with its rounding allowance γ_m(|Q||·|) subtracted or added
(m the most terms in a row or column sum, +2 for the diagonal), so the bound is rigorous up
to the rounding of those few extra sums, as in `sp_ode.markov.bounds`.

An anchor's exact solve: SuperLU (`scipy.sparse.linalg.splu`) of G for the pinned state k
gives both h = G⁻¹1 and, with the transposed factors, p_st = (x with x_k = 1)/Σx from
Gᵀx = Q[k, −k]ᵀ (docs/theory.md §7.1); p_st's own bound comes from
`sp_ode.markov.bounds.posterior_bound`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from sp_ode.markov.bounds import posterior_bound
from sp_ode.markov.stationary import stationary_distribution

__all__ = ["Anchor", "CertifiedPrediction", "exact_solve", "certify", "certified_predict"]

_U = 2.0**-53
#: an anchor's exact solve must certify ‖p − p_st‖₁ below this (its p feeds the optional KL term)
ANCHOR_TOL = 1e-8
# re-pin the exact solve at the mode unless the first pinned state holds at least this fraction of max p:
# hitting times of an improbable state are long and change fast with y, which weakens the certificate
_REPIN_BELOW = 0.5


def _gamma(m: int) -> float:
    mu = m * _U
    return mu / (1.0 - mu)


def _terms(Q: sp.csr_array) -> int:
    """The most terms in a row or column sum of Q, plus two for the rounded diagonal."""
    rows = np.diff(Q.indptr).max(initial=0)
    cols = np.bincount(Q.indices, minlength=Q.shape[0]).max(initial=0)
    return int(max(rows, cols)) + 2


@dataclass(frozen=True)
class Anchor:
    """An exact solve at one point, kept to certify others (module docstring).

    y (d,) the point; z (d,) it in [−1, 1]ᵈ; k the pinned state; h (n,) its hitting times of k
    (h_k = 0); H a certified bound on max h at y; p (n,) p_st(y) with `bound` on its ℓ1 error;
    seconds the cost of the solve.
    """

    y: np.ndarray
    z: np.ndarray
    k: int
    h: np.ndarray
    H: float
    p: np.ndarray
    bound: float
    seconds: float


def exact_solve(Q, *, k: int | None = None) -> tuple[np.ndarray, np.ndarray, int, float, float]:
    """p_st, the hitting times h of a pinned state k, k, p's ℓ1 bound and the certified max h; one SuperLU.

    The pinned state must be probable: x = p/p_k overflows or loses all accuracy when p_k is tiny
    (p ≈ 1e-300 at the corners of a CME grid).  With `k` given (e.g. φ_θ's most probable state),
    the solve is repeated once at the mode of its answer when p_k < ½ max p; with `k` None the
    mode is found first by `sp_ode.stationary_distribution` (AMG-GMRES, certified, which picks its
    own probable pinned state).

    Raises
    ------
    RuntimeError
        The pinned matrix is exactly singular (Q is reducible: p_st is not unique).
    """
    Q = sp.csr_array(Q, dtype=np.float64)
    n = Q.shape[0]
    if n == 1:
        return np.ones(1), np.zeros(1), 0, 0.0, 0.0
    if k is None:
        k = int(np.argmax(stationary_distribution(Q)))
    for attempt in range(2):
        keep = np.ones(n, dtype=bool)
        keep[k] = False
        G = (-Q)[keep][:, keep].tocsc()
        lu = spla.splu(G)
        b = Q[[k], :].toarray().ravel()[keep]
        x = lu.solve(b, trans="T")
        p = np.insert(np.maximum(x, 0.0), k, 1.0)
        p = p / p.sum()
        if attempt == 0 and not p[k] >= _REPIN_BELOW * p.max():
            k = int(np.argmax(p))
            continue
        break
    h_red = lu.solve(np.ones(n - 1))
    bound, H = posterior_bound(Q, p, k, h_red)
    return p, np.insert(np.maximum(h_red, 0.0), k, 0.0), k, float(bound), float(H)


def make_anchor(family, y, *, k: int | None = None) -> Anchor:
    """An `Anchor` at y: the exact solve of Q(y) with its hitting-time vector."""
    t0 = time.perf_counter()
    y = np.asarray(y, dtype=np.float64).reshape(family.d)
    p, h, kk, bound, H = exact_solve(family.Q(y), k=k)
    if not bound <= ANCHOR_TOL:
        raise RuntimeError(f"the exact solve at y = {y.tolist()} certifies only ‖p − p_st‖₁ ≤ {bound:.3g} "
                           f"(> {ANCHOR_TOL:g}); it cannot serve as an anchor.")
    return Anchor(y, family.normalised(y[None])[0], kk, h, H, p, bound, time.perf_counter() - t0)


def supersolution_constant(Q: sp.csr_array, h: np.ndarray, k: int, m: int | None = None) -> float:
    """c = min_{i≠k} (G ĥ)_i minus its rounding, G = −Q with row/column k deleted; ĥ_k = 0 (§7.8).

    With ĥ ≥ 0 and c > 0, the hitting times of k under Q obey h ≤ ĥ/c componentwise.
    """
    m = _terms(Q) if m is None else m
    Qh = Q @ h
    diag = Q.diagonal()
    # (Gĥ)_i = −(Qĥ)_i for i ≠ k since ĥ_k = 0; |G|ĥ = (Qĥ − 2·diag(Q)∘ĥ) as off-diagonal rates are ≥ 0
    lower = -Qh - _gamma(m) * np.abs(Qh - 2.0 * diag * h)
    lower[k] = np.inf
    return float(lower.min()) * (1 - 4 * _U)


def certify(Q: sp.csr_array, q: np.ndarray, anchor: Anchor, *, m: int | None = None) -> dict:
    """The certificate of q at Q(y) from one anchor (module docstring); inf when the check c > 0 fails.

    Returns {"certificate", "certificate_max", "hitting_bound", "c", "residual_l1"}:
    `certificate` = 2·(ĥ/c)ᵀ|Qᵀq| (+ rounding, + |1ᵀq − 1|) ≥ ‖q − p_st‖₁;
    `certificate_max` = 2·max(ĥ)/c·‖Qᵀq‖₁ (+ the same), T4's form; `hitting_bound` = max(ĥ)/c.
    """
    m = _terms(Q) if m is None else m
    c = supersolution_constant(Q, anchor.h, anchor.k, m)
    q = np.asarray(q, dtype=np.float64)
    r = Q.T @ q
    absr = np.abs(r) + _gamma(m) * np.abs(r - 2.0 * Q.diagonal() * q)   # |fl(Qᵀq) − Qᵀq| ≤ γ_m |Q|ᵀq
    total = math.fsum(q)
    eta = abs(total - 1.0) + 2 * _U * total
    res_l1 = float(np.abs(r).sum())
    if not (c > 0) or not np.all(q >= 0) or not total > 0:
        return {"certificate": math.inf, "certificate_max": math.inf, "hitting_bound": math.inf, "c": c,
                "residual_l1": res_l1}
    weighted = float(anchor.h @ absr) / c
    H = float(anchor.h.max()) / c
    grow = (1 + 2 * q.size * _U)  # the two n-term sums above
    return {"certificate": 2.0 * weighted / total * grow + eta,
            "certificate_max": 2.0 * H * float(absr.sum()) / total * grow + eta,
            "hitting_bound": H, "c": c, "residual_l1": res_l1}


@dataclass
class CertifiedPrediction:
    """φ_θ at N points with the certificate at each, exact solves where it missed `tol`.

    Attributes (N points)
    ----------
    y (N, d);  values (N, n) — φ_θ(y), or the exact p_st(y) where `fell_back`;
    certificate (N,) — the bound on ‖values − p_st‖₁ actually returned (the exact solve's own
    bound where it fell back);  surrogate_certificate (N,) — φ_θ's certificate before any fallback;
    certificate_max (N,) — T4's 2·max E[τ]·‖Qᵀφ_θ‖₁ form;  hitting_bound (N,);
    anchor (N,) — index of the anchor used (−1: none passed, so a fresh solve);
    fell_back (N,) bool;  tol;  seconds — dict of wall times (evaluate, assemble, certify, fallback);
    anchors_added — anchors created along the way (fallback solves are kept as anchors).
    """

    y: np.ndarray
    values: np.ndarray
    certificate: np.ndarray
    surrogate_certificate: np.ndarray
    certificate_max: np.ndarray
    hitting_bound: np.ndarray
    anchor: np.ndarray
    fell_back: np.ndarray
    tol: float
    seconds: dict
    anchors_added: int = 0

    def summary(self) -> dict:
        i = int(np.argmax(self.surrogate_certificate)) if len(self.y) else 0
        return {"n_points": int(len(self.y)), "tol": self.tol,
                "max_surrogate_certificate": float(self.surrogate_certificate.max()) if len(self.y) else 0.0,
                "argmax_y": self.y[i].tolist() if len(self.y) else None,
                "median_surrogate_certificate": float(np.median(self.surrogate_certificate)) if len(self.y) else 0.0,
                "max_certificate_returned": float(self.certificate.max()) if len(self.y) else 0.0,
                "fell_back": int(self.fell_back.sum()), "anchors_added": self.anchors_added,
                "seconds": self.seconds}


def certified_predict(model, family, anchors: list, ys, *, tol: float = 1e-3, tries: int = 3,
                      add_anchors: bool = True, max_anchors: int = 512, values: np.ndarray | None = None,
                      show_progress: bool = False) -> CertifiedPrediction:
    """φ_θ at the rows of `ys` with the certificate at every point; exact solves where it exceeds `tol`.

    Each point tries its `tries` nearest anchors (in the box mapped to [−1, 1]ᵈ) and keeps the
    smallest certificate.  A point whose certificate exceeds `tol`, or that no anchor certifies,
    falls back to the exact sparse solve (`exact_solve`, pinned at φ_θ's most probable
    state); with `add_anchors` that solve becomes an anchor for the points after it, up to
    `max_anchors` in all (each keeps 2n numbers).  `anchors` is extended in place.
    """
    from sp_ode.core.reporting import progress

    ys = np.asarray(ys, dtype=np.float64).reshape(-1, family.d)
    N = len(ys)
    t0 = time.perf_counter()
    vals = model.predict(ys) if values is None else np.array(values, dtype=np.float64)
    t_eval = time.perf_counter() - t0
    cert = np.full(N, np.inf)
    cmax = np.full(N, np.inf)
    hb = np.full(N, np.inf)
    which = np.full(N, -1)
    back = np.zeros(N, dtype=bool)
    returned = np.full(N, np.inf)
    t_asm = t_cert = t_fb = 0.0
    added = 0
    zs = family.normalised(ys)
    for i in progress(range(N), desc="certify", disable=None if show_progress else True):
        t = time.perf_counter()
        Q = family.Q(ys[i])
        m = _terms(Q)
        t_asm += time.perf_counter() - t
        t = time.perf_counter()
        if anchors:
            Z = np.stack([a.z for a in anchors])
            order = np.argsort(((Z - zs[i]) ** 2).sum(axis=1))[:tries]
            for j in order:
                out = certify(Q, vals[i], anchors[j], m=m)
                if out["certificate"] < cert[i]:
                    cert[i], cmax[i], hb[i], which[i] = (out["certificate"], out["certificate_max"],
                                                         out["hitting_bound"], j)
        t_cert += time.perf_counter() - t
        returned[i] = cert[i]
        if not cert[i] <= tol:
            t = time.perf_counter()
            p, h, k, bound, H = exact_solve(Q, k=int(np.argmax(vals[i])))
            vals[i], returned[i], back[i] = p, bound, True
            if add_anchors and len(anchors) < max_anchors:
                anchors.append(Anchor(ys[i].copy(), zs[i].copy(), k, h, H, p, bound, time.perf_counter() - t))
                added += 1
            t_fb += time.perf_counter() - t
    seconds = {"evaluate": t_eval, "assemble_Q": t_asm, "certify": t_cert, "fallback_solves": t_fb,
               "total": time.perf_counter() - t0}
    return CertifiedPrediction(ys, vals, returned, cert, cmax, hb, which, back, float(tol), seconds, added)
