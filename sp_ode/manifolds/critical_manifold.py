"""The critical manifold φ(y) and its normal hyperbolicity (docs/theory.md §2–3).

For a fast–slow system ε dx/dt = f(x, y), dy/dt = g(x, y) the critical manifold
is the set of equilibria of the fast subsystem, f(φ(y), y) = 0.  It is found
here by Newton's method with the Jacobian D_x f from JAX autodiff.

For the linear-generator case f = Q(y)ᵀx (`sp_ode.MasterEquationSystem`) the
fast state lives on the simplex: 1ᵀx is conserved because Q1 = 0, so one of
the n equations Q(y)ᵀx = 0 is redundant.  We replace the last one by the
normalisation 1ᵀx = 1 — the bordered system of T1, nonsingular when Q(y) is
irreducible — whose unique root is p_st(y).

Normal hyperbolicity is judged from the eigenvalues of D_x f restricted to the
fast fibre: all of ℝᵐ for a general system, the tangent space 1^⊥ of the
simplex for a generator (D_x f = Qᵀ maps ℝⁿ into 1^⊥, so 1^⊥ is invariant and
its eigenvalues are those of Qᵀ less one zero; their largest real part is −γ(y),
γ the spectral gap of T2).  The manifold is attracting where all real parts are
< 0 and loses hyperbolicity where one reaches 0: at a fold (a real eigenvalue
through 0, det D_x f = 0, where the branch ends) or where an eigenvalue crosses
the imaginary axis along a continuing branch (for generators: the gap closing).
`locate_loss_of_hyperbolicity` brackets either event by continuation and then
refines it — a fold by Newton on the extended system {f = 0, det D_x f = 0} in
(x, y), a crossing by `scipy.optimize.brentq` on the largest real part.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import jax.numpy as jnp
import numpy as np

from sp_ode.core.errors import Error
from sp_ode.core.precision import in_float64
from sp_ode.core.validation import check_choice, check_finite_array, check_positive_int
from sp_ode.manifolds.newton import (
    as_points,
    check_generators,
    fast_dim,
    guess_dim,
    guesses,
    is_master,
    map_chunks,
    require_system,
    system_kernels,
)
from sp_ode.markov.generator import require_irreducible
from sp_ode.markov.spectral import spectral_gap
from sp_ode.markov.stationary import stationary_distribution
from sp_ode.systems.system import slow_symbol

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float
    from sp_ode.systems.system import FastSlowSystem

__all__ = [
    "critical_manifold",
    "continue_manifold",
    "normal_hyperbolicity",
    "locate_loss_of_hyperbolicity",
    "max_real_part",
    "ManifoldBranch",
    "Hyperbolicity",
    "HyperbolicityLoss",
    "ManifoldNotFoundError",
]

_EPS = float(np.finfo(np.float64).eps)


class ManifoldNotFoundError(Error, RuntimeError):
    """Newton's method found no root of f(·, y) = 0 near the guess (e.g. past a fold)."""


# --- φ(y) ------------------------------------------------------------------------

