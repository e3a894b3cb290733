"""Parameter sweeps that count their own cost (docs/theory.md §7.5; docs/guide/sweeps.md).

`sweep(system, params, t_span, x0, y0, ts=..., tol=...)` solves ε dx/dt = f(x, y), dy/dt = g(x, y)
at N parameter points (ε and entries of the system's `args`; for a network system its rate
constants and slow-equation parameters) and returns y at the save times for each, every point with
an error estimate and the reason it took its path.

**Routes and their cost.**  Each point is solved either fully (the stiff system; the points of a
group stacked into one LSODA solve, `sp_ode.sweeps._stacked`) or on a corrected reduced path
y' = g(h^{(k)}(y), y) (T3, §3.3) together with the next order that estimates its error
(`sp_ode.sweeps._paths`).  A point takes a reduced path only where the cost model
(`sp_ode.sweeps._cost`) predicts it cheaper than the full solve *with its compilation and probe
included*: the first group is solved fully and prices that route; a reduced order is compiled and
probed only if the full solves it could replace cost more than that.  Small sweeps are therefore
all-full, and each route is compiled once per sweep and per stack size (a few fixed sizes).

**Same call, same numbers.**  The cost model decides from counted work only (steps, evaluations,
flop counts, program sizes — never a clock), and the points are cut into groups of G consecutive
points (`stacked.stack_group`, a function of N and the system's size) solved group by group, a
chunk holding whole groups: a point always shares its stacks with the same points.  So the result
is bit for bit the same under any load, at any chunk size, on any number of Dask workers, and when
killed and resumed (the routing is stored in the manifest and replayed; chunk files hold numbers
only, their timings go to `timings.json`).  A killed write leaves at most a temporary file, which
a rerun removes; `sweep_folder` lets the library and `sp-ode sweep` (which keeps the sweep in
`out/chunks`) resume each other's folders.

**Validated, not trusted.**  After the chunks, a random subset stratified by path (`validate_fraction`
of each path's points, at least 3, all of a path with fewer) is solved again in one batched reference
solve of the full system at 1e-5·tol (network systems: 3e-3·tol, sparse BDF: within 7e-4·tol of Radau
at 1e-3·tol on the cascade, n = 1024); the worst ratio of true to estimated error is reported per
path, and a point whose true error exceeds tol keeps the reference solution (status `RESOLVED`).  A
path whose worst ratio ρ exceeds 1/safety has every other point with ρ·estimate > tol re-solved the
same way (`Reason.RESOLVED_MARGIN`; the report counts them).

Points run in chunks (bounded memory, checkpoints, Dask tasks), with a progress bar; with `out=`
each finished chunk is written as `.npz` next to a JSON manifest, and the validation beside them,
so a rerun of an interrupted sweep computes only what is missing — and only if everything that
determines the answer is unchanged (`sp_ode.sweeps._fingerprint`: the inputs, the system's args,
the code of f, g and Q(y) and the source of the user's modules they import; a refusal names the parts
that changed).  `client=` runs chunks as Dask tasks (`sp_ode.sweeps._dask`).
"""
from __future__ import annotations

import io
import math
import numbers
import textwrap
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sp_ode.core.files import atomic_write_bytes, write_json
from sp_ode.core.memory import check_memory
from sp_ode.core.precision import in_float64
from sp_ode.core.reporting import progress
from sp_ode.core.summary import Summarised, number
from sp_ode.core.validation import check_choice, check_finite_array, check_positive, check_positive_int
from sp_ode.sweeps import _cost as cost, _paths as paths, _stacked as stacked
from sp_ode.sweeps._dask import SweepClusterError, SweepMainGuardError, executor
from sp_ode.sweeps._fingerprint import sweep_parts
from sp_ode.sweeps._folder import (
    CHUNK_KEYS,
    CHUNKS,
    FORMAT,
    MANIFEST,
    TIMINGS,
    VALIDATION,
    SweepResumeError,
    manifest_chunk_size,
    npz_bytes,
    open_out,
    read_chunk,
    remove_orphans,
    sweep_folder,
    write_chunk,
)
from sp_ode.sweeps._reasons import TEXT, Reason
from sp_ode.sweeps.engine import SweepEngine, ValidationInput
from sp_ode.systems.network import NetworkSystem
from sp_ode.systems.resolve import as_system
from sp_ode.systems.simulation import check_t_span, check_ts

