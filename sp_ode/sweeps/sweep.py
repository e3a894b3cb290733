"""Parameter sweeps that take the cheapest certified path per point (docs/theory.md §7.5).

`sweep(system, params, t_span, x0, y0, ts=..., tol=...)` solves ε dx/dt = f(x, y),
dy/dt = g(x, y) at N parameter points (ε and entries of the system's `args`)
and returns y at the save times for each.  Per point it keeps the corrected
reduced path y' = g(h^{(k)}(y), y), h^{(k)} = φ + εh₁ + … + εᵏh_k (T3, docs/theory.md
§3.3), of the lowest order k whose estimated y-error is ≤ safety·tol, and the full
stiff solve otherwise; the estimate (`sp_ode.sweeps._paths`) is the y-effect of
the next term of the expansion plus the initial-layer shift.  It is validated, not
trusted: a random subset is re-solved with a tight full solve, the worst ratio of
true to estimated error is reported, and a point whose true error exceeds tol
keeps the full solution (status `RESOLVED`).

Points run in chunks (bounded memory; `jax.vmap` per path inside a chunk), with a
progress bar; with `out=` each finished chunk is written as `.npz` next to a
JSON manifest, so a rerun of an interrupted sweep computes only the missing chunks.
`client=` runs chunks as Dask tasks (`sp_ode.sweeps._dask`).
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import numbers
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import jax
import numpy as np

from sp_ode.core.files import atomic_write_bytes, write_json
from sp_ode.core.memory import check_memory
from sp_ode.core.precision import in_float64
from sp_ode.core.reporting import progress
from sp_ode.core.validation import check_finite_array, check_positive, check_positive_int
from sp_ode.manifolds.slow_manifold import MAX_ORDER
from sp_ode.sweeps import _paths as paths
from sp_ode.sweeps._dask import (
    SweepClusterError,
    run_chunks,  # imports dask only when asked
)
from sp_ode.systems.simulation import check_state, check_system, check_t_span, check_ts
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

__all__ = ["sweep", "SweepResult", "SweepResumeError", "SweepClusterError", "PATH_FULL", "STATUS_OK", "STATUS_RESOLVED",
           "STATUS_FAILED", "MANIFEST"]

PATH_FULL = paths.PATH_FULL
STATUS_OK, STATUS_RESOLVED, STATUS_FAILED = paths.STATUS_OK, paths.STATUS_RESOLVED, paths.STATUS_FAILED
MANIFEST = "manifest.json"
MIN_VALIDATE = 3
_FORMAT = 1


class SweepResumeError(ValueError):
    """`out` holds a different sweep (its manifest fingerprint does not match this one)."""


@dataclass(frozen=True)
class SweepResult:
    """The table of a sweep: one row per parameter point.

    Attributes
    ----------
    params : dict name -> ndarray (N, ...)
        The parameter values (`eps` always present).
    ts : ndarray (K,)
        Save times.
    y : ndarray (N, K, d)
        The slow state at the save times (inf where the full solve failed).
    path : ndarray (N,) int
        Order k of the corrected reduced path used, or `PATH_FULL` (−1) for the full solve.
    estimate : ndarray (N,)
        Estimated max-norm y-error over the save times (docs/theory.md §7.5); for
        full solves, the controller tolerance atol + rtol·max|y|.
    status : ndarray (N,) int
        `STATUS_OK`, `STATUS_RESOLVED` (validation found error > tol: the
        full reference solution is kept) or `STATUS_FAILED` (the full solve failed).
    validated : ndarray (N,) bool
        Re-solved with a tight full solve.
    true_error : ndarray (N,)
        max |y − y_ref| of the path first chosen (nan unless validated).
    ratio : ndarray (N,)
        true_error / estimate (nan unless validated).
    path_first : ndarray (N,) int
        The path chosen before validation (differs from `path` where re-solved).
    tol : float
    seconds : float
        Wall time of the chunks computed by this call (0 for a fully resumed sweep).
    computed_chunks : tuple of int
        The chunks this call computed (the others were read from `out`).
    stage_seconds : dict
        Seconds inside the chunks, per stage (setup, reduced_k, full, validate), summed over the
        chunks this call computed, wherever they ran: `seconds` minus their total is what the
        loop around them cost (transfer and scheduling, on Dask).
    """

    params: dict
    ts: np.ndarray
    y: np.ndarray
    path: np.ndarray
    estimate: np.ndarray
    status: np.ndarray
    validated: np.ndarray
    true_error: np.ndarray
    ratio: np.ndarray
    path_first: np.ndarray
    tol: float
    seconds: float = 0.0
    computed_chunks: tuple = ()
    stage_seconds: dict = field(default_factory=dict)

    @property
    def path_names(self) -> np.ndarray:
        """"reduced0", "reduced1", … or "full", per point."""
        return np.array(["full" if p == PATH_FULL else f"reduced{p}" for p in self.path])

    @property
    def worst_ratio(self) -> float:
        """Largest true/estimated error over the validated points first put on a reduced path (nan if none)."""
        r = self.ratio[self.validated & np.isfinite(self.ratio) & (self.path_first != PATH_FULL)]
        return float(r.max()) if r.size else math.nan

    def summary(self) -> dict:
        """Counts per path, validation outcome and the worst ratio, as plain numbers."""
        counts = {str(name): int(n) for name, n in zip(*np.unique(self.path_names, return_counts=True))}
        v = self.validated
        within = self.true_error[v] <= self.tol
        return {
            "points": int(self.path.size), "tol": self.tol, "paths": counts,
            "validated": int(v.sum()),
            "validation_failed": int(np.sum(v & ~np.isfinite(self.true_error))),
            "validated_within_tol_first_pass": int(np.sum(within)),
            "resolved": int(np.sum(self.status == STATUS_RESOLVED)),
            "failed": int(np.sum(self.status == STATUS_FAILED)),
            "worst_ratio_reduced": self.worst_ratio,
            "worst_ratio_all": float(np.nanmax(self.ratio)) if np.any(np.isfinite(self.ratio)) else math.nan,
            "seconds": self.seconds,
            "stage_seconds": dict(self.stage_seconds),
        }


# --- validation ---------------------------------------------------------------------------

def _probe_used(system: FastSlowSystem, args: dict, x0, y0, t0: float) -> set:
    """The keys of `args` whose leaves f or g actually read (traced once, nothing run)."""
    keys = sorted(args)
    flat = [np.asarray(args[k], dtype=np.float64) for k in keys]

    def both(*leaves):
        a = dict(zip(keys, leaves))
        return system.f(t0, x0, y0, a), system.g(t0, x0, y0, a)

    closed = jax.make_jaxpr(both)(*flat)
    used = set()
    for eqn in closed.jaxpr.eqns:
        used.update(id(v) for v in eqn.invars if hasattr(v, "aval") and not hasattr(v, "val"))
    used.update(id(v) for v in closed.jaxpr.outvars)
    return {k for k, v in zip(keys, closed.jaxpr.invars) if id(v) in used}


def _check_params(system: FastSlowSystem, params, x0_probe, y0_probe, t0) -> tuple[dict, int]:
    if not isinstance(params, Mapping) or not params:
        raise TypeError(f"`params` must be a non-empty mapping of names to arrays; got {type(params).__name__}.")
    base = system.args if system.args is not None else {}
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
    N = next(iter(lengths.values()))
    swept = [n for n in values if n != "eps"]
    if swept and not isinstance(base, Mapping):
        raise TypeError(f"`params` {swept} need the system's `args` to be a dict of named parameters; "
                        f"system {system.name!r} has args of type {type(base).__name__}.")
    for name in swept:
        if name not in base:
            raise ValueError(f"`params` name {name!r} is not a parameter of system {system.name!r}; "
                             f"its args are {sorted(base)} (and 'eps').")
        want = (N,) + np.shape(base[name])
        if values[name].shape != want:
            raise ValueError(f"`params[{name!r}]` must have shape {want} (one {np.shape(base[name])} value per "
                             f"point); got {values[name].shape}.")
    if swept:
        used = _probe_used(system, dict(base), x0_probe, y0_probe, t0)
        unused = [n for n in swept if n not in used]
        if unused:
            where = "f, g or Q(y)" if isinstance(system, MasterEquationSystem) else "f or g"
            raise ValueError(f"`params` {unused} are not read by {where} of system {system.name!r} "
                             "(traced): sweeping them would change nothing.")
    eps = values.get("eps")
    if eps is None:
        eps = np.full(N, system.eps)
    elif eps.ndim != 1:
        raise ValueError(f"`params['eps']` must be 1-D (one ε per point); got shape {eps.shape}.")
    bad = np.flatnonzero(eps <= 0)
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"`params['eps']` must be > 0 at every point; point {i} has eps = {float(eps[i])!r} "
                         f"({bad.size} such point{'s' if bad.size > 1 else ''}).")
    values["eps"] = eps
    return values, N


def _check_states(system, x0, y0, N):
    """x0: (m,) | (N, m) | "manifold" → (N, m) or None; y0: (d,) | (N, d) → (N, d)."""
    y0 = check_state("y0", y0, system.d)
    if y0.ndim == 2 and y0.shape[0] != N:
        raise ValueError(f"`y0` must have shape (d,) or (N, d) with N = {N} points; got {y0.shape}.")
    y0 = np.broadcast_to(y0, (N, y0.shape[-1])).copy()
    if isinstance(x0, str):
        if x0 != "manifold":
            raise ValueError(f"`x0` must be an array or 'manifold'; got {x0!r}.")
        return None, y0
    x0 = check_state("x0", x0, system.m)
    if x0.ndim == 2 and x0.shape[0] != N:
        raise ValueError(f"`x0` must have shape (m,) or (N, m) with N = {N} points; got {x0.shape}.")
    return np.broadcast_to(x0, (N, x0.shape[-1])).copy(), y0


# --- output folder ------------------------------------------------------------------------

def _fingerprint(system, values, x0, y0, t_span, ts, tol, options) -> str:
    h = hashlib.sha256()
    h.update(repr((_FORMAT, system.name, type(system).__name__, t_span, tol, sorted(options.items()))).encode())
    for name in sorted(values):
        h.update(name.encode())
        h.update(np.ascontiguousarray(values[name]).tobytes())
    for arr in (ts, y0) + ((x0,) if x0 is not None else ()):
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def _chunk_path(out: Path, index: int) -> Path:
    return out / f"chunk_{index:06d}.npz"


_CHUNK_KEYS = ("points", "y", "path", "path_first", "estimate", "status", "validated", "true_error", "ratio")


def _write_chunk(out: Path, res: dict) -> None:
    buf = io.BytesIO()
    np.savez(buf, **{k: res[k] for k in _CHUNK_KEYS})
    atomic_write_bytes(_chunk_path(out, res["index"]), buf.getvalue())


def _read_chunk(out: Path, index: int) -> dict | None:
    p = _chunk_path(out, index)
    if not p.is_file():
        return None
    with np.load(p) as z:
        return {k: z[k] for k in _CHUNK_KEYS}


def _open_out(out, fingerprint: str, meta: dict) -> tuple[Path, dict]:
    out = Path(out)
    manifest_path = out / MANIFEST
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        if manifest.get("fingerprint") != fingerprint:
            raise SweepResumeError(f"`out` {str(out)!r} holds a different sweep (fingerprint "
                                   f"{str(manifest.get('fingerprint'))[:12]} ≠ {fingerprint[:12]}): "
                                   "pass a new folder, or delete it to start over.")
        return out, manifest
    manifest = {"format": _FORMAT, "fingerprint": fingerprint, **meta, "done": []}
    write_json(manifest_path, manifest)
    return out, manifest


def _sweep_nbytes(N: int, chunk_size: int, m: int, d: int, K: int) -> int:
    """Estimated peak bytes of a sweep: one vmapped chunk of stiff solves plus the assembled table.

    A lane of the full path (Kvaerno5 on n = m + d unknowns) holds its Jacobian and LU
    factors (2n²), the stage vectors and the saved states ((K + 16)·n); the table keeps y
    twice (chunks and their concatenation, 2·K·d per point) and about 8 per-point fields.
    """
    n = m + d
    lane = 8 * (3 * n * n + (K + 16) * n)
    return int(min(N, chunk_size)) * lane + int(N) * 8 * (2 * K * d + 8)


# --- the public function ------------------------------------------------------------------

@in_float64
def sweep(system, params, t_span, x0, y0, *, ts, tol: float, validate_fraction: float = 0.01,
          chunk_size: int = 256, out=None, client=None, seed: int = 0, max_order: int = 2,
          safety: float = 0.5, reduced_method: str = "Tsit5", progress_bar: bool | None = None,
          connect_timeout: float = 10.0) -> SweepResult:
    """Solve a fast–slow system at N parameter points, each by its cheapest certified path.

    Parameters
    ----------
    system : FastSlowSystem, MasterEquationSystem or catalogue entry
        Its `args` must be a dict holding every swept name (except `eps`).
    params : mapping name -> array (N, ...)
        Per-point values: `eps` (ε > 0; default the system's) and entries of
        `system.args` (same trailing shape as there), all of length N.
    t_span : (t0, t1)
    x0 : array (m,) | (N, m), or "manifold"
        Initial fast states; "manifold" starts each point on its slow manifold
        h^{(K+1)}(y0) (no initial layer).
    y0 : array (d,) | (N, d)
    ts : array (K,)
        Save times inside t_span; the tolerance applies to y at these.
    tol : float
        Target max-norm error of y over the save times, > 0.
    validate_fraction : float in [0, 1]
        Share of points re-solved with a tight full solve (at least 3 when > 0).
    chunk_size : int
        Points per chunk (the unit of batching, checkpointing and Dask tasks).
    out : path, optional
        Folder for `manifest.json` and one `chunk_NNNNNN.npz` per finished chunk;
        a rerun with the same inputs reads the finished chunks instead of computing them.
    client : None, "local", a `dask.distributed.Client` or a scheduler address
        None runs in this process; otherwise chunks are Dask tasks (docs/sweep_cluster.md).
    seed : int
        Chooses the validated subset.
    max_order : int
        Highest reduced order K tried (its estimate needs order K + 1), 0 ≤ K < 5.
    safety : float in (0, 1]
        A reduced path is taken when its estimate is ≤ safety·tol.
    reduced_method : str
        diffrax solver of the reduced flow (no ε in it; "Tsit5" unless g itself is stiff).
    progress_bar : bool, optional
        None: shown on a terminal.
    connect_timeout : float
        Seconds to wait for a scheduler address.

    Returns
    -------
    SweepResult

    Raises
    ------
    TypeError
        `system` not a fast–slow system; `params` not a mapping; args not a dict.
    ValueError
        Unequal `params` lengths; a name that is not a parameter of the system or
        that f, g (Q) do not read; ε ≤ 0 at a point (its index named); tol ≤ 0;
        bad `t_span`/`ts`/`x0`/`y0`/options.
    SweepResumeError
        `out` holds a different sweep.
    SweepClusterError
        The scheduler cannot be reached within `connect_timeout`.
    MemoryBudgetError
        The estimate of `_sweep_nbytes` exceeds the memory budget (before any chunk runs).
    """
    system = check_system(system)
    tol = check_positive("tol", tol)
    t0, t1 = check_t_span(t_span)
    ts = check_ts(ts, t0, t1)
    if ts is None:
        raise ValueError("`ts` is required: the save times at which y is returned and the tolerance applies.")
    chunk_size = check_positive_int("chunk_size", chunk_size)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer; got {seed!r}.")
    frac = check_finite_array("validate_fraction", validate_fraction, ndim=0)
    frac = float(frac)
    if not 0.0 <= frac <= 1.0:
        raise ValueError(f"`validate_fraction` must lie in [0, 1]; got {frac}.")
    safety = check_positive("safety", safety)
    if safety > 1:
        raise ValueError(f"`safety` must lie in (0, 1]; got {safety}.")
    if isinstance(max_order, bool) or not isinstance(max_order, numbers.Integral) or \
            not 0 <= max_order < MAX_ORDER:
        raise ValueError(f"`max_order` must be an integer in [0, {MAX_ORDER - 1}]; got {max_order!r}.")

    probe_y = check_state("y0", np.asarray(y0)[0] if np.ndim(y0) == 2 else y0, system.d)
    if isinstance(x0, str):
        m = system.m
        if m is None:
            raise ValueError("`x0='manifold'` needs the fast dimension: build the system with `m=`.")
        probe_x = np.zeros(m)
    else:
        probe_x = check_state("x0", np.asarray(x0)[0] if np.ndim(x0) == 2 else x0, system.m)
    values, N = _check_params(system, params, probe_x, probe_y, t0)
    check_memory(_sweep_nbytes(N, chunk_size, probe_x.size, probe_y.size, ts.size),
                 what=f"a sweep of {N} points in chunks of {chunk_size} (m = {probe_x.size}, d = {probe_y.size}, "
                      f"{ts.size} save times)", remedy="Lower `chunk_size` or the number of save times.")
    x0_arr, y0_arr = _check_states(system, x0, y0, N)

    rng = np.random.default_rng(seed)
    n_val = 0 if frac == 0 else min(N, max(MIN_VALIDATE, math.ceil(frac * N)))
    validate = np.zeros(N, dtype=bool)
    validate[rng.choice(N, size=n_val, replace=False)] = True

    base = dict(system.args) if isinstance(system.args, Mapping) else {}
    names = tuple(n for n in values if n != "eps")
    plan = paths.SweepPlan(system, base, names, (t0, t1), ts, tol, int(max_order), safety=safety,
                           reduced_method=reduced_method)
    n_chunks = math.ceil(N / chunk_size)
    chunks = [range(i * chunk_size, min(N, (i + 1) * chunk_size)) for i in range(n_chunks)]

    options = {"validate_fraction": frac, "chunk_size": chunk_size, "seed": seed, "max_order": int(max_order),
               "safety": safety, "reduced_method": reduced_method}
    results: dict[int, dict] = {}
    manifest = out_dir = None
    if out is not None:
        fp = _fingerprint(system, values, x0_arr, y0_arr, (t0, t1), ts, tol, options)
        out_dir, manifest = _open_out(out, fp, {"system": system.name, "points": N, "chunks": n_chunks,
                                                "names": sorted(values), "tol": tol, **options})
        for i in manifest["done"]:
            found = _read_chunk(out_dir, i)
            if found is not None:
                results[i] = found
    todo = [i for i in range(n_chunks) if i not in results]

    def chunk_input(i):
        idx = np.arange(chunks[i].start, chunks[i].stop)
        return paths.ChunkInput(i, idx, values["eps"][idx], {n: values[n][idx] for n in names},
                                None if x0_arr is None else x0_arr[idx], y0_arr[idx], validate[idx])

    def record(res):
        results[res["index"]] = res
        if out_dir is not None:
            _write_chunk(out_dir, res)
            manifest["done"] = sorted(set(manifest["done"]) | {int(res["index"])})
            write_json(out_dir / MANIFEST, manifest)

    start = time.perf_counter()
    bar = progress(total=N, desc=f"sweep {system.name}", disable=None if progress_bar is None else not progress_bar)
    bar.update(N - sum(len(chunks[i]) for i in todo))
    try:
        if client is None:
            for i in todo:
                res = paths.run_chunk(plan, chunk_input(i))
                record(res)
                bar.update(res["points"].size)
        else:

            for res in run_chunks(client, plan, [chunk_input(i) for i in todo], connect_timeout):
                record(res)
                bar.update(res["points"].size)
    finally:
        bar.close()
    seconds = time.perf_counter() - start if todo else 0.0
    return _assemble(values, ts, tol, N, [results[i] for i in range(n_chunks)], seconds, tuple(todo))


def _assemble(values, ts, tol, N, parts, seconds, computed) -> SweepResult:
    cat = {k: np.concatenate([p[k] for p in parts]) for k in _CHUNK_KEYS}
    if not np.array_equal(cat["points"], np.arange(N)):  # every point exactly once, in order
        raise RuntimeError("internal: the chunks do not cover the points exactly once.")
    stages: dict[str, float] = {}
    for part in parts:
        if part.get("index") in computed:
            for stage, sec in part.get("seconds", {}).items():
                stages[stage] = stages.get(stage, 0.0) + float(sec)
    res = SweepResult(params=dict(values), ts=ts, y=cat["y"], path=cat["path"], estimate=cat["estimate"],
                      status=cat["status"], validated=cat["validated"].astype(bool),
                      true_error=cat["true_error"], ratio=cat["ratio"], path_first=cat["path_first"], tol=tol, seconds=seconds,
                      computed_chunks=computed, stage_seconds=stages)
    return res
