"""The reduced (slow) system y' = g(φ(y), y) and its simulation (docs/theory.md §3.2 (T2)).

Setting ε = 0 in ε dx/dt = f(x, y), dy/dt = g(x, y) confines x to the critical
manifold x = φ(y), f(φ(y), y) = 0, and leaves the reduced flow

    dy/dt = g(t, φ(y), y, args),

which has no ε in it: its cost does not grow as ε → 0 (Tikhonov: the full slow
variable stays O(ε) from it past the initial layer).  For a master-equation
system φ = p_st(y) (T1), computed here by `sp_ode.stationary_jax` (a
bordered solve, differentiable); any other φ — a closed form, a root-finder, or
a corrected manifold h_ε = φ + ε h₁ + … (T3) for the corrected reduced flow — is
passed as `phi=`: a callable `phi(y) -> (m,)`, an `sp_ode.SlowManifold`, or an
object with `jax_fn()` (a fitted φ_θ).  Without one, `x_guess=` finds φ by
Newton on the branch through that guess (`sp_ode.slow_manifold(system, 0, x_guess=…)`).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np

from sp_ode.core.cache import LRUCache
from sp_ode.core.precision import in_float64
from sp_ode.core.validation import check_choice, check_finite_array
from sp_ode.manifolds.initial_layer import LAYER_METHODS, layer_shift
from sp_ode.manifolds.newton import fast_dim, fast_key, system_kernels
from sp_ode.markov.stationary import stationary_distribution
from sp_ode.networks.models import NetworkModel
from sp_ode.systems import diagnosis, integration
from sp_ode.systems.catalogue import CatalogueEntry
from sp_ode.systems.network import NetworkSystem
from sp_ode.systems.resolve import EntryLike, as_system
from sp_ode.systems.simulation import (
    DEFAULT_MAX_STEPS,
    Trajectory,
    check_solver_options,
    check_state,
    check_system,
    finish,
    prepare_batch,
    run_engines,
)
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem
from sp_ode.systems.vector_field import user_function_of

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float, PyTree, TimeSpan
    from sp_ode.systems.catalogue import CatalogueEntry
    from sp_ode.systems.options import SolveOptions
    from sp_ode.systems.resolve import SystemLike

__all__ = ["ReducedSystem", "reduced_system", "simulate_reduced"]


@dataclass(frozen=True, eq=False)
class ReducedSystem:
    """dy/dt = g(t, φ(y), y, args): the ε = 0 limit of a fast–slow system.

    With `phi_eps` set it is instead the corrected flow dy/dt = g(t, h_ε(y), y, args)
    on a slow manifold h_ε(y) = phi_eps(y, ε, args) (T3), and ε and `args` are data
    to the compiled solve: sweeping ε reuses one compilation.

    Attributes
    ----------
    g
        The slow vector field of the full system.
    phi : callable y (d,) -> (m,)
        The manifold the fast state is slaved to (at `eps`).
    args
        The parameters of g.
    d
        Slow dimension (None if not declared).
    name
        Label.
    phi_key
        Hashable identity of the manifold (keys the compiled-solve cache).
    eps : float
        Ε of a corrected manifold (0.0 for φ itself).
    phi_eps : callable `phi_eps(y, eps, args) -> (m,)`, optional
        H_ε with ε and
        args as arguments; when given it is used instead of `phi`.
    Q_of_y : callable `Q(y) -> (n, n)`, optional
        Set when φ = p_st of a master
        equation: Q(y0) is then checked to be an irreducible generator before the solve,
        and along the path inside it (φ turns NaN where the check fails, and the
        failure names the cause: docs/theory.md §3.1 (T1)).
    """

    g: Callable
    phi: Callable
    args: Any
    d: int | None
    name: str
    phi_key: Hashable
    eps: float = 0.0
    phi_eps: Callable | None = None
    Q_of_y: Callable | None = None  # the generator family when φ = p_st (checked at y0 and along the path)
    full: FastSlowSystem | None = None  # the full system (its f projects an off-manifold x0: initial_layer.py)

    def manifold(self, y, eps, args):
        """x on the manifold: phi_eps(y, ε, args), or φ(y)."""
        return self.phi(y) if self.phi_eps is None else self.phi_eps(y, eps, args)

    def rhs(self, t, y, args=None):
        """dy/dt = g(t, φ(y), y, args), shape (d,); `args` defaults to `self.args`."""
        args = self.args if args is None else args
        return self.g(t, self.manifold(y, self.eps, args), y, args)


def critical_manifold_fn(k, x_guess, phi_user=None):
    """φ(y, args) as a JAX function, differentiable to any order in y; `k` the kernels of f (`newton`).

    Newton's root of F(x, y) = 0 started from `x_guess` at every y (which selects the
    branch), made differentiable by the implicit function theorem (a `custom_jvp`
    with Dφ = −(D_x F)⁻¹ D_y F); or `phi_user` (y -> (m,)) when given.  The order-0
    term of `sp_ode.slow_manifold` and the `x_guess=` manifold of `reduced_system`
    (defined here, not in slow_manifold.py, which imports this module: no cycle).
    """
    if phi_user is not None:
        def phi_given(y, args):
            return jnp.asarray(phi_user(y), dtype=jnp.float64)
        return phi_given

    F = k["F"]
    newton = k["newton"]
    DF = jax.jacfwd(F)

    @jax.custom_jvp
    def phi(y, args):
        x, _, _ = newton(jnp.asarray(x_guess), y, args)
        return x

    @phi.defjvp
    def phi_jvp(primals, tangents):
        # implicit function theorem on F(φ(y), y) = 0; written with differentiable
        # operations (and φ itself), so derivatives of every order follow
        y, args = primals
        y_dot, args_dot = tangents
        x = phi(y, args)
        _, F_dot = jax.jvp(lambda yy, aa: F(x, yy, aa), (y, args), (y_dot, args_dot))
        return x, -jnp.linalg.solve(DF(x, y, args), F_dot)

    return phi


# φ(y, args) and φ(y, ε, args) per (fast field, guess): one function object per branch, so
# repeated reduced solves from the same x_guess share the compiled solve (its key is phi_key).
_newton_phi_cache = LRUCache()
_master_phi_eps = LRUCache()   # φ(y, ε, args) = p_st(Q(y, args)) per Q_of_y that takes args


def _from_x_guess(system: FastSlowSystem, x_guess) -> ReducedSystem:
    """The reduced flow on Newton's critical manifold from `x_guess` (that of `slow_manifold(system, 0, x_guess=...)`)."""
    m = fast_dim(system, x_guess)
    guess = check_finite_array("x_guess", x_guess, ndim=1)
    if guess.shape != (m,):
        raise ValueError(f"`x_guess` must have shape (m,) = ({m},); got {guess.shape}.")
    key = ("critical", fast_key(system), guess.tobytes())

    def make():
        phi = critical_manifold_fn(system_kernels(system), guess)

        def phi_eps(y, eps, args):  # ε-free: args are data to the compiled solve
            return phi(jnp.reshape(y, (-1,)), args)
        return phi, phi_eps

    phi, phi_eps = _newton_phi_cache.get_or_make(key, make)
    args = system.args
    return ReducedSystem(system.g, lambda y: phi(jnp.reshape(y, (-1,)), args), system.args, system.d,
                         f"{system.name}/reduced", key, phi_eps=phi_eps)


