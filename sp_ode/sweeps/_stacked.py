"""B points of one ODE solved as one stacked system by LSODA (docs/theory.md §7.5, §7.13, §9).

The B parameter points of a sweep are independent ODEs z_b' = F(t, z_b; ε_b, args_b) of one
dimension n.  Stacked, Z = (z_1, …, z_B) obeys one ODE of dimension B·n whose Jacobian is
block diagonal.  This module integrates that ODE with LSODA (ODEPACK, `scipy.integrate.LSODA`):

* F and its n × n Jacobian blocks are one program each, `jax.jit(vmap(...))` compiled ahead of
  time for a padded stack size B (a few fixed sizes per sweep, `PAD_SIZES`), with ε and the
  parameters as data: a sweep compiles each of its routes once per size it uses, and the
  registry below knows what is compiled and what it cost (the cost model reads it);
* the blocks are handed to LSODA as a banded Jacobian of bandwidth n − 1 and factorised by its
  banded LU, O(B·n³) per factorisation — never a dense (B·n)² matrix;
* LSODA's local error test is a weighted **max**-norm over all B·n components (ODEPACK's
  DMNORM), so each component of each point meets atol + rtol·|z| as if it were solved alone;
  an RMS-norm solver (scipy's BDF or Radau) would let one point's error hide among B;
* the common step is the smallest that any point needs, so no point is stepped more coarsely
  than by its own solve (`sp_ode.sweep` validates the result against a tighter solve anyway).

Why: one scipy step costs one Python round trip and one compiled call for the whole stack
instead of one per point.  Measured on this 2-core machine (docs/bench/sweep.md): Michaelis–Menten,
60 points, 0.26 s to compile and 0.03 s to solve, against 1.2 s for a loop of per-point LSODA
solves; 10⁴ points in 0.6 s against 2.8 s for vmapped Kvaerno5 (after its 7.5 s compilation).

A stack that fails (step-size failure, or the step budget) is split in halves until the failing
points are alone; the caller gives those to `sp_ode.systems.simulation.simulate_checked` with its
escalation ladder.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import scipy.integrate

from sp_ode.core.cache import LRUCache
from sp_ode.core.memory import check_memory
from sp_ode.systems.integration import SMALL_PROGRAM_OPTIONS, tree_spec

# Stack sizes a route is compiled for: 8·8ʲ, capped by the chunk size (which is also allowed).
PAD_SIZES = (8, 64, 512, 4096)
STACK_BUDGET_BYTES = 512 * 2**20     # LSODA's banded work array of one stack, at most
SMALL_STACK = 1024                   # B·n up to which the programs compile at XLA's lowest optimisation

STATUS_OK, STATUS_FAILED = 0, 1
# a point whose state grew by this factor is running away (a blow-up): the stack stops, it is set aside
RUNAWAY = 1e100


@dataclass(eq=False)
class Program:
    """F and its Jacobian blocks for B points of dimension n, compiled."""

    fun: Callable            # (t, Z (B·n,), lanes) -> (B·n,)
    jac: Callable | None     # (t, Z, lanes) -> (B, n, n), or None (LSODA differences in the band)
    B: int
    n: int
    compile_seconds: float
    flops: tuple = (0.0, 0.0)   # XLA's count of one call of fun and of jac (cost_analysis), for B points
    size: int = 0               # lines of the lowered StableHLO of fun and jac: the compile-cost predictor


_PROGRAMS = LRUCache(64)
# seconds the last compilation of each route key took (any size): the cost model's prior for a new size
_COMPILE_SECONDS: dict = {}
_CLOCK = [0.0]     # seconds this process has spent compiling stacked programs and kernels


def compile_clock() -> float:
    """Total seconds spent compiling here so far (a chunk's compile time is the difference across it)."""
    return _CLOCK[0]


def record_compile(route_key: Hashable, seconds: float) -> None:
    _COMPILE_SECONDS[route_key] = seconds
    _CLOCK[0] += seconds


def pad_sizes(chunk_size: int, n: int) -> tuple[int, ...]:
    """The stack sizes of a sweep with chunks of `chunk_size` points of dimension n (memory-capped)."""
    cap = max(1, int(STACK_BUDGET_BYTES // (8 * n * (3 * n + 1) + 64)))
    top = min(chunk_size, cap)
    sizes = sorted({s for s in PAD_SIZES if s < top} | {top})
    return tuple(sizes)


def stack_nbytes(B: int, n: int) -> int:
    """LSODA's work arrays for B stacked points of dimension n (banded, bandwidth n − 1) and the saves."""
    N = B * n
    return int(8 * (22 + 10 * N + (3 * (n - 1) + 1) * N) + 8 * N * 16)


def program_key(route_key: Hashable, B: int, n: int, lanes) -> tuple:
    return (route_key, B, n, tree_spec(lanes))


def is_compiled(route_key: Hashable, B: int, n: int, lanes) -> bool:
    return program_key(route_key, B, n, lanes) in _PROGRAMS


def known_compile_seconds(route_key: Hashable) -> float | None:
    """Seconds the last compilation of this route took in this process (any stack size), or None."""
    return _COMPILE_SECONDS.get(route_key)


def program(route_key: Hashable, one: Callable, B: int, n: int, lanes, *, jacobian: bool = True) -> Program:
    """The compiled stacked program of `one(t, z (n,), lane) -> (n,)` for B points (cached).

    `lanes` is an example of the per-point data (a pytree of arrays with leading axis B).
    """
    key = program_key(route_key, B, n, lanes)
    found = _PROGRAMS.get(key)
    if found is not None:
        return found
    start = time.perf_counter()
    lowered = _lower(one, B, n, lanes, jacobian)
    # small stacks: XLA's lowest optimisation level compiles about twice as fast and runs as fast per call
    # (as sp_ode.systems.integration.SMALL_PROGRAM_OPTIONS); large ones keep the default, tuned for the run
    options = SMALL_PROGRAM_OPTIONS if B * n <= SMALL_STACK else None
    # XLA's compiler releases the GIL: the two programs compile side by side
    with ThreadPoolExecutor(max_workers=len(lowered)) as pool:
        compiled = list(pool.map(lambda low: low.compile(options), lowered))
    seconds = time.perf_counter() - start
    prog = Program(compiled[0], compiled[1] if jacobian else None, B, n, seconds,
                   tuple(_flops(c) for c in compiled) + ((0.0,) if not jacobian else ()),
                   sum(low.as_text().count("\n") for low in lowered))
    _PROGRAMS[key] = prog
    record_compile(route_key, seconds)
    return prog


def _lower(one: Callable, B: int, n: int, lanes, jacobian: bool) -> list:
    """The lowered (traced, not compiled) programs F and, with `jacobian`, its Jacobian blocks for B points."""
    t_spec = jax.ShapeDtypeStruct((), jnp.float64)
    z_spec = jax.ShapeDtypeStruct((B * n,), jnp.float64)
    lane_spec = jax.tree_util.tree_map(lambda a: jax.ShapeDtypeStruct(np.shape(a), np.result_type(a)), lanes)

    def fun(t, Z, lanes):
        return jax.vmap(one, (None, 0, 0))(t, Z.reshape(B, n), lanes).reshape(-1)

    def jac(t, Z, lanes):
        return jax.vmap(jax.jacfwd(one, argnums=1), (None, 0, 0))(t, Z.reshape(B, n), lanes)

    fns = (fun, jac) if jacobian else (fun,)
    return [jax.jit(fn).lower(t_spec, z_spec, lane_spec) for fn in fns]


_LINES = LRUCache(64)


def lowered_lines(route_key: Hashable, one: Callable, B: int, n: int, lanes, *, jacobian: bool = True) -> int:
    """Lines of the lowered StableHLO of the stacked program (F and its Jacobian blocks): a size that
    predicts its compile time, counted without compiling (deterministic for a given JAX)."""
    key = program_key(route_key, B, n, lanes)
    found = _PROGRAMS.get(key)
    if found is not None:
        return found.size
    lines = _LINES.get(key)
    if lines is None:
        lines = sum(low.as_text().count("\n") for low in _lower(one, B, n, lanes, jacobian))
        _LINES[key] = lines
    return lines


def _flops(compiled) -> float:
    """XLA's flop count of one call of a compiled program (0 where the backend reports none)."""
    try:
        cost = compiled.cost_analysis()
    except Exception:   # noqa: BLE001 - a backend without cost analysis: no flops counted
        return 0.0
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    return float((cost or {}).get("flops", 0.0))


# The counted-work model (docs/theory.md §7.5): a stacked solve's cost in modelled seconds on the reference
# machine (this 2-core box, docs/bench/sweep.md), from what was counted — never from a clock, so that a
# sweep's routing, hence its numbers, are the same under any load.  Fitted to LSODA on Michaelis–Menten
# stacks of 8 and 512 points: 37 µs per step at 16 components, 244 µs at 1024.
STEP_S = 20e-6           # one LSODA step: the Python round trip, the error test, dense output
COMPONENT_S = 0.2e-6     # per step and per component of the stack (LSODA's O(B·n) work per step)
CALL_S = 10e-6           # one call of a compiled program from Python
FLOP_S = 1e-9            # per flop XLA counts in a program
LU_FLOP_S = 1e-9         # per flop of LSODA's banded LU, 2·B·n³ for B blocks of n (bandwidth n − 1)


def work_seconds(counts: dict, B: int, n: int, flops: tuple) -> float:
    """Modelled seconds of a stacked solve of B points of dimension n from its counts (steps, nfev, njev)
    and the flops of one call of F and of its Jacobian blocks for the B points."""
    return (counts.get("steps", 0) * (STEP_S + COMPONENT_S * B * n)
            + counts.get("nfev", 0) * (CALL_S + FLOP_S * flops[0])
            + counts.get("njev", 0) * (CALL_S + FLOP_S * flops[1] + LU_FLOP_S * 2.0 * B * n ** 3))


def stack_group(N: int, n: int) -> int:
    """The number of consecutive points G solved as one stack (the unit of a sweep's computation): the
    largest power of 2 with at least 8 groups in N points, between 8 and 512 and within the memory cap
    of one stack — a function of the sweep alone (N and n), never of its chunk size or workers, so a
    point is always solved with the same neighbours and its numbers do not depend on how it was run."""
    cap = max(1, int(STACK_BUDGET_BYTES // (8 * n * (3 * n + 1) + 64)))
    g = 8
    while 2 * g <= min(PAD_SIZES[2], cap) and 2 * g * 8 <= N:
        g *= 2
    return max(1, min(g, cap))


def _band_index(B: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, column) in LSODA's packed band (jac_packed[u + i − j, j] = J[i, j], u = n − 1) of every
    entry of the B blocks, in the order of a (B, n, n) array."""
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    cols = (np.arange(B)[:, None, None] * n + j).ravel()
    rows = (n - 1) + np.broadcast_to(i - j, (B, n, n)).ravel()
    return rows, cols


def pad(tree, b: int, B: int):
    """Every leaf's leading axis from b to B, by repeating point 0 (a real point: it cannot slow the stack)."""
    if b == B:
        return tree
    idx = np.concatenate([np.arange(b), np.zeros(B - b, dtype=np.int64)])
    return jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], tree)


def solve(prog: Program, z0: np.ndarray, lanes, t_span: tuple[float, float], ts: np.ndarray, *,
          rtol: float, atol: float, max_steps: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """Integrate b ≤ B stacked points; returns (z at ts (b, K, n), status (b,), stats).

    A failed stack (LSODA's step-size failure, a non-finite value, or more than `max_steps` steps) is
    split in halves, recursively: points that fail alone get `STATUS_FAILED` (z = inf) for the
    caller's per-point fallback.
    """
    b = z0.shape[0]
    stats = {"solves": 0, "steps": 0, "nfev": 0, "njev": 0, "work": 0.0, "seconds": 0.0}
    z, status = np.full((b, ts.size, prog.n), np.inf), np.full(b, STATUS_FAILED, dtype=np.int64)

    def run(idx):
        out, ok, growth = _solve_once(prog, z0[idx], jax.tree_util.tree_map(lambda a: np.asarray(a)[idx], lanes),
                                      t_span, ts, rtol, atol, max_steps, stats)
        if ok:
            z[idx], status[idx] = out, STATUS_OK
            return
        away = growth >= RUNAWAY
        if away.any():          # blown up: those fail (the caller's fallback sees them alone), the rest again
            if (~away).any():
                run(idx[~away])
            return
        if idx.size > 1:
            # a point whose state grew far more than the others' is the likely culprit: set it aside
            med = float(np.median(growth))
            culprits = growth > 10.0 * med if np.isfinite(med) and growth.max() > 100.0 * med else None
            if culprits is not None and 0 < culprits.sum() < idx.size:
                run(idx[~culprits])
                for i in idx[culprits]:
                    run(np.array([i]))
                return
            half = idx.size // 2
            run(idx[:half])
            run(idx[half:])

    run(np.arange(b))
    return z, status, stats


def _solve_once(prog, z0, lanes, t_span, ts, rtol, atol, max_steps, stats):
    b, n, B = z0.shape[0], prog.n, prog.B
    check_memory(stack_nbytes(B, n), what=f"a stack of {B} points of dimension {n} (LSODA, banded)",
                 remedy="Lower `chunk_size`.")
    lanes = pad(lanes, b, B)
    Z0 = pad(np.asarray(z0, dtype=np.float64), b, B).reshape(-1)
    t0, t1 = float(t_span[0]), float(t_span[1])

    def fun(t, Z):
        return np.asarray(prog.fun(np.float64(t), Z, lanes))

    kw = {"lband": n - 1, "uband": n - 1}
    if prog.jac is not None:
        rows, cols = _band_index(B, n)
        packed = np.zeros((2 * n - 1, B * n))

        def jac(t, Z):
            packed[rows, cols] = np.asarray(prog.jac(np.float64(t), Z, lanes)).ravel()
            return packed
        kw["jac"] = jac
    start = time.perf_counter()
    solver = scipy.integrate.LSODA(fun, t0, Z0, t1, rtol=rtol, atol=atol, **kw)
    saved = np.empty((ts.size, B * n))
    k = 0
    while k < ts.size and ts[k] <= t0:
        saved[k] = Z0
        k += 1
    ok, steps = True, 0
    with np.errstate(all="ignore"):
        while solver.status == "running":
            if steps >= max_steps:
                ok = False
                break
            try:
                solver.step()
            except (ValueError, ArithmeticError, np.linalg.LinAlgError):
                ok = False
                break
            steps += 1
            if solver.status == "failed" or not np.all(np.abs(solver.y) < RUNAWAY * (1.0 + np.abs(Z0))):
                ok = False
                break
            stop = int(np.searchsorted(ts, solver.t, side="right"))
            if stop > k:
                dense = solver.dense_output()
                for i in range(k, stop):
                    saved[i] = dense(ts[i]) if ts[i] < solver.t else solver.y
                k = stop
    stats["solves"] += 1
    stats["steps"] += steps
    stats["nfev"] += int(solver.nfev)
    stats["njev"] += int(solver.njev)
    stats["work"] += work_seconds({"steps": steps, "nfev": int(solver.nfev), "njev": int(solver.njev)}, B, n,
                                  prog.flops)
    stats["seconds"] += time.perf_counter() - start
    ok = ok and k == ts.size and bool(np.all(np.isfinite(saved)))
    with np.errstate(all="ignore"):
        last = np.abs(np.asarray(solver.y).reshape(B, n)[:b]).max(axis=1)
        growth = np.where(np.isfinite(last), last, np.inf) / (1.0 + np.abs(z0).max(axis=1))
    return saved.reshape(ts.size, B, n).transpose(1, 0, 2)[:b], ok, growth
