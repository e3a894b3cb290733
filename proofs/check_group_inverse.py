"""Checks of proof.md §4 (T3: group inverse and the derivative of p_st; T4's key identity).

With A = Qᵀ, p = p_st and B = A − p1ᵀ: B is nonsingular (Lemma 6), and
A^# = B⁻¹ + p1ᵀ satisfies the three group-inverse identities A A^# A = A,
A^# A A^# = A^#, A A^# = A^# A (Lemma 7, exactly, for the general symbolic
2- and 3-state generator).  Then ∂p = −B⁻¹(∂A)p for the derivative along any
rate (Lemma 8), and q − p = A^# A q for every q with 1ᵀq = 1 (Lemma 9, the
identity behind T4).  Numerically on random generators up to n = 55: the same
identities to rounding, and `sp_ode.group_inverse` agrees.

The variant with −p1ᵀ (a plausible sign slip) is also checked: it is a
commuting {1}-inverse but fails A^# A A^# = A^#, which shows the identities
discriminate.

    python proofs/check_group_inverse.py [--smoke] [--json]
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import sympy  # noqa: E402
from _instances import random_irreducible, sizes  # noqa: E402
from sympy.polys.matrices import DomainMatrix  # noqa: E402

import sp_ode  # noqa: E402
from sp_ode import symbolic as S  # noqa: E402
from sp_ode.cli.claims import ClaimSet  # noqa: E402

claims = ClaimSet("check_group_inverse.py")
EPS = np.finfo(np.float64).eps


def _symbolic(n: int, extra: tuple = ()):
    """A = Qᵀ, p, p1ᵀ, B⁻¹ for the general symbolic generator on n states, as DomainMatrices over QQ(rates).

    Everything is built inside the rational-function field (no round trip through
    sympy expressions), so the identities below are decided by exact field arithmetic.
    """
    Q = S.complete_generator(n)
    result = S.symbolic_stationary(Q)
    gens = sorted(Q.free_symbols, key=str) + list(extra)
    K = sympy.QQ.frac_field(*gens)
    F = K.field
    w = [F.from_expr(x) for x in result.unnormalised]
    total = sum(w[1:], w[0])
    p = [x / total for x in w]
    A = DomainMatrix([[F.from_expr(Q[j, i]) for j in range(n)] for i in range(n)], (n, n), K)
    P1 = DomainMatrix([[p[i]] * n for i in range(n)], (n, n), K)
    Binv = (A - P1).inv()
    return Q, p, A, P1, Binv, K


@claims.claim(
    "L7.group-inverse",
    "A^# = (A - p 1^T)^(-1) + p 1^T satisfies A A^# A = A, A^# A A^# = A^#, A A^# = A^# A "
    "(and the sign-flipped variant fails A^# A A^# = A^#).",
    "exact rational-function matrices (DomainMatrix over QQ(rates)), general symbolic Q, n = 2, 3 (2 with --smoke)",
)
def group_inverse_identities(smoke: bool):
    for n in (2,) if smoke else (2, 3):
        Q, p, A, P1, Binv, K = _symbolic(n)
        G = Binv + P1
        if not (A * G * A == A and G * A * G == G and A * G == G * A):
            return False, f"identities fail at n = {n}"
        W = Binv - P1  # the sign slip: still a {1}-inverse that commutes, but not a {2}-inverse
        if W * A * W == W:
            return False, f"the sign-flipped variant passed at n = {n}: the check does not discriminate"
    return True, "all three identities; the -p1^T variant fails A^# A A^# = A^#"


@claims.claim(
    "L8.derivative",
    "Differentiating A p = 0, 1^T p = 1 along any rate k: dp/dk = -(A - p 1^T)^(-1) (dA/dk) p.",
    "exact field derivative of the tree-theorem p vs the formula, every rate of the general 2- and 3-state Q (2 with --smoke)",
)
def derivative(smoke: bool):
    for n in (2,) if smoke else (2, 3):
        Q, p, A, P1, Binv, K = _symbolic(n)
        F = K.field
        pd = DomainMatrix([[x] for x in p], (n, 1), K)
        for k, x in zip(F.symbols, F.gens):
            dA = DomainMatrix([[A[i, j].element.diff(x) for j in range(n)] for i in range(n)], (n, n), K)
            formula = -(Binv * dA * pd)
            direct = DomainMatrix([[pi.diff(x)] for pi in p], (n, 1), K)
            if formula != direct:
                return False, f"n = {n}, rate {k}"
    return True, "every rate"


@claims.claim(
    "L9.residual-identity",
    "For every q with 1^T q = 1: q - p = A^# A q (since q - p lies in 1-perp = range(A) and A^# A projects onto it).",
    "exact for symbolic q on the general 3-state Q (2-state with --smoke); numeric on random generators (n up to 55)",
)
def residual_identity(smoke: bool):
    n = 2 if smoke else 3
    qs = sympy.symbols(f"q0:{n - 1}")
    Q, p, A, P1, Binv, K = _symbolic(n, extra=qs)
    g = [K.field.from_expr(x) for x in qs]
    q = DomainMatrix([[x] for x in g] + [[1 - sum(g[1:], g[0])]], (n, 1), K)
    pd = DomainMatrix([[x] for x in p], (n, 1), K)
    if q - pd != (Binv + P1) * A * q:
        return False, "exact identity fails"
    rng = np.random.default_rng(3)
    worst = 0.0
    for m in sizes(smoke):
        Qn = random_irreducible(rng, m)
        pn = sp_ode.stationary_distribution(Qn)
        qn = rng.dirichlet(np.ones(m))
        Gn = sp_ode.group_inverse(Qn)
        worst = max(worst, np.max(np.abs(qn - pn - Gn @ (Qn.T @ qn))) / (np.linalg.cond(Qn.T - np.outer(pn, np.ones(m))) * EPS * m))
    return worst < 10.0, f"exact at n = {n}; numeric max error / (m cond eps) = {worst:.2f}"


@claims.claim(
    "L7.numeric",
    "sp_ode.group_inverse(Q) satisfies the three identities to rounding on random badly scaled generators "
    "and equals (A - p1^T)^(-1) + p1^T computed independently (numpy).",
    "numpy, errors in units of cond(A - p1^T) * eps * ||A||",
)
def group_inverse_numeric(smoke: bool):
    rng = np.random.default_rng(11)
    worst = 0.0
    for n in sizes(smoke):
        for _ in range(3 if smoke else 10):
            Q = random_irreducible(rng, n)
            A = Q.T
            p = sp_ode.stationary_distribution(Q)
            B = A - np.outer(p, np.ones(n))
            G_ref = np.linalg.inv(B) + np.outer(p, np.ones(n))
            G = sp_ode.group_inverse(Q)
            unit = np.linalg.cond(B) * EPS * n * max(np.linalg.norm(A, 2), 1.0) * max(np.linalg.norm(G, 2), 1.0)
            errs = [
                np.max(np.abs(A @ G @ A - A)) / np.linalg.norm(G, 2),
                np.max(np.abs(G @ A @ G - G)) / np.linalg.norm(A, 2),
                np.max(np.abs(A @ G - G @ A)),
                np.max(np.abs(G - G_ref)) / max(np.linalg.norm(A, 2), 1.0),
            ]
            worst = max(worst, max(errs) / unit)
    return worst < 10.0, f"max error = {worst:.2f} units of cond·eps·n·‖A‖‖A^#‖"


if __name__ == "__main__":
    raise SystemExit(claims.main())