def _same_fields(a: FastSlowSystem, b: FastSlowSystem) -> bool:
    """Whether `a` and `b` have the same fast field and the same g (shorthand wrappers unwrapped).

    The fast field is Q_of_y for a master equation (each MasterEquationSystem wraps it in
    its own f); a shorthand f(x, y) is wrapped afresh by every system built from it.
    """
    def base(fn):
        return user_function_of(fn)

    def fast(s):
        return s.Q_fn if isinstance(s, MasterEquationSystem) else base(s.f)

    return type(a) is type(b) and fast(a) is fast(b) and base(a.g) is base(b.g)


def _is_slow_manifold(phi) -> bool:
    # duck-typed: slow_manifold.py imports this module, so SlowManifold cannot be imported here
    return isinstance(getattr(phi, "system", None), FastSlowSystem) and callable(getattr(phi, "reduced_system", None))


def _from_slow_manifold(system: FastSlowSystem, manifold) -> ReducedSystem:
    """The flow y' = g(h_ε(y), y) on `manifold` (a SlowManifold) at the ε of `system`, with `system`'s args."""
    if not _same_fields(manifold.system, system):
        raise ValueError(f"`phi` must be a slow manifold of `system` {system.name!r} (same f and g); got one of "
                         f"{manifold.system.name!r}, built over another f or g. Build it with "
                         "sp_ode.slow_manifold(system, ...), or pass phi=manifold.jax_fn() to use it regardless.")
    red = manifold.reduced_system(system.eps)
    if not isinstance(red, ReducedSystem):
        raise TypeError(f"`phi`.reduced_system(eps) must return a ReducedSystem; {type(manifold).__name__} "
                        f"returned {type(red).__name__}.")
    # the terms h_j take args as data, so the manifold follows `system`'s parameters
    return replace(red, g=system.g, args=system.args, d=system.d,
                   name=f"{system.name}/reduced" if getattr(manifold, "order", None) == 0 else red.name)


