"""The fingerprint of a sweep: everything that determines its answer, so a changed model never resumes.

A resumed sweep (`out=` holding finished chunks) reuses them only when this digest matches.  It
covers the inputs (names and values of the swept parameters, t_span, ts, x0, y0, tol, options)
and the **model**: the system's type, name, dimensions, ε, its `args` (values, not just names),
and the code of f, g and Q(y) — their bytecode and constants, and the values of the globals and
closure cells they read (arrays by their bytes, functions recursively), so a model file whose
function or module-level constant changed is a different sweep.  For a network system: its
reactions, parameters, slow ODEs and the states of its projection.

**In parts, so a refusal says what changed.**  The fingerprint is the digest of named components
(`sweep_parts`): `model` (the code of f, g and Q(y) and what they read; a network's reactions and
states), `args` (the system's parameter values), `helper:NAME` (the source of each of *your* modules
the model's files import, by module name — found from their import statements, followed from module
to module; a constant read as `helper.RATE` is not in f's globals, so only the source sees it),
`points` (the swept names and values), `times` (t_span, ts), `starts` (x0, y0) and `options` (tol and
the sweep's options).  The manifest keeps them, and a refused resume names the parts that differ
(`describe_changes`).  "Your" module: one with a source file outside the Python installation, its
site-packages and sp_ode.
"""
from __future__ import annotations

import ast
import hashlib
import sys
import sysconfig
import types
from pathlib import Path
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


def model_digest(system, *, with_args: bool = True) -> str:
    """Hex digest of the model: type, name, dimensions, ε, args (unless `with_args` is False: they are a part
    of their own in `sweep_parts`) and the code of f, g, Q(y) (module docstring)."""
    h = hashlib.sha256()
    seen: dict = {}
    h.update(f"{type(system).__module__}.{type(system).__qualname__}:{getattr(system, 'name', '')};".encode())
    if isinstance(system, NetworkSystem):
        net = system.network
        _feed(h, [str(r) for r in getattr(net, "reactions", ())], seen, 0)
        if with_args:
            _feed(h, dict(net.parameters), seen, 0)
        _feed(h, list(net.slow), seen, 0)
        _feed(h, list(net.species), seen, 0)
        _feed(h, dict(system.slow_odes), seen, 0)
        _feed(h, np.asarray(system.space.states), seen, 0)
        _feed(h, float(system.eps), seen, 0)
        return h.hexdigest()
    for attr in ("m", "d", "eps", "args") if with_args else ("m", "d", "eps"):
        _feed(h, getattr(system, attr, None), seen, 0)
    for attr in ("f", "g", "Q_of_y"):
        fn = getattr(system, attr, None)
        h.update(f"[{attr}]".encode())
        if fn is not None:
            _feed(h, fn, seen, 0)
    return h.hexdigest()


def _array_digest(*arrays) -> str:
    h = hashlib.sha256()
    for arr in arrays:
        h.update(b"|")
        if arr is not None:
            arr = np.ascontiguousarray(arr)
            h.update(f"{arr.dtype}:{arr.shape};".encode())
            h.update(arr.tobytes())
    return h.hexdigest()


def _installed_roots() -> list[Path]:
    import sp_ode

    paths = sysconfig.get_paths()
    roots = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    roots |= {sys.prefix, sys.base_prefix, str(Path(sp_ode.__file__).parent)}
    return [Path(r).resolve() for r in roots]


def _own_source(module, roots) -> Path | None:
    """The source file of one of the user's modules (module docstring), or None."""
    file = getattr(module, "__file__", None)
    if not file or not str(file).endswith(".py"):
        return None
    try:
        path = Path(file).resolve()
    except OSError:
        return None
    if any(path.is_relative_to(root) for root in roots) or not path.is_file():
        return None
    return path


