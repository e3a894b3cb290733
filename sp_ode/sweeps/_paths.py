"""The per-chunk engine of `sp_ode.sweep`: corrected reduced paths, their error estimates, full solves.

A chunk is a batch of parameter points (ε_b, p_b, x0_b, y0_b).  For each point the
corrected reduced flow of order k, y' = g(h^{(k)}(y), y) with
h^{(k)} = φ + εh₁ + … + εᵏh_k (docs/theory.md §3.3 (T3)), is tried for k = 0, 1, …, K,
and the first k whose estimated y-error is ≤ safety·tol is kept; the rest get the full
stiff solve.  Everything is `jax.vmap`-ed over the points of one path, with ε and
the swept parameters as per-lane data (docs/theory.md §7.5).

What is estimated.  The error of the order-k reduced path in y at the save times
t_i, E_k = max_i ‖y(t_i) − y_k(t_i)‖∞, is estimated by

    Ê_k = max_i ‖y_{k+1}(t_i) − y_k(t_i)‖∞  +  ε ‖D_x g‖₂ ‖x0 − h^{(K+1)}(y0)‖₂ / γ(y0).

The first term is the effect on y of the next term ε^{k+1}h_{k+1} of the expansion,
propagated through the reduced flow (the order-(k+1) path minus the order-k path:
an embedded estimate, like a Runge–Kutta pair; it is ε^{k+1} times the integral of
D_x g·h_{k+1} along the reduced trajectory, carried by the linearised flow).  The
second is the shift of y during the initial layer when x0 is off the slow manifold:
x − h decays like e^{−γτ} on the fast clock τ = t/ε, so ∫ D_x g (x − h) dt
≈ ε ‖D_x g‖ ‖x0 − h‖/γ, with γ(y0) the decay rate of the fast Jacobian D_x f at
(φ(y0), y0) (the spectral gap of Q(y0) for a master equation, docs/theory.md §3.2 (T2),
§7.4).  It is zero when the sweep starts on the manifold (`x0="manifold"`).
A third term, 1e-3·tol·(1 + max|y_k|), accounts for the reduced solves' own
tolerance (below it the difference of two paths is solver noise).  None of the
terms is a bound: they are leading-order asymptotics (docs/theory.md §7.5), so
`sp_ode.sweep` validates them against full solves on a random subset.

The full path is `sp_ode.simulate` (Kvaerno5, vmapped; scipy Radau for any lane
Kvaerno5 gives up on) at rtol = atol = tol/100; its "estimate" is that controller
tolerance atol + rtol·max|y|, also validated.  The reference of the validation is
the same at rtol = 1e-3·tol, atol = 1e-5·tol (10× tighter than the full path; `simulate`
runs its controller 100× tighter still).  Measured on Michaelis–Menten, ε ∈ [1e-6, 1e-2]:
within 1.2e-13 of scipy Radau at rtol 1e-12, as is the old 1e-4·tol reference, which cost
60× more (its controller at 1e-12·tol made Kvaerno5 give up on ≈ 10 % of the lanes and
fall back to scipy one lane at a time: 3.9 s against 0.065 s per 16 lanes;
docs/bench/sweep.md).

Manifold terms: orders ≤ 1 from `sp_ode.slow_manifold` (T3's closed form for a master
equation), higher orders by one step of the invariance equation each (`_next_term`),
cross-checked against `slow_manifold(..., method="series")` in tests/sweeps/test_sweep.py.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sp_ode.core.cache import LRUCache
from sp_ode.core.precision import in_float64
from sp_ode.manifolds.reduced import ReducedSystem, simulate_reduced
from sp_ode.manifolds.slow_manifold import slow_manifold, taylor_coefficient
from sp_ode.systems.simulation import simulate
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

PATH_FULL = -1
# status codes of a point
STATUS_OK = 0            # its path's estimate ≤ tol (and, if validated, the true error ≤ tol)
STATUS_RESOLVED = 1      # validated error > tol: replaced by the reference full solve
STATUS_FAILED = 2        # the full solve failed (y holds inf)

# Solver tolerances relative to `tol`: the reduced and full solves must not spend
# the error budget themselves; the reference must be ≫ more accurate than tol.
REDUCED_TOL_FACTOR = 1e-3
FULL_TOL_FACTOR = 1e-2
REFERENCE_RTOL_FACTOR = 1e-3
REFERENCE_ATOL_FACTOR = 1e-5
MIN_BUCKET = 8


# Manifold terms, lifted systems and kernels per system (keyed on its vector fields), so
# that repeated sweeps over one system, and every chunk on a Dask worker, reuse one set of
# function objects and hence one set of compiled solves.
_BUILT = LRUCache(16)


@dataclass(eq=False)
class SweepPlan:
    """Everything a worker needs for any chunk of one sweep (sent once per worker).

    `base_args` is the system's args dict; the swept names replace its leaves per
    point.  `x0` is None for `x0="manifold"` (x0 = h^{(K+1)}(y0) per point).
    """

    system: FastSlowSystem
    base_args: dict
    names: tuple
    t_span: tuple
    ts: np.ndarray
    tol: float
    max_order: int
    safety: float = 0.5
    reduced_method: str = "Tsit5"
    max_steps: int = 50_000

    def __post_init__(self):
        # numpy leaves: the plan travels to Dask workers by pickle, and a float64 JAX array unpickled
        # outside JAX's float64 scope comes back float32 (see FastSlowSystem.__getstate__)
        self.base_args = {k: jax.tree_util.tree_map(np.asarray, v) for k, v in self.base_args.items()}

    @property
    def _built(self) -> dict:
        """Functions built for this system in this process (shared by every sweep over it)."""
        s = self.system
        return _BUILT.get_or_make((type(s), s.f, s.g, s.m, s.d), dict)


@dataclass
class ChunkInput:
    """The points of one chunk: global indices and per-point data (leading axis B)."""

    index: int
    points: np.ndarray         # (B,) global point indices
    eps: np.ndarray            # (B,)
    values: dict               # name -> (B, ...)
    x0: np.ndarray | None      # (B, m), or None for x0 on the manifold
    y0: np.ndarray             # (B, d)
    validate: np.ndarray       # (B,) bool


# Lifted vector fields f(t, x, y, a["args"]) / a["eps"], g(t, x, y, a["args"]): ε becomes a
# per-lane datum.  One pair per (f, g), so every sweep over a system shares compiled solves.
_LIFTED = LRUCache()


def _lifted(system: FastSlowSystem):
    f, g = system.f, system.g

    def make():
        def f_l(t, x, y, a):
            return f(t, x, y, a["args"]) / a["eps"]

        def g_l(t, x, y, a):
            return g(t, x, y, a["args"])
        return f_l, g_l
    return _LIFTED.get_or_make((f, g), make)


_LIFTED_PHI = LRUCache()


def _lifted_phi(phi_eps):
    """h(y, ·, a) = phi_eps(y, a["eps"], a["args"]): the manifold of a lane at its own ε."""
    def make():
        def h(y, _eps, a):
            return phi_eps(y, a["eps"], a["args"])
        return h
    return _LIFTED_PHI.get_or_make(phi_eps, make)


def _horner(terms, eps):
    """Σ_i εⁱ T_i by Horner's rule (differentiable in ε at 0, unlike ε ** arange)."""
    x = terms[-1]
    for T in reversed(terms[:-1]):
        x = T + eps * x
    return x


