"""Caches of compiled programs: in memory for one process, on disk across processes when asked.

JAX compiles a solve once per (function identity, shapes); sp_ode keeps the
compiled objects so repeated calls skip seconds of compilation.  Every such
cache is an `LRUCache` with a stated size, so a long session that builds
many systems holds at most `maxsize` compiled objects per cache.
`use_compilation_cache` keeps them on disk too (JAX's persistent compilation cache), so
a second process solving the same model starts without compiling it.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

DEFAULT_SIZE = 64


class LRUCache:
    """Mapping of at most `maxsize` entries; the least recently used entry is dropped first."""

    def __init__(self, maxsize: int = DEFAULT_SIZE):
        if maxsize < 1:
            raise ValueError(f"`maxsize` must be >= 1; got {maxsize}.")
        self.maxsize = maxsize
        self._data: OrderedDict[Hashable, Any] = OrderedDict()

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """`self[key]`, made by `make()` on a miss."""
        try:
            value = self._data[key]
        except KeyError:
            value = self._data[key] = make()
            if len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        else:
            self._data.move_to_end(key)
        return value

    def get(self, key: Hashable, default=None):
        if key in self._data:
            self._data.move_to_end(key)
            return self._data[key]
        return default

    def __setitem__(self, key: Hashable, value: Any) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        if len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        self._data.clear()


def default_compilation_cache_dir() -> Path:
    """`$SP_ODE_CACHE_DIR`, else `$XDG_CACHE_HOME/sp_ode/jax`, else `~/.cache/sp_ode/jax`."""
    if os.environ.get("SP_ODE_CACHE_DIR"):
        return Path(os.environ["SP_ODE_CACHE_DIR"]).expanduser()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return base / "sp_ode" / "jax"


def use_compilation_cache(path: str | os.PathLike | None = None) -> Path:
    """Keep compiled JAX programs on disk in `path`, so that a second process solving the same model
    does not compile it again (default: `default_compilation_cache_dir`).

    This turns on JAX's persistent compilation cache, a **process-wide** JAX setting: sp_ode never
    does so unasked (the `sp-ode` command line does it in its own process).  Every program is kept,
    however fast it compiled (JAX's own threshold of 1 s would skip the small programs that make up
    a first answer).  A new model is a new program: nothing stale is ever reused (the key is the
    compiled program itself, with the JAX version and the device).

    Returns
    -------
    Path
        the folder used.
    """
    import jax

    folder = Path(path).expanduser() if path is not None else default_compilation_cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(folder))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return folder
