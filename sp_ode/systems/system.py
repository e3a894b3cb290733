"""Fast–slow systems ε dx/dt = f(x, y), dy/dt = g(x, y), with ε = 1/P (docs/theory.md §2).

A `FastSlowSystem` holds the two vector fields, the timescale ratio ε (or the
block size P, ε = 1/P) and the parameters `args` passed to both.  On the slow
clock t the concatenated state z = [x, y] ∈ ℝᵐ⁺ᵈ obeys

    dz/dt = [f(t, x, y, args) / ε,  g(t, x, y, args)],

and on the fast clock τ = t/ε it reads x' = f, y' = ε g.

`MasterEquationSystem` is the linear-generator case f(t, x, y, args) = Q(y)ᵀx,
with x on the simplex Δⁿ⁻¹: 1ᵀx is conserved because Q(y)1 = 0, and the critical
manifold is φ(y) = p_st(y) (T1).

Both objects are immutable and compare by identity, so compiled solves can be
cached per (system, shapes) by `sp_ode.simulate`; ε and `args` are passed to
compiled code as data, so changing them (`with_eps`) does not recompile.  Every
`MasterEquationSystem` over the same `Q_of_y` shares one f, so rebuilding a system
over a generator family does not recompile either.  That f carries a hand-written
JVP, d(Q(y)ᵀx) = Q(y)ᵀdx + (∂_yQ(y)·dy)ᵀx, which makes the Jacobians of the implicit
solvers build Q(y) once instead of once per basis tangent.
"""
from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import jax
import jax.numpy as jnp
import numpy as np

from sp_ode.core.cache import LRUCache
from sp_ode.core.precision import in_float64
from sp_ode.core.validation import check_positive, check_positive_int
from sp_ode.markov.families import GeneratorFamily
from sp_ode.markov.generator import ROW_SUM_C, check_generator
from sp_ode.markov.stationary import stationary_jax
from sp_ode.systems.integration import SMALL_PROGRAM_OPTIONS
from sp_ode.systems.vector_field import UserFunction, as_generator_function, as_vector_field

if TYPE_CHECKING:
    from sp_ode.core.typing import PyTree

__all__ = ["FastSlowSystem", "MasterEquationSystem"]


def _resolve_eps(eps, P) -> tuple[float, int | None]:
    """Exactly one of `eps` (finite, > 0) and `P` (positive int, ε = 1/P)."""
    if eps is None and P is None:
        raise TypeError("exactly one of `eps` and `P` must be given (ε = 1/P); got neither.")
    if eps is not None and P is not None:
        raise TypeError(f"exactly one of `eps` and `P` must be given (ε = 1/P); got eps={eps!r} and P={P!r}.")
    if P is not None:
        P = check_positive_int("P", P)
        return 1.0 / P, P
    return check_positive("eps", eps), None


def _optional_dim(name: str, value) -> int | None:
    return None if value is None else check_positive_int(name, value)


def _check_callable(name: str, value) -> Callable:
    if not callable(value):
        raise TypeError(f"`{name}` must be callable as {name}(t, x, y, args); got {type(value).__name__}.")
    return value


