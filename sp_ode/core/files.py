"""Files for the command-line jobs: JSON records, atomic writes, loading a user's `file.py:OBJECT`."""
from __future__ import annotations

import hashlib
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


# Modules loaded from users' model files (`load_object`) and the sibling modules those files imported
# from their own folder: name -> folder.  Nothing can import them by name in another process, so a
# pickle that must travel (a Dask sweep) carries them by value (sp_ode.sweeps._dask).
_USER_MODULES: dict[str, str] = {}


def user_modules() -> list[str]:
    """Names of the modules loaded by `load_object` (and their siblings) that are still imported."""
    return [name for name in _USER_MODULES if name in sys.modules]


def _inside(path: str | None, folder: Path) -> bool:
    if not path:
        return False
    try:
        return Path(path).resolve().is_relative_to(folder)
    except (OSError, ValueError):
        return False


def load_object(spec: str, *, name: str = "spec") -> Any:
    """Load `path/to/file.py:OBJECT` (a user's system or Q(y) function).

    The file's own folder is put on `sys.path` (first, once) so that the file can import a sibling
    module, as it would when run as a script.  The file and the siblings it imports are recorded
    (`user_modules`): a Dask sweep ships them to its workers by value.

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
    folder = path.resolve().parent
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    module_name = f"_sp_ode_user_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
    mod_spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(mod_spec)
    before = set(sys.modules)
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
    _USER_MODULES[module_name] = str(folder)
    for new in set(sys.modules) - before:
        if _inside(getattr(sys.modules[new], "__file__", None), folder):
            _USER_MODULES[new] = str(folder)
    if not hasattr(module, attr):
        raise ValueError(f"`{name}`: {file!r} has no object named {attr!r}.")
    return getattr(module, attr)
