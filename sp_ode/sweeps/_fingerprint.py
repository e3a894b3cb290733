"""The fingerprint of a sweep: everything that determines its answer, so a changed model never resumes.

A resumed sweep (`out=` holding finished chunks) reuses them only when this digest matches.  It
covers the inputs (names and values of the swept parameters, t_span, ts, x0, y0, tol, options)
and the **model**: the system's type, name, dimensions, ε, its `args` (values, not just names),
and the code of f, g and Q(y) — their bytecode and constants, and the values of the globals and
closure cells they read (arrays by their bytes, functions recursively), so a model file whose
function or module-level constant changed is a different sweep.  For a network system: its
reactions, parameters, slow ODEs and the states of its projection.
"""
from __future__ import annotations

import hashlib
import types
from typing import Any

import numpy as np

from sp_ode.systems.network import NetworkSystem

_MAX_DEPTH = 8


def _feed(h, obj: Any, seen: dict, depth: int) -> None:
    """Feed a stable description of `obj` into the hash `h`.

    `seen` maps id → object and keeps each object alive until the digest is done: with ids alone, a
    temporary (the filtered `__dict__` of a wrapper) freed mid-digest could lend its id to a later
    object, which was then fed as an already-seen reference, so the same model hashed differently
    from run to run and a sweep refused its own chunks."""
    if obj is None or isinstance(obj, (bool, int, float, complex, str, bytes)):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
        return
    if isinstance(obj, np.generic):
        h.update(f"np:{obj.dtype}:{obj!r};".encode())
        return
    if hasattr(obj, "__array__") and hasattr(obj, "shape") and hasattr(obj, "dtype"):
        arr = np.ascontiguousarray(np.asarray(obj))
        h.update(f"array:{arr.dtype}:{arr.shape};".encode())
        if arr.dtype != object:
            h.update(arr.tobytes())
        return
    if isinstance(obj, types.ModuleType):
        h.update(f"module:{obj.__name__};".encode())
        return
    if depth > _MAX_DEPTH or id(obj) in seen:
        h.update(f"ref:{type(obj).__qualname__};".encode())
        return
    seen[id(obj)] = obj
    if isinstance(obj, (list, tuple)):
        h.update(f"{type(obj).__name__}[{len(obj)}];".encode())
        for v in obj:
            _feed(h, v, seen, depth + 1)
        return
    if isinstance(obj, dict):
        h.update(f"dict[{len(obj)}];".encode())
        for k in sorted(obj, key=repr):
            _feed(h, k, seen, depth + 1)
            _feed(h, obj[k], seen, depth + 1)
        return
    if isinstance(obj, types.CodeType):
        h.update(obj.co_code)
        h.update(repr(obj.co_names).encode())
        for c in obj.co_consts:
            _feed(h, c, seen, depth + 1)
        return
    if isinstance(obj, types.FunctionType):
        h.update(f"function:{obj.__module__}.{obj.__qualname__};".encode())
        _feed(h, obj.__code__, seen, depth + 1)
        _feed(h, obj.__defaults__, seen, depth + 1)
        for name in _global_names(obj.__code__):
            if name in obj.__globals__:
                h.update(f"global:{name};".encode())
                _feed(h, obj.__globals__[name], seen, depth + 1)
        for cell in obj.__closure__ or ():
            try:
                _feed(h, cell.cell_contents, seen, depth + 1)
            except ValueError:         # an empty cell
                h.update(b"empty-cell;")
        return
    if isinstance(obj, types.MethodType):
        _feed(h, obj.__func__, seen, depth + 1)
        _feed(h, obj.__self__, seen, depth + 1)
        return
    if isinstance(obj, (types.BuiltinFunctionType, type)):
        h.update(f"{type(obj).__name__}:{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', obj)};".encode())
        return
    # wrappers (functools.partial, jax.jit, custom_jvp/vjp) and callable objects: what they wrap and hold
    h.update(f"object:{type(obj).__module__}.{type(obj).__qualname__};".encode())
    for attr in ("func", "args", "keywords", "__wrapped__", "fun", "jvp"):
        if hasattr(obj, attr):
            _feed(h, getattr(obj, attr), seen, depth + 1)
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        _feed(h, {k: v for k, v in state.items() if not k.startswith("__")}, seen, depth + 1)


def _global_names(code: types.CodeType) -> list[str]:
    """Names a code object (and the code objects nested in it) may read as globals."""
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names.extend(_global_names(c))
    return sorted(set(names))


def model_digest(system) -> str:
    """Hex digest of the model: type, name, dimensions, ε, args and the code of f, g, Q(y) (module docstring)."""
    h = hashlib.sha256()
    seen: dict = {}
    h.update(f"{type(system).__module__}.{type(system).__qualname__}:{getattr(system, 'name', '')};".encode())
    if isinstance(system, NetworkSystem):
        net = system.network
        _feed(h, [str(r) for r in getattr(net, "reactions", ())], seen, 0)
        _feed(h, dict(net.parameters), seen, 0)
        _feed(h, list(net.slow), seen, 0)
        _feed(h, list(net.species), seen, 0)
        _feed(h, dict(system.slow_odes), seen, 0)
        _feed(h, np.asarray(system.space.states), seen, 0)
        _feed(h, float(system.eps), seen, 0)
        return h.hexdigest()
    for attr in ("m", "d", "eps", "args"):
        _feed(h, getattr(system, attr, None), seen, 0)
    for attr in ("f", "g", "Q_of_y"):
        fn = getattr(system, attr, None)
        h.update(f"[{attr}]".encode())
        if fn is not None:
            _feed(h, fn, seen, 0)
    return h.hexdigest()


def sweep_digest(fmt: int, system, values: dict, arrays: tuple, scalars: tuple) -> str:
    """The fingerprint of one sweep: the model, the swept values, the arrays (ts, x0, y0) and the options."""
    h = hashlib.sha256()
    h.update(repr((fmt, scalars)).encode())
    h.update(model_digest(system).encode())
    for name in sorted(values):
        h.update(name.encode())
        h.update(np.ascontiguousarray(values[name]).tobytes())
    for arr in arrays:
        h.update(b"|")
        if arr is not None:
            h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()