def _next_term(system: FastSlowSystem, lower, j: int):
    """terms(y, args) -> [φ, h₁, …, h_j], h_j from the invariance equation (O_j) of T3.

    `lower(y, args)` gives [φ, …, h_{j−1}].  As in `sp_ode.slow_manifold` (series):
    A h_j = [εʲ] (ε DH·g(H, y) − f(H, y)), H = Σ_{i<j} εⁱh_i, A = D_x f(φ(y), y),
    with the last row replaced by 1ᵀh_j = 0 for a master equation (docs/theory.md
    §3.3).  Built on top of T3's closed form for orders ≤ 1, so each order costs one
    linear solve more than the last instead of nested derivatives through Newton's
    method for φ (what the series differentiates).
    """
    f, g = system.f, system.g
    master = isinstance(system, MasterEquationSystem)

    def terms(y, args):
        y = jnp.reshape(y, (-1,))
        low = lower(y, args)

        def residual(eps):
            x = _horner(lower(y, args), eps)
            v = g(0.0, x, y, args)
            Dh_g = jax.jvp(lambda yy: _horner(lower(yy, args), eps), (y,), (v,))[1]
            r = eps * Dh_g - f(0.0, x, y, args)
            return r.at[-1].set(0.0) if master else r

        c = taylor_coefficient(residual, j)
        A = jax.jacfwd(lambda x: f(0.0, x, y, args))(low[0])
        if master:
            A = A.at[-1].set(1.0)
        return low + [jnp.linalg.solve(A, c)]
    return terms