if TYPE_CHECKING:
    import distributed

    from sp_ode.core.typing import ArrayLike, Float, PathLike, TimeSpan
    from sp_ode.systems.resolve import SystemLike

__all__ = ["sweep", "SweepResult", "SweepResumeError", "SweepClusterError", "SweepMainGuardError", "PATH_FULL",
           "STATUS_OK", "STATUS_RESOLVED", "STATUS_FAILED", "MANIFEST", "ROUTES", "auto_chunk_size", "sweep_folder", "npz_bytes",
           "CHUNKS", "TIMINGS", "VALIDATION", "remove_orphans"]

PATH_FULL = paths.PATH_FULL
STATUS_OK, STATUS_RESOLVED, STATUS_FAILED = paths.STATUS_OK, paths.STATUS_RESOLVED, paths.STATUS_FAILED
MIN_VALIDATE = 3
ROUTES = ("auto", "full", "reduced")
DEFAULT_CHUNK = 512          # points per chunk in one process (a stack size of `sp_ode.sweeps._stacked`)
MIN_CHUNK = 8
WIDTH = 110                  # columns of `SweepResult.report`


@dataclass(frozen=True, repr=False)
class SweepResult(Summarised):
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
        Estimated max-norm y-error over the save times (docs/theory.md §7.5); for full solves,
        LSODA's measured global-error factor × its controller tolerance (`sp_ode.sweeps._paths`).
    status : ndarray (N,) int
        `STATUS_OK`, `STATUS_RESOLVED` (validation found error > tol: the reference solution
        is kept) or `STATUS_FAILED` (the full solve failed).
    reason : ndarray (N,) int
        Why the point took its path (`sp_ode.sweeps._reasons.Reason`; `reasons()` counts them).
    validated : ndarray (N,) bool
        Re-solved by the reference.
    true_error : ndarray (N,)
        max |y − y_ref| of the path first chosen (nan unless validated).
    ratio : ndarray (N,)
        true_error / estimate (nan unless validated).
    path_first : ndarray (N,) int
        The path chosen before validation (differs from `path` where re-solved).
    tol : float
    seconds : float
        Wall time of this call's work (0 for a fully resumed sweep).
    computed_chunks : tuple of int
        The chunks this call computed (the others were read from `out`).
    stage_seconds : dict
        Seconds per stage (setup, reduced_k, full inside the chunks this call computed, wherever they
        ran; `plan`: the cost model's probes; `validate`: the reference solve); `compile` is
        the part of them spent compiling.
    plan : dict
        The cost model's routing: per-point costs, compile times, predicted totals and its notes.
    validation : dict
        `per_path`: for each path first chosen, its points, how many were validated, the worst
        true/estimate ratio measured on them, and how many of its other points were re-solved
        because estimate × that ratio > tol (only when the ratio exceeds 1/safety);
        `margin_resolved`: their total.
    """

    params: dict
    ts: np.ndarray
    y: np.ndarray
    path: np.ndarray
    estimate: np.ndarray
    status: np.ndarray
    reason: np.ndarray
    validated: np.ndarray
    true_error: np.ndarray
    ratio: np.ndarray
    path_first: np.ndarray
    tol: float
    seconds: float = 0.0
    computed_chunks: tuple = ()
    stage_seconds: dict = field(default_factory=dict)
    plan: dict = field(default_factory=dict)
    validation: dict = field(default_factory=dict)

    @property
    def path_names(self) -> np.ndarray:
        """"reduced0", "reduced1", … or "full", per point."""
        return np.array(["full" if p == PATH_FULL else f"reduced{p}" for p in self.path])

    @property
    def worst_ratio(self) -> float:
        """Largest true/estimated error over the validated points first put on a reduced path (nan if none)."""
        r = self.ratio[self.validated & np.isfinite(self.ratio) & (self.path_first != PATH_FULL)]
        return float(r.max()) if r.size else math.nan

    def reasons(self) -> dict:
        """{path name: {reason: count}}: why the points went where they went."""
        out: dict = {}
        for name, code in zip(self.path_names, self.reason):
            text = TEXT[Reason(int(code))]
            out.setdefault(str(name), {}).setdefault(text, 0)
            out[str(name)][text] += 1
        return out

    def summary(self) -> dict:
        """Counts per path and why, validation outcome, worst estimate and ratios, as plain numbers."""
        counts = {str(name): int(n) for name, n in zip(*np.unique(self.path_names, return_counts=True))}
        v = self.validated
        within = self.true_error[v] <= self.tol
        finite = self.estimate[np.isfinite(self.estimate)]
        return {
            "points": int(self.path.size), "tol": self.tol, "paths": counts, "reasons": self.reasons(),
            "worst_estimate": float(finite.max()) if finite.size else math.nan,
            "validated": int(v.sum()),
            "validation_failed": int(np.sum(v & ~np.isfinite(self.true_error))),
            "validated_within_tol_first_pass": int(np.sum(within)),
            "resolved": int(np.sum(self.status == STATUS_RESOLVED)),
            "failed": int(np.sum(self.status == STATUS_FAILED)),
            "worst_ratio_reduced": self.worst_ratio,
            "worst_ratio_all": float(np.nanmax(self.ratio)) if np.any(np.isfinite(self.ratio)) else math.nan,
            "worst_true_error": float(np.nanmax(self.true_error)) if np.any(np.isfinite(self.true_error))
            else math.nan,
            "seconds": self.seconds,
            "stage_seconds": dict(self.stage_seconds),
            "validation_share": (float(self.stage_seconds.get("validate", 0.0)) / self.seconds
                                 if self.seconds > 0 else math.nan),
            "plan": dict(self.plan),
            "validation": dict(self.validation),
        }

    def report(self) -> str:
        """A one-screen account: paths taken and why, worst estimate, validation, where the time went."""
        s = self.summary()
        lines = [f"sweep: {s['points']} points, tol {s['tol']:g}, {s['seconds']:.2f} s"]
        if set(s["paths"]) == {"full"} and s["points"]:     # why not one point took a reduced path, in one line
            first = self.path_first != PATH_FULL
            why = ("every reduced answer was re-solved by validation" if first.any() else
                   max(s["reasons"]["full"].items(), key=lambda kv: kv[1])[0])
            lines.append(f"  all {s['points']} points solved fully: {why}")
        for name, reasons in sorted(s["reasons"].items()):
            lines.append(f"  {name:<9} {s['paths'][name]:>7}")
            for text, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
                lines.append(f"      {n:>7}  {text}")
        if np.isfinite(s["worst_estimate"]):
            lines.append(f"  worst estimate {s['worst_estimate']:.3g} (tol {s['tol']:g})")
        if s["validated"]:
            ratio = (f"worst true/estimated {s['worst_ratio_reduced']:.3g} on reduced paths"
                     if np.isfinite(s["worst_ratio_reduced"]) else "no validated point took a reduced path")
            if np.isfinite(s["worst_ratio_all"]):
                ratio += (f", worst true/estimated overall {s['worst_ratio_all']:.3g}, worst true error "
                          f"{s['worst_true_error']:.3g}")
            failed = f", {s['validation_failed']} reference solves failed" if s["validation_failed"] else ""
            lines.append(f"  validated {s['validated']}: {s['validated_within_tol_first_pass']} within tol on the first "
                         f"pass, {s['resolved']} re-solved{failed}; {ratio}")
            per = s["validation"].get("per_path", {})
            if per:
                lines.append("  true/estimated per path: " + "; ".join(
                    f"{name} worst {v['worst_ratio']:.3g} over {v['validated']} of {v['points']}"
                    + (f", {v['margin_resolved']} re-solved past the margin" if v["margin_resolved"] else "")
                    for name, v in sorted(per.items())))
        else:
            lines.append("  validated 0 points (validate_fraction = 0)")
        stages = ", ".join(f"{k} {v:.2f}" for k, v in s["stage_seconds"].items())
        lines.append(f"  seconds: {stages}" + (f" (validation {100 * s['validation_share']:.0f} %)"
                                                if np.isfinite(s["validation_share"]) else ""))
        for note in self.plan.get("notes", []):
            lines.append(f"  plan: {note}")
        ran = self.plan.get("executor", {})
        if ran.get("why"):          # client="local": where the chunks ran, and why (the counted forecast)
            lines.append(f"  ran {ran['executor']}: {ran['why']}")
        if s["failed"]:
            lines.append(f"  {s['failed']} full solves FAILED (y = inf there)")
        return "\n".join(textwrap.fill(line, WIDTH, subsequent_indent="        ") for line in lines)

    def __str__(self) -> str:
        return self.report()

    # repr and the notebook view: a few numbers (`summary()` stays the dict of numbers, `report()` the account)
    def _summary_title(self) -> str:
        return f"SweepResult: {self.path.size} points, tol {self.tol:g}"

    def _summary_rows(self) -> list[tuple[str, str]]:
        counts = {str(k): int(n) for k, n in zip(*np.unique(self.path_names, return_counts=True))}
        finite = self.estimate[np.isfinite(self.estimate)]
        return [("paths", ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) or "none"),
                ("worst estimate", number(float(finite.max())) if finite.size else "none"),
                ("validated", f"{int(self.validated.sum())}, {int(np.sum(self.status == STATUS_RESOLVED))} "
                              f"re-solved, worst true/estimated {number(self.worst_ratio)}"),
                ("failed", str(int(np.sum(self.status == STATUS_FAILED)))),
                ("parameters", ", ".join(self.params)), ("save times", str(len(self.ts))),
                ("seconds", number(self.seconds, 3))]


# --- validation of the input ------------------------------------------------------------------

def auto_chunk_size(N: int, workers: int) -> tuple[int, str | None]:
    """(chunk size, warning or None): `DEFAULT_CHUNK` in one process; on W workers, at most
    N/(2W) points so that every worker gets at least 2 tasks (never below `MIN_CHUNK`)."""
    if workers <= 1:
        return max(1, min(N, DEFAULT_CHUNK)), None
    size = max(MIN_CHUNK, min(DEFAULT_CHUNK, N // (2 * workers)))
    tasks = math.ceil(N / size)
    if tasks < 2 * workers:
        return size, (f"{N} points in chunks of at least {MIN_CHUNK} make {tasks} tasks for {workers} workers: "
                      f"some workers get fewer than 2 (or none).")
    return size, None


# --- the public function ------------------------------------------------------------------

@in_float64
def sweep(system: SystemLike, params: Mapping[str, ArrayLike], t_span: TimeSpan, x0: Float[ArrayLike, "*N m"],
          y0: Float[ArrayLike, "*N d"], *, ts: Float[ArrayLike, " K"], tol: float, validate_fraction: float = 0.01,
          chunk_size: int | None = None, out: PathLike | None = None, client: str | distributed.Client | None = None,
          seed: int = 0, max_order: int | None = None,
          safety: float = 0.5, route: str = "auto", progress_bar: bool | None = None,
          connect_timeout: float = 10.0, force_cluster: bool = False) -> SweepResult:
    """Solve a fast–slow system at N parameter points, each by its cheapest certified path.

    Parameters
    ----------
    system : FastSlowSystem, MasterEquationSystem, NetworkSystem or catalogue entry
        Its `args` must be a dict holding every swept name (except `eps`); for a
        `NetworkSystem`, the swept names are parameters of its network (rate constants and
        parameters of the slow equations).
    params : mapping name -> array (N, ...)
        Per-point values: `eps` (ε > 0; default the system's) and parameters of the system (same
        trailing shape as there), all of length N.
    t_span : (t0, t1)
    x0 : array (m,) | (N, m), or "manifold"
        Initial fast states; "manifold" starts each point on its first-order slow manifold
        h^{(1)}(y0) = φ(y0) + εh₁(y0) (for a network system: p_st(y0) + εh₁(y0)).
    y0 : array (d,) | (N, d)
    ts : array (K,)
        Save times inside t_span; the tolerance applies to y at these.
    tol : float
        Target max-norm error of y over the save times, > 0.
    validate_fraction : float in [0, 1]
        Share of points re-solved by the tight reference, per path (stratified: every path that
        returned points has at least 3 validated points, or all of them when it has fewer).
    chunk_size : int, optional
        Points per chunk (the unit of stacking, checkpointing and Dask tasks).  None: 512 in one
        process; on W Dask workers at most N/(2W), so every worker gets at least 2 tasks (a warning
        says when N is too small for that); a resumed sweep keeps the size it was started with.
    out : path, optional
        Folder for `manifest.json`, one `chunk_NNNNNN.npz` per finished chunk and
        `validation.npz`; a rerun with the same inputs and model reads them instead of computing.
    client : None, "local", a `dask.distributed.Client` or a scheduler address
        None runs in this process; otherwise chunks are Dask tasks (docs/sweep_cluster.md).  "local"
        starts a LocalCluster only where counted work predicts it faster than this process (after one
        chunk solved here; a warning gives the figures otherwise, `result.plan["executor"]` the choice).
        Call it under `if __name__ == "__main__":` in a script.
    seed : int
        Chooses the validated subset.
    max_order : int, optional
        Highest reduced order K tried (its estimate needs order K + 1), 0 ≤ K < 5; default 2 (network
        systems: K ≤ 1, default 1, from their tables of orders 0–2).
    safety : float in (0, 1]
        A reduced path is kept when its estimate is ≤ safety·tol.
    route : {"auto", "full", "reduced"}
        "auto": the cost model routes each point (module docstring); "full": every point full;
        "reduced": every point tries order 0, 1, … whatever it costs.
    progress_bar : bool, optional
        None: shown on a terminal.
    connect_timeout : float
        Seconds any wait for the Dask scheduler may take (connecting, scattering, a silent scheduler).
    force_cluster : bool
        With client="local": start the cluster even where it is predicted slower.

    Returns
    -------
    SweepResult

    Raises
    ------
    TypeError
        `system` not a fast–slow or network system; `params` not a mapping; args not a dict; `force_cluster`
        not a bool.
    ValueError
        Unequal `params` lengths; a name that is not a parameter of the system or that f, g (Q) do
        not read; ε ≤ 0 at a point (its index named); tol ≤ 0; bad `t_span`/`ts`/`x0`/`y0`/options.
    SweepResumeError
        `out` holds a different sweep (other inputs, or a changed model).
    SweepClusterError
        The scheduler cannot be reached, or stops answering, within `connect_timeout`.
    SweepMainGuardError
        client="local" from a script's top level outside `if __name__ == "__main__":` (before any worker starts).
    MemoryBudgetError
        The engine's memory estimate (`sweep_nbytes`) exceeds the memory budget (before any chunk runs).

    Examples
    --------
    Michaelis–Menten from the catalogue at 8 values of ε, y at t = 1 within 1e-6:

    >>> import numpy as np, sp_ode
    >>> entry = sp_ode.get_system("michaelis_menten")
    >>> result = sp_ode.sweep(entry.system, {"eps": np.logspace(-4, -2, 8)}, (0.0, 1.0), "manifold", [1.0],
    ...                       ts=[1.0], tol=1e-6, progress_bar=False)
    >>> result.y.shape                           # (N points, K save times, d)
    (8, 1, 1)
    >>> bool(np.all(result.estimate <= 1e-6))    # every point's error estimate within tol
    True

    A network system sweeps the same way (x0 = "manifold"); see docs/guide/reaction_networks.md.
    """
    # one door for every accepted object (sp_ode.systems.resolve), then the engine by the system's type
    system = as_system(system)
    if isinstance(system, NetworkSystem):
        from sp_ode.sweeps import _network  # noqa: PLC0415 - the sparse engine, only for networks
        engine: SweepEngine = _network
    else:
        engine = cost
    tol = check_positive("tol", tol)
    t0, t1 = check_t_span(t_span)
    ts = check_ts(ts, t0, t1)
    if ts is None:
        raise ValueError("`ts` is required: the save times at which y is returned and the tolerance applies.")
    if chunk_size is not None:
        chunk_size = check_positive_int("chunk_size", chunk_size)
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"`seed` must be a non-negative integer; got {seed!r}.")
    frac = float(check_finite_array("validate_fraction", validate_fraction, ndim=0))
    if not 0.0 <= frac <= 1.0:
        raise ValueError(f"`validate_fraction` must lie in [0, 1]; got {frac}.")
    safety = check_positive("safety", safety)
    if safety > 1:
        raise ValueError(f"`safety` must lie in (0, 1]; got {safety}.")
    top = engine.MAX_ORDER
    max_order = min(2, top) if max_order is None else max_order
    if isinstance(max_order, bool) or not isinstance(max_order, numbers.Integral) or not 0 <= max_order <= top:
        raise ValueError(f"`max_order` must be an integer in [0, {top}]; got {max_order!r}.")
    route = check_choice("route", route, ROUTES)
    connect_timeout = check_positive("connect_timeout", connect_timeout)
    if not isinstance(force_cluster, bool):
        raise TypeError(f"`force_cluster` must be True or False; got {force_cluster!r}.")

    system, values, N, x0_arr, y0_arr, (m, d) = engine.prepare(system, params, x0, y0, t0)

    start_all = time.perf_counter()
    # G consecutive points are solved together, whatever the chunk size (`stacked.stack_group`): a chunk holds
    # whole groups, so its size is rounded up to a multiple of G
    group = stacked.stack_group(N, engine.stack_width(m, d))
    ex = executor(client, connect_timeout, force_cluster)
    try:
        resumed_size = manifest_chunk_size(out) if chunk_size is None else None
        if chunk_size is None and resumed_size is None:
            chunk_size, warning = auto_chunk_size(N, ex.workers)
            if warning and ex.settled:      # a local cluster not started yet: its forecast speaks for it
                warnings.warn(f"sweep: {warning} Pass a smaller `chunk_size`, or use fewer workers.", stacklevel=3)  # past in_float64: the caller's line
        elif chunk_size is None:
            chunk_size = resumed_size
        chunk_size = group * math.ceil(chunk_size / group)
        # a network sweep stacks only its table paths (3 unknowns per point) and solves full systems one at a time
        nbytes = engine.sweep_nbytes(N, chunk_size, m, d, ts.size)
        check_memory(nbytes,
                     what=f"a sweep of {N} points in chunks of {chunk_size} (m = {m}, d = {d}, {ts.size} save "
                          "times)", remedy="Lower `chunk_size` or the number of save times.")
        names = tuple(n for n in values if n != "eps")
        y_scale = max(1.0, float(np.max(np.abs(y0_arr))))
        plan = engine.make_plan(system, names, (t0, t1), ts, tol, int(max_order), safety=safety, route=route,
                                y_scale=y_scale, group=group, dims=(m, d))
        n_chunks = math.ceil(N / chunk_size)
        chunks = [range(i * chunk_size, min(N, (i + 1) * chunk_size)) for i in range(n_chunks)]
        options = {"validate_fraction": frac, "chunk_size": chunk_size, "seed": seed, "max_order": int(max_order),
                   "safety": safety, "route": route}
        results: dict[int, dict] = {}
        manifest = out_dir = None
        if out is not None:
            fp = sweep_parts(FORMAT, system, values, (t0, t1), ts, x0_arr, y0_arr, {"tol": tol, **options})
            out_dir, manifest = open_out(out, fp, {"system": system.name, "points": N, "chunks": n_chunks,
                                                    "names": sorted(values), "tol": tol, **options},
                                         {"tol": tol, **options})
            for i in manifest["done"]:
                found = read_chunk(out_dir, i)
                if found is not None:
                    results[i] = found
        todo = [i for i in range(n_chunks) if i not in results]

        def chunk_input(i, start=None, stop=None):
            idx = np.arange(chunks[i].start if start is None else start, chunks[i].stop if stop is None else stop)
            return paths.ChunkInput(i, idx, values["eps"][idx], {n: values[n][idx] for n in names},
                                    None if x0_arr is None else x0_arr[idx], y0_arr[idx])

        def record(res):
            res["fresh"] = True
            results[res["index"]] = res
            if out_dir is not None:
                write_chunk(out_dir, res)
                manifest["done"] = sorted(set(manifest["done"]) | {int(res["index"])})
                write_json(out_dir / MANIFEST, manifest)

        bar = progress(total=N, desc=f"sweep {system.name}",
                       disable=None if progress_bar is None else not progress_bar)
        bar.update(N - sum(len(chunks[i]) for i in todo))
        stages: dict[str, float] = {}
        priced = None         # a chunk solved in this process, whose counted work prices a local cluster
        try:
            if route == "auto":
                stored = manifest.get("decision") if manifest is not None else None
                if stored is not None:
                    plan.decision = engine.decision_from_dict(stored)
                    if todo:      # chunks to compute: rebuild what the first run's plan shipped with them
                        engine.replay(plan, values, y0_arr)
                else:
                    plan.decision = None
                    first = None
                    if engine.FIRST_CHUNK_PRICES:   # the first group, solved fully, prices the full route
                        first_group = chunk_input(0, stop=min(group, chunks[0].stop))
                        [first] = list(ex.map(engine.run_chunk, plan, [first_group]))
                    rest = (np.concatenate([np.arange(chunks[i].start, chunks[i].stop) for i in todo]) if todo
                            else np.zeros(0, dtype=np.int64))
                    rest = rest[rest >= (group if first is not None else 0)]
                    plan.decision = engine.decide(plan, first, values, x0_arr, y0_arr, rest,
                                                  processes=ex.workers if client is not None else 1)
                    if manifest is not None:       # counted figures only: no clock in the manifest
                        manifest["decision"] = {k: v for k, v in plan.decision.as_dict().items() if k != "seconds"}
                        write_json(out_dir / MANIFEST, manifest)
                    if first is not None and todo and todo[0] == 0:
                        # chunk 0: the first group as priced (solved fully, the same stack a rerun solves)
                        # and the rest of the chunk under the routing
                        parts = [first]
                        if chunks[0].stop > first["points"].size:
                            parts += list(ex.map(engine.run_chunk, plan, [chunk_input(0, start=group)]))
                        res = priced = paths.merge_results(0, parts)
                        record(res)
                        bar.update(res["points"].size)
                        todo = todo[1:]
                    stages["plan"] = plan.decision.seconds
            if todo and not ex.settled:        # client="local": priced here before any worker starts
                if priced is None:
                    [priced] = list(ex.map(engine.run_chunk, plan, [chunk_input(todo[0])]))
                    record(priced)
                    bar.update(priced["points"].size)
                    todo = todo[1:]
                ex.settle(cost.cluster_forecast(priced, sum(len(chunks[i]) for i in todo), len(todo), ex.workers,
                                                engine.worker_compile_seconds(plan)))
            for res in ex.map(engine.run_chunk, plan, [chunk_input(i) for i in todo]):
                record(res)
                bar.update(res["points"].size)
        finally:
            bar.close()
        parts = [results[i] for i in range(n_chunks)]
        table = _assemble_chunks(parts, N)
        if route == "auto" and engine.FIRST_CHUNK_PRICES:
            first = np.arange(min(group, N))
            full = (table["path"][first] == PATH_FULL) & (table["status"][first] != STATUS_FAILED)
            table["reason"][first] = np.where(full, engine.first_chunk_reasons(plan, values["eps"][first]),
                                              table["reason"][first])
        validate = validation_sample(table["path"], table["status"], frac, seed)
        val_t = _validate(plan, engine, ex, table, values, y0_arr, validate, out_dir, manifest)
        if val_t is not None:
            stages["validate"] = val_t
    finally:
        ex.close()
    computed = tuple(i for i in range(n_chunks) if parts[i].get("fresh"))
    seconds = time.perf_counter() - start_all if (computed or val_t) else 0.0
    for part in parts:
        if part.get("fresh"):
            for stage, sec in part.get("seconds", {}).items():
                stages[stage] = stages.get(stage, 0.0) + float(sec)
            for sec in part.get("compile_seconds", {}).values():
                stages["compile"] = stages.get("compile", 0.0) + float(sec)
    plan_dict = {"route": route, "chunk_size": chunk_size, "stack_sizes": list(getattr(plan, "sizes", ())),
                 "executor": ex.describe(),
                 **(plan.decision.as_dict() if plan.decision is not None else {})}
    return SweepResult(params=dict(values), ts=ts, y=table["y"], path=table["path"], estimate=table["estimate"],
                       status=table["status"], reason=table["reason"], validated=validate,
                       true_error=table["true_error"], ratio=table["ratio"], path_first=table["path_first"], tol=tol,
                       seconds=seconds, computed_chunks=computed, stage_seconds=stages, plan=plan_dict,
                       validation=table.get("validation", {}))


def _assemble_chunks(parts: list, N: int) -> dict:
    cat = {k: np.concatenate([p[k] for p in parts]) for k in CHUNK_KEYS}
    if not np.array_equal(cat["points"], np.arange(N)):  # every point exactly once, in order
        raise RuntimeError("internal: the chunks do not cover the points exactly once.")
    cat["path_first"] = cat["path"].copy()
    cat["true_error"] = np.full(N, np.nan)
    cat["ratio"] = np.full(N, np.nan)
    return cat


def _validate(plan, engine, ex, table, values, y0, validate, out_dir, manifest) -> float | None:
    """The batched reference solve of the validated points (read back from `out` when done before)."""
    check = np.flatnonzero(validate)
    if check.size == 0:
        return None
    stored = None
    if out_dir is not None and manifest.get("validation") and (out_dir / VALIDATION).is_file():
        with np.load(out_dir / VALIDATION) as z:
            if np.array_equal(z["points"], check):
                stored = (z["y_ref"], z["ok"])
    start = time.perf_counter()
    if stored is None:
        item = ValidationInput(check, table["x0"][check], y0[check], values["eps"][check],
                                      {n: values[n][check] for n in values if n != "eps"})
        [(yr, ok)] = list(ex.map(engine.validate_points, plan, [item]))
        if out_dir is not None:
            buf = io.BytesIO()
            np.savez(buf, points=check, y_ref=yr, ok=ok)
            atomic_write_bytes(out_dir / VALIDATION, buf.getvalue())
            manifest["validation"] = True
            write_json(out_dir / MANIFEST, manifest)
        seconds = time.perf_counter() - start
    else:
        yr, ok = stored
        seconds = 0.0
    err = paths.max_diff(table["y"][check], yr)
    table["true_error"][check] = np.where(ok, err, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        table["ratio"][check] = np.where(ok, err / table["estimate"][check], np.nan)
    bad = check[ok & (err > plan.tol)]
    where = {int(i): k for k, i in enumerate(check)}
    _keep_reference(plan, engine, table, bad, yr[[where[int(i)] for i in bad]], Reason.RESOLVED)
    # per path: the worst true/estimate ratio measured on its validated points sets how far its
    # estimates are trusted; past 1/safety, every point whose estimate × that ratio exceeds tol is
    # re-solved by the reference too (docs/theory.md §7.5)
    per_path, near = margin_points(table, check, validate, plan.tol, plan.safety)
    if near.size:
        item = ValidationInput(near, table["x0"][near], y0[near], values["eps"][near],
                                      {n: values[n][near] for n in values if n != "eps"})
        [(yn, okn)] = list(ex.map(engine.validate_points, plan, [item]))
        _keep_reference(plan, engine, table, near[okn], yn[okn], Reason.RESOLVED_MARGIN)
        seconds = time.perf_counter() - start
    table["validation"] = {"per_path": per_path, "margin_resolved": int(near.size)}
    return seconds


def margin_points(table: dict, check: np.ndarray, validate: np.ndarray, tol: float, safety: float):
    """({path: {points, validated, worst_ratio, margin_resolved}}, indices to re-solve).

    A path's worst measured ratio ρ = max true/estimate over its validated points says how far its
    estimates undershoot; when ρ > 1/safety the margin safety·tol no longer covers it, and every other
    point of the path whose ρ·estimate exceeds tol is re-solved by the reference."""
    per_path, margin = {}, []
    for p in np.unique(table["path_first"][check]):
        on = check[table["path_first"][check] == p]
        r = table["ratio"][on]
        worst = float(np.nanmax(r)) if np.any(np.isfinite(r)) else math.nan
        entry = {"points": int(np.sum(table["path_first"] == p)), "validated": int(on.size),
                 "worst_ratio": worst, "margin_resolved": 0}
        if np.isfinite(worst) and worst > 1.0 / safety:
            near = np.flatnonzero((table["path_first"] == p) & ~validate & (table["status"] == STATUS_OK)
                                  & (table["estimate"] * worst > tol))
            entry["margin_resolved"] = int(near.size)
            margin.append(near)
        per_path["full" if p == PATH_FULL else f"reduced{int(p)}"] = entry
    return per_path, (np.concatenate(margin) if margin else np.zeros(0, dtype=np.int64))


def _keep_reference(plan, engine, table, idx, y_ref, reason) -> None:
    """Replace the points `idx` by their reference solves `y_ref` (status RESOLVED, path full)."""
    for i, yr in zip(idx, y_ref):
        table["y"][i] = yr
        table["path"][i] = PATH_FULL
        table["estimate"][i] = float(engine.full_estimate(plan, yr[None], engine.REFERENCE_TOL_FACTOR)[0])
        table["status"][i] = STATUS_RESOLVED
        table["reason"][i] = int(reason)


def validation_sample(path: np.ndarray, status: np.ndarray, frac: float, seed: int) -> np.ndarray:
    """The validated points (N,) bool, stratified by path: on each path that returned points,
    max(`MIN_VALIDATE`, ⌈frac·n⌉) of its n points at random, all of them when n ≤ `MIN_VALIDATE`
    (none when frac = 0).  Failed points (no answer to check) are left out."""
    validate = np.zeros(path.size, dtype=bool)
    if frac == 0:
        return validate
    rng = np.random.default_rng(seed)
    for p in np.unique(path):
        idx = np.flatnonzero((path == p) & (status != STATUS_FAILED))
        n = idx.size if idx.size <= MIN_VALIDATE else min(idx.size, max(MIN_VALIDATE, math.ceil(frac * idx.size)))
        validate[rng.choice(idx, size=n, replace=False)] = True
    return validate
