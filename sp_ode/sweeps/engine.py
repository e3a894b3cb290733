"""The contract between `sp_ode.sweep` (the planner) and its engines: dense (`_cost` over `_paths`) and
sparse network (`_network`).

The planner validates the inputs, cuts the points into chunks of whole stack groups, keeps the output
folder and the executor, and asks the engine for everything that depends on how a point is solved. An
engine is a module that satisfies `SweepEngine` (a `typing.Protocol`; `tests/sweeps/test_engine.py` checks
both engines against it, member by member and signature by signature):

- `MAX_ORDER` — the highest reduced order it offers; `FIRST_CHUNK_PRICES` — whether the planner solves the
  first group fully before `decide` (that solve prices the full route), and `REFERENCE_TOL_FACTOR` — the
  validation solves' tolerance, as a fraction of the sweep's;
- `prepare(system, params, x0, y0, t0)` — the engine's own input checks: (system, values, N, x0 (N, m) or
  None, y0 (N, d), (m, d)), the swept names checked against what the system reads, ε per point
  (`check_values`, `check_eps` are the checks both share);
- `stack_width(m, d)` — the unknowns per point of a stacked solve (sets the stack group), and
  `make_plan(...)` — the plan shipped with every chunk;
- `sweep_nbytes(N, chunk_size, m, d, K)` — the peak memory the planner checks before anything runs;
- `decide(plan, first, values, x0, y0, rest, *, processes)` — the routing (a `Decision` from counted work,
  never from the clock), `decision_from_dict` its manifest form read back, `replay(plan, values, y0)` what
  a resumed sweep rebuilds before computing its missing chunks;
- `run_chunk(plan, chunk)` — one chunk's points on their routed paths;
- `worker_compile_seconds(plan)` — what a fresh Dask worker compiles before its first chunk (counted, for
  the forecast that decides whether a local cluster is started at all);
- `first_chunk_reasons(plan, eps)` — the reasons of the points solved to price the full route;
- `validate_points(plan, item)` — the independent reference solves of a validation sample (a
  `ValidationInput`), and `full_estimate(plan, y, factor)` the error estimate such a solve carries.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sp_ode.core.validation import check_finite_array

__all__ = ["SweepEngine", "ValidationInput", "conformance", "check_values", "check_eps"]


@dataclass
class ValidationInput:
    """The validated points: global indices and their data (leading axis b)."""

    points: np.ndarray
    x0: np.ndarray
    y0: np.ndarray
    eps: np.ndarray
    values: dict


def check_values(params) -> tuple[dict, int]:
    """`params` as {name: finite array with one entry per point} and the number of points N (both engines)."""
    if not isinstance(params, Mapping) or not params:
        raise TypeError(f"`params` must be a non-empty mapping of names to arrays; got {type(params).__name__}.")
    values, lengths = {}, {}
    for name, value in params.items():
        if not isinstance(name, str):
            raise TypeError(f"`params` names must be strings; got {name!r}.")
        arr = check_finite_array(f"params[{name!r}]", value)
        if arr.ndim == 0:
            raise ValueError(f"`params[{name!r}]` must be an array with one entry per point; got a scalar.")
        values[name], lengths[name] = arr, arr.shape[0]
    if len(set(lengths.values())) != 1:
        raise ValueError(f"`params` arrays must have equal lengths (one entry per point); got {lengths}.")
    return values, next(iter(lengths.values()))


def check_eps(values: dict, N: int, default: float) -> np.ndarray:
    """ε per point: `params['eps']` (1-D, > 0) or the system's own ε at every point (both engines)."""
    eps = values.get("eps")
    if eps is None:
        eps = np.full(N, default)
    elif eps.ndim != 1:
        raise ValueError(f"`params['eps']` must be 1-D (one ε per point); got shape {eps.shape}.")
    bad = np.flatnonzero(eps <= 0)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"`params['eps']` must be > 0 at every point; point {i} has eps = {float(eps[i])!r} "
                         f"({bad.size} such point{'s' if bad.size > 1 else ''}).")
    return eps


@runtime_checkable
class SweepEngine(Protocol):
    """What `sp_ode.sweep` calls on an engine (the module docstring says what each member means)."""

    MAX_ORDER: int
    FIRST_CHUNK_PRICES: bool
    REFERENCE_TOL_FACTOR: float

    def prepare(self, system: Any, params: Any, x0: Any, y0: Any, t0: float) -> tuple: ...

    def stack_width(self, m: int, d: int) -> int: ...

    def make_plan(self, system: Any, names: tuple, t_span: tuple, ts: np.ndarray, tol: float, max_order: int, *,
                  safety: float, route: str, y_scale: float, group: int, dims: tuple) -> Any: ...

    def sweep_nbytes(self, N: int, chunk_size: int, m: int, d: int, K: int) -> int: ...

    def decide(self, plan: Any, first: dict | None, values: dict, x0: Any, y0: np.ndarray, remaining: np.ndarray,
               *, processes: int) -> Any: ...

    def decision_from_dict(self, d: dict) -> Any: ...

    def replay(self, plan: Any, values: dict, y0: np.ndarray) -> None: ...

    def run_chunk(self, plan: Any, chunk: Any) -> dict: ...

    def worker_compile_seconds(self, plan: Any) -> float: ...

    def first_chunk_reasons(self, plan: Any, eps: np.ndarray) -> np.ndarray: ...

    def validate_points(self, plan: Any, item: ValidationInput) -> tuple: ...

    def full_estimate(self, plan: Any, y: np.ndarray, factor: float) -> np.ndarray: ...


def conformance(engine) -> list[str]:
    """What `engine` (a module) lacks or gets wrong against `SweepEngine`: missing members, and functions whose
    parameter names differ from the protocol's (an empty list when it conforms)."""
    import inspect

    problems = []
    for name in ("MAX_ORDER", "FIRST_CHUNK_PRICES", "REFERENCE_TOL_FACTOR"):
        if not hasattr(engine, name):
            problems.append(f"{name}: missing")
    for name, member in vars(SweepEngine).items():
        if name.startswith("_") or not callable(member):
            continue
        impl = getattr(engine, name, None)
        if impl is None:
            problems.append(f"{name}: missing")
            continue
        want = [p for p in inspect.signature(member).parameters if p != "self"]
        have = list(inspect.signature(impl).parameters)
        if want != have:
            problems.append(f"{name}: parameters {have}, the protocol's are {want}")
    return problems