def _terms(plan: SweepPlan, order: int):
    """terms(y, args) -> [φ, h₁, …, h_order]: `sp_ode.slow_manifold` up to order 1, then (O_j)."""
    key = ("terms", order)
    if key not in plan._built:
        if order <= 1:
            # T3's closed form (one inverse per y) for a master equation; the series otherwise
            method = "closed_form" if isinstance(plan.system, MasterEquationSystem) else "series"
            phi_eps = slow_manifold(plan.system, order=order, method=method).reduced_system(1.0).phi_eps

            def fn(y, args, phi_eps=phi_eps, order=order):
                T0 = phi_eps(y, 0.0, args)
                return [T0] if order == 0 else [T0, phi_eps(y, 1.0, args) - T0]  # degree-1 polynomial
        else:
            fn = _next_term(plan.system, _terms(plan, order - 1), order)
        plan._built[key] = fn
    return plan._built[key]


def _manifold(plan: SweepPlan, order: int):
    """h^{(order)}(y, ε, args) = Σ_{j ≤ order} εʲ h_j(y)."""
    key = ("manifold", order)
    if key not in plan._built:
        terms = _terms(plan, order)

        def h(y, eps, args):
            return _horner(terms(y, args), eps)
        plan._built[key] = h
    return plan._built[key]


def _reduced(plan: SweepPlan, order: int) -> ReducedSystem:
    key = ("reduced", order)
    if key not in plan._built:
        phi_eps = _manifold(plan, order)
        _, g_l = _lifted(plan.system)
        h = _lifted_phi(phi_eps)
        plan._built[key] = ReducedSystem(g_l, lambda y: y, None, plan.system.d,
                                         f"{plan.system.name}/sweep(order={order})",
                                         ("sweep", phi_eps), eps=1.0, phi_eps=h)
    return plan._built[key]


def _full_system(plan: SweepPlan) -> FastSlowSystem:
    if "full" not in plan._built:
        f_l, g_l = _lifted(plan.system)
        s = plan.system
        plan._built["full"] = FastSlowSystem(f_l, g_l, eps=1.0, m=s.m, d=s.d, name=f"{s.name}/sweep")
    return plan._built["full"]


def _point_kernels(plan: SweepPlan):
    """jit(vmap): (y0, {"eps", "args"}) -> (h^{(K+1)}(y0), ‖D_x g‖₂, eigenvalues of D_x f at φ(y0))."""
    key = ("kernels", plan.max_order)
    if key not in plan._built:
        top = _manifold(plan, plan.max_order + 1)
        phi0 = _manifold(plan, 0)
        f, g = plan.system.f, plan.system.g

        def one(y0, lane):
            eps, args = lane["eps"], lane["args"]
            x_top = top(y0, eps, args)
            x_phi = phi0(y0, 0.0, args)
            Gx = jax.jacfwd(lambda x: g(0.0, x, y0, args))(x_phi)
            Fx = jax.jacfwd(lambda x: f(0.0, x, y0, args))(x_phi)
            return x_top, jnp.linalg.norm(Gx, 2), Fx
        plan._built[key] = jax.jit(jax.vmap(one))
    return plan._built[key]


def _decay_rate(Fx: np.ndarray, master: bool) -> np.ndarray:
    """γ = min −Re λ(D_x f) (B,), leaving out the conserved mode λ = 0 of a master equation."""
    lam = np.linalg.eigvals(Fx)                       # (B, m)
    if master:  # Q(y)ᵀ has one zero eigenvalue (probability is conserved): drop the one nearest 0
        drop = np.argmin(np.abs(lam), axis=1)
        keep = np.ones(lam.shape, dtype=bool)
        keep[np.arange(lam.shape[0]), drop] = False
        lam = lam[keep].reshape(lam.shape[0], -1)
    if lam.shape[1] == 0:
        return np.full(lam.shape[0], np.inf)
    return np.min(-lam.real, axis=1)


