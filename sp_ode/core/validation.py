"""Small validators for the public boundary.

Each checks one rule, returns the checked (and converted) value, and raises a
typed error whose message names the argument, the rule and what was seen.
Internals trust what these return.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

import numpy as np


def _seen(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def did_you_mean(word: Any, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The valid name a mistyped `word` most likely meant, or None.

    Case first: a choice equal to `word` but for case ('GP' for 'Gp') wins outright, since such
    names are usually distinct on purpose only when both exist. Otherwise the closest by
    `difflib` similarity of the lower-cased names (so 'kpp' finds 'kp', 'Gpp' finds 'GP'), at
    least `cutoff`. The one home of every "did you mean" in sp_ode.
    """
    import difflib

    if not isinstance(word, str):
        return None
    choices = [c for c in dict.fromkeys(choices) if isinstance(c, str) and c != word]
    same_but_case = [c for c in choices if c.lower() == word.lower()]
    if len(same_but_case) == 1:
        return same_but_case[0]
    lowered: dict[str, str] = {}
    for c in choices:
        lowered.setdefault(c.lower(), c)
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=cutoff)
    return lowered[close[0]] if close else None


def hint(word: Any, choices: Iterable[str], *, cutoff: float = 0.6) -> str:
    """`" (did you mean 'X'?)"` for `did_you_mean`, or the empty string."""
    close = did_you_mean(word, choices, cutoff=cutoff)
    return f" (did you mean {close!r}?)" if close is not None else ""


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    """`value` must be one of `choices` (strings); a typo is answered with the closest choice."""
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}; got {_seen(value)}{hint(value, choices)}.")
    return value


def check_real(name: str, value: Any) -> float:
    """A real number (bool rejected), returned as float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        # a 0-d array (NumPy or JAX, e.g. `jnp.float32(0.01)`) of a real numeric dtype is a number
        dtype = getattr(value, "dtype", None)
        if (np.ndim(value) == 0 and dtype is not None and hasattr(value, "__float__")
                and (np.issubdtype(dtype, np.floating) or np.issubdtype(dtype, np.integer))):
            return float(value)
        raise TypeError(f"`{name}` must be a real number; got {type(value).__name__} {_seen(value)}.")
    return float(value)


def check_finite(name: str, value: Any) -> float:
    value = check_real(name, value)
    if not math.isfinite(value):
        raise ValueError(f"`{name}` must be finite; got {value}.")
    return value


def check_positive(name: str, value: Any) -> float:
    """A finite real number > 0."""
    value = check_finite(name, value)
    if value <= 0:
        raise ValueError(f"`{name}` must be > 0; got {value}.")
    return value


def check_nonnegative(name: str, value: Any) -> float:
    value = check_finite(name, value)
    if value < 0:
        raise ValueError(f"`{name}` must be >= 0; got {value}.")
    return value


def check_positive_int(name: str, value: Any) -> int:
    """A positive integer (bool and integral floats rejected: the caller meant something else)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be a positive integer; got {type(value).__name__} {_seen(value)}.")
    if value <= 0:
        raise ValueError(f"`{name}` must be a positive integer; got {value}.")
    return int(value)


def check_finite_array(name: str, value: Any, *, ndim: int | None = None, dtype=np.float64) -> np.ndarray:
    """A real, finite array (converted to `dtype`), optionally of fixed `ndim`."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # ragged lists and the like
        raise TypeError(f"`{name}` must be array-like; got {type(value).__name__} ({exc}).") from None
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"`{name}` must be a real numeric array; got dtype {arr.dtype}.")
    if np.iscomplexobj(arr):
        raise TypeError(f"`{name}` must be real; got complex dtype {arr.dtype}.")
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(f"`{name}` must be {ndim}-D; got shape {arr.shape}.")
    arr = arr.astype(dtype, copy=False)
    if not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[0]
        raise ValueError(f"`{name}` must be finite; got {arr[tuple(bad)]} at index {tuple(int(i) for i in bad)}.")
    return arr