class FastSlowSystem:
    """ε dx/dt = f(t, x, y, args), dy/dt = g(t, x, y, args), x ∈ ℝᵐ fast, y ∈ ℝᵈ slow.

    Parameters
    ----------
    f : callable `f(t, x, y, args) -> (m,)`
        Fast vector field, JAX-traceable; t scalar, x (m,), y (d,).
    g : callable `g(t, x, y, args) -> (d,)`
        Slow vector field, JAX-traceable.
    eps : float, optional
        Timescale ratio ε, finite and > 0.  Give exactly one of `eps`, `P`.
    P : int, optional
        Block size, a positive integer; ε = 1/P.
    args : pytree, optional
        Parameters passed unchanged to `f` and `g` (arrays are data to compiled
        solves, so they may be swept or batched without recompiling).
    m, d : int, optional
        Fast and slow dimensions; inferred from the initial states when omitted.
    name : str, optional
        A label for tables and reports.
    slow_names : sequence of d str, optional
        Names of the slow variables (e.g. `("w",)`), used instead of `y` in figure axes,
        verify reports and messages; distinct, non-empty strings, one per component of y.

    Attributes
    ----------
    f, g, eps, P, args, m, d, name, slow_names
        As given; `P` is None when the system was built from `eps`, `slow_names` None when
        not given.

    Raises
    ------
    TypeError
        Neither or both of `eps`/`P` given; `f`/`g` not callable; `P`, `m`, `d`
        not integers; `slow_names` not a sequence of strings.
    ValueError
        ε ≤ 0 or not finite; P, m or d ≤ 0; `slow_names` empty, repeated, or not d of them.
    """

    @in_float64
    def __init__(self, f: Callable, g: Callable, *, eps: float | None = None, P: int | None = None,
                 args: PyTree | None = None, m: int | None = None, d: int | None = None, name: str | None = None,
                 slow_names: Sequence[str] | None = None) -> None:
        eps, P = _resolve_eps(eps, P)
        object.__setattr__(self, "f", as_vector_field("f", f))  # shorthand f(x, y) wrapped (systems/vector_field.py)
        object.__setattr__(self, "g", as_vector_field("g", g))
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "P", P)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "m", _optional_dim("m", m))
        object.__setattr__(self, "d", _optional_dim("d", d))
        if name is not None and not isinstance(name, str):
            raise TypeError(f"`name` must be a string; got {type(name).__name__}.")
        object.__setattr__(self, "name", name if name is not None else getattr(f, "__name__", "system"))
        object.__setattr__(self, "slow_names", _check_slow_names(slow_names, self.d))

    # Immutable: compiled-solve caches key on identity, so a system must not change under them.
    def __setattr__(self, key, value):
        raise AttributeError(f"{type(self).__name__} is immutable; use with_eps / with_P / with_args.")

    def __copy__(self) -> FastSlowSystem:
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __getstate__(self) -> dict:
        """Pickled with JAX-array parameters as numpy arrays, so that they keep their dtype.

        A float64 JAX array unpickled outside JAX's float64 scope comes back float32: a
        system sent to a Dask worker silently had its parameters rounded (λ = 0.3 became
        0.30000001192…) and its solves took ≈ 1.7× more time (measured on Michaelis–Menten,
        docs/bench/sweep.md).  numpy arrays pickle bit for bit.
        """
        state = dict(self.__dict__)
        state["args"] = jax.tree_util.tree_map(lambda a: np.asarray(a) if isinstance(a, jax.Array) else a,
                                               state["args"])
        return state

    def __repr__(self) -> str:
        scale = f"P={self.P}" if self.P is not None else f"eps={self.eps:g}"
        return f"{type(self).__name__}(name={self.name!r}, {scale}, m={self.m}, d={self.d})"

    def _replace(self, **changes) -> FastSlowSystem:
        new = copy.copy(self)
        for key, value in changes.items():
            object.__setattr__(new, key, value)
        return new

    def with_eps(self, eps) -> FastSlowSystem:
        """A copy with timescale ratio `eps` (finite, > 0); `P` becomes None."""
        eps, P = _resolve_eps(eps, None)
        return self._replace(eps=eps, P=P)

    def with_P(self, P) -> FastSlowSystem:
        """A copy with block size `P` (positive int) and ε = 1/P."""
        eps, P = _resolve_eps(None, P)
        return self._replace(eps=eps, P=P)

    def with_args(self, args) -> FastSlowSystem:
        """A copy with parameters `args` (same vector fields, so compiled solves are reused)."""
        return self._replace(args=args)

    def vector_field(self, t, z, args=None):
        """dz/dt = [f/ε, g] on the concatenated state z = [x, y], shape (m + d,).

        `args` defaults to `self.args`.  Requires `m` to be known (given at
        construction), since it splits z.

        Raises
        ------
        ValueError
            If `m` is unknown.
        """
        if self.m is None:
            dim = "`n=` (the number of states)" if isinstance(self, MasterEquationSystem) else "`m=`"
            raise ValueError(f"`vector_field` needs the fast dimension: build the system with {dim}.")
        args = self.args if args is None else args
        x, y = z[: self.m], z[self.m:]
        return jnp.concatenate([jnp.asarray(self.f(t, x, y, args)) / self.eps,
                                jnp.asarray(self.g(t, x, y, args))])

    @in_float64
    def check_shapes(self, x0, y0, args=None, t0: float = 0.0) -> tuple[int, int]:
        """Evaluate f and g once at (t0, x0, y0) and check their output shapes.

        Parameters
        ----------
        x0 : array (m,)
        y0 : array (d,)
        args : pytree
            Optional; defaults to `self.args`.

        Returns
        -------
        (m, d)

        Raises
        ------
        ValueError
            If f(x0, y0) does not have the shape of x0 (names `f`), g(x0, y0) not
            the shape of y0 (names `g`), or x0/y0 disagree with a declared m/d.
            An exception raised inside the user's f or g propagates unchanged.
        """
        # abstract inputs: eval_shape traces f and g without running them, and without compiling even a
        # dtype conversion (a fresh process would compile one program per jnp.asarray on a Python float)
        x0 = jax.ShapeDtypeStruct(np.shape(x0), jnp.float64)
        y0 = jax.ShapeDtypeStruct(np.shape(y0), jnp.float64)
        if self.m is not None and x0.shape != (self.m,):
            raise ValueError(f"`x0` must have shape (m,) = ({self.m},) for system {self.name!r}; got {x0.shape}.")
        if self.d is not None and y0.shape != (self.d,):
            raise ValueError(f"`y0` must have shape (d,) = ({self.d},) for system {self.name!r}; got {y0.shape}.")
        if self.slow_names is not None and y0.shape != (len(self.slow_names),):
            raise ValueError(f"`slow_names` must name each component of y: {len(self.slow_names)} names "
                             f"{list(self.slow_names)} for system {self.name!r}, but y0 has shape {y0.shape}.")
        args = self.args if args is None else args
        t0 = jax.ShapeDtypeStruct((), jnp.float64)
        # user exceptions still surface from the trace
        fx = jax.eval_shape(lambda t, x, y: self.f(t, x, y, args), t0, x0, y0)
        gy = jax.eval_shape(lambda t, x, y: self.g(t, x, y, args), t0, x0, y0)
        if getattr(fx, "shape", None) != x0.shape:
            raise ValueError(f"`f` must return an array of the shape of x, {x0.shape}; got {_shape_of(fx)}.")
        if getattr(gy, "shape", None) != y0.shape:
            raise ValueError(f"`g` must return an array of the shape of y, {y0.shape}; got {_shape_of(gy)}.")
        _check_real("f", fx)
        _check_real("g", gy)
        return int(x0.shape[0]), int(y0.shape[0])


