"""Checks of proof.md §4 (T3: the first-order slow manifold), exactly.

For ε dx/dt = A(y) x, dy/dt = g(x, y) with A = Q(y)ᵀ, the invariant manifold
x = h(y, ε) satisfies the invariance equation ε (∂_y h) g(h, y) = A(y) h with
1ᵀh = 1.  Writing h = h₀ + ε h₁ + O(ε²) and solving the equation order by order
(sympy series in ε, then the linear system for the unknown functions h₁ᵢ(y))
gives h₀ = p_st and h₁; this check compares that series solution with the
closed form of T3,

    h₁ = (A − p1ᵀ)⁻¹ [Dp_st · g(p_st, y)],   Dp_st = −(A − p1ᵀ)⁻¹ (∂_y A) p_st,

for the general 2- and 3-state generator whose rates k_ij(y) are arbitrary
positive functions of y and g an arbitrary function: exact rational-function
identities after naming k_ij(y), k_ij'(y) and g(p_st, y) as symbols.

    python proofs/check_slow_manifold.py [--smoke] [--json]
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import sympy  # noqa: E402
from sympy.polys.matrices import DomainMatrix  # noqa: E402

from sp_ode import symbolic as S  # noqa: E402
from sp_ode.cli.claims import ClaimSet  # noqa: E402

claims = ClaimSet("check_slow_manifold.py")


def _system(n: int):
    y = sympy.Symbol("y", real=True)
    k = {(i, j): sympy.Function(f"k_{i}{j}", positive=True)(y) for i in range(n) for j in range(n) if i != j}
    Q = S.symbolic_generator(k, n)
    p = sympy.Matrix(S.symbolic_stationary(Q).p)
    return y, k, Q, p


def _plain(exprs, y, k, G_call, G_sym):
    """Name k_ij(y) → K_ij, k_ij'(y) → D_ij and g(p, y) → G so the identities are rational-function ones."""
    subs = {G_call: G_sym}
    subs.update({sympy.Derivative(f, y): sympy.Symbol(f"D_{i}{j}") for (i, j), f in k.items()})
    after = {f: sympy.Symbol(f"K_{i}{j}", positive=True) for (i, j), f in k.items()}
    return [sympy.sympify(e).subs(subs).subs(after) for e in exprs]


class _Plain:
    """The closed-form side in the polynomial ring ZZ[K_ij, D_ij, G, u_i], with denominators cleared.

    p = w/S with w the tree polynomials of the generator with rates K_ij; d/dy acts on a
    polynomial in K by the chain rule with dK_ij/dy = D_ij.  Working with numerators only
    (no rational-function field, hence no gcds) keeps the n = 3 check to seconds.
    """

    def __init__(self, n: int, k: dict, extra: tuple):
        self.n = n
        self.K = {key: sympy.Symbol(f"K_{key[0]}{key[1]}", positive=True) for key in k}
        self.D = {key: sympy.Symbol(f"D_{key[0]}{key[1]}") for key in k}
        gens = sorted(self.K.values(), key=str) + sorted(self.D.values(), key=str) + list(extra)
        self.field = sympy.QQ.frac_field(*gens).field
        self.R = self.field.ring
        Qk = S.symbolic_generator(self.K, n)
        self.w = [self.R.from_expr(x) for x in S.symbolic_stationary(Qk).unnormalised]
        self.S = sum(self.w[1:], self.w[0])
        self.A = [[self.R.from_expr(Qk[j, i]) for j in range(n)] for i in range(n)]  # A = Qᵀ

    def d(self, f):
        """d/dy of a polynomial in the K_ij (chain rule)."""
        R = self.R
        return sum((f.diff(R.from_expr(self.K[key])) * R.from_expr(self.D[key]) for key in self.K), R.zero)

    def C(self):
        """C = S·B = S·A − w1ᵀ, a polynomial matrix (B = A − p1ᵀ)."""
        n, S_, w = self.n, self.S, self.w
        return DomainMatrix([[S_ * self.A[i][j] - w[i] for j in range(n)] for i in range(n)], (n, n), self.R.to_domain())

    def dp_numerator(self):
        """S²·Dp = S·Dw − w·DS, as a list of polynomials."""
        dS = self.d(self.S)
        return [self.S * self.d(wi) - wi * dS for wi in self.w]