_PHI_KINDS = ("callable as phi(y) -> (m,) (JAX-traceable), an sp_ode.SlowManifold, or an object with a jax_fn() "
              "method returning such a callable (e.g. neural.load_phi(path))")


def _phi_callable(phi) -> Callable:
    """`phi` as a JAX function y (d,) -> (m,): the result of `phi.jax_fn()`, or `phi` itself."""
    jax_fn = getattr(phi, "jax_fn", None)
    if callable(jax_fn):
        # duck typing: sp_ode must not import `neural`, whose φ_θ (a torch module, callable
        # but not JAX-traceable) offers its JAX form this way
        fn = jax_fn()
        if not callable(fn):
            raise TypeError(f"`phi`.jax_fn() must return a callable y -> (m,); {type(phi).__name__}.jax_fn() "
                            f"returned {type(fn).__name__} {fn!r:.60}.")
        return fn
    if not callable(phi):
        raise TypeError(f"`phi` must be {_PHI_KINDS}; got {type(phi).__name__} {phi!r:.60}.")
    return phi


@in_float64
def reduced_system(system: FastSlowSystem | CatalogueEntry, phi: Callable | None = None, *,
                   x_guess: Float[ArrayLike, " m"] | None = None) -> ReducedSystem:
    """The reduced system of `system` on the manifold x = φ(y).

    φ is, in this order: `phi` when given; φ found by Newton from `x_guess` when
    given; p_st(y) for a MasterEquationSystem (T1); the closed-form critical
    manifold of a catalogue entry when it has one.  Otherwise a ValueError says
    to pass `x_guess` or `phi`.

    Parameters
    ----------
    system : FastSlowSystem, MasterEquationSystem or catalogue entry
    phi : optional, one of
        - a JAX-traceable callable `phi(y) -> (m,)`, y of shape (d,);
        - an `sp_ode.SlowManifold` of `system` (same f and g; recognised by its
          `.system` and `.reduced_system(eps)`): the flow on its
          h_ε = φ + εh₁ + … + εᵏh_k at the ε of `system`, with `system`'s args.
          Order 0 is the critical manifold φ itself, so the flow is T2's ε = 0 reduced
          flow; order k ≥ 1 gives the *corrected* reduced flow (T3), the same as
          `manifold.simulate` — use `slow_manifold(system, 0, ...)` for the
          plain reduced flow.  Its compiled solve is shared across ε (ε is data);
        - any object with a `jax_fn()` method returning such a callable, e.g. a
          fitted φ_θ from `neural.load_phi(path)` (duck typing: sp_ode does not
          import `neural`).  `jax_fn()` is called once per call here; a callable that
          also has `jax_fn` is used through `jax_fn`.
    x_guess : array_like (m,), optional
        For a system that is not a master equation and has no `phi`: the critical
        manifold of `sp_ode.slow_manifold(system, 0, x_guess=x_guess)` (the same
        function, `critical_manifold_fn`), Newton's root of f(x, y) = 0 started from
        `x_guess` at every y — it selects the branch (e.g. x_guess=[-2.0] for
        FitzHugh–Nagumo's left branch).  args are data to its compiled solve.

    Raises
    ------
    TypeError
        `system` is not a fast–slow system; `phi` is none of the kinds above (the
        message names what was seen), or its `jax_fn()` returns no callable.
    ValueError
        No `phi` and no `x_guess` for a system with no known manifold (the message
        names both options); both given; `x_guess` for a master equation (φ = p_st is
        unique there, T1); `x_guess` of the wrong shape; a SlowManifold of another system.
    """
    entry_phi = getattr(system, "phi", None) if isinstance(system, EntryLike) else None
    return reduced_system_checked(check_system(system), phi, x_guess=x_guess, entry_phi=entry_phi)


