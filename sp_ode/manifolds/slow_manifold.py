"""The slow manifold h_ε(y) = φ(y) + ε h₁(y) + … + εᵏ h_k(y) (docs/theory.md §3, T3).

Fenichel: near a normally hyperbolic critical manifold φ the fast–slow system
ε dx/dt = f(x, y), dy/dt = g(x, y) has an invariant slow manifold x = h_ε(y),
and invariance of the graph means

    ε Dh_ε(y) · g(h_ε(y), y) = f(h_ε(y), y).                       (I)

Put h_ε = Σ_j εʲ h_j and H_{<j}(ε, y) = Σ_{i<j} εⁱ h_i(y).  Since h_j enters f
first at order εʲ, through A h_j with A = D_x f(φ(y), y), and the left side of
(I) only at order ε^{j+1}, the εʲ coefficient of (I) reads

    A h_j = [εʲ] R_j(ε),   R_j(ε) = ε DH_{<j} · g(H_{<j}, y) − f(H_{<j}, y).   (O_j)

Order 1 gives h₁ = A⁻¹ Dφ · g(φ, y).  The coefficient [εʲ] is taken exactly by
JAX forward-mode differentiation in the scalar ε (j nested `jax.jacfwd`, through f and
g only), the Jacobians Dh_i by one `jax.jacfwd` per order, and φ itself is a Newton solve made
differentiable to any order by the implicit function theorem (a `custom_jvp`
with Dφ = −(D_x f)⁻¹ D_y f).

For a master equation (f = Q(y)ᵀx, A = Qᵀ singular) x stays on the simplex, so
1ᵀh_j = 0 for j ≥ 1; the last row of (O_j) is replaced by that condition (the
bordered system of T1, nonsingular for irreducible Q).  docs/theory.md §3.3 (T3) gives the
first order in closed form, used here as an independent check
(`method="closed_form"`):

    Dp_st = −(A − p1ᵀ)⁻¹ (∂_y A) p,   h₁ = (A − p1ᵀ)⁻¹ [Dp_st · g(p, y)],   1ᵀh₁ = 0.

The corrected reduced flow y' = g(h_ε(y), y) is `SlowManifold.simulate`.
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import jax.scipy.linalg  # noqa: F401  (lu_factor / lu_solve)
import numpy as np

from sp_ode.core.cache import LRUCache
from sp_ode.core.precision import float64_callable, in_float64
from sp_ode.core.validation import check_choice, check_finite_array, check_positive
from sp_ode.manifolds.newton import (
    as_points,
    default_guess,
    fast_dim,
    fast_key,
    guess_dim,
    is_master,
    map_chunks,
    require_system,
    system_kernels,
)

# one direction only: reduced.py never imports this module (the import contracts forbid cycles)
from sp_ode.manifolds.reduced import ReducedSystem, critical_manifold_fn, simulate_reduced
from sp_ode.systems.simulation import check_system

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from sp_ode.core.typing import ArrayLike, Float
    from sp_ode.systems.catalogue import CatalogueEntry
    from sp_ode.systems.system import FastSlowSystem

__all__ = ["slow_manifold", "SlowManifold", "METHODS", "MAX_ORDER"]

METHODS = ("series", "closed_form")
# j nested forward derivatives in ε at order j, each through the lower orders:
# the traced graph grows quickly, and orders beyond a few are never needed in practice.
MAX_ORDER = 5


def check_order(order) -> int:
    if isinstance(order, bool) or not isinstance(order, numbers.Integral):
        raise TypeError(f"`order` must be a non-negative integer; got {type(order).__name__} {order!r}.")
    if not 0 <= order <= MAX_ORDER:
        raise ValueError(f"`order` must satisfy 0 <= order <= {MAX_ORDER} (the highest order the series supports: "
                         f"order j nests j derivatives of f and g in ε and j in y); got {order}.")
    return int(order)


def taylor_coefficient(fun, j: int):
    """(1/j!) dʲfun/dεʲ at ε = 0 of ε ↦ fun(ε), exactly, by j nested forward derivatives (the order-j term of a series in ε)."""
    deriv = fun
    for _ in range(j):
        deriv = jax.jacfwd(deriv)
    return deriv(jnp.asarray(0.0)) / math.factorial(j)


def _series_terms_fn(k, g, master: bool, order: int, x_guess, phi_user):
    """terms(y, args) -> (order + 1, m): [φ, h₁, …, h_k] from (O_j); `k` the kernels of f.

    Level j computes the lower terms once, *with their y-Jacobians* Dh_i (one `jacfwd` with the
    values as aux), so that in R_j(ε) = ε Σ εⁱ Dh_i·g(H, y) − f(H, y) the only ε-dependence left
    is through the polynomial H = Σ εⁱ h_i: the j nested ε-derivatives of [εʲ] then pass through
    f and g alone, never through the lower terms (each with its own nested derivatives and Newton
    solve for φ), which made the cost of order k grow like a product over the levels (order 3 on
    Michaelis–Menten: 8.6 s to first terms, 29.7 s to a first diffrax solve, before this).
    """
    phi = critical_manifold_fn(k, x_guess, phi_user)
    f, F = k["f"], k["F"]
    DF = jax.jacfwd(F)

    def level0(y, args):
        return phi(y, args)[None]

    def next_level(lower, j):
        def terms(y, args):
            def stacked(yy):
                T = lower(yy, args)
                return T, T
            D, low = jax.jacfwd(stacked, has_aux=True)(y)     # D: (j, m, d), low: (j, m)

            def residual(eps):
                # R_j(ε) of (O_j), with h_j (and higher) set to zero
                x = _horner(low, eps)
                v = g(0.0, x, y, args)
                r = eps * _horner(D @ v, eps) - f(0.0, x, y, args)
                return r.at[-1].set(0.0) if master else r  # bordered row: 1ᵀh_j = 0

            c = taylor_coefficient(residual, j)
            return jnp.concatenate([low, jnp.linalg.solve(DF(low[0], y, args), c)[None]])
        return terms

    terms = level0
    for j in range(1, order + 1):
        terms = next_level(terms, j)
    return terms


def _horner(T, eps):
    """Σ_i εⁱ T[i] by Horner's rule (T stacked on the leading axis; differentiable in ε at 0)."""
    x = T[-1]
    for i in range(T.shape[0] - 2, -1, -1):
        x = T[i] + eps * x
    return x