def _check_real(name: str, out) -> None:
    """Refuse complex (or non-numeric) output: the solvers would drop the imaginary part silently."""
    dtype = np.dtype(getattr(out, "dtype", np.float64))
    if np.issubdtype(dtype, np.complexfloating):
        raise TypeError(f"`{name}` must return real values; got dtype {dtype} (its imaginary part would be "
                        f"dropped silently). Return the real quantity, e.g. jnp.real(...) if that is what you mean.")
    if not (np.issubdtype(dtype, np.number) or np.issubdtype(dtype, np.bool_)):
        raise TypeError(f"`{name}` must return a real numeric array; got dtype {dtype}.")


def _shape_of(out) -> str:
    shape = getattr(out, "shape", None)
    return str(shape) if shape is not None else f"a {type(out).__name__}"


# One f per generator function: compiled solves are cached on the identity of f, so every
# MasterEquationSystem over the same Q_of_y (e.g. each `get_system("me3")`) must share it.
# Keys hold Q_fn itself (a UserFunction, one per user function), so an id is never reused.
_MASTER_F = LRUCache(256)


def _master_f(Q_fn: UserFunction) -> Callable:
    def found():
        if Q_fn.shorthand:   # Q(y): one custom_jvp for every call
            return _master_no_args(Q_fn)
        return _master_with_args(Q_fn)
    return _MASTER_F.get_or_make(Q_fn, found)


