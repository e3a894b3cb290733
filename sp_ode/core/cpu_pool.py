"""One core per process for the processes sp_ode *starts* (never the caller's own process).

Why.  jaxlib 0.10.2's CPU LAPACK kernels (LU, Cholesky, …: `jnp.linalg.solve`/`inv`
inside a vmapped solve) split a batch into chunks, schedule them on XLA's intra-op thread
pool — the pool the kernel itself is running on — and block until they finish
(`jax::ParallelBatchMap` → `BlockingCounter::Wait`).  When the runtime executes as many
independent LAPACK calls at once as the pool has threads, every pool thread waits for a free
thread and the process sleeps forever.  Measured here (2 cores, jax 0.10.2): the 10⁴-point
`me20` sweep of `bench/sweeps/sweep.py` hung three times at 22–24 CPU-seconds, in the
order-2 manifold terms (nested derivatives of batched solves: independent LU calls), with
both `tf_XLAEigen` threads parked in `LuDecomposition::Kernel` → `ParallelBatchMap` →
`BlockingCounter::Wait` (gdb); `XLA_FLAGS=--xla_cpu_multi_thread_eigen=false` did not
help; the same run pinned to one core (`taskset -c 1`: XLA sizes its pool from the CPU
affinity) completed.  The same wedge through `lapack_dpotrf_ffi` is reported by
PyAutoLabs/PyAutoHeart, which notes that jax 0.11.2 compiles the parallel path out.

What we do.  A process sp_ode starts for single-threaded work — the `sp-ode` program,
the benchmarks under `bench/`, the Dask workers of `sweep(client="local")` (one core
each, distinct) — pins itself to one core before its first JAX computation, so XLA's pool
has one thread and a LAPACK kernel runs its batch inline.  A library call leaves the
caller's process alone: a user who calls `sp_ode.sweep` on a multi-core machine and sees
it hang runs the script under `taskset -c 0` (docs/sweep_cluster.md).
"""
from __future__ import annotations

import os

_BEFORE_PINNING: list[int] | None = None


def available_cores() -> list[int]:
    """The cores this process may run on (all of them where affinity is not supported)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return list(range(os.cpu_count() or 1))


def cores_before_pinning() -> list[int]:
    """The cores this process could use before `pin_to_one_core` (what its workers may spread over)."""
    return list(_BEFORE_PINNING) if _BEFORE_PINNING is not None else available_cores()


def pin_to_one_core(index: int = 0, cores: list[int] | None = None) -> int | None:
    """Pin this process to the `index`-th (mod their number) of `cores` (default: the cores it had before
    any pinning); returns the core, or None where affinity is unsupported.

    For entry points and worker processes only, before the first JAX computation: XLA sizes
    its CPU thread pool from the affinity when its client is created.
    """
    global _BEFORE_PINNING
    cores = list(cores) if cores is not None else cores_before_pinning()
    _BEFORE_PINNING = cores
    core = cores[index % len(cores)]
    try:
        os.sched_setaffinity(0, {core})
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return None
    return core


def pin_worker(name, cores: list[int]) -> int | None:
    """Pin a worker process named `name` (its number k, or any hashable) to the k-th of `cores`."""
    return pin_to_one_core(name if isinstance(name, int) else abs(hash(name)), cores)