def _closed_form_terms_fn(system, order: int):
    """[p_st, h₁] from the closed form of docs/theory.md §3.3 (T3) (master equation, order ≤ 1), one inverse per y.

    With u = 1/n (any u with 1ᵀu = 1 works) M_u = A − u1ᵀ is nonsingular for
    irreducible Q, and the three solves of T3 share it:
    (A − u1ᵀ)p = −u gives p_st (since Ap = 0, 1ᵀp = 1); differentiating it,
    Dp_st = −M_u⁻¹(∂_y A)p; and M_u h₁ = Dp_st·g has the same solution as
    (A − p1ᵀ)h₁ = Dp_st·g, because 1ᵀ(Dp_st·g) = 0 forces 1ᵀh₁ = 0 in both.

    M_u⁻¹ is formed explicitly and applied by three matrix–vector products: for the
    small n of a reduced flow (evaluated ~150 times per solve) the fixed cost of each
    LAPACK call dominates, and one inverse + matvecs measured 3.4 µs per evaluation
    against 4.3 µs for one LU + three triangular solves (me10; docs/bench/eps_cost.md).
    The results agree to 1e-16 (tests/manifolds/test_slow_manifold.py cross-checks the
    closed form against the order-by-order series to 1e-12).
    """
    g = system.g
    Q_fn = system.Q_fn   # Q(y, args): the parameters of each solve (a sweep's), never the system's own

    def A_of(y, args):
        return jnp.asarray(Q_fn(y, args)).T

    def terms(y, args):
        A = A_of(y, args)
        n = A.shape[0]
        u = jnp.full((n,), 1.0 / n, dtype=A.dtype)
        M_inv = jnp.linalg.inv(A - jnp.outer(u, jnp.ones_like(u)))
        p = -M_inv @ u
        if order == 0:
            return p[None]
        dA = jax.jacfwd(A_of)(y, args)               # (n, n, d): ∂A/∂y_k
        Dp = -M_inv @ jnp.einsum("ijk,j->ik", dA, p)  # (n, d)
        h1 = M_inv @ (Dp @ g(0.0, p, y, args))
        return jnp.stack([p, h1])

    return terms


_COMPILED = LRUCache()   # jit(vmap(terms)) per manifold key
_PHI_EPS = LRUCache()    # h(y, ε, args) per manifold key


def _shared_phi_eps(key, terms_fn, order: int):
    """h(y, ε, args) = Σ_j εʲ h_j(y), one function object per manifold key.

    Compiled reduced solves are cached on the key, with ε and args as data, so every
    SlowManifold with the same key (same f, g, order, ...) and every ε share one
    compilation.
    """
    def make():
        def fn(y, eps, args):
            powers = eps ** jnp.arange(order + 1)
            return powers @ terms_fn(jnp.reshape(y, (-1,)), args)
        return fn

    return _PHI_EPS.get_or_make(key, make)