def _master_jvp_rule(Q_y: Callable):
    """The JVP of (x, y) ↦ Q(y)ᵀx for a generator Q_y(y) (module docstring)."""
    def rule(primals, tangents):
        # d(Q(y)ᵀx) = Q(y)ᵀ dx + (∂_y Q · dy)ᵀ x.  Written out so that a Jacobian (a jvp
        # vmapped over m + d basis tangents, as in the implicit solvers) builds Q(y) and
        # ∂_y Q (n, n, d) once, instead of pushing every tangent through the construction
        # of Q(y): 10–20× cheaper for the 20-state ring (docs/bench/batched.md).  Plain JAX
        # in Q_of_y, so derivatives of every order still follow.
        x, y = primals
        x_dot, y_dot = tangents
        Q = Q_y(y)
        dQ = jax.jacfwd(Q_y)(y)                     # (n, n, d)
        ok = _rates_ok(Q)
        return (jnp.where(ok, Q.T @ x, jnp.nan),
                jnp.where(ok, Q.T @ x_dot + jnp.einsum("ijk,k,i->j", dQ, y_dot, x), jnp.nan))
    return rule


def _rates_ok(Q):
    """Every off-diagonal rate ≥ 0 and every row sum 0: checked at every evaluation inside a solve, so a
    rate that turns negative, or a row that stops summing to zero, along the path stops the solve there
    (f becomes NaN) and the diagnosis names t, y and the rule (`sp_ode.systems.diagnosis`), instead of a
    solution that leaves the simplex silently.  The row-sum tolerance is float32 rounding
    (64·n·2⁻²³·Σ_j|Q_ij|), as loose as the door's check of a float32 generator, so only a Q(y) that is
    not a generator at y trips it."""
    n = Q.shape[-1]
    rates = jnp.all(jnp.where(jnp.eye(n, dtype=bool), 0.0, Q) >= 0)
    rows = jnp.abs(Q.sum(axis=-1)) <= 64.0 * n * 2.0 ** -23 * jnp.abs(Q).sum(axis=-1)
    return rates & jnp.all(rows)


def _master_no_args(Q_fn: UserFunction) -> Callable:
    Q_y = lambda y: Q_fn(y, None)

    @jax.custom_jvp
    def master(x, y):
        Q = Q_y(y)
        return jnp.where(_rates_ok(Q), Q.T @ x, jnp.nan)  # master equation: dp/dτ = Qᵀp

    master.defjvp(_master_jvp_rule(Q_y))

    def f(t, x, y, args):
        return master(x, y)
    return f


def _is_data(leaf) -> bool:
    return isinstance(leaf, (jax.Array, np.ndarray, np.generic, float))


