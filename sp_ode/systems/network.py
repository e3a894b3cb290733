"""Fast–slow systems from reaction networks: a sparse master equation with slow variables.

The fast species of a [`ReactionNetwork`][sp_ode.networks.network.ReactionNetwork] follow its
chemical master equation on a finite state projection J (docs/theory.md §7.6),
with rates depending on slow variables y; each y obeys an ODE in expectations of
the fast state:

    ε dx/dt = Q(y)ᵀx,    dy/dt = G(E_x[f_1], …, E_x[f_K], y),    E_x[f] = Σ_i x_i f(state_i, y),

written as strings, e.g. `{"P": "k_p*E[M] - g_p*P"}` (`E[·]` of any expression in
species counts, parameters and slow variables).  Network rates are on the fast
clock τ = t/ε.  Everything stays sparse (Q has a fixed pattern,
`sp_ode.networks.sparse_generator`), so n = 10⁴–10⁶ fast states are practical:

- **reduced flow** (T1, docs/theory.md §3.1): y' = G(F(y)p_st(y), y), p_st(y) from warm-started
  sparse solves (`sp_ode.markov.solvers.warm_start`);
- **first-order corrected flow** (T3, §3.3): y' = G(F(y)(p + εh₁), y) with
  Dp_st = −A^#(∂_yA)p and h₁ = A^#[Dp_st·g], each A^# a pinned sparse solve — never an
  n×n matrix;
- **full stiff simulation**: `scipy.integrate.solve_ivp` (BDF/Radau) with the sparse
  Jacobian [[Qᵀ/ε, (∂_yQ)ᵀx/ε], [G_m F, G_y + G_m(∂_yF)x]];
- [`NetworkSystem.master_equation_system`][sp_ode.systems.network.NetworkSystem.master_equation_system]: the same system as a dense
  [`sp_ode.MasterEquationSystem`][sp_ode.systems.system.MasterEquationSystem] for small J (the diffrax/JAX machinery).

Errors (§7.5): starting on the critical manifold, y − y_reduced = O(ε) and
y − y_corrected = O(ε²) past the initial layer; the benchmark measures the constants.
"""
from __future__ import annotations

import copy
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from sp_ode.core.chebyshev import ChebyshevConvergenceError, chebyshev_fit
from sp_ode.core.summary import Summarised, first_line, number
from sp_ode.core.validation import check_positive, hint
from sp_ode.markov.generator import NotIrreducibleError, require_irreducible
from sp_ode.markov.solvers.warm_start import SOLVERS, WarmStationary
from sp_ode.markov.stationary import stationary_distribution
from sp_ode.networks.network import NetworkError, ReactionNetwork, parse_rate
from sp_ode.networks.sparse_generator import PatternedGenerator
from sp_ode.networks.state_space import StateSpace
from sp_ode.systems.system import MasterEquationSystem

__all__ = ["NetworkSystem", "NetworkPath", "ManifoldTable", "padded_range"]

_EXPECT = re.compile(r"\bE\[([^\[\]]+)\]")


@dataclass(repr=False)
class NetworkPath(Summarised):
    """A solution of a network system on the slow clock.

    Attributes
    ----------
    t : ndarray (T,)
    y : ndarray (T, d)
    x : ndarray (T, n) or None
        Fast distribution (full solves; for reduced paths p_st or p_st + εh₁ at the saved times
        when requested).
    kind : str
        "full", "reduced" or "corrected".
    status : int
        0 success, otherwise the solver's failure status (message in `message`).
    message : str
    stats : dict
        Wall time, right-hand-side evaluations, stationary solves and their worst residual,
        worst FSP outflow rate along the path.
    """

    t: np.ndarray
    y: np.ndarray
    x: np.ndarray | None
    kind: str
    status: int
    message: str
    stats: dict = field(default_factory=dict)

    def _summary_title(self) -> str:
        return f"NetworkPath: {self.kind}, " + ("success" if self.status == 0 else f"FAILED (status {self.status})")

    def _summary_rows(self) -> list[tuple[str, str]]:
        t, y = np.asarray(self.t), np.asarray(self.y)
        rows = [("times", f"{t.size} in [{number(t[0])}, {number(t[-1])}]" if t.size else "none")]
        if y.size:
            rows.append(("y at the end", ", ".join(number(v) for v in np.ravel(y[-1]))))
        rows.append(("x", "not kept" if self.x is None else f"array {tuple(np.shape(self.x))}"))
        if self.status != 0:
            rows.append(("message", first_line(self.message)))
        return rows