def reduced_system_checked(system: FastSlowSystem, phi: Callable | None = None, *,
                           x_guess: Float[ArrayLike, " m"] | None = None,
                           entry_phi: Callable | None = None) -> ReducedSystem:
    """`reduced_system` of a system already resolved (`check_system`); `entry_phi` is a catalogue entry's
    closed form of φ, if any.  The certificate calls it, so its system is resolved once."""
    red = _reduced_system(system, phi, x_guess=x_guess, entry_phi=entry_phi)
    return red if red.full is system else replace(red, full=system)


def _reduced_system(system: FastSlowSystem, phi=None, *, x_guess=None, entry_phi=None) -> ReducedSystem:
    """`reduced_system` without the full system attached."""
    master = isinstance(system, MasterEquationSystem)
    if phi is not None and x_guess is not None:
        raise ValueError("`phi` and `x_guess` must not both be given: `x_guess` only selects the branch of the "
                         "critical manifold that is found by Newton when there is no `phi`; "
                         f"got phi={type(phi).__name__} and x_guess={np.asarray(x_guess).tolist()!r}.")
    if x_guess is not None:
        if master:
            raise ValueError(f"`x_guess` is for a general system; {system.name!r} is a master equation, whose "
                             "critical manifold p_st(y) is unique on the simplex (T1) and needs no guess; "
                             f"got x_guess={np.asarray(x_guess).tolist()!r}. Omit it.")
        return _from_x_guess(system, x_guess)
    if phi is None:
        if master:
            key = ("p_st", system.Q_fn)
            phi_args = system.stationary_phi_args()
            # Q(y, args): the manifold reads the parameters as data (phi_eps), so a sweep over the
            # rate constants shares one compiled solve
            phi_eps = _master_phi_eps.get_or_make(key, lambda: lambda y, eps, args: phi_args(y, args)) \
                if system.takes_args else None
            return ReducedSystem(system.g, system.stationary_phi(), system.args, system.d, f"{system.name}/reduced", key,
                                 phi_eps=phi_eps, Q_of_y=system.Q)
        if entry_phi is None:
            raise ValueError(
                f"`phi` is required for system {system.name!r} unless `x_guess` is given: it is not a master "
                "equation and has no closed-form critical manifold. Pass x_guess=[...] (shape (m,), a point near "
                "the branch you want: φ is then found by Newton, as sp_ode.slow_manifold(system, 0, x_guess=...)), "
                f"or phi= {_PHI_KINDS}.")
        phi = entry_phi
    if _is_slow_manifold(phi):
        return _from_slow_manifold(system, phi)
    phi = _phi_callable(phi)
    return ReducedSystem(system.g, phi, system.args, system.d, f"{system.name}/reduced", phi)