@in_float64
def critical_manifold(system: FastSlowSystem, y: Float[ArrayLike, "*N d"], *,
                      x_guess: Float[ArrayLike, "*N m"] | None = None, throw: bool = True) -> Float[np.ndarray, "*N m"]:
    """The critical manifold φ(y): the root of f(x, y) = 0 nearest (by Newton) to a guess.

    For a `MasterEquationSystem` the root is sought on the simplex: the last
    equation of Q(y)ᵀx = 0 is replaced by 1ᵀx = 1, so φ(y) = p_st(y) (T1).

    Parameters
    ----------
    system : FastSlowSystem
        Supplies `f(t, x, y, args)` (evaluated at t = 0) and `args`.
    y : array_like, shape (d,) or (N, d)
        Slow state(s); a scalar or shape (N,) is accepted when d = 1.
    x_guess : array_like, shape (m,) or (N, m), optional
        Newton's starting point, which selects the branch when f(·, y) has several
        roots.  Default: the uniform distribution for a master equation, ones(m) otherwise.
    throw : bool
        If True (default) raise when Newton fails at any point; if False return
        NaN rows there.

    Returns
    -------
    ndarray, shape (m,) or (N, m)
        φ(y), float64.  The shape follows the system's d (declared, or read off g), never
        the length of a flat array: for d = 1, y of shape (N,) gives (N, m).

    Raises
    ------
    TypeError
        `system` is not a FastSlowSystem; `y` or `x_guess` not real arrays.
    ValueError
        Wrong shapes or non-finite values in `y` or `x_guess`; a flat y that fits both one
        point of d = N and N points of d = 1 (the message says how to choose); for a master
        equation, Q(y) not a generator at some y (named, as `sp_ode.simulate` does at y0).
    NotIrreducibleError
        For a master equation, Q(y) reducible at some y (p_st not unique; closed classes named).
    ManifoldNotFoundError
        Newton did not converge within 50 iterations at some y (`throw=True`).
    """
    require_system(system)
    ys, batched = as_points(system, y, m=guess_dim(system, x_guess))
    m = fast_dim(system, x_guess, ys.shape[1])
    x0 = guesses(system, x_guess, m, ys.shape[0])
    Qs = check_generators(system, ys) if is_master(system) else None
    k = system_kernels(system)
    xs, ok, _ = map_chunks(k["newton_batch"], (x0, ys), system.args)
    xs, ok = np.array(xs), np.asarray(ok)
    if not ok.all():
        if throw:
            i = int(np.argmin(ok))
            bad = ys[i]
            if Qs is not None:  # a generator whose p_st is not unique: name its closed classes
                require_irreducible(Qs[i], name=f"Q_of_y(y) at {slow_symbol(system)} = {bad.tolist()}",
                                    states=system.states)
            raise ManifoldNotFoundError(
                f"no root of f(x, y) = 0 found near the guess at {slow_symbol(system)} = {bad.tolist()} "
                f"({int((~ok).sum())} of {len(ok)} points failed); the branch may end at a fold "
                "before this y, or a better `x_guess` is needed.")
        xs[~ok] = np.nan
    return xs if batched else xs[0]


@dataclass(frozen=True)
class ManifoldBranch:
    """A branch of φ followed by continuation along a grid of y.

    Attributes
    ----------
    y : ndarray (N, d)
    x : ndarray (N, m)
        Φ(y); NaN from the first failed point on.
    converged : ndarray (N,) bool
    status : int
        0 the whole grid was followed, 1 the branch was lost.
    message : str
    """

    y: np.ndarray
    x: np.ndarray
    converged: np.ndarray
    status: int
    message: str

    @property
    def n_followed(self) -> int:
        """Number of grid points followed before the branch was lost."""
        return int(np.argmin(self.converged)) if not self.converged.all() else len(self.converged)


_JUMP_FACTOR = 5.0


def _jumped(x_a, x_b, x_c, y_a, y_b, y_c) -> bool:
    """Did the root at y_c leave the branch through x_a, x_b?

    Along a smooth branch on a regular grid the slope ‖Δx‖/‖Δy‖ changes by bounded
    factors (≤ ~2.5 even on the last step into a square-root fold), while a jump to
    another branch multiplies it by far more; 5 separates the two.
    """
    before = np.linalg.norm(x_b - x_a) / max(np.linalg.norm(y_b - y_a), 1e-300)
    now = np.linalg.norm(x_c - x_b) / max(np.linalg.norm(y_c - y_b), 1e-300)
    return now > _JUMP_FACTOR * before + 1e-6 * (1.0 + np.linalg.norm(x_b)) / max(np.linalg.norm(y_c - y_b), 1e-300)


def _p_st_point(system, y) -> tuple[np.ndarray, bool]:
    """φ(y) = p_st(Q(y)) of a master equation by GTH (T1: the root on the simplex is unique, no branch to
    choose and nothing to compile beyond Q); (NaN, False) where Q(y) is not an irreducible generator."""
    Q = np.asarray(system.Q(np.asarray(y, dtype=np.float64)), dtype=np.float64)
    try:
        return stationary_distribution(Q), True
    except (ValueError, ArithmeticError):
        return np.full(Q.shape[-1], np.nan), False