def _imported_names(module, path: Path) -> list[str]:
    """The modules `module`'s source imports (absolute names; `from a import b` gives a and a.b)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return []
    names = []
    package = getattr(module, "__package__", None) or ""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[:len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join([*parts, base] if base else parts)
            if base:
                names.append(base)
                names += [f"{base}.{a.name}" for a in node.names]
    return names


def _model_modules(system) -> list:
    """The modules that define f, g and Q(y) (through partials and wrappers)."""
    found = []
    for attr in ("f", "g", "Q_of_y"):
        fn = getattr(system, attr, None)
        for _ in range(4):
            inner = next((getattr(fn, a) for a in ("fn", "func", "__wrapped__", "fun") if getattr(fn, a, None)
                          is not None), None)
            if inner is None or inner is fn:
                break
            fn = inner
        name = getattr(fn, "__module__", None)
        if name is None and fn is not None:
            name = type(fn).__module__
        module = sys.modules.get(name) if isinstance(name, str) else None
        if module is not None and module not in found:
            found.append(module)
    return found


def helper_sources(system, limit: int = 64) -> dict[str, str]:
    """{module name: digest of its source} for the user's modules imported by the model's files (module docstring),
    the model's own files excluded (their code is the `model` part)."""
    roots = _installed_roots()
    own = [m for m in _model_modules(system) if _own_source(m, roots) is not None]
    seen = {m.__name__ for m in own}
    queue, helpers = list(own), {}
    while queue and len(helpers) < limit:
        module = queue.pop(0)
        for name in _imported_names(module, _own_source(module, roots)):
            dep = sys.modules.get(name)
            if dep is None or name in seen:
                continue
            seen.add(name)
            path = _own_source(dep, roots)
            if path is None:
                continue
            helpers[name] = hashlib.sha256(path.read_bytes()).hexdigest()
            queue.append(dep)
    return dict(sorted(helpers.items()))


def sweep_parts(fmt: int, system, values: dict, t_span: tuple, ts, x0, y0, options: dict) -> dict:
    """The named components of a sweep's fingerprint (module docstring), each a hex digest."""
    args = dict(system.network.parameters) if isinstance(system, NetworkSystem) else system.args
    h = hashlib.sha256()
    _feed(h, args, {}, 0)
    points = hashlib.sha256()
    for name in sorted(values):
        points.update(name.encode())
        points.update(_array_digest(values[name]).encode())
    parts = {"format": str(fmt), "model": model_digest(system, with_args=False), "args": h.hexdigest(),
             "points": points.hexdigest(), "times": _array_digest(np.asarray(t_span, dtype=np.float64), ts),
             "starts": _array_digest(x0, y0), "options": hashlib.sha256(repr(sorted(options.items())).encode()).hexdigest()}
    parts.update({f"helper:{name}": digest for name, digest in helper_sources(system).items()})
    return parts


def fingerprint_of(parts: dict) -> str:
    """The one digest of `sweep_parts` (the resume identity)."""
    return hashlib.sha256(repr(sorted(parts.items())).encode()).hexdigest()


_WORDS = {"format": "the folder's format (it was made by another sp-ode version)",
          "model": "the model (the code of f, g or Q(y), or a value they read)", "args": "the system's `args`",
          "points": "the swept points (the names or values of `params`/grid)", "times": "t_span or ts",
          "starts": "x0 or y0"}


def describe_changes(old: dict, new: dict, old_options: dict, new_options: dict) -> str:
    """In words, which parts of the fingerprint differ between the earlier run (`old`) and this one."""
    changed = []
    for key in sorted(set(old) | set(new), key=lambda k: (k.startswith("helper:"), k)):
        if old.get(key) == new.get(key):
            continue
        if key.startswith("helper:"):
            name = key.split(":", 1)[1]
            verb = "is new" if key not in old else "is no longer imported" if key not in new else "changed"
            changed.append(f"the helper module {name!r} {verb}")
        elif key == "options":
            diff = [f"{k} {old_options.get(k)!r} → {new_options.get(k)!r}" for k in sorted(set(old_options) |
                    set(new_options)) if old_options.get(k) != new_options.get(k)]
            changed.append("the options" + (f" ({', '.join(diff)})" if diff else ""))
        else:
            changed.append(_WORDS.get(key, key))
    return "; ".join(changed)
