"""Memory estimated before it is allocated: one place that knows how much this process may use.

Every size-driven allocation in sp_ode (a finite state projection, a dense copy of a sparse
generator, a sweep chunk, a verification grid) first estimates its bytes and calls
`check_memory`, which refuses with a [`MemoryBudgetError`][sp_ode.core.memory.MemoryBudgetError] — the estimate, the
budget and where the budget comes from in the message — instead of letting the allocation
run the machine into swap or die with a bare `MemoryError` (docs/theory.md §9).

The budget is `DEFAULT_FRACTION` of the smallest of

- the memory the system can still give: `psutil.virtual_memory().available` when psutil
  is installed (it comes with the `dask` extra), else `MemAvailable` of `/proc/meminfo`;
- the address space left under this process's `RLIMIT_AS` and data segment under
  `RLIMIT_DATA` (`resource.setrlimit`, `ulimit -v`), after what it already maps;
- the room left under a cgroup memory limit (containers, batch schedulers).

A source that cannot be read is skipped; with none readable the check passes (the
allocation itself is then the only guard).
"""
from __future__ import annotations

import math

from sp_ode.core.errors import Error

__all__ = ["MemoryBudgetError", "DEFAULT_FRACTION", "available_memory", "check_memory", "format_bytes"]

#: Share of the available memory one allocation may claim: the rest is left for the
#: temporaries around it and for the other processes on the machine.
DEFAULT_FRACTION = 0.8


class MemoryBudgetError(Error, ValueError):
    """A requested size whose estimated memory exceeds the budget; nothing was allocated.

    Attributes
    ----------
    needed : int
        Estimated bytes.
    budget : int
        Bytes allowed (`fraction` × `available`).
    available : int
        Bytes available, from `source`.
    source : str
        Which limit set `available` (e.g. `"RLIMIT_AS"`, `"MemAvailable"`).
    """

    def __init__(self, message: str, *, needed: int, budget: int, available: int, source: str):
        super().__init__(message)
        self.needed, self.budget, self.available, self.source = needed, budget, available, source


def format_bytes(n: float) -> str:
    """`1.2 GB`-style size (decimal units)."""
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{int(n)} B"


def _status_kb(field: str) -> int | None:
    """A `Vm…` field of /proc/self/status in bytes (Linux), or None."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _system_available() -> tuple[int, str] | None:
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        return int(psutil.virtual_memory().available), "available system memory (psutil)"
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, "MemAvailable (/proc/meminfo)"
    except (OSError, ValueError, IndexError):
        return None
    return None


def _rlimits() -> list[tuple[int, str]]:
    try:
        import resource
    except ImportError:  # not on POSIX: no such limits
        return []
    found = []
    for name, used_field in (("RLIMIT_AS", "VmSize"), ("RLIMIT_DATA", "VmData")):
        kind = getattr(resource, name, None)
        if kind is None:
            continue
        soft, _ = resource.getrlimit(kind)
        if soft == resource.RLIM_INFINITY or soft < 0:
            continue
        used = _status_kb(used_field) or 0
        found.append((max(0, soft - used), f"{name} {format_bytes(soft)} less the {format_bytes(used)} mapped"))
    return found


def _cgroup() -> tuple[int, str] | None:
    for limit_file, usage_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                   ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                    "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit_file) as fh:
                text = fh.read().strip()
            if text == "max" or int(text) >= 2**62:   # no limit (v2 "max", v1 a huge page-aligned number)
                return None
            with open(usage_file) as fh:
                used = int(fh.read().strip())
            return max(0, int(text) - used), f"cgroup limit {format_bytes(int(text))}"
        except (OSError, ValueError):
            continue
    return None


def available_memory() -> tuple[int, str] | None:
    """`(bytes, source)`: the smallest of the limits of the module docstring, or None if none is readable."""
    candidates = [c for c in (_system_available(), _cgroup(), *_rlimits()) if c is not None]
    return min(candidates, key=lambda c: c[0]) if candidates else None


def check_memory(nbytes: float, *, what: str, fraction: float = DEFAULT_FRACTION, remedy: str = "",
                 limit: int | None = None) -> int:
    """Refuse `nbytes` (an estimate) when it exceeds `fraction` of `available_memory` (or `limit`).

    Parameters
    ----------
    nbytes : float
        Estimated bytes of the allocation (may be a float or an exact int; inf is refused).
    what : str
        What would be allocated, for the message (`"the state space of 9e8 states"`).
    fraction : float in (0, 1]
        Share of the available memory allowed.
    remedy : str
        What the caller can change, appended to the message.
    limit : int, optional
        A cap the caller was given (e.g. a `max_bytes` argument): it replaces the measured budget.

    Returns
    -------
    int
        `nbytes`, rounded up.

    Raises
    ------
    ValueError
        `fraction` outside (0, 1].
    MemoryBudgetError
        The estimate exceeds the budget (message: estimate, budget, source, remedy).
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"`fraction` must lie in (0, 1]; got {fraction}.")
    if math.isnan(nbytes) or nbytes < 0:
        raise ValueError(f"`nbytes` must be a nonnegative estimate; got {nbytes}.")
    need = format_bytes(nbytes) if math.isfinite(nbytes) else "more than any machine has"
    needed = int(nbytes) if math.isfinite(nbytes) else -1
    tail = "; nothing was allocated." + (f" {remedy}" if remedy else "")
    if limit is not None:
        if nbytes > limit:
            raise MemoryBudgetError(f"{what} needs an estimated {need}, more than the limit {format_bytes(limit)} "
                                    f"(`max_bytes`){tail}", needed=needed, budget=int(limit), available=int(limit),
                                    source="max_bytes")
        return int(math.ceil(nbytes))
    found = available_memory()
    if found is None:
        return int(math.ceil(nbytes)) if math.isfinite(nbytes) else 0
    available, source = found
    budget = int(fraction * available)
    if nbytes > budget:
        raise MemoryBudgetError(
            f"{what} needs an estimated {need}, more than {fraction:.0%} of the {format_bytes(available)} "
            f"this process can use ({source}){tail}", needed=needed, budget=budget, available=available,
            source=source)
    return int(math.ceil(nbytes))