def _reduced_problem(red: ReducedSystem) -> integration.Problem:
    g, manifold = red.g, red.manifold

    def make_rhs(args_static):
        def rhs(t, y, dyn):
            eps, args_dyn = dyn  # ε is data: only a corrected manifold h_ε reads it
            args = args_static.combine(args_dyn)
            x = manifold(y, eps, args)
            # a non-finite φ(y) (e.g. p_st undefined) leaves no reduced flow, even when g ignores x
            return jnp.where(jnp.all(jnp.isfinite(x)), g(t, x, y, args), jnp.nan)
        return rhs

    return integration.Problem(key=("reduced", g, red.phi_key), make_rhs=make_rhs)


_phi_eval_cache = LRUCache()


@in_float64
def simulate_reduced(system: SystemLike, t_span: TimeSpan, y0: Float[ArrayLike, "*batch d"], *,
                     phi: Callable | None = None, x_guess: Float[ArrayLike, " m"] | None = None,
                     x0: Float[ArrayLike, "*batch m"] | None = None, initial_layer: str = "projected",
                     backend: str = "auto",
                     method: str | None = None, rtol: float = 1e-8, atol: float = 1e-10,
                     ts: Float[ArrayLike, " K"] | None = None, throw: bool = True,
                     max_steps: int = DEFAULT_MAX_STEPS, args: PyTree | None = None,
                     batch_args: bool = False, escalate: bool = True) -> Trajectory:
    """Integrate the reduced flow dy/dt = g(t, φ(y), y, args) over `t_span`.

    The cost does not depend on ε (no ε appears).  Parameters and failure
    handling are those of `sp_ode.simulate`, less `x0`; `system` may also be a
    `ReducedSystem`.

    Parameters
    ----------
    system : FastSlowSystem, catalogue entry, ReducedSystem or NetworkSystem
        A `NetworkSystem` (sparse CME) is integrated by its own
        [`simulate_reduced`][sp_ode.systems.network.NetworkSystem.simulate_reduced] (scipy; p_st by sparse
        solves, or `phi=` such as a fitted φ_θ) and returns its `NetworkPath`; `ts` is
        its `t_eval`, `rtol`/`atol` pass through, the other options do not apply.
    t_span : (t0, t1)
    y0 : array (d,) or (B, d)
    phi : optional, see `reduced_system`
        A JAX callable `phi(y) -> (m,)`; an `sp_ode.SlowManifold` of `system` (order
        0: the critical manifold φ; order k ≥ 1: the corrected flow on h_ε at the ε of
        `system`); or an object with `jax_fn()` such as `neural.load_phi(path)`.
        Compiled solves are cached on the identity of the callable: pass the same
        object again (not a fresh closure) to reuse the compilation (a SlowManifold,
        or `x_guess`, is cached on the manifold itself).  For a corrected manifold
        at many ε, pass `slow_manifold(...).reduced_system(eps)` as `system`: ε is
        data to its compiled solve.
    x_guess : array_like (m,), optional
        For a general system without `phi`: the critical manifold is
        `sp_ode.slow_manifold(system, 0, x_guess=x_guess)` (Newton from `x_guess`
        at every y, which selects the branch).  Not with `phi`, nor for a master
        equation (φ = p_st needs no guess).
    x0 : array_like (m,) or (B, m), optional
        The fast start of the full problem.  Off the manifold, the full solution joins the slow
        manifold at a base point y* ≠ y0 after an initial layer (docs/theory.md §7.5), and a path
        started at y0 is only O(ε) accurate whatever its order.  With `x0` the path starts at y*
        instead (`sp_ode.manifolds.initial_layer`), and the shift applied is recorded in
        `stats["initial_layer"]` (a `LayerShift`, a list of them for a batch).
    initial_layer : {"projected", "first_order", "none"}
        How y* is found from `x0`: "projected" (default) solves the layer on the fast clock and goes
        back along the path's own flow (keeps the order of any path); "first_order" is y0 + εη₁,
        the frozen-fibre integral (L₁) (O(ε²) start); "none" starts at y0.

    Returns
    -------
    Trajectory
        `y` (K, d) | (B, K, d) the reduced solution; `x` = φ(y) along it.

    Raises
    ------
    TypeError, ValueError, SolverError
        As `sp_ode.simulate`; as `reduced_system` for `phi` and `x_guess` (TypeError
        naming `phi` for an object of another kind; ValueError naming `phi` and
        `x_guess` when no manifold is known, or naming them when given with a
        `ReducedSystem`, which has its manifold already);
        ValueError (names `g`) when g(φ(y0), y0) does not have the shape of y0; for a
        master equation, ValueError when Q(y0) is not a generator or is reducible
        (p_st(y0) undefined; the closed classes are named).  Along the path the same
        checks run inside the compiled solve: a failure there is status 4 with that cause.
        With `x0`: ValueError for a shape that is not (m,) or (B, m), or when the full system is not
        known (a ReducedSystem built by hand); `LayerBasinError` (a ValueError) when the fast fibre
        from x0 settles elsewhere than φ(y0) — x0 outside the manifold's basin; the message names x0
        and where its fibre goes.

    Warns
    -----
    InitialLayerWarning
        With `x0`: no attracting fibre at y0, or the layer not resolved (y0 used unshifted).
    """
    if isinstance(system, (NetworkSystem, NetworkModel)):
        system = as_system(system)
        # a sparse network system has its own reduced flow (scipy, sparse solves or phi=): a NetworkPath
        if x_guess is not None:
            raise ValueError("`x_guess` is for a general system; a network's critical manifold is p_st(y) (T1).")
        return system.simulate_reduced(t_span, y0, phi=phi, rtol=rtol, atol=atol, t_eval=ts)
    initial_layer = check_choice("initial_layer", initial_layer, LAYER_METHODS)
    if isinstance(system, ReducedSystem):
        if phi is not None or x_guess is not None:
            given = "`phi`" if phi is not None else "`x_guess`"
            raise ValueError(f"{given} must not be given with a ReducedSystem, which has its manifold already "
                             f"({system.name!r}); pass the FastSlowSystem instead to choose the manifold.")
        red = system
    else:
        red = reduced_system(system, phi, x_guess=x_guess)
    options, (t0, t1), ts = check_solver_options(backend, method, rtol, atol, max_steps, t_span, ts, escalate)
    y0 = check_state("y0", y0, red.d)
    return simulate_reduced_checked(red, (t0, t1), y0, ts=ts, options=options, x0=x0, initial_layer=initial_layer,
                                    args=args, batch_args=batch_args, throw=throw)