def _root(system, k, guess, y) -> tuple[np.ndarray, bool]:
    """One root of f(·, y): GTH for a master equation, Newton from `guess` otherwise — and for a master
    equation where Q(y) is no longer an irreducible generator (past a gap closing, where the bordered
    system still has its root and the sign change of max Re λ locates the closing)."""
    if is_master(system):
        x, ok = _p_st_point(system, y)
        if ok:
            return x, True
        k = system_kernels(system)
    x, conv, _ = k["newton"](jnp.asarray(guess), jnp.asarray(y), system.args)
    return np.asarray(x), bool(conv)


def _follow(system, ys: np.ndarray, x0: np.ndarray, predictor: str) -> ManifoldBranch:
    k = None if is_master(system) else system_kernels(system)
    N, m = ys.shape[0], x0.shape[0]
    xs = np.full((N, m), np.nan)
    ok = np.zeros(N, dtype=bool)
    guess = x0
    for i in range(N):
        x, conv = _root(system, k, guess, ys[i])
        if not conv and i > 0 and predictor == "secant" and k is not None:
            # the secant predictor can overshoot near a turning point: retry from the last point
            x, conv = _root(system, k, xs[i - 1], ys[i])
        if not conv:
            return ManifoldBranch(ys, xs, ok, 1, f"branch lost at {slow_symbol(system)} = {ys[i].tolist()} "
                                  f"(index {i}): Newton found no root near the continuation guess (a fold?).")
        x = np.asarray(x)
        if i >= 2 and _jumped(xs[i - 2], xs[i - 1], x, ys[i - 2], ys[i - 1], ys[i]):
            return ManifoldBranch(ys, xs, ok, 1, f"branch lost at {slow_symbol(system)} = {ys[i].tolist()} "
                                  f"(index {i}): Newton converged to a root far from the branch (past a fold, onto another branch).")
        xs[i], ok[i] = x, True
        if predictor == "secant" and i > 0:
            # secant in the grid parameter: x_{i+1} ≈ x_i + (x_i − x_{i−1}) · |Δy_{i+1}| / |Δy_i|
            prev = np.linalg.norm(ys[i] - ys[i - 1])
            nxt = np.linalg.norm(ys[i + 1] - ys[i]) if i + 1 < N else 0.0
            guess = xs[i] + (xs[i] - xs[i - 1]) * (nxt / prev if prev > 0 else 0.0)
        else:
            guess = xs[i]
    return ManifoldBranch(ys, xs, ok, 0, f"followed all {N} points.")


@in_float64
def continue_manifold(system: FastSlowSystem, ys: Float[ArrayLike, "N d"] | Float[ArrayLike, " N"],
                      x0: Float[ArrayLike, " m"], *, predictor: str = "secant") -> ManifoldBranch:
    """Follow one branch of φ along a grid of y, each root the guess for the next.

    Parameters
    ----------
    system : FastSlowSystem
    ys : array_like, shape (N, d) (or (N,) when d = 1)
        The grid, in the order to follow it.
    x0 : array_like, shape (m,)
        Guess for φ(ys[0]); selects the branch.
    predictor : {"secant", "constant"}
        Guess for the next point: the secant through the last two roots
        (default) or the last root.

    Returns
    -------
    ManifoldBranch
        `status` 1 (with NaN beyond) when the branch is lost, e.g. past a fold:
        Newton fails, or converges to a root whose slope ‖Δx‖/‖Δy‖ is more than 5×
        the previous one (a jump onto another branch).

    Raises
    ------
    TypeError, ValueError
        Bad `system`, `ys`, `x0` or `predictor`.
    """
    require_system(system)
    predictor = check_choice("predictor", predictor, ("secant", "constant"))
    ys_arr, _ = as_points(system, ys, "ys", m=guess_dim(system, x0))
    m = fast_dim(system, x0)
    x0 = check_finite_array("x0", x0, ndim=1)
    if x0.shape != (m,):
        raise ValueError(f"`x0` must have shape (m,) = ({m},); got {x0.shape}.")
    return _follow(system, ys_arr, x0, predictor)


# --- normal hyperbolicity ------------------------------------------------------------