def _compiled_terms(key, terms_fn):
    """jit(vmap(terms)) shared by every SlowManifold with the same key (same f, g, order, ...)."""
    return _COMPILED.get_or_make(key, lambda: jax.jit(jax.vmap(terms_fn, in_axes=(0, None))))


class SlowManifold:
    """h_ε(y) = φ(y) + ε h₁(y) + … + εᵏ h_k(y), the slow manifold to order k.

    Built by [`slow_manifold`][sp_ode.manifolds.slow_manifold.slow_manifold]; callable as `h(y)` (at the system's ε) or
    `h(y, eps=...)`.  The terms h_j do not depend on ε, so one evaluation of
    [`terms`][sp_ode.manifolds.slow_manifold.SlowManifold.terms] serves every ε.

    Attributes
    ----------
    system : FastSlowSystem
    order : int
        K.
    method : str
        "series" (the invariance equation order by order) or
        "closed_form" (docs/theory.md §3.3 (T3), master equations, k ≤ 1).
    eps : float
        The ε used when none is given (the system's).
    x_guess, phi_given — as passed to `slow_manifold` (None when not given).
    """

    def __init__(self, system: FastSlowSystem, order: int, method: str, terms_fn: Callable, key: Hashable,
                 x_guess: Float[ArrayLike, " m"] | None = None, phi: Callable | None = None) -> None:
        self.system = system
        self.x_guess = x_guess             # Newton's start for φ (series method), or None
        self.phi_given = phi               # a closed form of φ used instead of Newton, or None
        self.order = order
        self.method = method
        self.eps = system.eps
        self._terms_fn = terms_fn          # pure JAX: (y (d,), args) -> (k + 1, m)
        self._key = key
        self._phi_cache = LRUCache(16)      # jitted h_ε per ε

    def __repr__(self) -> str:
        return f"SlowManifold(system={self.system.name!r}, order={self.order}, method={self.method!r})"

    def _batched_terms(self):
        return _compiled_terms(self._key, self._terms_fn)

    @in_float64
    def terms(self, y) -> np.ndarray:
        """[φ(y), h₁(y), …, h_k(y)].

        Parameters
        ----------
        y : array_like (d,) or (N, d) (scalar / (N,) when d = 1)

        Returns
        -------
        ndarray (k + 1, m), or (N, k + 1, m) for a batch
        """
        ys, batched = as_points(self.system, y, m=guess_dim(self.system, self.x_guess))
        out = map_chunks(self._batched_terms(), (ys,), self.system.args)
        return out if batched else out[0]

    @in_float64
    def __call__(self, y, eps=None) -> np.ndarray:
        """h_ε(y), shape (m,) or (N, m).

        Raises
        ------
        TypeError, ValueError
            Bad `y`; `eps` not a finite number > 0.
        """
        eps = self.eps if eps is None else check_positive("eps", eps)
        T = self.terms(y)
        powers = eps ** np.arange(self.order + 1)
        return np.tensordot(powers, T, axes=(0, -2)) if T.ndim == 2 else np.einsum("j,njm->nm", powers, T)

    @in_float64
    def jax_fn(self, eps=None):
        """A pure JAX function y (d,) -> h_ε(y) (m,), for any code that wants φ as a JAX callable.

        `simulate_reduced(system, ..., phi=manifold)` takes the SlowManifold itself
        (the flow on h_ε at the ε of `system`; ε and args as data, one compilation).

        The same function object is returned for the same ε, so compiled solves
        that key on it are reused.
        """
        eps = self.eps if eps is None else check_positive("eps", eps)
        fn = self._phi_cache.get(eps)
        if fn is None:
            terms_fn, args = self._terms_fn, self.system.args
            powers = jnp.asarray(eps ** np.arange(self.order + 1))

            @float64_callable
            @jax.jit
            def fn(y):
                return powers @ terms_fn(jnp.reshape(y, (-1,)), args)

            self._phi_cache[eps] = fn
        return fn

    @in_float64
    def reduced_system(self, eps=None):
        """The corrected reduced system y' = g(h_ε(y), y), a `sp_ode.manifolds.reduced.ReducedSystem`.

        ε (default: the system's) and the system's args are data to its compiled
        solve, which is shared by every SlowManifold with the same f, g and order.
        """
        eps = self.eps if eps is None else check_positive("eps", eps)
        system = self.system
        return ReducedSystem(system.g, self.jax_fn(eps), system.args, system.d,
                             f"{system.name}/slow_manifold(order={self.order})", ("slow_manifold", self._key),
                             eps=eps, phi_eps=_shared_phi_eps(self._key, self._terms_fn, self.order), full=system)

    @in_float64
    def simulate(self, t_span, y0, *, eps=None, **kwargs):
        """The corrected reduced flow y' = g(h_ε(y), y) by `sp_ode.simulate_reduced`.

        Keywords are those of `sp_ode.simulate_reduced` (backend, method, rtol,
        atol, ts, throw, args, x0 and initial_layer, ...): with `x0` off the manifold the path
        starts at the base point of its fast fibre (docs/theory.md §7.5).  The result's `x` is h_ε(y) along the solution.
        Changing ε does not recompile.
        """
        return simulate_reduced(self.reduced_system(eps), t_span, y0, **kwargs)