@in_float64
def simulate_reduced_checked(red: ReducedSystem, t_span: tuple[float, float], y0: np.ndarray, *,
                             ts: np.ndarray | None, options: SolveOptions, x0=None,
                             initial_layer: str = "projected", args: PyTree | None = None, batch_args: bool = False,
                             throw: bool = True) -> Trajectory:
    """`simulate_reduced` on input already checked: a ReducedSystem, `t_span` (t0, t1) with t1 > t0, `ts`
    inside it (or None), `y0` float64 of the reduced system's d, one `SolveOptions` (the certificate passes
    its own, so the backend it was given is validated once)."""
    t0, t1 = t_span
    args = red.args if args is None else args
    dummy = np.zeros(0)
    _, y0, B = prepare_batch(dummy, y0, args, bool(batch_args))
    batched = B is not None
    probe_y = y0[0] if batched else y0
    shifts = None
    if x0 is not None:
        y0, shifts = _project_starts(red, x0, y0, args, bool(batch_args), t0, initial_layer)
    problem = _reduced_problem(red)
    args_dyn, args_static, static_key = integration.split_args(args)
    _check_reduced_shape(red, problem, probe_y, args, args_dyn, static_key, batch_args, t0)
    Q_check = None
    if red.Q_of_y is not None:  # p_st must exist at the start: Q(y0) an irreducible generator
        Q_check = _generator_at(red.Q_of_y, args, bool(batch_args))
        states = getattr(getattr(red.Q_of_y, "__self__", None), "states", None)
        for b, y in _starts(y0, bool(batch_args)):
            cause = diagnosis.generator_cause(np.asarray(Q_check(y, b), dtype=np.float64), y, need_irreducible=True,
                                              states=states)
            if cause is not None:
                raise ValueError(f"`system` has no reduced flow at y0: {cause}")
    if batched and ts is None:
        ts = np.array([t0, t1])

    def diagnose(i, t_end, y_end):
        args_i = jax.tree_util.tree_map(lambda a: np.asarray(a)[i], args) if batch_args else args
        Q_i = None if Q_check is None else (lambda y: Q_check(y, i))
        return diagnosis.diagnose(t_end, y_end, f=None, g=lambda t, y: red.rhs(t, jnp.asarray(y), args_i),
                                  eps=1.0, m=None, span=t1 - t0, Q=Q_i, need_irreducible=True,
                                  states=getattr(getattr(red.Q_of_y, "__self__", None), "states", None))

    raw = run_engines(problem, y0, t0, t1, ts, eps=red.eps, args=args, options=options, batched=batched,
                      batch_args=bool(batch_args), split=(args_dyn, args_static, static_key), diagnose=diagnose)
    # x = φ(y) (or h_ε(y)) along the reduced solution (inf where a failed solve left inf).
    ys = raw["z"]
    flat = ys.reshape(-1, ys.shape[-1])
    ok = np.all(np.isfinite(flat), axis=-1)
    if not ok.all():
        flat = np.where(ok[:, None], flat, probe_y)
    phi_eval = _phi_eval_cache.get_or_make((red.phi_key, static_key), lambda: _make_phi_eval(red, args_static))
    if red.Q_of_y is not None and red.phi_eps is None:
        # φ = p_st: GTH on Q(y) at the saved states (componentwise accurate, nothing more to compile)
        xs = np.stack([_p_st_or_nan(red.Q_of_y, y) for y in flat])
    elif batch_args:  # each saved state with the parameters of its own solve
        K = ys.shape[-2]
        args_rows = jax.tree_util.tree_map(lambda a: jnp.repeat(a, K, axis=0), args_dyn)
        xs = np.asarray(phi_eval(flat, red.eps, args_rows, True))
    else:
        xs = np.asarray(phi_eval(flat, red.eps, args_dyn, False))
    if not ok.all():
        xs = np.where(ok[:, None], xs, np.inf)
    xs = xs.reshape(ys.shape[:-1] + (xs.shape[-1],))
    raw["z"] = np.concatenate([xs, ys], axis=-1)
    traj = finish(raw, xs.shape[-1], t0, t1, options.max_steps, throw, batched, diagnose,
                  name=red.name)  # the name is printed in the Trajectory's summary
    if shifts is not None:
        traj.stats["initial_layer"] = shifts if batched else shifts[0]
    return traj


