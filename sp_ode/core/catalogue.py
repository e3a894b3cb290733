"""Catalogues of reference objects: one container type and one lookup for all of them.

sp_ode ships named reference problems with closed forms or published values: fast–slow
systems (`sp_ode.SYSTEMS`), generator families (`sp_ode.FAMILIES`), reaction-network models
(`sp_ode.NETWORK_MODELS`) and the stiff Test Set (`sp_ode.systems.stiff_testset.STIFF_PROBLEMS`).
Each is a `Catalogue`: a read-only mapping name → entry (an object, or a builder that makes
one from keyword overrides), with one checked lookup, `Catalogue.lookup`, whose errors name the
catalogue, list the valid names (with a close match for a typo) and the overrides a builder
takes.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from sp_ode.core.validation import hint

__all__ = ["Catalogue"]

T = TypeVar("T")


class Catalogue(Mapping, Generic[T]):
    """A named collection of reference entries with one lookup.

    Parameters
    ----------
    kind : str
        What an entry is, for messages ("system", "generator family", …).
    entries
        Mapping name -> entry.
    builders : bool
        True when each entry is a builder `entry(**overrides) -> object`
        (`get` calls it); False when the entries are the objects themselves.
    arg : str
        The argument name used in messages (default `"name"`).
    """

    def __init__(self, kind: str, entries: Mapping[str, Any], *, builders: bool, arg: str = "name"):
        self.kind = kind
        self.builders = bool(builders)
        self.arg = arg
        self._entries = dict(entries)

    # --- the mapping ---
    def __getitem__(self, name: str):
        try:
            return self._entries[name]
        except (KeyError, TypeError):
            raise KeyError(self._unknown(name)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        return f"Catalogue({self.kind!r}, {list(self._entries)})"

    # --- the lookup ---
    def _unknown(self, name) -> str:
        return (f"`{self.arg}` must be one of {tuple(self._entries)} ({self.kind} catalogue); got {name!r}"
                f"{hint(name, self._entries)}.")

    def check(self, name) -> str:
        """`name` if it is in the catalogue; else ValueError listing the valid names."""
        if not isinstance(name, str) or name not in self._entries:
            raise ValueError(self._unknown(name))
        return name

    def lookup(self, name: str, **overrides) -> T:
        """The entry `name`, built with `overrides` when the entries are builders.

        Raises
        ------
        ValueError
            Unknown `name` (the valid names are listed, with a close match).
        TypeError
            An override the builder does not take (those it takes are listed), or any override
            for a catalogue of ready objects.
        """
        entry = self._entries[self.check(name)]
        if not self.builders:
            if overrides:
                raise TypeError(f"{self.kind} {name!r} takes no overrides; got {sorted(overrides)}.")
            return entry
        params = parameters(entry)
        unknown = sorted(set(overrides) - set(params))
        if unknown:
            raise TypeError(f"{self.kind} {name!r} takes overrides {params}; got unknown {unknown}.")
        return entry(**overrides)

    def describe(self) -> list[tuple[str, str]]:
        """(name, first line of its description) for each entry: the docstring of a builder, or the
        `description` attribute of an object."""
        rows = []
        for name, entry in self._entries.items():
            text = getattr(entry, "description", None) if not self.builders else inspect.getdoc(entry)
            rows.append((name, (text or "").strip().splitlines()[0] if text else ""))
        return rows


def parameters(builder: Callable) -> list[str]:
    """The keyword parameters a builder takes, in order."""
    return [p.name for p in inspect.signature(builder).parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