@in_float64
def slow_manifold(system: FastSlowSystem | CatalogueEntry, order: int = 1, *, method: str = "series",
                  x_guess: Float[ArrayLike, " m"] | None = None, phi: Callable | None = None) -> SlowManifold:
    """The slow manifold h_ε = φ + ε h₁ + … + εᵏ h_k of a fast–slow system.

    Parameters
    ----------
    system : FastSlowSystem or MasterEquationSystem (or a catalogue entry)
    order : int
        k, 0 ≤ k ≤ 5 (0 gives φ itself).
    method : {"series", "closed_form"}
        "series" (default) solves the invariance equation order by order with
        JAX derivatives, for any f, g.  "closed_form" uses docs/theory.md §3.3 (T3) and needs a
        `MasterEquationSystem` and k ≤ 1.
    x_guess : array_like (m,), optional
        Newton's starting point for φ (selects the branch; every y starts from it).
    phi : callable y (d,) -> (m,), optional
        A JAX-traceable closed form of φ to use instead of Newton.

    Returns
    -------
    SlowManifold

    Raises
    ------
    TypeError
        `system` not a fast–slow system; `order` not an int; `phi` not callable.
    ValueError
        `order` out of range; unknown `method`; "closed_form" on a system that is
        not a master equation or with k > 1; `x_guess` of the wrong shape.
    """

    system = require_system(check_system(system))
    order = check_order(order)
    method = check_choice("method", method, METHODS)
    if phi is not None and not callable(phi):
        raise TypeError(f"`phi` must be callable as phi(y) -> (m,); got {type(phi).__name__}.")
    return slow_manifold_checked(system, order, method, x_guess=x_guess, phi=phi)


@in_float64
def slow_manifold_checked(system: FastSlowSystem, order: int, method: str = "series", *,
                          x_guess: Float[ArrayLike, " m"] | None = None,
                          phi: Callable | None = None) -> SlowManifold:
    """`slow_manifold` on input already checked: `system` a FastSlowSystem, `order` and `method` validated
    (`check_order`, `METHODS`), `phi` None or callable.  `sp_ode.verify` and the certificate call it, so
    their inputs are validated once, at their own doors; `x_guess` is still checked against m here."""
    master = is_master(system)
    if method == "closed_form":
        if not master:
            raise ValueError(f"`method` 'closed_form' (docs/theory.md §3.3 (T3)) needs a MasterEquationSystem; "
                             f"got {type(system).__name__} {system.name!r}. Use method='series'.")
        if order > 1:
            raise ValueError(f"`method` 'closed_form' is the first-order formula of T3: `order` must be <= 1; "
                             f"got {order}. Use method='series' for higher orders.")
        terms_fn = _closed_form_terms_fn(system, order)
        key = ("closed_form", system.Q_fn, system.g, order)
    else:
        m = fast_dim(system, x_guess)
        if x_guess is None:
            guess = default_guess(system, m)
        else:
            guess = check_finite_array("x_guess", x_guess, ndim=1)
            if guess.shape != (m,):
                raise ValueError(f"`x_guess` must have shape (m,) = ({m},); got {guess.shape}.")
        terms_fn = _series_terms_fn(system_kernels(system), system.g, master, order, guess, phi)
        key = ("series", fast_key(system), system.g, master, order, guess.tobytes(), phi)
        return SlowManifold(system, order, method, terms_fn, key, x_guess=x_guess, phi=phi)
    return SlowManifold(system, order, method, terms_fn, key)