def _project_starts(red: ReducedSystem, x0, y0: np.ndarray, args, batch_args: bool, t0: float, method: str):
    """(y* (d,) | (B, d), [LayerShift per start]): each start projected along its fast fibre (initial_layer.py)."""
    full = red.full
    if full is None:
        raise ValueError(f"`x0` needs the full system to project the start along its fast fibre; the ReducedSystem "
                         f"{red.name!r} does not know it. Pass the FastSlowSystem (or its SlowManifold) instead.")
    m = full.m if full.m is not None else np.asarray(red.manifold(jnp.asarray(np.reshape(y0, (-1, y0.shape[-1]))[0]),
                                                                   red.eps, args)).size
    x0 = check_state("x0", x0, m)
    ys = np.reshape(y0, (-1, y0.shape[-1]))
    if x0.ndim == 2 and x0.shape[0] != ys.shape[0]:
        raise ValueError(f"`x0` must have shape (m,) or (B, m) with B = {ys.shape[0]} starts of `y0`; got {x0.shape}.")
    xs = np.broadcast_to(x0, (ys.shape[0], m))
    eps = red.eps if red.eps > 0 else full.eps
    master = isinstance(full, MasterEquationSystem)
    out, starts = [], np.empty_like(ys)
    for b, (xb, yb) in enumerate(zip(xs, ys)):
        args_b = jax.tree_util.tree_map(lambda a: np.asarray(a)[b], args) if batch_args else args
        shift = layer_shift(full, red, xb, yb, eps=eps, t0=t0, args=args_b, method=method, master=master)
        out.append(shift)
        starts[b] = shift.y_start
    return starts.reshape(y0.shape), out


