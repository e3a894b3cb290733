"""Private machinery behind `sp_ode.manifolds.critical_manifold` and `sp_ode.slow_manifold`.

Newton's method for f(x, y) = 0 — for a master equation with the last equation
replaced by 1ᵀx = 1 (T1's bordered system) — compiled once per fast field and
shared by every system over that field; the fold system {F = 0, det D_x F = 0};
and the checks that turn user input into (N, d) arrays of points.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from sp_ode.core.validation import check_finite_array
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

_MAXITER = 50
# Newton stops once a step is below _STEP_TOL·(1 + ‖x‖∞) and calls the root
# converged when the last step is below _CONVERGED_TOL·(1 + ‖x‖∞): near a fold
# Newton converges only linearly, so the stopping test is never met exactly there.
_STEP_TOL = 1e-14
_CONVERGED_TOL = 1e-9


# --- system access ----------------------------------------------------------------

def require_system(system, name: str = "system"):

    if not isinstance(system, FastSlowSystem):
        raise TypeError(f"`{name}` must be an sp_ode.FastSlowSystem (or MasterEquationSystem); "
                        f"got {type(system).__name__}.")
    return system


def is_master(system) -> bool:

    return isinstance(system, MasterEquationSystem)


def fast_key(system):
    """What identifies the fast field: Q_of_y for a master equation (each MasterEquationSystem
    wraps it in a new closure), f otherwise.  Keys every compiled-kernel cache here."""
    return system.Q_of_y if is_master(system) else system.f


def system_kernels(system):
    return kernels(fast_key(system), is_master(system))


@functools.lru_cache(maxsize=64)
def kernels(fast, master: bool):
    """Compiled root-finding pieces for one fast field (cached per `fast_key`).

    `args` is passed as data, so copies of a system (`with_eps`, `with_P`) and
    re-created systems over the same f or Q(y) share the compiled code.
    """
    if master:
        def f(t, x, y, args):
            return jnp.asarray(fast(y)).T @ x  # f = Q(y)ᵀx, as MasterEquationSystem
    else:
        f = fast

    def F(x, y, args):
        r = f(0.0, x, y, args)
        if master:  # drop the redundant equation, impose 1ᵀx = 1 (T1's bordered system)
            r = r.at[-1].set(jnp.sum(x) - 1.0)
        return r

    DF = jax.jacfwd(F)

    def newton(x0, y, args):
        def step(state):
            x, _, k = state
            dx = jnp.linalg.solve(DF(x, y, args), F(x, y, args))
            return x - dx, jnp.max(jnp.abs(dx)), k + 1

        def keep_going(state):
            x, size, k = state
            scale = 1.0 + jnp.max(jnp.abs(x))
            return (k < _MAXITER) & (size > _STEP_TOL * scale) & jnp.isfinite(size)

        x, size, k = jax.lax.while_loop(keep_going, step, (x0, jnp.asarray(np.finfo(np.float64).max), 0))
        ok = jnp.isfinite(size) & jnp.all(jnp.isfinite(x)) & (size <= _CONVERGED_TOL * (1.0 + jnp.max(jnp.abs(x))))
        return x, ok, k

    def jac_f(x, y, args):
        return jax.jacfwd(lambda xx: f(0.0, xx, y, args))(x)

    def fold_residual(z, y0, direction, args):
        # unknowns z = (x, s) with y = y0 + s·direction; equations F = 0 and det D_x F = 0
        x, s = z[:-1], z[-1]
        y = y0 + s * direction
        return jnp.concatenate([F(x, y, args), jnp.linalg.det(DF(x, y, args))[None]])

    def fold_newton(z0, y0, direction, args):
        J = jax.jacfwd(fold_residual)

        def step(state):
            z, _, k = state
            dz = jnp.linalg.solve(J(z, y0, direction, args), fold_residual(z, y0, direction, args))
            return z - dz, jnp.max(jnp.abs(dz)), k + 1

        def keep_going(state):
            z, size, k = state
            return (k < _MAXITER) & (size > _STEP_TOL * (1.0 + jnp.max(jnp.abs(z)))) & jnp.isfinite(size)

        z, size, k = jax.lax.while_loop(keep_going, step, (z0, jnp.asarray(np.finfo(np.float64).max), 0))
        ok = jnp.isfinite(size) & (size <= _CONVERGED_TOL * (1.0 + jnp.max(jnp.abs(z))))
        return z, ok

    def det_F(x, y, args):
        return jnp.linalg.det(DF(x, y, args))

    return {
        "f": f,
        "F": jax.jit(F),
        "det_F": jax.jit(det_F),
        "newton": jax.jit(newton),
        "newton_batch": jax.jit(jax.vmap(newton, in_axes=(0, 0, None))),
        "jac_f": jax.jit(jac_f),
        "fold_newton": jax.jit(fold_newton),
    }


_CHUNK = 64


def map_chunks(fn, batched: tuple, *const):
    """fn(*batched_chunk, *const) over the leading axis in fixed chunks of 64 rows.

    Every call sees the same shapes (the last chunk is padded by repeating its
    last row), so a jitted `fn` compiles once whatever the number of points.
    Zero rows give zero rows: each output leaf has shape (0, ...) and the dtype
    `fn` would return (as NumPy does for an empty batch); `fn` is not called.
    """
    N = batched[0].shape[0]
    if N == 0:
        # No row to pad a chunk with: read the output structure off an abstract chunk of
        # the right shapes (`jax.eval_shape` traces fn, runs nothing) and return it empty.
        chunk = [jax.ShapeDtypeStruct((_CHUNK,) + np.shape(b)[1:], np.asarray(b).dtype) for b in batched]
        spec = jax.eval_shape(fn, *chunk, *const)
        return jax.tree_util.tree_map(lambda s: np.zeros((0,) + tuple(s.shape[1:]), dtype=s.dtype), spec)
    outs = []
    for start in range(0, N, _CHUNK):
        parts = [np.asarray(b[start:start + _CHUNK]) for b in batched]
        short = _CHUNK - parts[0].shape[0]
        if short:
            parts = [np.concatenate([p, np.repeat(p[-1:], short, axis=0)]) for p in parts]
        out = fn(*(jnp.asarray(p) for p in parts), *const)
        outs.append(jax.tree_util.tree_map(lambda o: np.asarray(o)[: _CHUNK - short], out))
    return jax.tree_util.tree_map(lambda *o: np.concatenate(o), *outs)


def slow_dim(system, y_arr: np.ndarray) -> int:
    if system.d is not None:
        return system.d
    return 1 if y_arr.ndim == 0 else int(y_arr.shape[-1])


def as_points(system, y, name: str = "y") -> tuple[np.ndarray, bool]:
    """y → (N, d) float64 and whether the input was a batch.

    Accepted: a scalar (d = 1), shape (d,), shape (N, d), and for d = 1 shape (N,).
    """
    arr = check_finite_array(name, y)
    d = slow_dim(system, arr)
    if arr.ndim == 0:
        if d != 1:
            raise ValueError(f"`{name}` must have shape (d,) or (N, d) with d = {d}; got a scalar.")
        return arr.reshape(1, 1), False
    if arr.ndim == 1:
        if arr.shape[0] == d:
            return arr.reshape(1, d), False
        if d == 1:
            return arr.reshape(-1, 1), True
    if arr.ndim == 2 and arr.shape[1] == d:
        return arr, True
    raise ValueError(f"`{name}` must have shape (d,) or (N, d) with d = {d}; got {arr.shape}.")


def fast_dim(system, x_guess) -> int:
    if system.m is not None:
        return system.m
    if x_guess is not None:
        return int(np.size(x_guess)) if np.ndim(x_guess) <= 1 else int(np.shape(x_guess)[-1])
    if is_master(system):
        raise ValueError("the number of states n is unknown: build the MasterEquationSystem with `n=` "
                         "(or from a GeneratorFamily), or pass `x_guess`.")
    raise ValueError("the fast dimension m is unknown: build the system with `m=` or pass `x_guess`.")


def default_guess(system, m: int) -> np.ndarray:
    # the uniform distribution for a generator; ones otherwise (x = 0 is often a
    # singular point of D_x f, e.g. at a fold of x² = y)
    return np.full(m, 1.0 / m) if is_master(system) else np.ones(m)


def guesses(system, x_guess, m: int, N: int) -> np.ndarray:
    if x_guess is None:
        return np.broadcast_to(default_guess(system, m), (N, m)).copy()
    xg = check_finite_array("x_guess", x_guess)
    if xg.shape == (m,):
        return np.broadcast_to(xg, (N, m)).copy()
    if xg.shape == (N, m):
        return xg
    raise ValueError(f"`x_guess` must have shape (m,) = ({m},) or (N, m) = ({N}, {m}); got {xg.shape}.")