def _master_with_args(Q_fn: UserFunction) -> Callable:
    # Q(y, args): the array parameters are inputs of the custom_jvp (a closure over traced
    # parameters is not supported by compiled solves), other leaves (strings, ints used as
    # sizes) are closed over as constants.  Their tangents are zero in every solver (Jacobians
    # are taken in (x, y) only) and are skipped as symbolic zeros; when one is not (a user
    # differentiating through the parameters), its term (∂_a Q · da)ᵀx is added.
    def f(t, x, y, args):
        leaves, tree = jax.tree_util.tree_flatten(args)
        where = [k for k, leaf in enumerate(leaves) if _is_data(leaf)]
        dyn = tuple(jnp.asarray(leaves[k]) for k in where)

        def rebuild(values):
            full = list(leaves)
            for k, v in zip(where, values):
                full[k] = v
            return jax.tree_util.tree_unflatten(tree, full)

        @jax.custom_jvp
        def master(x, y, dyn):
            Q = Q_fn(y, rebuild(dyn))
            return jnp.where(_rates_ok(Q), Q.T @ x, jnp.nan)

        def rule(primals, tangents):
            x, y, dyn = primals
            x_dot, y_dot, dyn_dot = tangents
            a = rebuild(dyn)
            Q_y = lambda yy: Q_fn(yy, a)
            Q = Q_y(y)
            ok = _rates_ok(Q)
            tangent = jnp.zeros_like(Q.T @ x)
            if not _zero(x_dot):
                tangent = tangent + Q.T @ x_dot
            if not _zero(y_dot):
                tangent = tangent + jnp.einsum("ijk,k,i->j", jax.jacfwd(Q_y)(y), y_dot, x)
            if not all(_zero(d) for d in dyn_dot):
                dots = tuple(jnp.zeros_like(v) if _zero(d) else d for v, d in zip(dyn, dyn_dot))
                _, dQ = jax.jvp(lambda values: Q_fn(y, rebuild(values)), (dyn,), (dots,))
                tangent = tangent + dQ.T @ x
            return jnp.where(ok, Q.T @ x, jnp.nan), jnp.where(ok, tangent, jnp.nan)

        master.defjvp(rule, symbolic_zeros=True)
        return master(x, y, dyn)
    return f


def _zero(t) -> bool:
    return isinstance(t, jax.custom_derivatives.SymbolicZero)


def _stationary_phi(Q_fn: Callable) -> Callable:
    """φ(y, args) = p_st(Q(y, args)) as a JAX function (T1), NaN where Q(y) is not an irreducible generator."""
    def phi(y, args=None):
        Q = jnp.asarray(Q_fn(y, args))
        p = stationary_jax(Q)  # φ(y) = p_st(y), T1
        # Checked inside the compiled solve, at every point of a reduced path: Q(y) a
        # generator (off-diagonal ≥ 0, rows summing to 0 within the rounding rule of
        # `check_generator`), and p a distribution (a reducible Q(y) makes the bordered
        # system singular: p non-finite or far from the simplex).  A failed check turns φ
        # into NaN, so the solve stops there and the diagnosis names the cause at that y.
        n = Q.shape[-1]
        off = jnp.where(jnp.eye(n, dtype=bool), 0.0, Q)
        scale = jnp.maximum(jnp.sum(jnp.abs(Q), axis=-1), jnp.finfo(Q.dtype).tiny)
        rows_ok = jnp.all(jnp.abs(jnp.sum(Q, axis=-1)) <= ROW_SUM_C * n * jnp.finfo(Q.dtype).eps * scale)
        p_ok = jnp.all(jnp.isfinite(p)) & jnp.all(p >= -_P_TOL) & (jnp.abs(jnp.sum(p) - 1.0) <= _P_TOL)
        ok = jnp.all(off >= 0) & rows_ok & p_ok
        return jnp.where(ok, p, jnp.nan)
    return phi


# p_st is a distribution: entries below −√u or a mass off by more than √u mean the
# bordered solve met a singular (reducible) Q(y).
_P_TOL = float(np.sqrt(np.finfo(np.float64).eps))

# One φ object per generator family, so repeated reduced solves reuse the compiled solve
# (compiled solves are keyed on the identity of g and φ).
_phi_cache = LRUCache()
_Q_JIT = LRUCache()   # Q_of_y -> its compiled evaluation (door checks, diagnoses)


