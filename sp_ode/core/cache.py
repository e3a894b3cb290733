"""A bounded least-recently-used cache for compiled functions.

JAX compiles a solve once per (function identity, shapes); sp_ode keeps the
compiled objects so repeated calls skip seconds of compilation.  Every such
cache is an :class:`LRUCache` with a stated size, so a long session that builds
many systems holds at most ``maxsize`` compiled objects per cache.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
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
        """``self[key]``, made by ``make()`` on a miss."""
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