def _simplex_basis(n: int) -> np.ndarray:
    """Orthonormal basis U (n, n−1) of 1^⊥, the tangent space of the simplex."""
    q, _ = np.linalg.qr(np.concatenate([np.ones((n, 1)), np.eye(n)[:, : n - 1]], axis=1))
    return q[:, 1:]


def _restricted_jacobian(system, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if is_master(system):
        # D_x f = Q(y)ᵀ for f = Q(y)ᵀx: read off Q, compiled once for every check, restricted to 1^⊥
        J = np.asarray(system.Q(np.asarray(y, dtype=np.float64)), dtype=np.float64).T
        U = _simplex_basis(J.shape[0])
        return U.T @ J @ U
    k = system_kernels(system)
    return np.asarray(k["jac_f"](jnp.asarray(x), jnp.asarray(y), system.args))


def _max_real(system, x, y) -> float:
    J = _restricted_jacobian(system, x, y)
    return float(np.max(np.linalg.eigvals(J).real)) if J.size else -np.inf


def max_real_part(system, x, y) -> float:
    """Largest real part of the eigenvalues of D_x f(x, y) on the fast fibre (−γ(y) for a generator).

    Unvalidated and unscoped (callers validate and hold the float64 scope): the inner
    loop of `sp_ode.verification.region`'s event-stopped reduced path.
    """
    return _max_real(system, np.asarray(x), np.asarray(y))


@dataclass(frozen=True)
class Hyperbolicity:
    """Eigenvalues of D_x f on the fast fibre at one point (x, y) and what they imply.

    Attributes
    ----------
    eigenvalues : ndarray (k,) complex
        Sorted by decreasing real part; k = m,
        or n − 1 for a generator (restricted to 1^⊥).
    max_real : float
        Largest real part (= −γ(y) for a generator).
    kind : str
        "attracting" (all Re λ < −tol), "repelling" (all > tol),
        "saddle" (both signs, none within tol of 0) or "non-hyperbolic".
    tolerance : float
        |Re λ| ≤ tol counts as zero: 1000·eps·max(1, ‖D_x f‖).
    spectral_gap : float or None
        Γ(y) from `sp_ode.spectral_gap` (generators only).
    """

    eigenvalues: np.ndarray
    max_real: float
    kind: str
    tolerance: float
    spectral_gap: float | None = None

    @property
    def hyperbolic(self) -> bool:
        return self.kind != "non-hyperbolic"

    @property
    def attracting(self) -> bool:
        return self.kind == "attracting"


@in_float64
def normal_hyperbolicity(system: FastSlowSystem, x: Float[ArrayLike, "*N m"],
                         y: Float[ArrayLike, "*N d"]) -> Hyperbolicity:
    """Eigenvalues of D_x f(x, y) restricted to the fast fibre, and the verdict.

    For a general system the fibre is ℝᵐ; for a `MasterEquationSystem` it is
    1^⊥ (the simplex's tangent space), where the largest real part is −γ(y) with
    γ the spectral gap of Q(y) (T2), reported also from `sp_ode.spectral_gap`.

    Parameters
    ----------
    system : FastSlowSystem
    x : array_like (m,) or None
        A point of the critical manifold; None computes φ(y) first.
    y : array_like (d,)

    Returns
    -------
    Hyperbolicity

    Raises
    ------
    TypeError, ValueError
        Bad `system`, or `x`/`y` of the wrong shape or not finite.
    ManifoldNotFoundError
        When `x` is None and φ(y) cannot be found.
    """
    require_system(system)
    ys, batched = as_points(system, y, m=guess_dim(system, x))
    if batched:
        raise ValueError(f"`y` must be a single point of shape (d,); got shape {np.shape(y)}.")
    y1 = ys[0]
    if x is None:
        x1 = critical_manifold(system, y1)
    else:
        m = fast_dim(system, x)
        x1 = check_finite_array("x", x, ndim=1)
        if x1.shape != (m,):
            raise ValueError(f"`x` must have shape (m,) = ({m},); got {x1.shape}.")
    J = _restricted_jacobian(system, x1, y1)
    lam = np.linalg.eigvals(J) if J.size else np.zeros(0, complex)
    lam = lam[np.argsort(-lam.real, kind="stable")]
    tol = 1000 * _EPS * max(1.0, float(np.linalg.norm(J, np.inf)) if J.size else 1.0)
    re = lam.real
    if np.all(re < -tol):
        kind = "attracting"
    elif np.all(re > tol):
        kind = "repelling"
    elif np.all(np.abs(re) > tol):
        kind = "saddle"
    else:
        kind = "non-hyperbolic"
    gap = None
    if is_master(system):

        try:
            gap = spectral_gap(np.asarray(system.Q(jnp.asarray(y1)), dtype=np.float64))
        except ValueError:
            gap = None  # Q(y) is not a generator here (e.g. a rate has turned negative)
    return Hyperbolicity(lam.astype(complex), float(re.max()) if re.size else -np.inf, kind, tol, gap)


# --- where hyperbolicity is lost --------------------------------------------------------

@dataclass(frozen=True)
class HyperbolicityLoss:
    """Where normal hyperbolicity fails along a segment of y.

    Attributes
    ----------
    found : bool
    kind : str or None
        "fold" (the branch ends; det D_x f = 0) or
        "eigenvalue crossing" (an eigenvalue crosses Re λ = 0 along the branch;
        for a generator this is the spectral gap closing, reported as "gap closing").
    y : ndarray (d,) or None
        The location.
    x : ndarray (m,) or None
        Φ there (NaN when φ is undefined at the point itself).
    bracket : tuple of ndarray or None
        Consecutive grid points enclosing it.
    message : str
    branch : ManifoldBranch
        The continuation used to bracket it.
    max_real : ndarray (N,)
        Largest restricted real part along the branch (NaN where lost).
    """

    found: bool
    kind: str | None
    y: np.ndarray | None
    x: np.ndarray | None
    bracket: tuple | None
    message: str
    branch: ManifoldBranch = field(repr=False)
    max_real: np.ndarray = field(repr=False)


@in_float64
def locate_loss_of_hyperbolicity(system: FastSlowSystem, y_lo: Float[ArrayLike, " d"] | float,
                                 y_hi: Float[ArrayLike, " d"] | float, *, x0: Float[ArrayLike, " m"] | None = None,
                                 num: int = 101,
                                 ytol: float = 1e-12) -> HyperbolicityLoss:
    """Find where φ stops being normally hyperbolic on the segment from `y_lo` to `y_hi`.

    The branch through φ(y_lo) is continued along `num` points of the segment
    y(s) = y_lo + s (y_hi − y_lo), s ∈ [0, 1] (so `y_lo` > `y_hi` walks downward).
    The first event met is refined:

    * **fold** — Newton loses the branch between two grid points, or det D_x f
      changes sign between them: Newton on the extended system
      {F(x, y(s)) = 0, det D_x F(x, y(s)) = 0} in (x, s), from the last root;
    * **eigenvalue crossing** — the largest real part of the restricted
      eigenvalues changes sign along the branch: `brentq` on s ↦ max Re λ(φ(y(s))),
      each φ by Newton from the nearest grid root.

    Parameters
    ----------
    system : FastSlowSystem
    y_lo, y_hi : array_like (d,) (scalars when d = 1)
        Segment end points; continuation starts at `y_lo`.
    x0 : array_like (m,), optional
        Guess for φ(y_lo) (selects the branch); default as in `critical_manifold`.
    num : int
        Grid points for the bracketing continuation (default 101).
    ytol : float
        Absolute tolerance on the location in y for the crossing refinement.

    Returns
    -------
    HyperbolicityLoss
        `found` False when the branch stays hyperbolic on the whole segment.

    Raises
    ------
    TypeError, ValueError
        Bad arguments (`num` < 3, equal end points, wrong shapes).
    ManifoldNotFoundError
        If no root is found at `y_lo` itself.
    """
    from scipy.optimize import brentq

    require_system(system)
    num = check_positive_int("num", num)
    if num < 3:
        raise ValueError(f"`num` must be >= 3; got {num}.")
    a, _ = as_points(system, y_lo, "y_lo", m=guess_dim(system, x0))
    b, _ = as_points(system, y_hi, "y_hi", m=guess_dim(system, x0))
    if a.shape[0] != 1 or b.shape[0] != 1:
        raise ValueError("`y_lo` and `y_hi` must be single points of shape (d,).")
    a, b = a[0], b[0]
    direction = b - a
    length = float(np.linalg.norm(direction))
    if length == 0:
        raise ValueError(f"`y_lo` and `y_hi` must differ; both are {a.tolist()}.")
    s = np.linspace(0.0, 1.0, num)
    ys = a + s[:, None] * direction
    master = is_master(system)
    if master:
        x_start, found = _p_st_point(system, a)
        if not found:
            raise ManifoldNotFoundError(f"`Q_of_y` is not an irreducible generator at y_lo = {a.tolist()}: p_st, "
                                        "hence φ, is not defined there.")
    else:
        x_start = critical_manifold(system, a, x_guess=x0)
    branch = _follow(system, ys, x_start, "secant")
    k = None if master else system_kernels(system)
    n_ok = branch.n_followed
    mr = np.full(num, np.nan)
    dets = np.full(num, np.nan)
    for i in range(n_ok):
        mr[i] = _max_real(system, branch.x[i], ys[i])
        if not master:   # a generator has no fold (T1): det D_x f is only needed for a general system
            dets[i] = float(k["det_F"](jnp.asarray(branch.x[i]), jnp.asarray(ys[i]), system.args))

    def fold(i: int) -> HyperbolicityLoss | None:
        z0 = jnp.concatenate([jnp.asarray(branch.x[i]), jnp.asarray([s[i]])])
        z, ok = k["fold_newton"](z0, jnp.asarray(a), jnp.asarray(direction), system.args)
        z = np.asarray(z)
        step = s[1] - s[0]
        if not bool(ok) or not (s[max(i - 1, 0)] - step <= z[-1] <= s[min(i + 1, num - 1)] + step):
            return None
        return HyperbolicityLoss(True, "fold", a + z[-1] * direction, z[:-1], (ys[i], ys[min(i + 1, num - 1)]),
                                 f"fold at {slow_symbol(system)} = {(a + z[-1] * direction).tolist()} "
                                 "(det D_x f = 0; the branch ends).", branch, mr)

    for i in range(num - 1):
        if i + 1 >= n_ok:  # the branch was lost between s[i] and s[i+1]
            found = fold(i)
            if found is not None:
                return found
            return HyperbolicityLoss(False, None, None, None, (ys[i], ys[i + 1]),
                                     f"branch lost between {slow_symbol(system)} = {ys[i].tolist()} and "
                                     f"{ys[i + 1].tolist()}, but no fold was found there.", branch, mr)
        crossing = np.sign(mr[i]) != np.sign(mr[i + 1]) or mr[i + 1] == 0.0
        det_flip = np.sign(dets[i]) != np.sign(dets[i + 1]) and not master
        if det_flip:
            found = fold(i)
            if found is not None:
                return found
        if crossing:
            def h(si, i=i):
                y = a + si * direction
                guess = branch.x[i] if abs(si - s[i]) <= abs(si - s[i + 1]) else branch.x[i + 1]
                x, _ = _root(system, k, guess, y)
                return _max_real(system, x, y)

            if mr[i + 1] == 0.0:
                s_star = s[i + 1]
            else:
                s_star = brentq(h, s[i], s[i + 1], xtol=ytol / length, rtol=4 * _EPS, maxiter=200)
            y_star = a + s_star * direction
            # NaN where φ itself is undefined at the point (a generator whose gap has
            # closed is reducible there, so p_st is not unique)
            x_star = _p_st_point(system, y_star)[0] if master else \
                critical_manifold(system, y_star, x_guess=branch.x[i], throw=False)
            kind = "gap closing" if master else "eigenvalue crossing"
            return HyperbolicityLoss(True, kind, y_star, x_star, (ys[i], ys[i + 1]),
                                     f"{kind} at {slow_symbol(system)} = {y_star.tolist()}: max Re λ of D_x f on "
                                     f"the fast fibre changes sign from {mr[i]:.3g} to {mr[i + 1]:.3g}.", branch, mr)
    return HyperbolicityLoss(False, None, None, None, None,
                             f"normally hyperbolic on the whole segment (max Re λ between "
                             f"{np.nanmin(mr):.3g} and {np.nanmax(mr):.3g}).", branch, mr)