def _check_labels(arg: str, labels, n: int | None, what: str, example: str, *, text_only: bool = False
                  ) -> tuple[str, ...] | None:
    """n distinct non-empty labels for `arg` (`what` names the n things; numbers are written as text unless
    `text_only`)."""
    if labels is None:
        return None
    if isinstance(labels, (str, bytes)) or not hasattr(labels, "__len__"):
        raise TypeError(f"`{arg}` must be a sequence of labels of the {what}, e.g. {example}; got "
                        f"{type(labels).__name__} {labels!r:.60}.")
    kinds = (str,) if text_only else (str, int, float, np.integer, np.floating, tuple)
    out = []
    for k, s in enumerate(labels):
        if isinstance(s, (bool, np.bool_)) or not isinstance(s, kinds):
            raise TypeError(f"`{arg}[{k}]` must be a label (a string); got {type(s).__name__} {s!r:.40}.")
        text = str(s).strip()
        if not text:
            raise ValueError(f"`{arg}[{k}]` must be a non-empty label; got {s!r}.")
        out.append(text)
    if n is not None and len(out) != n:
        raise ValueError(f"`{arg}` must name each of the {what}; got {len(out)} labels {out!r:.80}.")
    if len(set(out)) != len(out):
        dup = sorted({x for x in out if out.count(x) > 1})
        raise ValueError(f"`{arg}` must be distinct labels; {dup} appear more than once.")
    return tuple(out)


def _check_states(states, n: int | None) -> tuple[str, ...] | None:
    """Labels of the fast states: n distinct non-empty strings (numbers are written as text)."""
    return _check_labels("states", states, n, "n fast states" if n is None else f"n = {n} fast states",
                         "['C', 'O', 'I']")


def _check_slow_names(names, d: int | None) -> tuple[str, ...] | None:
    """Names of the slow variables: d distinct non-empty strings."""
    return _check_labels("slow_names", names, d, "d slow variables" if d is None else f"d = {d} slow variables",
                         "('w',) or ('s', 'w')", text_only=True)


def slow_symbol(names, *, star: bool = False) -> str:
    """How text names the slow state: `y` without names, else `w` (d = 1) or `(s, w)`; `star` adds `*`
    (a point such as y* where hyperbolicity is lost).  `names` is a tuple of names, None, or an object
    with `slow_names` (a system: `FastSlowSystem`, `NetworkSystem`)."""
    if names is not None and not isinstance(names, (tuple, list)):
        names = getattr(names, "slow_names", None)
    base = "y" if not names else names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"
    return base + ("*" if star else "")


def state_label(states, i: int) -> str:
    """The label of state `i`: its name when the system has `states`, else the index."""
    return str(i) if states is None else f"{states[i]}"