def _bucket(n: int, cap: int) -> int:
    """Pad a batch of n to a power of two (≥ MIN_BUCKET, ≤ cap): few distinct shapes, few compiles."""
    size = MIN_BUCKET
    while size < n:
        size *= 2
    return max(min(size, cap), n)


def _lane_args(plan: SweepPlan, chunk: ChunkInput, idx: np.ndarray) -> dict:
    """{"eps": (n,), "args": base args with swept leaves} for the lanes `idx`, every leaf batched."""
    n = idx.size
    args = {}
    for key, leaf in plan.base_args.items():
        if key in chunk.values:
            args[key] = np.asarray(chunk.values[key][idx], dtype=np.float64)
        else:
            leaf = np.asarray(leaf)
            args[key] = np.broadcast_to(leaf, (n,) + leaf.shape).copy()
    return {"eps": np.asarray(chunk.eps[idx], dtype=np.float64), "args": args}


def _padded(idx: np.ndarray, cap: int) -> np.ndarray:
    size = _bucket(idx.size, cap)
    return np.concatenate([idx, np.full(size - idx.size, idx[0], dtype=idx.dtype)])


def _solve_reduced(plan, chunk, order, idx, cap):
    lanes = _padded(idx, cap)
    tol = plan.tol * REDUCED_TOL_FACTOR
    traj = simulate_reduced(_reduced(plan, order), plan.t_span, chunk.y0[lanes], method=plan.reduced_method,
                            rtol=tol, atol=tol, ts=plan.ts, throw=False, max_steps=plan.max_steps,
                            args=_lane_args(plan, chunk, lanes), batch_args=True)
    n = idx.size
    return traj.y[:n], np.asarray(traj.status)[:n]


def _solve_full(plan, chunk, x0, idx, cap, rtol, atol, backend="diffrax"):
    lanes = _padded(idx, cap) if backend == "diffrax" else idx
    method = "Kvaerno5" if backend == "diffrax" else "Radau"
    traj = simulate(_full_system(plan), plan.t_span, x0[lanes], chunk.y0[lanes], rtol=rtol, atol=atol,
                    ts=plan.ts, throw=False, max_steps=plan.max_steps, backend=backend, method=method,
                    args=_lane_args(plan, chunk, lanes), batch_args=True)
    n = idx.size
    return np.array(traj.y[:n]), np.array(traj.status[:n])


def _reference(plan, chunk, x0, idx, cap):
    """The tight full solve of the validated points; scipy Radau where Kvaerno5 gave up."""
    rtol, atol = plan.tol * REFERENCE_RTOL_FACTOR, plan.tol * REFERENCE_ATOL_FACTOR
    yr, sr = _solve_full(plan, chunk, x0, idx, cap, rtol, atol)
    again = np.flatnonzero(sr != 0)
    if again.size:
        y2, s2 = _solve_full(plan, chunk, x0, idx[again], cap, rtol, atol, backend="scipy")
        yr[again], sr[again] = y2, s2
    return yr, sr


def _max_diff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """max over save times and components of |a − b|, per point (inf where either is not finite)."""
    d = np.abs(a - b).reshape(a.shape[0], -1).max(axis=1)
    return np.where(np.isfinite(d), d, np.inf)


def _path_difference(y_k: np.ndarray, y_next: np.ndarray) -> np.ndarray:
    """The embedded estimate max_i ‖y_{k+1}(t_i) − y_k(t_i)‖∞ per point."""
    return _max_diff(y_k, y_next)


