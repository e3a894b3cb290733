"""An independent check of the manifold identity φ(y) = p_st(y) (T1; docs/theory.md §3.1, §7.3).

Comparing the critical manifold found by Newton on the bordered system
{Q(y)ᵀx = 0, 1ᵀx = 1} with p_st(y) from GTH is no evidence: for a generator that
Newton iteration is affine, converges in one step and *is* the bordered LU solve,
so both methods solve the same linear system (docs/theory.md §7.3).  This module
computes φ(y) a second way that involves no linear solve — **as the attractor of
the frozen fast flow** dx/dτ = f(x, y) — and compares the methods pairwise, each
comparison marked independent or not.

Generators: uniformised powers with a certified bracket
--------------------------------------------------------
`sp_ode.markov.attractor.attractor_distribution`: repeated squaring of the uniformised
chain P = I + Q/Λ gives M = P^(2^j) without any solve; since p_stᵀM = p_stᵀ, every
entry of p_st lies between the smallest and the largest entry of its column of M — a
certified bracket, whose radius (half-width plus a rounding allowance) bounds
|p_st − midpoint| entrywise.

General f: time integration
---------------------------
dx/dτ = f(x, y) is integrated at frozen y by classical RK4 (explicit: no solve, no
Newton), all grid points at once, from the system's initial fast state x0 with a step
h = 1/L, L the largest ‖D_x f‖∞ seen, inside RK4's stability interval.  Checkpoints
every 256 steps (Δτ = 256h ≥ 256/L, many relaxation times unless the flow is nearly
non-hyperbolic); it stops when two successive checkpoint differences are both below
1e-12·(1 + ‖x‖∞).  The comparison tolerance with it is `FLOW_TOL`·max(1, |φ|).

Which comparisons count
-----------------------
Methods carry a *kind*: `linear solve` (GTH, Newton on the bordered system),
`root finding` (Newton on f for a general system), `closed form`,
`attractor` (this module), `exact arithmetic` (Gaussian elimination over the
rationals on the float rates, `sp_ode.markov.reference.exact_stationary`, at a few
sampled y).  Two methods are independent when their kinds differ and neither is a
linear solve paired with another linear solve.  The check passes when at least one
independent comparison was made and every comparison made agrees within its
stated tolerance; with no independent comparison it is *skipped*, never passed.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sp_ode.core.memory import check_memory
from sp_ode.core.precision import in_float64
from sp_ode.manifolds.critical_manifold import continue_manifold, critical_manifold
from sp_ode.manifolds.newton import as_points, is_master, require_system
from sp_ode.markov.attractor import RADIUS_MAX, attractor_distribution
from sp_ode.markov.reference import exact_stationary
from sp_ode.markov.stationary import stationary_distribution
from sp_ode.systems.system import slow_symbol

if TYPE_CHECKING:
    from collections.abc import Callable

    from sp_ode.core.typing import ArrayLike, Float
    from sp_ode.systems.system import FastSlowSystem

__all__ = ["check_identity_size", "attractor_distribution", "frozen_flow_attractor", "identity_check", "IdentityCheck",
           "IdentityMethod", "IDENTITY_TOL", "FLOW_TOL"]

IDENTITY_TOL = 1e-12       # allowance for the rounding of a solve-based method at the sizes checked
FLOW_TOL = 1e-8            # comparison with a time-integrated attractor (rtol 1e-12, stop at 1e-11)
EXACT_POINTS = 3           # sampled y for the rational check
EXACT_MAX_N = 12           # the rational elimination is O(n³) big-rational operations


_RK4_CHUNK = 256          # RK4 steps between checkpoints
_MAX_CHUNKS = 400         # ≤ 102 400 steps: τ ≤ 10⁵/L


@functools.lru_cache(maxsize=32)
def _rk4_kernels(fast):
    """Compiled (cached per f): `_RK4_CHUNK` classical RK4 steps of dx/dτ = f(x, y) for a batch of
    frozen y, and the batched Jacobian D_x f (only to size the step)."""
    import jax
    import jax.numpy as jnp

    def field(x, y, args):
        return jnp.asarray(fast(0.0, x, y, args))

    batch = jax.vmap(field, in_axes=(0, 0, None))

    def chunk(x, ys, h, args):
        def step(_, x):
            k1 = batch(x, ys, args)
            k2 = batch(x + 0.5 * h * k1, ys, args)
            k3 = batch(x + 0.5 * h * k2, ys, args)
            k4 = batch(x + h * k3, ys, args)
            return x + (h / 6.0) * (k1 + 2 * k2 + 2 * k3 + k4)
        return jax.lax.fori_loop(0, _RK4_CHUNK, step, x)

    jac = jax.vmap(jax.jacfwd(field), in_axes=(0, 0, None))
    return jax.jit(chunk), jax.jit(jac)


@in_float64
def frozen_flow_attractor(system, ys, x0, *, tol: float = 1e-12, x_scale=None):
    """Where dx/dτ = f(x, y) goes from `x0` at each frozen y (module docstring): explicit RK4, no solve.

    The step is h = 1/L with L the largest ‖D_x f‖∞ seen at the start and (if given) at `x_scale`
    (points on φ used only to size the step), inside RK4's real stability interval (−2.78, 0).

    Returns
    -------
    (x (N, m), converged (N,) bool, tau float)
        the state at the last checkpoint, whether two
    successive checkpoints agreed within `tol·(1 + ‖x‖∞)`, and the flow time reached.
    """
    import jax.numpy as jnp

    if is_master(system):
        raise TypeError("use `attractor_distribution` for a master-equation system.")
    chunk, jac = _rk4_kernels(system.f)
    ys = np.asarray(ys, dtype=np.float64)
    x = np.broadcast_to(np.asarray(x0, dtype=np.float64), (ys.shape[0], np.size(x0))).copy()
    probes = [x] + ([np.asarray(x_scale, dtype=np.float64)] if x_scale is not None else [])
    L = max(float(np.nanmax(np.abs(np.asarray(jac(jnp.asarray(np.nan_to_num(p)), jnp.asarray(ys), system.args)))
                           .sum(axis=-1), initial=0.0)) for p in probes)
    h = 1.0 / max(L, 1e-3)
    quiet = np.zeros(ys.shape[0], dtype=int)
    tau = 0.0
    for _ in range(_MAX_CHUNKS):
        new = np.asarray(chunk(jnp.asarray(x), jnp.asarray(ys), h, system.args))
        tau += _RK4_CHUNK * h
        small = np.max(np.abs(new - x), axis=-1) <= tol * (1.0 + np.max(np.abs(new), axis=-1))
        quiet = np.where(small, quiet + 1, 0)
        x = new
        if np.all(quiet >= 2) or not np.all(np.isfinite(x)):
            break
    ok = (quiet >= 2) & np.all(np.isfinite(x), axis=-1)
    return x, ok, tau


@dataclass
class IdentityMethod:
    """One way of computing φ on the grid: `name`, `kind` (module docstring), `values` (N, m) (NaN where
    not computed), `points` (indices computed), `note`."""

    name: str
    kind: str
    values: np.ndarray
    points: np.ndarray
    note: str = ""


def _independent(a: IdentityMethod, b: IdentityMethod) -> bool:
    return a.kind != b.kind


@dataclass
class IdentityCheck:
    """The methods, their pairwise comparisons and the verdict of `identity_check`.

    Attributes
    ----------
    ys : ndarray (N, d)
    methods : dict name -> IdentityMethod
    comparisons : list of dict
        `a`, `b`, `independent`, `max_error`,
        `tolerance` (the stated one, per comparison), `passed`, `points`.
    status : "ok"
        "FAIL" or "skipped" (no independent comparison possible).
    message : str
        The first failing comparison, or why skipped.
    phi : ndarray (N, m)
        The critical manifold as root-found (what the rest of verify uses).
    reference : ndarray (N, m) or None
        The independent reference drawn with it.
    """

    ys: np.ndarray
    methods: dict
    comparisons: list
    status: str
    message: str
    phi: np.ndarray
    reference: np.ndarray | None = None
    reference_name: str | None = None
    error_per_point: np.ndarray | None = field(default=None, repr=False)

    @property
    def passed(self) -> bool:
        return self.status == "ok"

    def independent_comparison(self) -> dict | None:
        """The headline comparison: the first independent one (the one a reader should cite)."""
        return next((c for c in self.comparisons if c["independent"]), None)

    def to_dict(self) -> dict:
        return {"status": self.status, "message": self.message, "grid": self.ys,
                "methods": [{"name": m.name, "kind": m.kind, "points": len(m.points), "note": m.note}
                            for m in self.methods.values()],
                "comparisons": self.comparisons}


def _compare(a: IdentityMethod, b: IdentityMethod, tol_per_point: np.ndarray) -> dict:
    idx = np.intersect1d(a.points, b.points)
    err = np.max(np.abs(a.values[idx] - b.values[idx]), axis=-1)
    err = np.where(np.isfinite(err), err, np.inf)
    tol = tol_per_point[idx]
    worst = int(np.argmax(err - tol)) if idx.size else 0
    return {"a": a.name, "b": b.name, "independent": _independent(a, b), "points": int(idx.size),
            "max_error": float(err.max()) if idx.size else float("nan"),
            "tolerance": float(tol.max()) if idx.size else float("nan"),
            "passed": bool(idx.size and np.all(err <= tol)),
            "worst_index": int(idx[worst]) if idx.size else None}


def check_identity_size(N: int, m: int, d: int) -> int:
    """Refuse an identity grid of `N` points before it is built, when it would not fit in memory.

    Estimate: per point the stack of Q(y) or D_x f (m²), the working copies of GTH and of the
    squarings (3m²), about 24 vectors of length m and the grid itself — 8·(4m² + 24m + 4d) bytes.
    Called by [`identity_check`][sp_ode.verification.identity.identity_check] and by `sp-ode verify` before it makes the `--num` grid.

    Raises
    ------
    MemoryBudgetError
        The estimate exceeds the budget of `sp_ode.core.memory.check_memory`.
    """
    return check_memory(8 * int(N) * (4 * m * m + 24 * m + 4 * d), remedy="Use fewer grid points (`--num`).",
                        what=f"the identity check on {int(N)} grid points (m = {m}, d = {d})")


@in_float64
def identity_check(system: FastSlowSystem, ys: Float[ArrayLike, "N d"] | Float[ArrayLike, " N"], *,
                   x0: Float[ArrayLike, " m"] | None = None, phi: Callable | None = None,
                   phi_name: str = "the supplied φ",
                   phi_kind: str = "closed form", exact_points: int = EXACT_POINTS) -> IdentityCheck:
    """Check φ(y) = p_st(y) (or φ against its closed form) on a grid by methods that solve different problems.

    Parameters
    ----------
    system : FastSlowSystem
    ys : array_like (N, d)
        The grid of slow states.
    x0 : array_like (m,), optional
        Initial fast state: selects the branch (Newton continuation) and starts the
        frozen flow of a general system.  Required for a general system.
    phi : callable y (d,) -> (m,), or ndarray (N, m), optional
        A claimed φ (a closed form, a catalogue entry's φ, or a deliberately wrong one):
        compared with the independent methods.
    phi_name, phi_kind : str
        How `phi` is named in messages, and its kind (module docstring): "closed form" for a formula,
        "linear solve" when it is itself computed from Q(y) by a solve (a catalogue master equation's φ).
    exact_points : int
        Sampled y for the exact rational check (generators with n ≤ 12; 0 to skip).

    Returns
    -------
    IdentityCheck

    Raises
    ------
    TypeError, ValueError
        Bad `system`, `ys`, `x0` or `phi` shape.
    MemoryBudgetError
        The grid is too large for memory (`check_identity_size`).
    """
    require_system(system)
    ys, _ = as_points(system, ys, "ys")
    check_identity_size(ys.shape[0], system.m if system.m is not None else int(np.size(x0)) if x0 is not None
                        else 1, ys.shape[1])
    return identity_check_checked(system, ys, x0=x0, phi=phi, phi_name=phi_name, phi_kind=phi_kind,
                                  exact_points=exact_points)


@in_float64
def identity_check_checked(system: FastSlowSystem, ys: np.ndarray, *, x0: Float[ArrayLike, " m"] | None = None,
                           phi: Callable | None = None, phi_name: str = "the supplied φ",
                           phi_kind: str = "closed form", exact_points: int = EXACT_POINTS) -> IdentityCheck:
    """`identity_check` on input already checked: `system` a FastSlowSystem, `ys` a float64 (N, d) grid whose
    size passed `check_identity_size` (`sp_ode.verify` checks it before it builds the grid)."""
    import jax.numpy as jnp

    N = ys.shape[0]
    every = np.arange(N)
    methods: dict[str, IdentityMethod] = {}
    tols: dict[tuple, np.ndarray] = {}
    master = is_master(system)
    if master:

        Qs = np.stack([np.asarray(system.Q(jnp.asarray(y)), dtype=np.float64) for y in ys])
        n = Qs.shape[-1]
        gth = IdentityMethod("p_st by GTH (stationary_distribution)", "linear solve", stationary_distribution(Qs),
                             every)
        newton = IdentityMethod("φ by Newton on the bordered system", "linear solve",
                                critical_manifold(system, ys, throw=False), every,
                                "affine for a generator: one Newton step is the bordered LU solve")
        att = attractor_distribution(Qs)
        attractor = IdentityMethod("attractor of the frozen fast flow (uniformised powers P^(2^j))", "attractor",
                                   np.where(att.converged[:, None], att.p, np.nan), every,
                                   f"2^j steps with j ≤ {int(att.squarings.max())}; certified bracket radius "
                                   f"≤ {float(att.radius.max()):.1e}")
        radius = np.where(att.radius <= RADIUS_MAX, att.radius, -np.inf)   # too loose: fails, never passes
        methods.update({m.name: m for m in (gth, attractor, newton)})
        for other in (gth, newton):
            tols[(attractor.name, other.name)] = radius + IDENTITY_TOL
        tols[(gth.name, newton.name)] = np.full(N, IDENTITY_TOL)
        if exact_points and n <= EXACT_MAX_N:

            pick = np.unique(np.linspace(0, N - 1, min(exact_points, N)).astype(int))
            vals = np.full((N, n), np.nan)
            for i in pick:
                vals[i] = [float(v) for v in exact_stationary(Qs[i])]
            exact = IdentityMethod(f"exact rational elimination on the float rates ({len(pick)} sampled y)",
                                   "exact arithmetic", vals, pick)
            methods[exact.name] = exact
            # GTH is entrywise accurate to c·n³·u (docs/theory.md §7.2): far inside this
            tols[(gth.name, exact.name)] = np.full(N, IDENTITY_TOL)
            tols[(attractor.name, exact.name)] = radius + IDENTITY_TOL
        root, headline = newton, attractor
    else:
        if x0 is None:
            raise ValueError("`x0` is required for a general system (it selects the branch of φ).")
        x0 = np.asarray(x0, dtype=np.float64).reshape(-1)
        branch = continue_manifold(system, ys, x0)
        root = IdentityMethod("φ by Newton continuation from x0", "root finding", branch.x, every, branch.message)
        methods[root.name] = root
        xs, ok, tau = frozen_flow_attractor(system, ys, x0, x_scale=branch.x)
        flow = IdentityMethod("attractor of the frozen fast flow from x0 (explicit RK4)", "attractor",
                              np.where(ok[:, None], xs, np.nan), every,
                              f"flow time τ = {tau:.3g}; {int((~ok).sum())} of {N} points not settled")
        methods[flow.name] = flow
        scale = np.maximum(1.0, np.nanmax(np.abs(branch.x), axis=-1, initial=1.0))
        tols[(flow.name, root.name)] = FLOW_TOL * scale
        headline = flow
    if phi is not None:
        if callable(phi):
            vals = np.stack([np.asarray(phi(jnp.asarray(y)), dtype=np.float64).reshape(-1) for y in ys])
        else:
            vals = np.asarray(phi, dtype=np.float64)
        if vals.shape != root.values.shape:
            raise ValueError(f"`phi` must give shape (N, m) = {root.values.shape}; got {vals.shape}.")
        given = IdentityMethod(phi_name, phi_kind, vals, every)
        methods[given.name] = given
        scale = np.maximum(1.0, np.max(np.abs(np.nan_to_num(vals)), axis=-1))
        tols[(root.name, given.name)] = IDENTITY_TOL * scale
        if master:
            tols[(headline.name, given.name)] = np.where(att.radius <= RADIUS_MAX, att.radius, -np.inf) \
                + IDENTITY_TOL
        else:
            tols[(headline.name, given.name)] = FLOW_TOL * scale
    comparisons = [_compare(methods[a], methods[b], t) for (a, b), t in tols.items()]
    comparisons.sort(key=lambda c: not c["independent"])
    failed = [c for c in comparisons if not c["passed"]]
    independent = [c for c in comparisons if c["independent"] and c["points"]]
    if failed:
        c = failed[0]
        where = ys[c["worst_index"]].tolist() if c["worst_index"] is not None else "?"
        if c["tolerance"] == -np.inf:
            status, message = "FAIL", (f"identity: inconclusive — the attractor's certified bracket (radius up to "
                                       f"{float(att.radius.max()):.1e} after 2^{int(att.squarings.max())} steps) is "
                                       f"wider than {RADIUS_MAX:.0e}, so it cannot certify agreement (the chain mixes "
                                       "too slowly, or is reducible, for float64 powers)")
        else:
            status, message = "FAIL", (f"identity: {c['a']} and {c['b']} differ by {c['max_error']:.2e} "
                                       f"(tolerance {c['tolerance']:.1e}) at "
                                       f"{slow_symbol(system)} = {where}")
    elif not independent:
        status, message = "skipped", "no two methods that solve different problems could be compared"
    else:
        c = independent[0]
        status, message = "ok", (f"{c['a']} vs {c['b']}: max difference {c['max_error']:.1e} "
                                 f"≤ {c['tolerance']:.1e} on {c['points']} points")
    ref = headline.values
    err = np.max(np.abs(root.values - ref), axis=-1)
    return IdentityCheck(ys, methods, comparisons, status, message, root.values, ref, headline.name, err)
