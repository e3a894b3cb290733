"""`sp_ode.sweep` for a `NetworkSystem`: corrected paths from Chebyshev tables, sparse full solves (docs/theory.md §7.13).

A network system ε dx/dt = Q(y)ᵀx, dy/dt = G(E_x[f], y) (docs/theory.md §7.6–7.7) needs the fast
state only through the K moments E_x[f_k] = F x.  On the manifold x = h(y) = p_st + εh₁ + ε²h₂ + …
they are m₀ + εm₁ + ε²m₂ with m_j(y) = F h_j(y), **independent of ε** and of every parameter that only
the slow ODEs read.  So for one slow variable (d = 1):

* with one slow variable (d = 1) the terms factor into vectors that do not depend on the slow
  ODE: h₁ = A^#[Dp_st·g] = g·u with u = A^#Dp_st, Dp_st = −A^#(∂_yA)p (T3, §3.3), and the invariance
  equation at ε², A h₂ = Dh₁·g + Dp_st·(∂_x g·h₁), 1ᵀh₂ = 0, gives h₂ = g²·w + g g′·v + g (G_m·Fu)·u
  with v = A^#u, w = A^#u′ — where g = G(m₀(y), y), g′ = G_m m₀′ + G_y along the manifold, and G_m, G_y the
  derivatives of the slow ODE.  So a **table** of the moments m₀ = Fp, Fu, Fv, Fw (Chebyshev
  interpolants on an interval of y, nested Chebyshev–Lobatto nodes doubled until the change at the
  new nodes is below `TABLE_TOL`; u′ from the Chebyshev derivative of u over the nodes; each A^#
  one pinned sparse solve, never an n × n matrix) serves every point that shares the network's
  rate constants — every ε and every slow-equation parameter at once: m₁ = g·Fu and
  m₂ = g²·Fw + g g′·Fv + g (G_m·Fu)·Fu are formed per point.  It is built once per sweep and shipped with
  the plan;
* a **rate constant** k swept over a continuum (the only rate swept, ≥ `K_DISTINCT_MIN` distinct values)
  gets one **(y, k) table** (`build_k_table`): the same moment vectors on the tensor grid of the y-nodes
  of the 1-D table at max k and nested Chebyshev–Lobatto k-nodes on [min k, max k] of the swept values
  (`chebyshev_fit_tensor`: k doubled until the change at the new k-nodes is ≤ the table tolerance, and each
  k-node's change in y too), each (y, k) node the same stationary and pinned solves as a 1-D node; a point
  reads the 1-D series in y at its own k, c_j(k) = Σ_l C[l, j] T_l(ξ_k), so the interpolation error in k
  is inside the tolerance the estimates assume.  Several rates swept jointly, or a few values, keep one
  1-D table per group of equal rate constants and block of G points (the plan's note says which, and why);
* every point integrates y₀' = G(m₀, y₀), y₁' = G(m₀ + εm₁, y₁) and y₂' = G(m₀ + εm₁ + ε²m₂, y₂) in one
  small solve (the points of a table stacked into one LSODA solve, numpy right-hand side): order k
  is kept when Ê_k = max_i |y_{k+1}(t_i) − y_k(t_i)| + floor ≤ safety·tol — the same embedded
  estimate as for dense systems (§7.5), validated the same way;
* the full path is the sparse stiff system (`NetworkSystem.simulate`, BDF with the sparse Jacobian,
  Radau when BDF fails), started like every path on h^{(1)}(y0) = p_st(y0) + εh₁(y0).  The O(ε²) layer
  that start leaves moves y by O(ε³), below the order-1 estimate; validation measures it.

The cost model (`decide`, before any chunk): one full solve (the point of median ε) prices the full
route, the first table and a probe of its paths price the table route; each group of points sharing
rate constants takes the table route where the table plus its paths cost less than its full solves.
With a (y, k) table, the full solve is priced first, the table built only when its fewest nodes
(9 k-nodes × 17 y-nodes) cost less than N full solves, and taken when its paths then do; `replay` builds
the same table on resume (k-range and interval from all the points, never a chunk's).
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.integrate

from sp_ode.core.chebyshev import (
    FIRST_DEGREE,
    ChebyshevConvergenceError,
    TensorChebyshev,
    chebyshev_fit,
    chebyshev_fit_tensor,
)
from sp_ode.core.memory import check_memory
from sp_ode.sweeps._reasons import Reason
from sp_ode.sweeps.engine import ValidationInput, check_eps, check_values
from sp_ode.systems.network import NetworkSystem, padded_range

MAX_ORDER = 1
FIRST_CHUNK_PRICES = False
PATH_FULL = -1
STATUS_OK, STATUS_RESOLVED, STATUS_FAILED = 0, 1, 2
REDUCED_TOL_FACTOR = 1e-3
# BDF's global error on y, in units of its rtol·(y_scale + |y|), measured on the cascade: 0.2 at n = 36
# (rtol 1e-8 and 1e-6), 0.09–0.12 at n = 1024 (rtol 1e-5, 1e-6) — so a full solve at 0.1·tol is estimated
# at its rtol (factor 1, five times the worst measured), which validation checks like every estimate
FULL_TOL_FACTOR = 1e-1
FULL_GLOBAL_FACTOR = 1.0
# BDF at 3e-9 for tol 1e-6 (cascade, n = 1024, ε = 1e-6, 1e-5): within 6.7e-10 = 6.7e-4·tol of Radau at 1e-9,
# for 0.31 / 0.23 CPU-s against 1.28 / 0.34 s at 1e-3·tol (took 84 % of a 100-point sweep at n = 10⁴); at
# 1e-2·tol the error reaches 5e-3·tol (n = 36), too close to the 1e-2·tol where estimates are judged
REFERENCE_TOL_FACTOR = 3e-3
ATOL_OF_X = 1e-4          # atol of the fast components relative to rtol: probabilities are ≪ 1
TABLE_TOL = 1e-12        # the floor of a table's tolerance; a sweep asks REDUCED_TOL_FACTOR·tol (`table_tol`)
MAX_NODES = 257
RESIDUAL_TOL = 1e-10      # ‖Qᵀp‖∞ / max|Q_ii| a stationary solve must reach (`stationary_at`): rounding is ~1e-16
MAX_REBUILDS = 4
FULL_NODES_BOUND = 2     # a full sparse solve costs at least this many table nodes (a lower bound, decide)
# The (y, k) table (`build_k_table`): one rate constant swept over at least K_DISTINCT_MIN distinct values gets one
# table for every point, nested in k from K_FIRST_DEGREE + 1 Lobatto nodes (its first change is measured at
# 2·K_FIRST_DEGREE + 1 = 9 nodes: fewer distinct values than that are cheaper as one 1-D table each)
K_FIRST_DEGREE = 4
K_DISTINCT_MIN = 2 * K_FIRST_DEGREE + 1
K_MAX_NODES = 33          # k-nodes at most; a rate that needs more is left to the per-value tables
KTABLE_KEY = ("(y, k)",)  # the (y, k) table's key in `NetworkPlan.tables` (group keys are tuples of floats)

# The counted-work model of a network sweep: modelled seconds on the reference machine (this 2-core box) from
# counts — table nodes, evaluations, factorisations, steps — never from a clock, so that the routing, hence
# the numbers, are the same under any load (as `sp_ode.sweeps._stacked.work_seconds` for dense sweeps).
# Fitted on the telegraph gene at n = 100 and 600: a node (both passes of `build_table`) 2.9 / 3.5 ms; a full
# BDF solve 117 / 111 evaluations and 14 / 13 factorisations in 24 / 30 ms; 16 table paths 28 ms.
NODE_S = 2.8e-3           # one table node: two pinned factorisations, five solves, the rates in Python
NODE_STATE_S = 1.2e-6     # … per fast state
EVAL_S = 150e-6           # one evaluation of the full sparse right-hand side (Python, sparse mat-vec)
EVAL_STATE_S = 0.05e-6
LU_S = 300e-6             # one sparse factorisation of the full system's Newton matrix
LU_STATE_S = 0.5e-6
STEP_S = 20e-6            # one LSODA step of the stacked table paths
PATH_EVAL_S = 100e-6      # one evaluation of the table paths' right-hand side (3 slow-ODE calls)
PATH_EVAL_POINT_S = 2e-6  # … per point of the stack


def work_seconds(counts: dict, n: int) -> float:
    """Modelled seconds of what `counts` counted (keys as `stats` of `run_chunk`, `decide`) for n fast states."""
    return (counts.get("table_nodes", 0) * (NODE_S + NODE_STATE_S * n)
            + counts.get("nfev", 0) * (EVAL_S + EVAL_STATE_S * n) + counts.get("nlu", 0) * (LU_S + LU_STATE_S * n)
            + counts.get("starts", 0) * (NODE_S + NODE_STATE_S * n) / 2
            + counts.get("path_steps", 0) * STEP_S + counts.get("path_nfev", 0) * PATH_EVAL_S
            + counts.get("path_point_evals", 0) * PATH_EVAL_POINT_S)


# --- input ---------------------------------------------------------------------------------------

def check_params(system: NetworkSystem, values: dict, N: int) -> dict:
    """The swept names must be parameters of the network that something reads (1-D, one per point)."""
    roles = system.parameter_roles()
    for name, arr in values.items():
        if name == "eps":
            continue
        if name not in roles:
            raise ValueError(f"`params` name {name!r} is not a parameter of network system {system.name!r}; its "
                             f"parameters are {sorted(roles)} (and 'eps').")
        if roles[name] == "unused":
            raise ValueError(f"`params` [{name!r}] are not read by any rate, observable or slow ODE of "
                             f"{system.name!r}: sweeping them would change nothing.")
        if arr.shape != (N,):
            raise ValueError(f"`params[{name!r}]` must have shape ({N},) (one value per point); got {arr.shape}.")
    return values


def prepare(system: NetworkSystem, params, x0, y0, t0: float) -> tuple:
    """(system, values, N, None, y0 (N, d), (n, d)): the network engine's checks — swept names are parameters
    something reads, ε per point, x0 = "manifold" (`check_params`, `check_states`)."""
    values, N = check_values(params)
    values = check_params(system, values, N)
    values["eps"] = check_eps(values, N, system.eps)
    x0_arr, y0_arr = check_states(system, x0, y0, N)
    return system, values, N, x0_arr, y0_arr, (system.n, system.d)


def stack_width(m: int, d: int) -> int:
    """A network sweep stacks only its table paths: 3 unknowns per point (orders 0, 1, 2), whatever n."""
    return 3


def make_plan(system: NetworkSystem, names: tuple, t_span: tuple, ts: np.ndarray, tol: float, max_order: int, *,
              safety: float, route: str, y_scale: float, group: int, dims: tuple) -> NetworkPlan:
    """The plan every chunk of a network sweep is solved with."""
    return NetworkPlan(system, names, t_span, ts, tol, max_order, safety=safety, route=route, y_scale=y_scale,
                       group=group)


def check_states(system: NetworkSystem, x0, y0, N: int):
    """x0 must be "manifold" (h^{(1)}(y0) per point); y0 (d,) | (N, d)."""
    if not (isinstance(x0, str) and x0 == "manifold"):
        raise ValueError("`x0` must be 'manifold' for a network system (each point starts on "
                         "p_st(y0) + εh₁(y0)); got " + (repr(x0) if isinstance(x0, str) else "an array"))
    y0 = np.asarray(y0, dtype=np.float64)
    d = system.d
    if y0.ndim == 1 and y0.shape == (d,):
        y0 = np.broadcast_to(y0, (N, d)).copy()
    if y0.shape != (N, d) or not np.all(np.isfinite(y0)):
        raise ValueError(f"`y0` must be finite with shape ({d},) or ({N}, {d}); got {np.shape(y0)}.")
    return None, y0


def sweep_nbytes(N: int, chunk_size: int, m: int, d: int, K: int) -> int:
    """Estimated peak bytes of a network sweep (m = n fast states) outside its tables (`build_table` checks those): one chunk's
    stacked table paths (3 unknowns per point in one LSODA solve, banded with bandwidth 2, and its saves),
    the assembled results (x0 is not stored) and the O(n) vectors of one sparse full solve at a time (its
    factorisation is the network's own: `NetworkSystem.simulate`)."""
    B3 = 3 * min(int(N), int(chunk_size))
    stacked = 8 * (22 + 10 * B3 + 7 * B3) + 8 * B3 * 16
    return int(stacked + int(N) * 8 * (2 * K * d + 10) + 8 * 64 * (m + d))


# --- the plan --------------------------------------------------------------------------------------

@dataclass
class Table:
    """Chebyshev interpolants of m₀ = Fp, Fu, Fv, Fw (K moments each) on [a, b] (d = 1; module docstring)."""

    a: float
    b: float
    coef: np.ndarray        # (M + 1, 4K): m₀, Fu, Fv, Fw
    K: int
    stats: dict
    values: np.ndarray | None = None     # (M + 1, 4K) at the nodes (b down to a), where built here

    def __post_init__(self):
        K = self.K
        self.dcoef = np.polynomial.chebyshev.chebder(self.coef[..., :K], axis=self.coef.ndim - 2) * (
            2.0 / (self.b - self.a))                                                                  # m₀′

    def _eval(self, xi: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """Σ_j coef[j] T_j(ξ) at the points' ξ (b,): (columns, b)."""
        return np.polynomial.chebyshev.chebval(xi, coef)

    def moments(self, system, y: np.ndarray, eps: np.ndarray, order: int, params) -> np.ndarray:
        """m₀ + εm₁ (+ ε²m₂ for order 2) at the points' y (b,), shape (K, b); `params` the points' slow
        parameters (arrays (b,)), through which g = G(m₀, y) enters m₁ and m₂."""
        xi = (2.0 * y - self.a - self.b) / (self.b - self.a)
        v = self._eval(xi, self.coef)        # (4K, b)
        K = self.K
        m0, fu = v[:K], v[K:2 * K]
        if order == 0:
            return m0
        Y = y[None]
        g = system.slow_rhs(m0, Y, params)[0]
        m = m0 + eps * g * fu
        if order >= 2:
            fv, fw = v[2 * K:3 * K], v[3 * K:]
            dm0 = self._eval(xi, self.dcoef)
            gp = _directional(system, m0, Y, dm0, np.ones_like(Y), params)       # g′ = G_m m₀′ + G_y
            gmu = _directional(system, m0, Y, fu, np.zeros_like(Y), params)      # G_m·Fu
            m = m + eps ** 2 * (g ** 2 * fw + g * gp * fv + g * gmu * fu)
        return m


class PointTable(Table):
    """The (y, k) table at the k of each of b points (`KTable.at`): `coef` (b, M + 1, 4K), point i's own
    Chebyshev series in y; `moments` as `Table.moments` with point i's y evaluated in series i."""

    def _eval(self, xi: np.ndarray, coef: np.ndarray) -> np.ndarray:
        T = np.polynomial.chebyshev.chebvander(xi, coef.shape[1] - 1)        # (b, M + 1)
        return np.einsum("bj,bjc->cb", T, coef)


@dataclass
class KTable:
    """One table over (y, k) for a sweep of one rate constant `name` over a continuum (module docstring):
    the tensor Chebyshev interpolant (`chebyshev_fit_tensor`) of the same moment vectors m₀, Fu, Fv, Fw as a
    1-D `Table`, on [a, b] in y × [c, d] = [min k, max k] of the swept values; `at` gives each point its 1-D
    series in y, so that its paths are a 1-D table's paths."""

    name: str
    fit: TensorChebyshev
    K: int
    stats: dict

    @property
    def a(self) -> float:
        return self.fit.a

    @property
    def b(self) -> float:
        return self.fit.b

    def at(self, k: np.ndarray) -> PointTable:
        """The table at the points' rate values k (b,): series in y c_j(k_i) = Σ_l C[l, j] T_l(ξ_k(k_i))."""
        k = np.asarray(k, dtype=np.float64)
        if np.any(k < self.fit.c) or np.any(k > self.fit.d):
            raise ValueError(f"`k` must lie in the tabulated [{self.fit.c:.6g}, {self.fit.d:.6g}] of "
                             f"{self.name!r}; got [{k.min():.6g}, {k.max():.6g}].")
        return PointTable(self.a, self.b, self.fit.y_coef(k), self.K, self.stats)


def _directional(system, m, Y, dm, dY, params) -> np.ndarray:
    """D G(m, Y)·(dm, dY), by central differences (it enters at ε²: 1e-8 relative is plenty)."""
    h = 1e-5 * (1.0 + np.maximum(np.abs(m).max(axis=0), np.abs(Y).max(axis=0)))
    up = system.slow_rhs(m + h * dm, Y + h * dY, params)[0]
    down = system.slow_rhs(m - h * dm, Y - h * dY, params)[0]
    return (up - down) / (2 * h)


@dataclass
class Decision:
    """The routing of a network sweep (module docstring)."""

    table: bool = False                    # groups take the table route
    rest: int = int(Reason.FULL_DEARER)    # reason of points solved fully by routing
    t_full: float = math.nan               # s per full solve (probe)
    t_table: float = math.nan              # s per table
    t_path: float = math.nan               # s per point on a table
    k_table: str = ""                      # the rate constant of the one (y, k) table every point uses, if any
    notes: list = field(default_factory=list)
    seconds: float = 0.0
    compile: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"table": self.table, "rest": Reason(self.rest).name, "t_full_per_point_s": self.t_full,
                "t_table_s": self.t_table, "t_path_per_point_s": self.t_path, "k_table": self.k_table,
                "notes": list(self.notes),
                "seconds": self.seconds}


def decision_from_dict(d: dict) -> Decision:
    return Decision(table=bool(d["table"]), rest=int(Reason[d["rest"]]), t_full=float(d["t_full_per_point_s"]),
                    t_table=float(d["t_table_s"]), t_path=float(d["t_path_per_point_s"]),
                    k_table=str(d.get("k_table", "")),
                    notes=list(d.get("notes", [])), seconds=float(d.get("seconds", 0.0)))


@dataclass(eq=False)
class NetworkPlan:
    """What every chunk of a network sweep needs: the system, the routing and the shared tables."""

    system: NetworkSystem
    names: tuple
    t_span: tuple
    ts: np.ndarray
    tol: float
    max_order: int
    safety: float = 0.5
    route: str = "auto"
    y_scale: float = 1.0
    decision: Decision | None = None
    tables: dict = field(default_factory=dict)      # group key -> Table (built once, shipped with the plan)
    group: int = 8                                  # G: points i with equal i // G share a stack of table paths

    @property
    def roles(self) -> dict:
        return self.system.parameter_roles()

    def rate_names(self) -> tuple:
        roles = self.roles
        return tuple(n for n in self.names if roles.get(n) == "rate")

    def slow_names(self) -> tuple:
        roles = self.roles
        return tuple(n for n in self.names if roles.get(n) == "slow")

    def continuum_rate(self, values: dict) -> str | None:
        """The one swept rate constant when it takes at least `K_DISTINCT_MIN` distinct values (a continuum:
        one (y, k) table is cheaper than a 1-D table per value), else None (no rate, several, or a few values)."""
        rate = self.rate_names()
        if len(rate) == 1 and np.unique(values[rate[0]]).size >= K_DISTINCT_MIN:
            return rate[0]
        return None

    def group_key(self, values: dict, i: int) -> tuple:
        return tuple(float(values[n][i]) for n in self.rate_names())

    def system_for(self, values: dict, i: int) -> NetworkSystem:
        """The system at point i's parameter values (a copy sharing the pattern)."""
        given = {n: float(values[n][i]) for n in self.names if n in values}
        return self.system.with_parameters(**given) if given else self.system


# --- manifold terms and tables ------------------------------------------------------------------------

def stationary_at(system: NetworkSystem, ws, y: np.ndarray, Q=None) -> np.ndarray:
    """p_st(y) by the warm solver `ws`, checked: ‖Qᵀp‖∞ ≤ `RESIDUAL_TOL`·max|Q_ii|, else pinned again at the
    mode of the certified p_st (`NetworkSystem.stationary`, GTH) and solved again; RuntimeError naming y if
    that fails too.

    Why: the warm solver pins the state its quick guess calls probable (256 uniformised steps from the
    uniform vector).  On the telegraph gene at n = 600 with k_m = 24 that guess was a state of probability
    ~1e-70: the pinned LU then returned a p with ‖Qᵀp‖ = 2.9 and E[M] = 81 instead of 8, silently — the
    tables over (y, rate) did not converge ("257 nodes") and the paths went to nan."""
    Q = system.gen.Q(y) if Q is None else Q
    scale = float(np.max(np.abs(Q.diagonal()))) or 1.0
    p, info = ws.solve(Q, y)
    if info["residual"] <= RESIDUAL_TOL * scale:
        return p
    ref, _ = system.stationary(y)
    ws.k, ws.x = int(np.argmax(ref)), None      # pin the mode; no warm start from the wrong answer
    p, info = ws.solve(Q, y)
    if info["residual"] > RESIDUAL_TOL * scale:
        raise RuntimeError(f"the stationary solve of {system.name!r} at y = {np.ravel(y).tolist()} has residual "
                           f"{info['residual']:.3g} > {RESIDUAL_TOL:g}·max|Q_ii| even pinned at the mode.")
    return p


def _terms_at(system: NetworkSystem, y: np.ndarray, ws):
    """(p, u = A^#Dp_st, v = A^#u) at y, factorising the pinned system once (module docstring)."""
    a = system.gen.propensities(y)
    Q = system.gen.Q(y, a)
    p = stationary_at(system, ws, y, Q)
    V = np.stack([dq.T @ p for dq in system.gen.dQ(y)], axis=1)
    Dp = -ws.group_inverse_apply(V)[:, 0]
    u = ws.group_inverse_apply(Dp)
    return p, u, ws.group_inverse_apply(u)


def manifold_start(system: NetworkSystem, y0: np.ndarray, eps: float, ws=None) -> np.ndarray:
    """h^{(1)}(y0) = p_st(y0) + εh₁(y0) (docs/theory.md §3.3)."""
    ws = ws or system.stationary_solver()
    y0 = np.asarray(y0, dtype=np.float64).reshape(system.d)
    p = stationary_at(system, ws, y0)
    return p + eps * system.h1(y0, p, ws)


def build_table(system: NetworkSystem, interval, *, tol: float = TABLE_TOL, max_nodes: int = MAX_NODES) -> Table:
    """Chebyshev interpolants of m₀ = Fp, Fu, Fv, Fw on `interval` (module docstring); d = 1.

    Raises
    ------
    RuntimeError
        No convergence within `max_nodes` (the change is in the message).
    """
    a, b = (float(v) for v in interval)
    n = system.n
    check_memory(8 * 2 * n * max_nodes, what=f"a slow-manifold table of {n} states on up to {max_nodes} nodes",
                 remedy="Use a smaller projection.")
    ws = system.stationary_solver()
    start = time.perf_counter()
    u_at: dict = {}

    def at(y):
        y = np.array([y])
        p, u, v = _terms_at(system, y, ws)
        Fm = system.F(y)
        u_at[float(y[0])] = u
        return np.concatenate([Fm @ p, Fm @ u, Fm @ v])

    K = len(system.observables)
    with ws.one_blas_thread():            # once for every solve of both passes (`WarmStationary.one_blas_thread`)
        try:
            fit = chebyshev_fit(at, a, b, tol=tol, max_nodes=max_nodes,
                                remedy="narrow the interval or use fewer points")
        except ChebyshevConvergenceError as exc:
            raise RuntimeError(str(exc)) from None
        coef, err, M, nodes, xi = fit.coef, fit.error, fit.degree, fit.nodes, fit.xi
        W = _second_pass(system, ws, nodes, np.array([u_at[float(y)] for y in nodes]), a, b)
    cw = np.polynomial.chebyshev.chebfit(xi, W, M)
    err_w = float(np.max(np.abs(np.polynomial.chebyshev.chebval(xi[1::2], np.polynomial.chebyshev.chebfit(
        xi[::2], W[::2], M // 2)).T - W[1::2]) / np.maximum(1.0, np.abs(W[1::2]))))
    stats = {"nodes": M + 1, "error_estimate": err, "error_estimate_w": err_w,
             "seconds": time.perf_counter() - start, "interval": [a, b]}
    return Table(a, b, np.concatenate([coef, cw], axis=1), K, stats, np.concatenate([fit.values, W], axis=1))


def _dy(U: np.ndarray, nodes: np.ndarray, a: float, b: float) -> np.ndarray:
    """u′ at the Lobatto nodes (M + 1, n): the derivative of the degree-M Chebyshev interpolant of u (M + 1, n)."""
    M = nodes.size - 1
    xi = (2 * nodes - a - b) / (b - a)
    return np.polynomial.chebyshev.chebval(xi, np.polynomial.chebyshev.chebder(
        np.polynomial.chebyshev.chebfit(xi, U, M)) * (2.0 / (b - a))).T


def _second_pass(system: NetworkSystem, ws, nodes: np.ndarray, U: np.ndarray, a: float, b: float) -> np.ndarray:
    """F w = F A^# u′ at the nodes (M + 1, K): u′ the Chebyshev derivative of u (M + 1, n) over the Lobatto
    nodes, each A^# one more factorisation of the pinned system at its node (the table's second pass)."""
    M = nodes.size - 1
    dU = _dy(U, nodes, a, b)
    W = np.empty((M + 1, len(system.observables)))
    for j in range(M + 1):
        y = nodes[j:j + 1]
        stationary_at(system, ws, y)
        W[j] = system.F(y) @ ws.group_inverse_apply(dU[j])
    return W


KEPT_FACTORS_BYTES = 2 ** 28   # a (y, k) table's k-node keeps its nodes' LU factors for the second pass up to this


def _node_values(system: NetworkSystem, nodes: np.ndarray, a: float, b: float) -> np.ndarray:
    """A 1-D table's values at given Lobatto nodes of [a, b] (b down to a): (M + 1, 4K) of m₀, Fu, Fv, Fw — the
    same two passes as `build_table`, on nodes fixed in advance (a (y, k) table's k-node).

    Why the factors are kept: the second pass (F A^# u′) needs the pinned factorisation of every node again;
    keeping each node's solver (its LU, pinned state and p) instead of factorising again halves the
    factorisations — the table's largest cost — while their bytes (16 per factor entry, all nodes) stay
    under `KEPT_FACTORS_BYTES`; above, every node is factorised again as `build_table` does."""
    ws = system.stationary_solver()
    rows, U, kept = [], [], []
    with ws.one_blas_thread():            # once for the 2(M + 1) solves (`WarmStationary.one_blas_thread`)
        for y in nodes:
            Y = np.array([y])
            p, u, v = _terms_at(system, Y, ws)
            Fm = system.F(Y)
            rows.append(np.concatenate([Fm @ p, Fm @ u, Fm @ v]))
            U.append(u)
            lu = getattr(ws, "_lu", None)
            if kept is not None and lu is not None and 16 * lu.nnz * nodes.size <= KEPT_FACTORS_BYTES:
                kept.append(copy.copy(ws))   # a shallow copy: the next solve rebinds ws's factors, never edits them
            else:
                kept = None
        if kept is None:
            W = _second_pass(system, ws, nodes, np.array(U), a, b)
        else:
            W = np.array([system.F(nodes[j:j + 1]) @ kept[j].group_inverse_apply(du)
                          for j, du in enumerate(_dy(np.array(U), nodes, a, b))])
    return np.concatenate([np.array(rows), W], axis=1)


def build_k_table(system: NetworkSystem, name: str, k_range: tuple, interval: tuple, *, tol: float = TABLE_TOL,
                  max_nodes: int = MAX_NODES, max_k_nodes: int = K_MAX_NODES) -> KTable:
    """The (y, k) table of m₀ = Fp, Fu, Fv, Fw over `interval` × `k_range` for the rate constant `name`.

    The y-nodes are those of the 1-D table at k = max k (`build_table`, adaptive: its degree M_y), and every
    Lobatto k-node k_j (nested, from K_FIRST_DEGREE + 1 nodes) gets the same stationary and pinned solves at
    those nodes (`_node_values`); `chebyshev_fit_tensor` accepts when the change at the new k-nodes and the
    change in y at every k-node are both ≤ `tol` (relative to max(1, |m|)), the 1-D table's criterion in each
    direction — so the interpolation error in k sits inside the tolerance the sweep's estimates assume.  As
    there, the change of Fw (it enters only the order-2 path, the estimate, at ε²) is reported, not judged.

    Raises
    ------
    ValueError
        `name` is not a rate constant of `system`, or `k_range` is not an interval (lo < hi).
    RuntimeError
        No convergence within `max_nodes` y-nodes or `max_k_nodes` k-nodes (the change is in the message).
    """
    if system.parameter_roles().get(name) != "rate":
        raise ValueError(f"`name` must be a rate constant of {system.name!r}; got {name!r}.")
    lo, hi = (float(v) for v in k_range)
    if not lo < hi:
        raise ValueError(f"`k_range` must be an interval lo < hi; got {k_range!r}.")
    start = time.perf_counter()
    ref = build_table(system.with_parameters(**{name: hi}), interval, tol=tol, max_nodes=max_nodes)
    a, b = ref.a, ref.b
    computed = [0]

    def values(nodes, k):
        # the k = max k node on the reference table's own nodes: its values, not a second build
        if k == hi and ref.values is not None and nodes.size == ref.values.shape[0]:
            return ref.values
        computed[0] += nodes.size
        return _node_values(system.with_parameters(**{name: k}), nodes, a, b)

    K = len(system.observables)
    try:
        # judged as the 1-D table: m₀, Fu, Fv; Fw (the ε² term of the order-2 path, the estimate's) is fitted on
        # the same nodes and its changes reported — its values carry the rounding of a Chebyshev derivative (u′),
        # measured 5e-10 relative at n = 1024, which would double both degrees for nothing
        fit = chebyshev_fit_tensor(values, a, b, lo, hi, degree_y=ref.coef.shape[0] - 1, tol=tol,
                                   max_nodes=max_nodes, max_nodes_k=max_k_nodes, first_degree_k=K_FIRST_DEGREE,
                                   judged=np.arange(4 * K) < 3 * K,
                                   remedy="a sweep keeps one 1-D table per rate value")
    except ChebyshevConvergenceError as exc:
        raise RuntimeError(str(exc)) from None
    My, Mk = fit.degrees
    stats = {"nodes": ref.stats["nodes"] + computed[0], "k_nodes": Mk + 1, "y_nodes": My + 1,
             "error_estimate": max(fit.error_k, fit.error_y), "error_estimate_k": fit.error_k,
             "error_estimate_y": fit.error_y, "error_estimate_w_k": fit.free_k, "error_estimate_w_y": fit.free_y,
             "k_range": [lo, hi], "interval": [a, b], "seconds": time.perf_counter() - start}
    return KTable(name, fit, K, stats)


def table_tol(plan) -> float:
    """The change at new nodes a sweep's tables stop at: the reduced solves' own tolerance, 1e-3·tol (relative
    to max(1, |m|)), never below `TABLE_TOL`: a finer table than the paths' solver cannot show."""
    return max(TABLE_TOL, REDUCED_TOL_FACTOR * plan.tol)


def _coarse_range(plan: NetworkPlan, system: NetworkSystem, y0s: np.ndarray, params: dict | None) -> tuple:
    """A padded interval covering coarse order-0 paths (RK23, rtol 1e-3) from the extreme y0 of a group."""
    ws = system.stationary_solver()
    picks = np.unique([int(np.argmin(y0s)), int(np.argmax(y0s))])
    seen = [y0s.min(), y0s.max()]
    for i in picks:
        pi = {k: float(v[i]) for k, v in (params or {}).items()}

        def rhs(t, y):
            p = stationary_at(system, ws, y)
            return system.slow_rhs(system.F(y) @ p, y, pi)[:, ...].reshape(-1)
        sol = scipy.integrate.solve_ivp(rhs, plan.t_span, [float(y0s[i])], method="RK23", rtol=1e-3,
                                        atol=1e-6 * max(1.0, abs(float(y0s[i]))))
        seen.extend([float(sol.y.min()), float(sol.y.max())])
    return padded_range(np.array(seen))


def table_paths(plan: NetworkPlan, table: Table, y0: np.ndarray, eps: np.ndarray, params: dict, system,
                stats: dict | None = None):
    """y at the save times on the order-0, 1, 2 table paths of b points, (3, b, K_ts) — or None where a path
    left the table's interval (then the caller widens it).  One stacked LSODA solve (3 unknowns per point)."""
    b = y0.size
    tol = plan.tol * REDUCED_TOL_FACTOR

    def rhs(t, z):
        Y = z.reshape(b, 3)
        out = np.empty_like(Y)
        for k in range(3):
            m = table.moments(system, Y[:, k], eps, k, params)
            out[:, k] = system.slow_rhs(m, Y[:, k][None], params)[0]
        return out.reshape(-1)

    Z0 = np.repeat(y0[:, None], 3, axis=1).reshape(-1)
    solver = scipy.integrate.LSODA(rhs, plan.t_span[0], Z0, plan.t_span[1], rtol=tol / plan.y_scale, atol=tol,
                                   lband=2, uband=2)
    ts = plan.ts
    saved = np.full((ts.size, Z0.size), np.nan)
    k = 0
    while k < ts.size and ts[k] <= plan.t_span[0]:
        saved[k] = Z0
        k += 1
    stats = {} if stats is None else stats

    def count(steps):
        stats["path_steps"] = stats.get("path_steps", 0) + steps
        stats["path_nfev"] = stats.get("path_nfev", 0) + int(solver.nfev)
        stats["path_point_evals"] = stats.get("path_point_evals", 0) + int(solver.nfev) * b

    steps = 0
    while solver.status == "running":
        solver.step()
        steps += 1
        if solver.status == "failed" or np.any(solver.y < table.a) or np.any(solver.y > table.b):
            count(steps)
            return None
        stop = int(np.searchsorted(ts, solver.t, side="right"))
        if stop > k:
            dense = solver.dense_output()
            for i in range(k, stop):
                saved[i] = dense(ts[i]) if ts[i] < solver.t else solver.y
            k = stop
    count(steps)
    return saved.reshape(ts.size, b, 3).transpose(2, 1, 0)       # (3, b, K)


def _counted(stats: dict, table, start: float) -> None:
    """Count a table just built (its nodes price it: `work_seconds`)."""
    stats["tables"] = stats.get("tables", 0) + 1
    stats["table_nodes"] = stats.get("table_nodes", 0) + table.stats["nodes"]
    stats["table_seconds"] = stats.get("table_seconds", 0.0) + time.perf_counter() - start


def _table_for(plan: NetworkPlan, key, system, y0s, params, stats) -> Table:
    table = plan.tables.get(key)
    if table is None:
        start = time.perf_counter()
        table = build_table(system, _coarse_range(plan, system, y0s, params), tol=table_tol(plan))
        _counted(stats, table, start)
    return table


def _widened(table) -> tuple:
    """The interval of a table three times as wide (the paths left it), never across 0 from above."""
    lo, hi = table.a, table.b
    width = hi - lo
    interval = (lo - width, hi + width)
    if lo > 0:       # rates are usually valid for y of one sign: never across 0
        interval = (max(interval[0], 0.5 * lo), interval[1])
    return interval


def _solve_on(plan, table, rebuild, system, y0, eps, params, stats, k=None):
    """(table, paths (3, b, K)) on `table` (a `KTable` taken at the points' rate values `k` where given),
    rebuilt by `rebuild(interval)` on a wider interval while a path leaves it; (table, None) if they keep on."""
    for _ in range(MAX_REBUILDS):
        Y = table_paths(plan, table if k is None else table.at(k), y0, eps, params, system, stats)
        if Y is not None:
            return table, Y
        start = time.perf_counter()
        table = rebuild(_widened(table))
        _counted(stats, table, start)
    return table, None


def solve_on_table(plan, key, system, y0, eps, params, stats):
    """(table, paths (3, b, K)) for the points of one group, widening the table until every path stays inside."""
    table = _table_for(plan, key, system, y0, params, stats)
    return _solve_on(plan, table, lambda interval: build_table(system, interval, tol=table_tol(plan)), system, y0,
                     eps, params, stats)


def _k_params(plan: NetworkPlan, values: dict, name: str, members: np.ndarray) -> dict:
    """The parameters the table paths of `members` read per point on the (y, k) route: the slow ones and the
    rate itself (a slow ODE may read it too; the base system has its unswept value)."""
    return {n_: values[n_][members] for n_ in (*plan.slow_names(), name)}


def solve_on_k_table(plan: NetworkPlan, table: KTable, y0, eps, params: dict, stats: dict):
    """(table, paths (3, b, K)) of b points on the (y, k) table, each at its own rate `params[table.name]`,
    the table rebuilt over a wider y-interval (the same k-range) while a path leaves it."""
    name = table.name

    def rebuild(interval):
        return build_k_table(plan.system, name, tuple(table.stats["k_range"]), interval, tol=table_tol(plan))
    return _solve_on(plan, table, rebuild, plan.system, y0, eps, params, stats, k=params[name])


def _probe_k_table(plan: NetworkPlan, values: dict, y0: np.ndarray, name: str):
    """The (y, k) table `decide` builds and prices, a function of the inputs alone (`replay` builds the same):
    k over [min, max] of every swept value of `name`, y over the coarse order-0 paths from the extreme y0 at
    both ends of k (`_coarse_range`); its paths probed on the block of G points of the median-ε point."""
    eps = values["eps"]
    N = eps.size
    i_med = int(np.argsort(eps, kind="stable")[N // 2])
    k = values[name]
    k_range = (float(k.min()), float(k.max()))
    slow = {n_: values[n_] for n_ in plan.slow_names()}
    ends = [_coarse_range(plan, plan.system.with_parameters(**{name: kv}), y0[:, 0], slow) for kv in k_range]
    interval = (min(e[0] for e in ends), max(e[1] for e in ends))
    stats: dict = {}
    start = time.perf_counter()
    table = build_k_table(plan.system, name, k_range, interval, tol=table_tol(plan))
    _counted(stats, table, start)
    members = np.flatnonzero(np.arange(N) // plan.group == i_med // plan.group)
    table, Y = solve_on_k_table(plan, table, y0[members, 0], eps[members], _k_params(plan, values, name, members),
                                stats)
    return i_med, members, table, Y, stats


# --- full solves ------------------------------------------------------------------------------------------

def full_solve(plan: NetworkPlan, system: NetworkSystem, y0: np.ndarray, eps: float, factor: float,
               stats: dict | None = None):
    """(y at ts (K, d), ok) of the full sparse system from h^{(1)}(y0): BDF, then Radau if BDF fails; `stats`
    counts the evaluations and factorisations (`work_seconds`)."""
    rtol = max(factor * plan.tol / plan.y_scale, 1e-13)
    atol = rtol * ATOL_OF_X
    stats = {} if stats is None else stats
    x0 = manifold_start(system, y0, eps)
    stats["starts"] = stats.get("starts", 0) + 1
    for method in ("BDF", "Radau"):
        path = system.simulate(plan.t_span, y0, x0, eps=eps, method=method, rtol=rtol, atol=atol, t_eval=plan.ts)
        for key in ("nfev", "nlu"):
            stats[key] = stats.get(key, 0) + int(path.stats.get(key, 0))
        if path.status == 0 and path.y.shape[0] == plan.ts.size:
            return path.y, True
    return np.full((plan.ts.size, system.d), np.inf), False


def full_estimate(plan: NetworkPlan, y: np.ndarray, factor: float) -> np.ndarray:
    rtol = max(factor * plan.tol / plan.y_scale, 1e-13)
    scale = np.abs(y).reshape(y.shape[0], -1).max(axis=1, initial=0.0)
    return FULL_GLOBAL_FACTOR * rtol * (plan.y_scale + np.where(np.isfinite(scale), scale, 0.0))


# --- the cost model --------------------------------------------------------------------------------------

def planned_orders(plan: NetworkPlan, eps: np.ndarray):
    b = eps.size
    if plan.route == "full":
        return np.full(b, PATH_FULL), np.full(b, int(Reason.FULL_ASKED))
    dec = plan.decision
    if plan.system.d != 1:
        return np.full(b, PATH_FULL), np.full(b, int(Reason.FULL_NO_MANIFOLD))
    if plan.route == "reduced" or (dec is not None and dec.table):
        return np.zeros(b, dtype=np.int64), np.full(b, int(Reason.FULL_ESTIMATE))
    return np.full(b, PATH_FULL), np.full(b, int(dec.rest if dec is not None else Reason.FULL_DEARER))


def _probe_table(plan: NetworkPlan, values: dict, y0: np.ndarray):
    """The table `decide` builds and prices: for the point of median ε, over its group of equal rate constants
    (over every point when no rate is swept: the table then serves them all) or, where rates are swept, over
    its block of G — a function of the inputs alone, so `replay` builds the very same one on resume."""
    eps = values["eps"]
    i_med = int(np.argsort(eps, kind="stable")[eps.size // 2])
    system = plan.system_for(values, i_med)
    key = plan.group_key(values, i_med)
    members = np.array([i for i in range(eps.size) if plan.group_key(values, i) == key])
    if plan.rate_names():
        members = members[members // plan.group == i_med // plan.group]
    slow = {n_: values[n_][members] for n_ in plan.slow_names()}
    stats: dict = {}
    table, Y = solve_on_table(plan, key, system, y0[members, 0], eps[members], slow, stats)
    return i_med, key, system, members, table, Y, stats


def first_chunk_reasons(plan: NetworkPlan, eps: np.ndarray) -> np.ndarray:
    """Never called: a network sweep does not price its full route on a first chunk (FIRST_CHUNK_PRICES is
    False, `decide` prices it with one full solve); the contract's member, the points' own reasons."""
    return planned_orders(plan, eps)[1]


def worker_compile_seconds(plan: NetworkPlan) -> float:
    """Nothing to compile on a Dask worker: the network engine's solves are SciPy's (sparse BDF, tables)."""
    return 0.0


def replay(plan: NetworkPlan, values: dict, y0: np.ndarray) -> None:
    """A resumed sweep (its Decision read from the manifest): rebuild the shared table `decide` shipped with the
    plan, the same one (`_probe_table`), so that the missing chunks compute what the first run would have."""
    dec = plan.decision
    if dec is not None and dec.table and dec.k_table and plan.system.d == 1:
        _, _, table, Y, _ = _probe_k_table(plan, values, y0, dec.k_table)
        if Y is not None:
            plan.tables[KTABLE_KEY] = table
    elif dec is not None and dec.table and not plan.rate_names() and plan.system.d == 1:
        _, key, _, _, table, Y, _ = _probe_table(plan, values, y0)
        if Y is not None:
            plan.tables[key] = table


def decide(plan: NetworkPlan, first, values: dict, x0, y0: np.ndarray, remaining: np.ndarray, *,
           processes: int = 1) -> Decision:
    """Price the full route (one full solve) and the table route (one table and its paths); module docstring.

    Every figure is counted work (`work_seconds`: table nodes, evaluations, factorisations, steps), never a
    clock: the same call routes the same way under any load, on any number of workers, and on resume."""
    start = time.perf_counter()
    dec = Decision()
    eps = values["eps"]
    N = eps.size
    n = plan.system.n
    if plan.system.d != 1:
        dec.rest = int(Reason.FULL_NO_MANIFOLD)
        dec.notes.append(f"d = {plan.system.d}: the tables of the corrected paths need one slow variable; "
                         "every point is solved fully")
        dec.seconds = time.perf_counter() - start
        return dec
    rate = plan.rate_names()
    k_name = plan.continuum_rate(values)
    if k_name is not None and _decide_k_table(plan, dec, values, y0, k_name):
        dec.seconds = time.perf_counter() - start
        return dec
    keys = [plan.group_key(values, i) for i in range(N)]
    groups: dict = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    i_med, key, system, members, table, Y, stats = _probe_table(plan, values, y0)
    dec.t_table = work_seconds({"table_nodes": stats.get("table_nodes", 0)}, n)
    dec.t_path = work_seconds({k: v for k, v in stats.items() if k.startswith("path_")}, n) / members.size
    if Y is None:
        dec.notes.append("the table paths kept leaving the tabulated interval: every point is solved fully")
        dec.rest = int(Reason.FULL_NO_MANIFOLD)
        dec.seconds = time.perf_counter() - start
        return dec
    if not rate:
        plan.tables[key] = table
    # tables to build: one per group of equal rate constants and block of G points (the first is paid here)
    blocks = len({(k, i // plan.group) for i, k in enumerate(keys)}) if rate else 1
    cost_table = (0.0 if not rate else dec.t_table * (blocks - 1)) + N * dec.t_path
    # a full stiff solve factorises its (n + d)-Jacobian more than twice: at least 2 table nodes' worth (each
    # node one factorisation of the pinned system and 4 solves) — when even that loses, do not run one to see
    node = work_seconds({"table_nodes": 1}, n) / 2
    if cost_table < N * FULL_NODES_BOUND * node:
        dec.t_full = math.nan
        cost_full = N * FULL_NODES_BOUND * node
        dec.notes.append(f"a full sparse solve costs at least {FULL_NODES_BOUND} table nodes ({cost_full / N:.3g} s "
                         "per point): not probed")
    else:
        counts: dict = {}
        full_solve(plan, system, y0[i_med], float(eps[i_med]), FULL_TOL_FACTOR, counts)
        dec.t_full = work_seconds(counts, n)
        cost_full = N * dec.t_full
    dec.table = bool(cost_table < cost_full)
    sizes = np.array([len(v) for v in groups.values()])
    why = ("" if not rate else f"; {len(rate)} rate constants swept jointly" if len(rate) > 1
           else f"; {rate[0]} takes {len(groups)} distinct values (a (y, k) table needs ≥ {K_DISTINCT_MIN})"
           if k_name is None else f"; the (y, {k_name}) table did not converge")
    kind = (f"one table for every point ({'ε' if not plan.slow_names() else 'ε and slow parameters'} swept)"
            if not rate else f"one table per group of equal rate constants and block of {plan.group} points "
                              f"({blocks} tables; {len(groups)} groups, {sizes.mean():.3g} points each{why})")
    full_text = (f"full sparse solve {dec.t_full:.3g} s per point" if math.isfinite(dec.t_full)
                 else "full sparse solve ≥ its bound")
    dec.notes.insert(0, f"{kind}: a table {dec.t_table:.3g} s ({table.stats['nodes']} nodes), paths "
                        f"{dec.t_path:.3g} s per point; {full_text} → predicted {cost_table:.3g} s against "
                        f"{'≥ ' if not math.isfinite(dec.t_full) else ''}{cost_full:.3g} s all full "
                        "(modelled seconds from counted work)")
    dec.rest = int(Reason.FULL_DEARER)
    dec.seconds = time.perf_counter() - start
    return dec


def _decide_k_table(plan: NetworkPlan, dec: Decision, values: dict, y0: np.ndarray, name: str) -> bool:
    """Route a sweep whose one rate constant `name` is a continuum (`NetworkPlan.continuum_rate`): one full solve
    (the median-ε point) prices the full route; the (y, k) table is built only when its fewest nodes cost less
    than N full solves, and taken when its paths then cost less than them (the table is paid by then).  False
    where the table did not converge (the caller routes per group of equal rates instead, and says why)."""
    eps = values["eps"]
    N, n = eps.size, plan.system.n
    i_med = int(np.argsort(eps, kind="stable")[N // 2])
    counts: dict = {}
    full_solve(plan, plan.system_for(values, i_med), y0[i_med], float(eps[i_med]), FULL_TOL_FACTOR, counts)
    dec.t_full = work_seconds(counts, n)
    cost_full = N * dec.t_full
    fewest = K_DISTINCT_MIN * (2 * FIRST_DEGREE + 1)            # k-nodes × y-nodes of the smallest (y, k) table
    least = work_seconds({"table_nodes": fewest}, n)
    dec.rest = int(Reason.FULL_DEARER)
    if least >= cost_full:
        dec.notes.append(f"{name} swept over {np.unique(values[name]).size} values: a (y, {name}) table has at least "
                         f"{fewest} nodes ({least:.3g} s), no less than {N} full sparse solves ({dec.t_full:.3g} s "
                         "each): every point solved fully (modelled seconds from counted work)")
        return True
    try:
        i_med, members, table, Y, stats = _probe_k_table(plan, values, y0, name)
    except RuntimeError as exc:
        dec.notes.append(f"the (y, {name}) table did not converge ({exc})")
        dec.t_full = math.nan
        return False
    dec.t_table = work_seconds({"table_nodes": stats.get("table_nodes", 0)}, n)
    dec.t_path = work_seconds({k: v for k, v in stats.items() if k.startswith("path_")}, n) / members.size
    if Y is None:
        dec.notes.append("the table paths kept leaving the tabulated interval: every point is solved fully")
        dec.rest = int(Reason.FULL_NO_MANIFOLD)
        return True
    cost_table = N * dec.t_path
    dec.table = bool(cost_table < cost_full)
    if dec.table:
        plan.tables[KTABLE_KEY] = table
        dec.k_table = name
    st = table.stats
    dec.notes.insert(0, f"one (y, {name}) table for every point ({name} swept over {np.unique(values[name]).size} "
                        f"values ≥ {K_DISTINCT_MIN}, in [{st['k_range'][0]:.6g}, {st['k_range'][1]:.6g}]): "
                        f"{st['k_nodes']} k-nodes × {st['y_nodes']} y-nodes ({st['nodes']} nodes, {dec.t_table:.3g} s; "
                        f"change {st['error_estimate_k']:.1e} in k, {st['error_estimate_y']:.1e} in y; of Fw, the ε² term, "
                        f"{st['error_estimate_w_k']:.1e}, {st['error_estimate_w_y']:.1e}), paths "
                        f"{dec.t_path:.3g} s per point; full sparse solve {dec.t_full:.3g} s per point → predicted "
                        f"{cost_table:.3g} s (+ the table) against {cost_full:.3g} s all full (modelled seconds from "
                        "counted work)")
    return True


# --- one chunk --------------------------------------------------------------------------------------------

def run_chunk(plan: NetworkPlan, chunk) -> dict:
    """Solve one chunk (keys as `sp_ode.sweeps._paths.run_chunk`; x0 is not stored: (B, 0))."""
    B = chunk.points.size
    d = plan.system.d
    K = plan.ts.size
    y = np.full((B, K, d), np.inf)
    path = np.full(B, PATH_FULL, dtype=np.int64)
    estimate = np.full(B, np.inf)
    status = np.full(B, STATUS_OK, dtype=np.int64)
    order, reason = planned_orders(plan, chunk.eps)
    seconds: dict = {}
    stats: dict = {}
    values = chunk.values
    start = time.perf_counter()
    tried = np.flatnonzero(order >= 0)
    dec = plan.decision
    ktab = plan.tables.get(KTABLE_KEY) if dec is not None and dec.table and dec.k_table else None
    if dec is not None and dec.table and dec.k_table and ktab is None:
        raise RuntimeError("the plan routes to a (y, k) table it does not hold (`decide` or `replay` builds it)")
    groups: dict = {}
    # the points of one block of G (global index // G) and equal rate constants share a stack of table paths (and,
    # where rates are swept, a table): a point's numbers never depend on the chunk that holds it
    for i in tried:
        key = KTABLE_KEY if ktab is not None else plan.group_key(values, i)
        groups.setdefault((key, int(chunk.points[i]) // plan.group), []).append(i)
    for (key, _), members in groups.items():
        members = np.array(members)
        if ktab is not None:         # one (y, k) table: each point at its own rate
            _, Y = solve_on_k_table(plan, ktab, chunk.y0[members, 0], chunk.eps[members],
                                    _k_params(plan, values, ktab.name, members), stats)
        else:
            system = plan.system_for({n: values[n] for n in plan.rate_names()}, members[0])
            slow = {n: values[n][members] for n in plan.slow_names()}
            _, Y = solve_on_table(plan, key, system, chunk.y0[members, 0], chunk.eps[members], slow, stats)
        if Y is None:
            reason[members] = int(Reason.FULL_NO_MANIFOLD)
            continue
        floor = plan.tol * REDUCED_TOL_FACTOR * (1.0 + np.abs(Y[0]).max(axis=1))
        for k in range(plan.max_order + 1):
            est = np.abs(Y[k + 1] - Y[k]).max(axis=1) + floor
            est = np.where(np.isfinite(est), est, np.inf)
            free = path[members] == PATH_FULL
            good = free & (est <= plan.safety * plan.tol)
            idx = members[good]
            y[idx, :, 0], path[idx], estimate[idx] = Y[k][good], k, est[good]
            reason[idx] = int(Reason.REDUCED_OK)
    seconds["tables"] = stats.get("table_seconds", 0.0)
    seconds["reduced"] = time.perf_counter() - start - seconds["tables"]
    work = {"reduced": work_seconds(stats, plan.system.n)}
    full = np.flatnonzero(path == PATH_FULL)
    if full.size:
        start = time.perf_counter()
        counts: dict = {}
        for i in full:
            system = plan.system_for(values, i)
            yi, ok = full_solve(plan, system, chunk.y0[i], float(chunk.eps[i]), FULL_TOL_FACTOR, counts)
            y[i] = yi
            estimate[i] = float(full_estimate(plan, yi[None], FULL_TOL_FACTOR)[0]) if ok else np.inf
            if not ok:
                status[i], reason[i] = STATUS_FAILED, int(Reason.FAILED)
        seconds["full"] = time.perf_counter() - start
        work["full"] = work_seconds(counts, plan.system.n)
    return {"index": chunk.index, "points": chunk.points, "y": y, "path": path, "estimate": estimate,
            "status": status, "reason": reason, "x0": np.zeros((B, 0)), "seconds": seconds,
            "compile_seconds": {}, "work": work}


def validate_points(plan: NetworkPlan, item: ValidationInput):
    """(y_ref (b, K, d), ok (b,)): the tight full sparse solve of each validated point."""
    b = item.points.size
    y = np.full((b, plan.ts.size, plan.system.d), np.inf)
    ok = np.zeros(b, dtype=bool)
    for j in range(b):
        system = plan.system_for(item.values, j)
        y[j], ok[j] = full_solve(plan, system, item.y0[j], float(item.eps[j]), REFERENCE_TOL_FACTOR)
    return y, ok