def padded_range(ys: np.ndarray) -> tuple[float, float]:
    """[min, max] of a coarse path widened by 10% of its width (+1e-3·scale), never across 0.

    Rates are usually valid for y of one sign (concentrations, temperatures), so the padding
    stops at half the distance to 0 instead of crossing it.
    """
    lo, hi = float(np.min(ys)), float(np.max(ys))
    pad = 0.1 * (hi - lo) + 1e-3 * max(1.0, abs(lo), abs(hi))
    lo = lo - min(pad, 0.5 * lo) if lo > 0 else lo - pad
    hi = hi + min(pad, -0.5 * hi) if hi < 0 else hi + pad
    return lo, hi


@dataclass
class ManifoldTable:
    """Chebyshev interpolants of m₀(y) = F p_st(y), m₁(y) = F h₁(y) on [a, b] (d = 1)."""

    a: float
    b: float
    coef: np.ndarray      # (M + 1, 2K)
    K: int
    stats: dict

    def _eval(self, y) -> np.ndarray:
        xi = (2.0 * float(np.ravel(y)[0]) - self.a - self.b) / (self.b - self.a)
        return np.polynomial.chebyshev.chebval(xi, self.coef)

    def m0(self, y) -> np.ndarray:
        return self._eval(y)[: self.K]

    def m1(self, y) -> np.ndarray:
        return self._eval(y)[self.K:]


