"""Checks of proof.md §5 (T4: variational characterisation and the a-posteriori certificate).

On the simplex, p_st is the unique zero of R(q) = ‖Qᵀq‖² and the unique minimiser
of KL(p_st ‖ q); and every q on the simplex obeys ‖q − p_st‖ ≤ ‖A^#‖ ‖Qᵀq‖
(A = Qᵀ), because q − p_st = A^# A q (Lemma 9, checked exactly in
check_group_inverse.py).  Here, on random badly scaled generators: the bound in
the 2-norm (and ∞→∞ via the induced norm) for random q, the injectivity of A on
1^⊥ (so the zero of R is unique; it fails for a reducible Q), and minimisation
of R and of KL over softmax logits recovering p_st.

    python proofs/check_certificate.py [--smoke] [--json]
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from _instances import random_irreducible, random_reducible, sizes  # noqa: E402
from scipy.optimize import least_squares, minimize  # noqa: E402
from scipy.special import softmax  # noqa: E402

import sp_ode  # noqa: E402
from sp_ode.cli.claims import ClaimSet  # noqa: E402

claims = ClaimSet("check_certificate.py")
EPS = np.finfo(np.float64).eps


@claims.claim(
    "T4.bound",
    "For q on the simplex: ||q - p_st|| <= ||A^#|| ||Q^T q|| (2-norm and infinity-norm), on random "
    "generators and random q (Dirichlet, and q close to p_st).",
    "numpy; A^# from sp_ode.group_inverse; slack of rounding only (c n eps cond)",
)
def certificate_bound(smoke: bool):
    rng = np.random.default_rng(4)
    worst = {2: 0.0, np.inf: 0.0}
    count = 0
    for n in sizes(smoke):
        for _ in range(3 if smoke else 10):
            Q = random_irreducible(rng, n)
            p = sp_ode.stationary_distribution(Q)
            G = sp_ode.group_inverse(Q)
            slack = 1 + 1e3 * n * EPS * np.linalg.cond(G)
            qs = [rng.dirichlet(np.ones(n)) for _ in range(20)]
            qs += [np.abs(p + 1e-3 * rng.standard_normal(n) * p) for _ in range(5)]
            for q in qs:
                q = q / q.sum()
                for ord_ in (2, np.inf):
                    err = np.linalg.norm(q - p, ord_)
                    bound = np.linalg.norm(G, ord_) * np.linalg.norm(Q.T @ q, ord_)
                    ratio = err / (bound * slack)
                    worst[ord_] = max(worst[ord_], ratio)
                    count += 1
    ok = all(v <= 1.0 for v in worst.values())
    return ok, f"{count} cases; max err/bound: 2-norm {worst[2]:.3f}, inf-norm {worst[np.inf]:.3f}"


@claims.claim(
    "T4.unique-zero",
    "A = Q^T is injective on 1-perp for irreducible Q (so R(q) = ||Q^T q||^2 has the single zero p_st on the "
    "simplex); for a reducible Q with two closed classes it is not.",
    "smallest singular value of A restricted to 1-perp (numpy SVD)",
)
def unique_zero(smoke: bool):
    rng = np.random.default_rng(5)
    smallest = np.inf
    for n in sizes(smoke):
        if n < 4:
            continue
        basis = np.linalg.svd(np.ones((1, n)))[2][1:].T  # orthonormal basis of 1-perp, (n, n-1)
        Q = random_irreducible(rng, n)
        s = np.linalg.svd(Q.T @ basis, compute_uv=False)
        scale = np.linalg.norm(Q, 2)
        smallest = min(smallest, s[-1] / scale)
        if s[-1] <= 1e3 * n * EPS * scale:
            return False, f"n = {n}: A singular on 1-perp"
        R = random_reducible(rng, n)
        if np.linalg.svd(R.T @ basis, compute_uv=False)[-1] > 1e3 * n * EPS * np.linalg.norm(R, 2):
            return False, f"n = {n}: reducible Q injective on 1-perp?"
    return True, f"min sigma_min / ||A|| over irreducible cases = {smallest:.1e}"


@claims.claim(
    "T4.variational",
    "Minimising R(q) = ||Q^T q||^2 or KL(p_st || q) over q = softmax(theta) recovers p_st.",
    "scipy least_squares (R) and BFGS (KL) from random logits, 5 generators (2 with --smoke), n = 5",
)
def variational(smoke: bool):
    rng = np.random.default_rng(6)
    worst = 0.0
    for _ in range(2 if smoke else 5):
        n = 5
        Q = random_irreducible(rng, n) / 10.0
        p = sp_ode.stationary_distribution(Q)
        theta0 = rng.standard_normal(n)
        # R(q) = ‖Qᵀq‖² as a least-squares problem in the logits (Gauss–Newton is robust here)
        fit = least_squares(lambda th: Q.T @ softmax(th) / np.linalg.norm(Q), theta0, xtol=1e-15, ftol=1e-15, gtol=1e-15)
        worst = max(worst, float(np.max(np.abs(softmax(fit.x) - p))))
        KL = lambda th: float(np.sum(p * (np.log(p) - np.log(softmax(th)))))  # noqa: E731
        th = minimize(KL, theta0, method="BFGS", options={"gtol": 1e-12, "maxiter": 5000}).x
        worst = max(worst, float(np.max(np.abs(softmax(th) - p))))
        # KL > 0 away from p (Gibbs' inequality), on random q
        for _ in range(20):
            q = rng.dirichlet(np.ones(n))
            if not np.sum(p * np.log(p / q)) > 0:
                return False, "KL(p||q) <= 0 for some q != p"
    # both losses are quadratic near p in the logits: stopping at gradient ~1e-12 leaves |q - p| ~ 1e-6
    return worst < 1e-5, f"max |argmin - p_st| = {worst:.1e}"


if __name__ == "__main__":
    raise SystemExit(claims.main())