def _starts(y0: np.ndarray, batch_args: bool):
    """(batch index, y) of each distinct start (every start when each solve has its own args)."""
    if y0.ndim == 1:
        return [(0, y0)]
    if batch_args:
        return list(enumerate(y0))
    _, first = np.unique(y0, axis=0, return_index=True)
    return [(int(i), y0[i]) for i in sorted(first)]


def _generator_at(Q_of_y: Callable, args, batch_args: bool) -> Callable:
    """(y, b) -> Q(y) with the parameters of solve b: a master system's `Q(y, args)` (a bound method
    taking args) gets them; any other `Q(y)` is called as it is."""
    takes = getattr(getattr(Q_of_y, "__self__", None), "takes_args", False)
    if not takes:
        return lambda y, b: Q_of_y(y)
    if batch_args:
        return lambda y, b: Q_of_y(y, jax.tree_util.tree_map(lambda a: np.asarray(a)[b], args))
    return lambda y, b: Q_of_y(y, args)


def _p_st_or_nan(Q_of_y, y) -> np.ndarray:
    """p_st(Q(y)) by GTH, NaN where Q(y) is not an irreducible generator (the solve stopped there)."""
    Q = np.asarray(Q_of_y(y), dtype=np.float64)
    try:
        return stationary_distribution(Q)
    except (ValueError, ArithmeticError):
        return np.full(Q.shape[-1], np.nan)


def _make_phi_eval(red: ReducedSystem, args_static) -> Callable:
    """jit: (ys (N, d), ε, args_dyn, rows) -> manifold points (N, m); rows: args_dyn has a leading N."""
    manifold = red.manifold

    def one(y, eps, args_dyn):
        return manifold(y, eps, args_static.combine(args_dyn))

    @jax.jit
    def shared(ys, eps, args_dyn):
        return jax.vmap(one, in_axes=(0, None, None))(ys, eps, args_dyn)

    @jax.jit
    def per_row(ys, eps, args_dyn):
        return jax.vmap(one, in_axes=(0, None, 0))(ys, eps, args_dyn)

    return lambda ys, eps, args_dyn, rows: (per_row if rows else shared)(ys, eps, args_dyn)


# (problem key, static args, shapes) already shape-checked: tracing g(φ(y), y) costs
# milliseconds, which would otherwise dominate a reduced solve of a few milliseconds.
_checked_shapes = LRUCache()


def _check_reduced_shape(red, problem, probe_y, args, args_dyn, static_key, batch_args, t0) -> None:
    """g(t0, φ(y0), y0) must have the shape of y0 (raises ValueError naming `g`)."""
    dyn_spec = integration.tree_spec(args_dyn)
    key = (problem.key, static_key, probe_y.shape, dyn_spec, bool(batch_args))
    if _checked_shapes.get(key):
        return
    probe_args = jax.tree_util.tree_map(lambda a: np.asarray(a)[0], args) if batch_args else args
    out = jax.eval_shape(lambda: red.rhs(jnp.asarray(t0), jnp.asarray(probe_y), probe_args))
    if getattr(out, "shape", None) != probe_y.shape:
        raise ValueError(f"`g` must return an array of the shape of y, {probe_y.shape}, on the manifold "
                         f"x = phi(y); got {getattr(out, 'shape', type(out).__name__)}.")
    _checked_shapes[key] = True