def _series_equations(n: int):
    """The order-ε equations of the invariance equation, derived by sympy from the series in ε."""
    y, k, Q, p = _system(n)
    eps = sympy.Symbol("epsilon", positive=True)
    U = [sympy.Function(f"U_{i}")(y) for i in range(n)]
    h = p + eps * sympy.Matrix(U)
    g = sympy.Function("g")
    A = Q.T
    # invariance residual ε (∂_y h) g(h, y) − A h, order by order in ε
    residual = eps * h.diff(y) * g(*h, y) - A * h
    order0 = residual.subs(eps, 0)
    order1 = residual.diff(eps).subs(eps, 0)
    G = sympy.Symbol("G")
    G_call = g(*p, y)
    us = sympy.symbols(f"u0:{n}")
    eqs0 = _plain(list(order0), y, k, G_call, G)
    eqs1 = [e.subs(dict(zip(U, us))) for e in _plain(list(order1), y, k, G_call, G)]
    return k, G, us, eqs0, eqs1


@claims.claim(
    "T3.h1-series",
    "The order-eps solution h1 of the invariance equation eps (dh/dy) g(h, y) = A h, 1^T h = 1, equals "
    "(A - p 1^T)^(-1) [Dp g(p, y)] (T3), for arbitrary rate functions k_ij(y) and g.",
    "sympy series in eps; the closed form substituted exactly (polynomial numerators), n = 2, 3 (2 with --smoke)",
)
def h1_series(smoke: bool):
    for n in (2,) if smoke else (2, 3):
        k, G, us, eqs0, eqs1 = _series_equations(n)
        plain = _Plain(n, k, (G,) + tuple(us))
        R, F = plain.R, plain.field
        if any(F.from_expr(e) != 0 for e in eqs0):
            return False, f"n = {n}: the order-0 equation is not A p = 0"
        # closed form: h1 = B⁻¹(Dp·G) = S·C⁻¹·(Dp·G) = adj(C)·(S²Dp)·G / (S·det C)
        adj, det = plain.C().adj_det()
        v = DomainMatrix([[x * R.from_expr(G)] for x in plain.dp_numerator()], (n, 1), R.to_domain())
        N = [(adj * v)[c, 0].element for c in range(n)]
        den = plain.S * det  # adj_det returns (DomainMatrix, ring element)
        u = [R.from_expr(x) for x in us]
        for e in eqs1:  # each order-1 equation is linear in u: numerator α·u + β
            num = F.from_expr(e).numer
            alpha = [num.diff(x) for x in u]
            beta = num - sum((a * x for a, x in zip(alpha, u)), R.zero)
            if sum((a * N[c] for c, a in enumerate(alpha)), R.zero) + beta * den != 0:
                return False, f"n = {n}: T3's h1 does not solve the order-1 equation"
        if sum(N[1:], N[0]) != 0:
            return False, f"n = {n}: 1^T h1 != 0"
    # The order-1 system has a unique solution in 1-perp (A is injective there, Lemma 4), so
    # satisfying it is the same as being the series solution.
    return True, "the closed form solves the order-eps equations with 1^T h1 = 0 (unique solution)"


@claims.claim(
    "T3.dp-formula",
    "Dp_st(y) = -(A - p 1^T)^(-1) (d_y A) p_st for arbitrary rate functions k_ij(y).",
    "exact: (A - p1^T) Dp + (d_y A) p = 0 with denominators cleared, n = 2, 3 (2 with --smoke)",
)
def dp_formula(smoke: bool):
    for n in (2,) if smoke else (2, 3):
        y, k, Q, p = _system(n)
        plain = _Plain(n, k, ())
        R = plain.R
        # S³·[B Dp + (∂A) p] = C·(S²Dp) + S²·(∂A)·w, with ∂A = d/dy of A entrywise
        C = plain.C()
        v = DomainMatrix([[x] for x in plain.dp_numerator()], (n, 1), R.to_domain())
        dA = DomainMatrix([[plain.d(plain.A[i][j]) for j in range(n)] for i in range(n)], (n, n), R.to_domain())
        wv = DomainMatrix([[x] for x in plain.w], (n, 1), R.to_domain())
        total = C * v + dA * wv * DomainMatrix([[plain.S ** 2]], (1, 1), R.to_domain())
        if any(total[i, 0].element != 0 for i in range(n)):
            return False, f"n = {n}"
        # and the sympy derivative of the tree-theorem p(y) agrees with the chain-rule numerator
        direct = _plain(list(p.diff(y)), y, k, sympy.Symbol("unused"), sympy.Symbol("unused"))
        F = plain.field
        if any(F.from_expr(a) != F(x) / F(plain.S ** 2) for a, x in zip(direct, plain.dp_numerator())):
            return False, f"n = {n}: chain rule disagrees with sympy's derivative"
    return True, "holds (B nonsingular, Lemma 7, so Dp = -B^(-1)(dA)p)"


if __name__ == "__main__":
    raise SystemExit(claims.main())