class MasterEquationSystem(FastSlowSystem):
    """The linear-generator system ε dx/dt = Q(y)ᵀx, dy/dt = g(t, x, y, args).

    x is a distribution on n states (the simplex Δⁿ⁻¹); since Q(y)1 = 0, 1ᵀx is
    conserved, and the critical manifold is φ(y) = p_st(y) (docs/theory.md §3.1 (T1)).

    Parameters
    ----------
    Q_of_y : callable `Q_of_y(y) -> (n, n)` or `Q_of_y(y, args) -> (n, n)`, or a `GeneratorFamily`
        The generator family, JAX-traceable in y (d,).  With two parameters it receives
        the system's `args` (the same pytree as g), so the rate constants of the chain
        are parameters: varied with `with_args`, swept by `sp_ode.sweep`, batched with
        `simulate(..., batch_args=True)`, all without recompiling.  Computed in float64
        whatever the user's JAX setting (float32 output is cast; `sp_ode.float64`).  For a
        `GeneratorFamily`, n and d are taken from it.
    g : callable `g(t, x, y, args) -> (d,)` (or the shorthand `g(x, y)`)
    eps, P, args, name, slow_names
        As for `FastSlowSystem`.
    n, d : int, optional
        Number of fast states (m = n) and slow dimension.
    states : sequence of n str, optional
        Names of the fast states (e.g. `["C1", "C2", "O", "I"]`), used instead of the
        indices 0 … n−1 in figure legends, tables and messages (negative rates, reducible
        chains, detailed-balance failures).
    simplex : bool
        True (default): x is a probability distribution, and `sp_ode.simulate` refuses an x0
        off the simplex (1ᵀx0 ≠ 1 or a negative entry), naming the fix.  False opts in to
        other x0 (e.g. copy numbers of a linear population: 1ᵀx is still conserved, and x
        approaches (1ᵀx0)·p_st(y), not p_st(y)).

    Raises
    ------
    TypeError, ValueError
        As for `FastSlowSystem`; also if `n`/`d` disagree with a `GeneratorFamily`, `Q_of_y`
        takes other than one or two positional parameters, or `states` are not n distinct labels.
    """

    @in_float64
    def __init__(self, Q_of_y: Callable | GeneratorFamily, g: Callable, *, eps: float | None = None,
                 P: int | None = None, args: PyTree | None = None, n: int | None = None, d: int | None = None,
                 name: str | None = None, states: Sequence[str] | None = None, simplex: bool = True,
                 slow_names: Sequence[str] | None = None) -> None:
        if isinstance(Q_of_y, GeneratorFamily):
            for arg, value, fam_value in (("n", n, Q_of_y.n), ("d", d, Q_of_y.d)):
                if value is not None and value != fam_value:
                    raise ValueError(f"`{arg}` must match family {Q_of_y.name!r} ({arg} = {fam_value}); got {value}.")
            n, d = Q_of_y.n, Q_of_y.d
            name = name if name is not None else f"me_{Q_of_y.name}"
        elif not callable(Q_of_y):
            raise TypeError(f"`Q_of_y` must be callable as Q_of_y(y) -> (n, n) (or Q_of_y(y, args)), or a "
                            f"GeneratorFamily; got {type(Q_of_y).__name__}.")
        Q_fn = as_generator_function("Q_of_y", Q_of_y)
        if not isinstance(simplex, (bool, np.bool_)):
            raise TypeError(f"`simplex` must be True or False; got {type(simplex).__name__} {simplex!r:.40}.")
        n = _optional_dim("n", n)
        labels = _check_states(states, n)
        if n is None and labels is not None:
            n = len(labels)
        super().__init__(_master_f(Q_fn), g, eps=eps, P=P, args=args, m=n, d=d,
                         name=name if name is not None else "master_equation", slow_names=slow_names)
        object.__setattr__(self, "Q_of_y", Q_of_y)
        object.__setattr__(self, "Q_fn", Q_fn)
        object.__setattr__(self, "states", labels)
        object.__setattr__(self, "simplex", bool(simplex))

    @property
    def n(self) -> int | None:
        """Number of fast states (= m)."""
        return self.m

    @property
    def takes_args(self) -> bool:
        """Whether Q_of_y receives the system's `args` (it was written `Q_of_y(y, args)`)."""
        return not self.Q_fn.shorthand

    def state_label(self, i: int) -> str:
        """The name of fast state `i` (`states[i]`, or `str(i)` when the system has no `states`)."""
        return state_label(self.states, i)

    def _checked_y(self, y) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        y = y.reshape(1) if y.ndim == 0 else y
        if y.ndim != 1 or (self.d is not None and y.shape != (self.d,)):
            want = f"(d,) = ({self.d},)" if self.d is not None else "(d,)"
            raise ValueError(f"`y` must have shape {want} for {self.name!r}; got {y.shape}.")
        if not np.all(np.isfinite(y)):
            bad = int(np.flatnonzero(~np.isfinite(y))[0])
            raise ValueError(f"`y` must be finite to evaluate Q(y) of {self.name!r}; got y[{bad}] = {y[bad]} "
                             f"(y = {y.tolist()}).")
        return y

    @in_float64  # a user's jnp Q_of_y called outside sp_ode's scope must not drop to float32
    def Q(self, y, args=None):
        """The generator Q(y) (`Q(y, args)` when Q_of_y takes parameters), shape (n, n), float64.

        `args` defaults to the system's.  A `GeneratorFamily` accepts NumPy or JAX y (and
        answers in that namespace); a plain callable is evaluated compiled (one small
        program per Q_of_y: evaluated op by op, a fresh process would compile every jnp
        operation in it separately, ~20 programs for a 5-state ring).  Under a JAX trace y
        is passed through unchecked.

        Raises
        ------
        ValueError
            y (concrete) is not finite or not of shape (d,) (a NaN y would give a NaN "generator").
        """
        args = self.args if args is None else args
        if isinstance(y, jax.core.Tracer):
            return self.Q_fn(y, args)
        y = self._checked_y(y)
        if isinstance(self.Q_of_y, GeneratorFamily):
            return self.Q_of_y(y)
        q = self.Q_fn
        leaves = jax.tree_util.tree_leaves(args)
        if not all(isinstance(a, (jax.Array, np.ndarray, np.floating, float)) for a in leaves):
            return q(jnp.asarray(y), args)   # static (non-array) parameters: evaluated op by op
        fn = _Q_JIT.get_or_make(q, lambda: jax.jit(lambda v, a: jnp.asarray(q(v, a), jnp.float64),
                                                   compiler_options=SMALL_PROGRAM_OPTIONS))
        return fn(jnp.asarray(y, dtype=jnp.float64), args)

    @in_float64
    def check_shapes(self, x0, y0, args=None, t0: float = 0.0) -> tuple[int, int]:
        """As `FastSlowSystem.check_shapes`, and Q(y0) must be (n, n) (names `Q_of_y`)."""
        a = self.args if args is None else args
        Qs = jax.eval_shape(lambda yy: self.Q_fn(yy, a), jax.ShapeDtypeStruct(np.shape(y0), jnp.float64))
        n = int(np.shape(x0)[0]) if np.ndim(x0) == 1 else None
        if n is not None and getattr(Qs, "shape", None) != (n, n):
            raise ValueError(f"`Q_of_y` must return an (n, n) generator with n = len(x0) = {n}; got {_shape_of(Qs)}.")
        _check_real("Q_of_y", Qs)
        return super().check_shapes(x0, y0, args, t0)

    def stationary_phi(self) -> Callable:
        """The critical manifold φ(y) = p_st(Q(y)) as a JAX function y (d,) -> (n,) (T1).

        One function per `Q_of_y` (cached) when Q takes no parameters, so compiled reduced
        solves keyed on it are reused; for `Q_of_y(y, args)` the system's `args` are bound
        (`stationary_phi_args` takes them as an argument).  Inside a compiled solve it turns
        NaN where Q(y) is not an irreducible generator, which stops the solve there with the
        cause named.
        """
        # jitted: called on one point (an identity check, a catalogue's φ) it is one compiled program,
        # not one per jnp operation; inside a compiled solve it is inlined
        phi = _phi_cache.get_or_make(("p_st, jit", self.Q_fn), lambda: jax.jit(self.stationary_phi_args()))
        if not self.takes_args:
            return _phi_cache.get_or_make(("p_st(y)", self.Q_fn), lambda: lambda y: phi(y, None))
        args = self.args
        if not all(_is_data(leaf) for leaf in jax.tree_util.tree_leaves(args)):
            unjitted = self.stationary_phi_args()
            return lambda y: unjitted(y, args)   # static (non-array) parameters cannot be passed to jit
        return lambda y: phi(y, args)

    def stationary_phi_args(self) -> Callable:
        """φ(y, args) = p_st(Q(y, args)) as a JAX function (cached per Q_of_y; see `stationary_phi`)."""
        return _phi_cache.get_or_make(("p_st", self.Q_fn), lambda: _stationary_phi(self.Q_fn))

    @in_float64
    def check_generator_at(self, y, args=None) -> np.ndarray:
        """Q(y) as float64 after checking it is a generator (off-diagonal ≥ 0, rows sum to 0).

        The door check of a master equation (docs/theory.md §3.1): `sp_ode.simulate` applies
        it at y0; the reduced flow also checks it inside the compiled solve along its path.

        Raises
        ------
        ValueError
            Naming `Q_of_y`, y, and the rule violated (negative rate, row sums), with the
            states by name when the system has `states`.
        """

        y = self._checked_y(y)
        try:
            return check_generator(np.asarray(self.Q(y, args), dtype=np.float64), "Q_of_y(y)", states=self.states)
        except (TypeError, ValueError) as exc:
            with np.printoptions(precision=4, threshold=8):
                raise ValueError(f"`Q_of_y` must return a generator at y = {y}: {exc}") from None
