"""The one place that owns numeric precision (docs/theory.md §9).

sp_ode computes in float64.  JAX's float64 switch (`jax_enable_x64`) is
process-wide: flipping it at import, as sp_ode once did, silently changed the
dtypes of a user's unrelated float32 JAX program.  Instead every JAX
computation of sp_ode runs inside `float64`, a scope that restores the
user's setting on exit, and each public entry point that runs JAX code is
wrapped with `in_float64`.  Nothing in sp_ode touches the global flag.

For user code, the same scope is public as `sp_ode.float64()`.  A user's process
does not enable float64, so every `jnp` array their script makes is float32; sp_ode
copes (each user function's output is cast to float64 inside its scope, and a float32
generator is accepted with its rounding in the error bound, docs/theory.md §7.12), but
numbers computed *in the user's own code* stay float32 unless made inside
`with sp_ode.float64():`.  A JAX callable that sp_ode hands back to the user (e.g.
`SlowManifold.jax_fn()`, `neural.PhiMLP.jax_fn()`) computes in float64 when called
through sp_ode (`simulate_reduced(phi=...)`) or inside that block.  What a user's f or g
closes over in float32 is found in its traced program (`float32_leaves`) and named by a
`Float32Warning` at the first solve: such a constant keeps about 7 digits whatever the tolerance.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from sp_ode.core.errors import SpOdeWarning

F = TypeVar("F", bound=Callable)

UNIT_ROUNDOFF = 2.0 ** -53
"""u: the relative rounding error of one float64 operation (half the machine epsilon); every error
allowance of sp_ode (GTH's 8n³u, the bounds of `sp_ode.markov.bounds`, the attractor's ρ) is in these units."""


def float64() -> AbstractContextManager:
    """A context manager in which JAX creates and computes float64 arrays; the user's setting is restored on exit.

    Public as `sp_ode.float64()`: build models, constants and generators inside it so that
    they are float64 from the start, without flipping JAX's process-wide `jax_enable_x64`:

        with sp_ode.float64():
            w = jnp.arange(n) / (n - 1.0)        # float64, not float32
            Q = my_generator(jnp.array([0.3]))   # a float64 Q
            p = phi_fn(y)                        # a JAX function from sp_ode, evaluated in float64

    Arrays made inside stay float64 after the block; operations on them outside it run in
    the user's setting again (float32 by default).
    """
    import jax

    return jax.enable_x64(True)


def in_float64(fn: F) -> F:
    """Decorator: run `fn` inside `float64`."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with float64():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def float64_callable(fn: F) -> F:
    """`fn` that computes in float64 when called eagerly, and stays transparent under a trace.

    For JAX functions that sp_ode hands to users (closed forms of the catalogue,
    `SlowManifold.jax_fn()`): called directly they give float64 results whatever
    the user's global setting; inside `jit`/`vmap`/`grad` the enclosing trace
    decides, as for any JAX function.
    """
    import jax

    def traced(args, kwargs) -> bool:
        leaves = jax.tree_util.tree_leaves((args, kwargs))
        return any(isinstance(leaf, jax.core.Tracer) for leaf in leaves)

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if traced(args, kwargs):
            return fn(*args, **kwargs)
        with float64():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


class Float32Warning(SpOdeWarning):
    """A user's function closes over float32 values, which limit a float64 solve to about 7 digits."""


_ROUNDED_BITS = 18   # a float32 rounding has 24 significant bits less its chance trailing zeros


def _float32_looking(value) -> bool:
    """A float64 literal that is exactly a float32 with a short float32 repr but a long float64 one,
    and whose binary significand is long (at least `_ROUNDED_BITS` bits).

    That is how `np.float32(0.2)` reaches a trace: as 0.20000000298023224, which no one types.  Rounding
    a decimal that has no short binary expansion fills float32's 24-bit significand (its trailing
    zeros are chance: 7 or more in 1 of 128 cases); a short dyadic such as 3·2⁻¹⁷ = 2.288818359375e-05 (the
    master-equation row-sum tolerance 64·n·2⁻²³ at n = 3, `sp_ode.systems.system`) is exact in float64 and
    in float32 alike: without this rule me3 and me50 warned at their first solve.
    """
    import math

    import numpy as np

    try:
        v = float(value)
    except (TypeError, ValueError):
        return False
    if not np.isfinite(v) or v == 0.0 or float(np.float32(v)) != v:
        return False
    significand = int(math.frexp(abs(v))[0] * 2**53)
    bits = significand.bit_length() - (significand & -significand).bit_length() + 1
    return bits >= _ROUNDED_BITS and len(repr(np.float32(v)).strip("np.float32()")) + 4 < len(repr(v))



def float32_leaves(fn: Callable, *example) -> list[str]:
    """The float32 values `fn` closes over, one phrase each (empty when there are none).

    `fn` is traced once (`jax.make_jaxpr`, inside `float64`) on `example` (arrays or
    `jax.ShapeDtypeStruct`s); its program lists what it closes over: float32 (or smaller)
    constants — a `jnp.array(0.1)` made at module level in a process without float64 —, and
    float64 literals that are float32 roundings (`np.float32(0.2)` shows as 0.20000000298023224).
    Each keeps about 7 significant digits (relative rounding 2^-24 ≈ 6e-8), whatever the solver's
    tolerance. Sub-programs (jit, cond, scan) are searched too.
    """
    import jax
    import numpy as np

    with float64():
        closed = jax.make_jaxpr(fn)(*example)
    found: list[str] = []

    def const(c) -> None:
        dtype = getattr(c, "dtype", None)
        if dtype is not None and np.issubdtype(dtype, np.floating) and np.dtype(dtype).itemsize < 8:
            arr = np.asarray(c)
            shown = f"{arr.item():.7g}" if arr.size == 1 else f"shape {arr.shape}"
            found.append(f"a {np.dtype(dtype).name} constant ({shown})")

    def walk(jaxpr, consts) -> None:
        for c in consts:
            const(c)
        for eqn in jaxpr.eqns:
            for v in eqn.invars:
                if type(v).__name__ == "Literal" and _float32_looking(getattr(v, "val", None)):
                    found.append(f"the float32-rounded literal {float(v.val)!r} (float32 {np.float32(v.val)!r})")
            for p in eqn.params.values():
                for sub in (p if isinstance(p, (tuple, list)) else (p,)):
                    if hasattr(sub, "jaxpr") and hasattr(sub, "consts"):   # a ClosedJaxpr
                        walk(sub.jaxpr, sub.consts)
                    elif hasattr(sub, "eqns"):                              # a Jaxpr
                        walk(sub, ())

    walk(closed.jaxpr, closed.consts)
    return list(dict.fromkeys(found))
