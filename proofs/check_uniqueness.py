"""Checks of proof.md §2–3 (T1 uniqueness, positivity, smoothness; T2 spectrum).

Lemma 4: det of the bordered matrix (Qᵀ with one row replaced by 1ᵀ) equals
(−1)^{n−1} S with S = Σ_r w_r, the sum of the tree polynomials; so [Qᵀ; 1ᵀ] has
full column rank whenever S ≠ 0, in particular for every irreducible Q with
positive rates.  Lemma 5: det(λI − Q) = λ·(λ^{n−1} + … + S), so 0 is a simple
eigenvalue.  Numerically, on random badly scaled generators: rank n, p_st > 0,
p_st is the Perron vector of (Q + cI)ᵀ, every other eigenvalue has negative real
part and γ matches `sp_ode.spectral_gap`; for a reducible Q with two closed
classes the rank drops to n − 1 (A2 cannot be dropped).

    python proofs/check_uniqueness.py [--smoke] [--json]
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import sympy  # noqa: E402
from _instances import random_irreducible, random_reducible, sizes  # noqa: E402
from sympy.polys.matrices import DomainMatrix  # noqa: E402

import sp_ode  # noqa: E402
from sp_ode import symbolic as S  # noqa: E402
from sp_ode.cli.claims import ClaimSet  # noqa: E402

claims = ClaimSet("check_uniqueness.py")
EPS = np.finfo(np.float64).eps


@claims.claim(
    "L4.bordered-determinant",
    "det(Q^T with its last row replaced by 1^T) = (-1)^(n-1) S, S = sum of tree polynomials; "
    "S has positive coefficients, so [Q^T; 1^T] has full column rank for positive rates.",
    "exact: fraction-free DomainMatrix.det over ZZ[rates], general symbolic Q, n = 2..4 (2..3 smoke)",
)
def bordered_determinant(smoke: bool):
    for n in range(2, 4 if smoke else 5):
        Q = S.complete_generator(n)
        result = S.symbolic_stationary(Q)
        M = sympy.Matrix(Q.T)
        M[n - 1, :] = sympy.ones(1, n)
        A = DomainMatrix.from_Matrix(M)
        det = A.domain.to_sympy(A.det())
        if sympy.expand(det - (-1) ** (n - 1) * result.normaliser) != 0:
            return False, f"n = {n}: det != (-1)^(n-1) S"
        if not result.verify().positive:
            return False, f"n = {n}: S not certified positive"
    return True, "holds"


@claims.claim(
    "L5.simple-zero-eigenvalue",
    "det(lambda I - Q) = lambda (lambda^(n-1) + ... + S): the coefficient of lambda^1 is S = sum_r w_r > 0, "
    "so 0 is a simple eigenvalue of Q.",
    "exact characteristic polynomial (DomainMatrix.charpoly), general symbolic Q, n = 2..4 (2..3 smoke)",
)
def simple_zero(smoke: bool):
    for n in range(2, 4 if smoke else 5):
        Q = S.complete_generator(n)
        A = DomainMatrix.from_Matrix(sympy.Matrix(Q))
        coeffs = [A.domain.to_sympy(c) for c in A.charpoly()]  # highest degree first
        S_expr = S.symbolic_stationary(Q).normaliser
        # coefficient of λ¹ = Σ principal (n−1)-minors of −Q = Σ_r w_r (all-minors matrix-tree theorem)
        if coeffs[-1] != 0 or sympy.expand(coeffs[-2] - S_expr) != 0:
            return False, f"n = {n}: charpoly coefficients {coeffs[-2:]}"
    return True, "constant term 0, linear coefficient S"


@claims.claim(
    "T1.numeric-uniqueness",
    "Random irreducible generators (rates over 4 decades): [Q^T; 1^T] has rank n, p_st > 0, and p_st is the "
    "Perron vector of (Q + cI)^T; a reducible Q with two closed classes has rank n - 1.",
    "numpy SVD rank and eigenvectors on 10 (smoke 4) generators per size",
)
def numeric_uniqueness(smoke: bool):
    rng = np.random.default_rng(20261130)
    worst = 0.0
    for n in sizes(smoke):
        for _ in range(4 if smoke else 10):
            Q = random_irreducible(rng, n)
            bordered = np.vstack([Q.T, np.ones((1, n))])
            if np.linalg.matrix_rank(bordered) != n:
                return False, f"rank < n for an irreducible Q, n = {n}"
            p = sp_ode.stationary_distribution(Q)
            if not np.all(p > 0):
                return False, f"p_st not positive, n = {n}"
            c = np.max(-np.diag(Q))
            vals, vecs = np.linalg.eig((Q + c * np.eye(n)).T)
            v = np.real(vecs[:, np.argmax(np.real(vals))])
            v = v / v.sum()
            worst = max(worst, float(np.max(np.abs(v - p) / p)))
            if n >= 4:
                R = random_reducible(rng, n)
                if np.linalg.matrix_rank(np.vstack([R.T, np.ones((1, n))])) != n - 1:
                    return False, f"reducible Q did not lose rank, n = {n}"
    # eigenvectors of a nonsymmetric matrix: accuracy ~ cond · eps; the rates span 4 decades
    return worst < 1e-6, f"max rel |Perron - p_st| = {worst:.1e}"


@claims.claim(
    "T2.spectrum",
    "Every eigenvalue of an irreducible Q other than the simple 0 has negative real part (Gershgorin + "
    "irreducibility); gamma = -max Re(lambda != 0) agrees with sp_ode.spectral_gap.",
    "numpy eigvals on 10 (smoke 4) random generators per size",
)
def spectrum(smoke: bool):
    rng = np.random.default_rng(7)
    for n in sizes(smoke):
        for _ in range(4 if smoke else 10):
            Q = random_irreducible(rng, n)
            lam = np.linalg.eigvals(Q)
            scale = np.max(np.abs(Q))
            tol = 100 * n * EPS * scale
            zero = np.argmin(np.abs(lam))
            rest = np.delete(lam, zero)
            if abs(lam[zero]) > tol or (rest.size and np.max(rest.real) >= -tol):
                return False, f"n = {n}: eigenvalues {np.sort_complex(lam)[-3:]}"
            if rest.size:
                gamma = -np.max(rest.real)
                got = sp_ode.spectral_gap(Q)
                if abs(got - gamma) > 1e-6 * max(gamma, 1.0) + tol:
                    return False, f"n = {n}: spectral_gap {got} vs eigvals {gamma}"
            # Gershgorin: disc i is centred at Q_ii = -d_i with radius d_i, inside Re <= 0, touching 0 only at 0
            d = -np.diag(Q)
            if np.any(np.abs(Q - np.diag(np.diag(Q))).sum(axis=1) - d > tol):
                return False, "Gershgorin radius exceeds |centre|"
    return True, "all sizes"


if __name__ == "__main__":
    raise SystemExit(claims.main())