class NetworkSystem:
    """ε dx/dt = Q(y)ᵀx on a projection J of a network's CME, dy/dt = G(E_x[·], y).

    Parameters
    ----------
    network : ReactionNetwork
        Its slow variables are the y; every one needs an ODE in `slow`.
    space : StateSpace
        The projection J (from `network.state_space`).
    slow : mapping name -> str
        The right-hand side of each slow variable's ODE; `E[expr]` is the expectation of
        `expr` (species counts, parameters, slow variables) under the fast distribution.
    eps : float
        Timescale ratio ε > 0.
    solver : {"direct", "amg"}
        Pinned sparse solver (sp_ode.markov.solvers.warm_start); "direct" default.
    name : str, optional

    Raises
    ------
    NetworkError
        A slow variable without an ODE or an ODE for an unknown variable (named); a species
        used outside `E[…]` (named); an unknown name in an ODE (named).
    """

    def __init__(self, network: ReactionNetwork, space: StateSpace, slow: Mapping[str, str], *, eps: float,
                 solver: str = "direct", name: str | None = None):

        if not isinstance(network, ReactionNetwork):
            raise TypeError(f"`network` must be a ReactionNetwork; got {type(network).__name__}.")
        if not isinstance(space, StateSpace) or space.species != network.species:
            raise TypeError("`space` must be a StateSpace built by `network.state_space(...)`.")
        if solver not in SOLVERS:
            raise ValueError(f"`solver` must be one of {SOLVERS}; got {solver!r}.")
        if not network.slow:
            raise NetworkError(f"network {network.name!r} has no slow variables: declare them with `slow=[...]`.")
        for v in network.slow:
            if v not in slow:
                raise NetworkError(f"slow variable {v!r} has no ODE in `slow`; give e.g. slow={{{v!r}: '...'}}.",
                                   species=v)
        for v in slow:
            if v not in network.slow:
                raise NetworkError(f"`slow` gives an ODE for {v!r}, which is not a slow variable of the network "
                                   f"{network.slow}.", species=v)
        self.network, self.space, self.solver = network, space, solver
        self.eps = check_positive("eps", eps)
        self.name = name or f"{network.name}_system"
        self.slow_odes = {v: str(slow[v]) for v in network.slow}
        self.gen = PatternedGenerator(network, space)
        self._parse(parse_rate)

    # --- the slow ODE ----------------------------------------------------------------------------
    def _parse(self, parse_rate) -> None:
        import sympy

        net = self.network
        observables: list[str] = []
        rhs = []
        for v, text in self.slow_odes.items():
            def sub(m):
                inner = m.group(1).strip()
                if inner not in observables:
                    observables.append(inner)
                return f"_m{observables.index(inner)}"
            expr = parse_rate(_EXPECT.sub(sub, text), f"the ODE of slow variable {v!r}")
            for s in expr.free_symbols:
                name = str(s)
                if name in net.species:
                    raise NetworkError(f"the ODE of {v!r} ({text!r}) uses species {name!r} outside E[…]; write "
                                       f"E[{name}] for its mean.", species=name)
                if not (name.startswith("_m") or name in net.slow or name in net.parameters):
                    raise NetworkError(f"the ODE of {v!r} ({text!r}) uses unknown name {name!r}; not a parameter "
                                       f"{tuple(net.parameters)} or slow variable {net.slow}"
                                       f"{hint(name, (*net.parameters, *net.slow))}.", species=name)
            rhs.append(expr)
        obs = []
        for text in observables:
            e = parse_rate(text, f"E[{text}]")
            for s in e.free_symbols:
                if str(s) not in net.symbols:
                    raise NetworkError(f"E[{text}] uses unknown name {str(s)!r}; not a species, parameter or slow "
                                       f"variable{hint(str(s), net.symbols)}.", species=str(s))
            obs.append(e.subs({s: net.symbols[str(s)] for s in e.free_symbols}))
        self.observables = tuple(observables)
        m = [sympy.Symbol(f"_m{k}") for k in range(len(observables))]
        rhs = [e.subs({s: (net.symbols.get(str(s), s)) for s in e.free_symbols}) for e in rhs]
        self._rhs_exprs = rhs
        self._obs_exprs = tuple(obs)
        ys = [net.symbols[v] for v in net.slow]
        ps = [net.symbols[p] for p in net.parameters]
        sargs = [net.symbols[s] for s in net.species]
        self._G = sympy.lambdify([m, ys, ps], rhs, modules="numpy")
        self._Gm = sympy.lambdify([m, ys, ps], sympy.Matrix(rhs).jacobian(m) if m else sympy.zeros(len(rhs), 0),
                                  modules="numpy")
        self._Gy = sympy.lambdify([m, ys, ps], sympy.Matrix(rhs).jacobian(ys), modules="numpy")
        self._F = [sympy.lambdify([sargs, ys, ps], e, modules="numpy") for e in obs]
        self._dF = [[sympy.lambdify([sargs, ys, ps], sympy.diff(e, yv), modules="numpy") for yv in ys] for e in obs]
        self._F_depends_on_y = any(e.has(*ys) for e in obs)
        self._cols = [space_col.astype(np.float64) for space_col in self.space.states.T]
        self._pvals = list(net.parameters.values())
        self._Fcache = None

    # --- parameters (hooks of sp_ode.sweep) ------------------------------------------------------
    def with_parameters(self, **values) -> NetworkSystem:
        """A copy with some network parameters replaced, sharing the state space, the generator's pattern
        and the compiled expressions (a sweep over rate constants builds none of them again).

        Raises
        ------
        ValueError
            A name that is not a parameter of the network (the message lists them).
        """
        net = self.network
        unknown = [k for k in values if k not in net.parameters]
        if unknown:
            raise ValueError(f"{unknown} are not parameters of network {net.name!r}; its parameters are "
                             f"{tuple(net.parameters)}{hint(unknown[0], net.parameters)}.")
        new_net = copy.copy(net)
        new_net.parameters = {**net.parameters, **{k: float(v) for k, v in values.items()}}
        out = copy.copy(self)
        out.network = new_net
        out.gen = copy.copy(self.gen)
        out.gen.network = new_net
        out._pvals = list(new_net.parameters.values())
        out._Fcache = None
        return out

    def parameter_roles(self) -> dict[str, str]:
        """Each network parameter's role: `"rate"` when it enters a propensity or an observable E[·]
        (it changes Q(y) or the moments, hence p_st, h₁ and every table of them), `"slow"` when only the
        slow ODEs read it (the manifold and its tables do not depend on it), `"unused"` otherwise."""
        net = self.network
        fast = set().union(*(e.free_symbols for e in net.propensity_exprs), *(e.free_symbols for e in self._obs_exprs))
        slow = set().union(*(e.free_symbols for e in self._rhs_exprs))
        roles = {}
        for name in net.parameters:
            sym = net.symbols[name]
            roles[name] = "rate" if sym in fast else "slow" if sym in slow else "unused"
        return roles

    def _params(self, params) -> list:
        if not params:
            return self._pvals
        return [params.get(k, v) for k, v in self.network.parameters.items()]

    def slow_rhs(self, moments, y, params: Mapping | None = None) -> np.ndarray:
        """G(m, y), shape (d, ...): the slow vector field from the moments m = E_x[f_k] (K, ...), y (d, ...),
        vectorised over trailing axes (many points at once); `params` overrides parameter values (arrays
        broadcast against the trailing axes: one value per point)."""
        out = self._G(list(moments), list(y), self._params(params))
        shape = np.broadcast_shapes(np.shape(y[0]), *(np.shape(v) for v in (params or {}).values()))
        return np.stack([np.broadcast_to(np.asarray(v, dtype=np.float64), shape) for v in out])

    def F(self, y) -> np.ndarray:
        """Observables f_k(state_i, y), shape (K, n)."""
        if self._Fcache is not None and not self._F_depends_on_y:
            return self._Fcache
        y = np.asarray(y, dtype=np.float64)
        out = np.stack([np.broadcast_to(np.asarray(f(self._cols, y, self._pvals), dtype=np.float64), (self.space.n,))
                        for f in self._F]) if self._F else np.zeros((0, self.space.n))
        if not self._F_depends_on_y:
            self._Fcache = out
        return out

    def dF(self, y) -> np.ndarray:
        """∂f_k/∂y_j at every state, shape (d, K, n)."""
        y = np.asarray(y, dtype=np.float64)
        d = len(self.network.slow)
        if not self._F_depends_on_y:
            return np.zeros((d, len(self._F), self.space.n))
        return np.stack([np.stack([np.broadcast_to(np.asarray(row[j](self._cols, y, self._pvals), dtype=np.float64),
                                                   (self.space.n,)) for row in self._dF]) for j in range(d)])

    def g(self, x, y) -> np.ndarray:
        """dy/dt = G(F(y)x, y), shape (d,), for a fast distribution x (n,)."""
        y = np.asarray(y, dtype=np.float64)
        return np.asarray(self._G(self.F(y) @ x, y, self._pvals), dtype=np.float64).reshape(-1)

    # --- generators ------------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.space.n

    @property
    def d(self) -> int:
        return len(self.network.slow)

    @property
    def slow_names(self) -> tuple[str, ...]:
        """The slow variables' names (the network's `slow`), as figures and messages name y."""
        return tuple(self.network.slow)

    def Q(self, y) -> sp.csr_array:
        """Q(y) (sparse, fixed pattern, propensities checked)."""
        return self.gen.Q(y)

    def stationary_solver(self, *, warm: bool = True, solver: str | None = None) -> WarmStationary:
        """A fresh warm-startable stationary solver for this system's pattern."""
        return WarmStationary(self.gen, solver or self.solver, warm=warm)

    def stationary(self, y):
        """p_st(y) and info through the public solver `sp_ode.stationary_distribution`.

        The default route on the sparse Q (docs/theory.md §7.9: banded/dense GTH where predicted
        cheap, else the sparse solve refined and certified entrywise); info carries its residual and
        bound, and the FSP outflow rate (§7.6).
        """

        a = self.gen.propensities(y)
        Q = self.gen.Q(y, a)
        Q.eliminate_zeros()
        p, info = stationary_distribution(Q, return_info=True, states=self.network.state_labels(self.space))
        info["fsp_outflow_rate"] = float(p @ self.gen.outflow(a))
        return p, info

    # --- reduced and corrected flows -------------------------------------------------------------
    def _solve_p(self, y, ws: WarmStationary, stats: dict):
        a = self.gen.propensities(y)
        Q = self.gen.Q(y, a)
        try:
            p, info = ws.solve(Q, y)
        except (RuntimeError, ValueError, np.linalg.LinAlgError) as exc:
            self._name_reducible(Q, y, exc)
            raise
        stats["solves"] = stats.get("solves", 0) + 1
        stats["max_residual"] = max(stats.get("max_residual", 0.0), info["residual"])
        stats["gmres_steps"] = stats.get("gmres_steps", 0) + info.get("steps", 0)
        stats["max_fsp_outflow_rate"] = max(stats.get("max_fsp_outflow_rate", 0.0), float(p @ self.gen.outflow(a)))
        return p, Q

    def _name_reducible(self, Q, y, exc: Exception) -> None:
        """Raise `NotIrreducibleError` naming y and the closed classes by copy numbers when a failed solve
        (a singular pinned system, a stalled GMRES) comes from a reducible Q(y); return when Q(y) is irreducible."""
        Qc = sp.csr_array(Q, copy=True)
        Qc.eliminate_zeros()
        try:
            require_irreducible(Qc, "Q(y)", states=self.network.state_labels(self.space))
        except NotIrreducibleError as err:
            where = ", ".join(f"{name} = {v:.6g}" for name, v in zip(self.network.slow,
                                                                       np.asarray(y, dtype=np.float64).ravel()))
            raise NotIrreducibleError(f"{self.name!r}: p_st(y) is not unique at {where}: {err} The reduced flow "
                                      "needs one stationary distribution per y; check the reactions that leave "
                                      "each closed class.", err.closed_classes) from exc

    def h1(self, y, p: np.ndarray, ws: WarmStationary) -> np.ndarray:
        """h₁(y) = A^#[Dp_st(y)·g(p, y)], Dp_st = −A^#(∂_yA)p (docs/theory.md §3.3), after `ws.solve` at y."""
        dQ = self.gen.dQ(y)
        V = np.stack([dq.T @ p for dq in dQ], axis=1)           # (n, d): (∂_j A) p, in 1^⊥
        Dp = -ws.group_inverse_apply(V)                            # (n, d)
        return ws.group_inverse_apply(Dp @ self.g(p, y))

    def reduced_rhs(self, ws: WarmStationary | None = None, *, order: int = 0, stats: dict | None = None):
        """The reduced (order 0) or first-order corrected (order 1) slow vector field y ↦ y'."""
        if order not in (0, 1):
            raise ValueError(f"`order` must be 0 (reduced) or 1 (first-order corrected); got {order!r}.")
        ws = ws or self.stationary_solver()
        stats = {} if stats is None else stats

        def rhs(t, y):
            p, _ = self._solve_p(y, ws, stats)
            x = p if order == 0 else p + self.eps * self.h1(y, p, ws)
            return self.g(x, y)

        return rhs

    def manifold_table(self, interval, *, order: int = 1, tol: float = 1e-12, max_nodes: int = 257,
                       ws: WarmStationary | None = None) -> ManifoldTable:
        """Chebyshev interpolants of m₀(y) = F p_st(y) and m₁(y) = F h₁(y) on an interval (d = 1).

        The slow flow needs the fast state only through these K expectations, and
        y' = G(m₀ + εm₁, y) then holds for every ε at once (docs/theory.md §3.3).  Nodes are
        nested Chebyshev–Lobatto points (9, 17, 33, …); the degree doubles until the change
        of the interpolant at the new nodes is below `tol`·max(1, |m|) — that change is
        reported as `error_estimate`.

        Raises
        ------
        ValueError
            d ≠ 1, or the interval is empty or not finite.
        RuntimeError
            No convergence within `max_nodes` (the estimate is in the message).
        """
        if self.d != 1:
            raise ValueError(f"`manifold_table` needs one slow variable; this system has d = {self.d}.")
        a, b = (float(v) for v in interval)
        if not (np.isfinite(a) and np.isfinite(b) and a < b):
            raise ValueError(f"`interval` must be finite with a < b; got {interval!r}.")
        ws = ws or self.stationary_solver()
        stats: dict = {}
        t0 = time.perf_counter()

        def values(y):
            y = np.array([y])
            p, _ = self._solve_p(y, ws, stats)
            m0 = self.F(y) @ p
            m1 = self.F(y) @ self.h1(y, p, ws) if order == 1 else np.zeros_like(m0)
            return np.concatenate([m0, m1])

        try:
            fit = chebyshev_fit(values, a, b, tol=tol, max_nodes=max_nodes)
        except ChebyshevConvergenceError as exc:
            raise RuntimeError(str(exc)) from None
        coef, err = fit.coef, fit.error
        stats.update(seconds=time.perf_counter() - t0, nodes=fit.degree + 1, error_estimate=err, rebuilds=ws.rebuilds)
        return ManifoldTable(a, b, coef, len(self.observables), stats)

    def simulate_reduced(self, t_span, y0, *, order: int = 0, t_eval=None, rtol: float = 1e-10,
                         atol: float = 1e-12, method: str = "DOP853", warm: bool = True,
                         return_x: bool = False, table: ManifoldTable | bool = False, phi=None) -> NetworkPath:
        """Integrate the reduced (order 0) or corrected (order 1) slow flow with solve_ivp.

        The cost does not depend on ε.  Without a table every right-hand side is one
        warm-started sparse stationary solve (+ 2d + 1 group-inverse solves for order 1).
        With `table=True` (d = 1) the expectations m₀ + εm₁ come from [`manifold_table`][sp_ode.systems.network.NetworkSystem.manifold_table]
        on the range of a coarse order-0 pass (padded by 10%, never across 0), or pass a table to reuse it
        for several ε; a path that leaves the table's interval is refused (status −1).
        With `phi=` — a callable y (d,) -> (n,) or an object with `jax_fn()` such as a fitted
        φ_θ (`neural.load_phi`) — the flow is y' = G(F(y)φ(y), y) with no solve at all (order 0
        only; the error of φ is the caller's to certify, e.g. `PhiFit.certified_predict`).
        """
        from scipy.integrate import solve_ivp

        if phi is not None:
            return self._simulate_with_phi(phi, t_span, y0, order=order, t_eval=t_eval, rtol=rtol, atol=atol,
                                           method=method, return_x=return_x, table=table)
        stats: dict = {}
        ws = self.stationary_solver(warm=warm)
        t0 = time.perf_counter()
        y0 = np.asarray(y0, dtype=np.float64).reshape(self.d)
        if table is True:
            coarse = solve_ivp(self.reduced_rhs(ws, order=0, stats=stats), t_span, y0, method="RK23", rtol=1e-3,
                               atol=1e-6 * max(1.0, float(np.abs(y0).max())))
            table = self.manifold_table(padded_range(coarse.y[0]), order=order, ws=ws)
        if table is not False:
            eps = self.eps if order == 1 else 0.0
            inside = lambda t, y: min(y[0] - table.a, table.b - y[0])
            inside.terminal = True
            rhs = lambda t, y: np.asarray(self._G(table.m0(y) + eps * table.m1(y), y, self._pvals),
                                          dtype=np.float64).reshape(-1)
            sol = solve_ivp(rhs, t_span, y0, method=method, rtol=rtol, atol=atol, t_eval=t_eval, events=inside)
            stats.update(table=table.stats)
            if sol.status == 1:
                sol.status, sol.message = -1, (f"the path left the table interval [{table.a:.6g}, {table.b:.6g}] at "
                                               f"t = {sol.t_events[0][0]:.6g}; tabulate a wider interval.")
        else:
            sol = solve_ivp(self.reduced_rhs(ws, order=order, stats=stats), t_span, y0,
                            method=method, rtol=rtol, atol=atol, t_eval=t_eval)
        stats.update(seconds=time.perf_counter() - t0, nfev=int(sol.nfev), rebuilds=ws.rebuilds)
        X = None
        if return_x:
            X = []
            for y in sol.y.T:
                p, _ = self._solve_p(y, ws, stats)
                X.append(p if order == 0 else p + self.eps * self.h1(y, p, ws))
            X = np.array(X)
        return NetworkPath(sol.t, sol.y.T, X, "reduced" if order == 0 else "corrected", int(sol.status),
                           sol.message, stats)

    def _simulate_with_phi(self, phi, t_span, y0, *, order, t_eval, rtol, atol, method, return_x, table):
        from scipy.integrate import solve_ivp

        if order != 0 or table is not False:
            raise ValueError("`phi` gives the order-0 reduced flow y' = G(F φ(y), y): pass order=0 and no `table` "
                             f"with it; got order={order!r}, table={type(table).__name__}.")
        jax_fn = getattr(phi, "jax_fn", None)
        fn = jax_fn() if callable(jax_fn) else phi   # duck typing: sp_ode never imports `neural`
        if not callable(fn):
            raise TypeError(f"`phi` must be a callable y -> (n,) or have a jax_fn() method; got {type(phi).__name__}.")
        if callable(jax_fn):
            import jax

            from sp_ode.core.precision import float64

            jitted = jax.jit(fn)

            def manifold(y):
                with float64():
                    return np.asarray(jitted(np.asarray(y, dtype=np.float64)), dtype=np.float64)
        else:
            def manifold(y):
                return np.asarray(fn(np.asarray(y, dtype=np.float64)), dtype=np.float64)
        y0 = np.asarray(y0, dtype=np.float64).reshape(self.d)
        x0 = manifold(y0)
        if x0.shape != (self.n,):
            raise ValueError(f"`phi`(y0) must have shape (n,) = ({self.n},); got {x0.shape}.")
        t0 = time.perf_counter()
        sol = solve_ivp(lambda t, y: self.g(manifold(y), y), t_span, y0, method=method, rtol=rtol, atol=atol,
                        t_eval=t_eval)
        stats = {"seconds": time.perf_counter() - t0, "nfev": int(sol.nfev), "solves": 0, "manifold": "phi"}
        X = np.array([manifold(y) for y in sol.y.T]) if return_x else None
        return NetworkPath(sol.t, sol.y.T, X, "reduced", int(sol.status), sol.message, stats)

    # --- the full stiff system -------------------------------------------------------------------
    def full_rhs(self, eps: float | None = None):
        """dz/dt for z = [x, y]: [Q(y)ᵀx/ε, G(F(y)x, y)]."""
        eps = self.eps if eps is None else check_positive("eps", eps)
        n = self.n

        def rhs(t, z):
            x, y = z[:n], z[n:]
            return np.concatenate([(self.gen.Q(y).T @ x) / eps, self.g(x, y)])

        return rhs

    def full_jacobian(self, eps: float | None = None):
        """The sparse Jacobian of [`full_rhs`][sp_ode.systems.network.NetworkSystem.full_rhs] (module docstring), as CSC."""
        eps = self.eps if eps is None else check_positive("eps", eps)
        n = self.n

        def jac(t, z):
            x, y = z[:n], z[n:]
            Qt = self.gen.Q(y).T / eps
            C = np.stack([dq.T @ x for dq in self.gen.dQ(y)], axis=1) / eps    # (n, d)
            Fm = self.F(y)
            m = Fm @ x
            Gm = np.asarray(self._Gm(m, y, self._pvals), dtype=np.float64).reshape(self.d, -1)
            Gy = np.asarray(self._Gy(m, y, self._pvals), dtype=np.float64).reshape(self.d, self.d)
            if self._F_depends_on_y:
                Gy = Gy + Gm @ np.einsum("jkn,n->kj", self.dF(y), x)
            return sp.block_array([[Qt, sp.csr_array(C)], [sp.csr_array(Gm @ Fm), sp.csr_array(Gy)]], format="csc")

        return jac

    def simulate(self, t_span, y0, x0=None, *, eps: float | None = None, method: str = "BDF", rtol: float = 1e-8,
                 atol: float = 1e-12, t_eval=None) -> NetworkPath:
        """The full stiff system with scipy BDF/Radau and the sparse Jacobian.

        `x0` defaults to p_st(y0) (start on the critical manifold, docs/theory.md §7.5).
        Failure comes back as `status` ≠ 0 with the solver's message.
        """
        from scipy.integrate import solve_ivp

        if method not in ("BDF", "Radau", "LSODA"):
            raise ValueError(f"`method` must be one of ('BDF', 'Radau', 'LSODA'); got {method!r}.")
        y0 = np.asarray(y0, dtype=np.float64).reshape(self.d)
        stats: dict = {}
        if x0 is None:
            x0, _ = self._solve_p(y0, self.stationary_solver(), stats)
        x0 = np.asarray(x0, dtype=np.float64)
        if x0.shape != (self.n,):
            raise ValueError(f"`x0` must have shape (n,) = ({self.n},); got {x0.shape}.")
        t0 = time.perf_counter()
        kw = {"jac": self.full_jacobian(eps)} if method != "LSODA" else {}
        sol = solve_ivp(self.full_rhs(eps), t_span, np.concatenate([x0, y0]), method=method, rtol=rtol,
                        atol=atol, t_eval=t_eval, **kw)
        stats.update(seconds=time.perf_counter() - t0, nfev=int(sol.nfev), njev=int(sol.njev), nlu=int(sol.nlu),
                     mass_drift=float(np.max(np.abs(sol.y[:self.n].sum(axis=0) - 1.0))))
        return NetworkPath(sol.t, sol.y[self.n:].T, sol.y[:self.n].T, "full", int(sol.status), sol.message, stats)

    # --- bridge to the dense JAX system ----------------------------------------------------------
    def master_equation_system(self, *, eps: float | None = None):
        """This system as an [`sp_ode.MasterEquationSystem`][sp_ode.systems.system.MasterEquationSystem] (dense JAX Q(y); n ≤ 4096)."""
        import jax.numpy as jnp


        if self._F_depends_on_y:
            raise NotImplementedError("observables E[·] that depend on y are not supported by the dense bridge yet; "
                                      "use the sparse paths of NetworkSystem.")
        import sympy

        Q_of_y = self.network.generator_jax(self.space)
        F = self.F(np.zeros(self.d))                 # NumPy float64: cast inside g, in the caller's float64 scope
        net = self.network
        m = [sympy.Symbol(f"_m{k}") for k in range(len(self.observables))]
        Gj = sympy.lambdify([m, [net.symbols[v] for v in net.slow], [net.symbols[p] for p in net.parameters]],
                            self._rhs_exprs, modules="jax")
        pvals = self._pvals

        def g(t, x, y, args):
            moments = jnp.asarray(F, dtype=x.dtype) @ x
            return jnp.stack([jnp.asarray(v, dtype=x.dtype) * jnp.ones((), x.dtype)
                              for v in Gj(list(moments), list(y), pvals)])

        return MasterEquationSystem(Q_of_y, g, eps=self.eps if eps is None else eps, n=self.n, d=self.d,
                                    name=self.name, states=list(self.network.state_labels(self.space)))