@in_float64
def run_chunk(plan: SweepPlan, chunk: ChunkInput) -> dict[str, Any]:
    """Solve one chunk; returns per-point arrays (leading axis B) and timing.

    Keys: points, y (B, K, d), path (B,) int (k, or -1 for full), estimate (B,),
    status (B,), validated (B,) bool, true_error (B,) (nan unless validated),
    ratio (B,) true/estimated (nan unless validated), seconds (dict per stage).
    """
    B = chunk.points.size
    cap = _bucket(B, 1 << 30)
    K = plan.max_order
    seconds = {}
    start = time.perf_counter()
    all_idx = np.arange(B)
    x_top, gnorm, Fx = jax.device_get(_point_kernels(plan)(chunk.y0, _lane_args(plan, chunk, all_idx)))
    x_top, gnorm = np.asarray(x_top), np.asarray(gnorm)
    x0 = x_top if chunk.x0 is None else chunk.x0
    gamma = _decay_rate(np.asarray(Fx), isinstance(plan.system, MasterEquationSystem))
    with np.errstate(divide="ignore", invalid="ignore"):
        layer = chunk.eps * gnorm * np.linalg.norm(x0 - x_top, axis=1) / gamma
    layer = np.where(gamma > 0, layer, np.inf)        # not attracting: no reduced path
    layer = np.where(np.isfinite(layer), layer, np.inf)
    seconds["setup"] = time.perf_counter() - start

    d = plan.system.d if plan.system.d is not None else chunk.y0.shape[1]
    y = np.full((B, plan.ts.size, d), np.inf)
    path = np.full(B, PATH_FULL, dtype=np.int64)
    estimate = np.full(B, np.inf)
    status = np.full(B, STATUS_OK, dtype=np.int64)

    remaining = all_idx[layer <= plan.tol]
    prev = None                                       # (y_k, status_k) on `remaining`
    for k in range(K + 1):
        if remaining.size == 0:
            break
        start = time.perf_counter()
        if prev is None:
            prev = _solve_reduced(plan, chunk, k, remaining, cap)
        nxt = _solve_reduced(plan, chunk, k + 1, remaining, cap)
        # + the reduced solver's own tolerance: below it the difference of two paths is noise
        floor = plan.tol * REDUCED_TOL_FACTOR * (1.0 + np.abs(prev[0]).reshape(remaining.size, -1).max(axis=1))
        est = _path_difference(prev[0], nxt[0]) + layer[remaining] + floor
        ok = (est <= plan.safety * plan.tol) & (prev[1] == 0) & (nxt[1] == 0)
        take = remaining[ok]
        y[take], path[take], estimate[take] = prev[0][ok], k, est[ok]
        remaining = remaining[~ok]
        prev = (nxt[0][~ok], nxt[1][~ok])
        seconds[f"reduced_{k}"] = time.perf_counter() - start

    full = np.flatnonzero(path == PATH_FULL)
    if full.size:
        start = time.perf_counter()
        rtol = atol = plan.tol * FULL_TOL_FACTOR
        yf, sf = _solve_full(plan, chunk, x0, full, cap, rtol, atol)
        again = np.flatnonzero(sf != 0)
        if again.size:  # Kvaerno5 gave up on some lanes: scipy Radau, one by one
            yf[again], sf[again] = _solve_full(plan, chunk, x0, full[again], cap, rtol, atol, backend="scipy")
        y[full] = yf
        scale = np.abs(yf).reshape(full.size, -1).max(axis=1, initial=0.0)
        estimate[full] = np.where(sf == 0, atol + rtol * np.where(np.isfinite(scale), scale, 0.0), np.inf)
        status[full[sf != 0]] = STATUS_FAILED
        y[full[sf != 0]] = np.inf
        seconds["full"] = time.perf_counter() - start

    path_first = path.copy()
    true_error = np.full(B, np.nan)
    ratio = np.full(B, np.nan)
    check = np.flatnonzero(chunk.validate)
    if check.size:
        start = time.perf_counter()
        yr, sr = _reference(plan, chunk, x0, check, cap)
        good = sr == 0
        err = _max_diff(y[check], yr)
        true_error[check] = np.where(good, err, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio[check] = np.where(good, err / estimate[check], np.nan)
        bad = check[good & (err > plan.tol)]
        # the estimate failed here: keep the reference full solve instead
        ref = {int(i): r for i, r in zip(check, yr)}
        for i in bad:
            y[i] = ref[int(i)]
            path[i] = PATH_FULL
            estimate[i] = plan.tol * REFERENCE_RTOL_FACTOR * max(1.0, float(np.abs(ref[int(i)]).max()))
            status[i] = STATUS_RESOLVED
        seconds["validate"] = time.perf_counter() - start
    return {"index": chunk.index, "points": chunk.points, "y": y, "path": path, "path_first": path_first, "estimate": estimate,
            "status": status, "validated": chunk.validate.copy(), "true_error": true_error, "ratio": ratio,
            "seconds": seconds}
