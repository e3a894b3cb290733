"""Files for the command-line jobs: JSON records, atomic writes, loading a user's `file.py:OBJECT`."""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np


def _to_jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _to_jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return str(obj)  # JSON has no inf/nan; keep the value readable
    if isinstance(obj, Path):
        return str(obj)
    return obj


def dumps(obj: Any, **kw) -> str:
    """JSON text of `obj`, with numpy scalars/arrays converted."""
    return json.dumps(_to_jsonable(obj), **kw)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write `data` to `path` atomically: a temp file in the same folder, fsync, then rename.

    A reader (or a resumed job) never sees a half-written file.  The file gets the
    permissions of an ordinary `open(path, "w")` (0o666 less the umask), not the
    0o600 that `tempfile.mkstemp` gives its temp file.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    """The process umask (read by setting it and restoring it at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Atomically write `obj` as indented JSON."""
    return atomic_write_bytes(path, (dumps(obj, indent=2) + "\n").encode())


def load_object(spec: str, *, name: str = "spec") -> Any:
    """Load `path/to/file.py:OBJECT` (a user's system or Q(y) function).

    Raises
    ------
    ValueError
        If `spec` has no `:OBJECT` part, the file does not exist, is not valid Python or raises
        while it is imported (chained to the user's exception), or the object is missing.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ValueError(f"`{name}` must look like 'path/to/file.py:OBJECT'; got {spec!r}.")
    file, _, attr = spec.rpartition(":")
    path = Path(file)
    if not path.is_file():
        raise ValueError(f"`{name}`: file {file!r} does not exist.")
    module_name = f"_sp_ode_user_{abs(hash(str(path.resolve())))}"
    mod_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(mod_spec)
    sys.modules[module_name] = module
    try:
        mod_spec.loader.exec_module(module)
    except SyntaxError as exc:  # the user's file: name it, the line and the rule (traceback with --debug)
        sys.modules.pop(module_name, None)
        raise ValueError(f"`{name}`: {file!r} line {exc.lineno}: not valid Python ({exc.msg}).") from exc
    except Exception as exc:
        sys.modules.pop(module_name, None)
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise ValueError(f"`{name}`: importing {file!r} raised {type(exc).__name__}: {first} "
                         "(--debug shows where).") from exc
    if not hasattr(module, attr):
        raise ValueError(f"`{name}`: {file!r} has no object named {attr!r}.")
    return getattr(module, attr)
