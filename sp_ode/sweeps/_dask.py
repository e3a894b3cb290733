"""Chunks of `sp_ode.sweep` as Dask tasks (docs/sweep_cluster.md).

The sweep plan (system, base parameters, options) is scattered once to every
worker, so each worker deserialises one system object and its compiled solves,
cached on the identity of the system's vector fields, are built once per worker
and reused by every chunk it runs.  Chunk results are collected in chunk order
(so they stream back, and are checkpointed, in order); a chunk whose worker dies
is rerun by the scheduler elsewhere, and since only the client records results,
each point is stored exactly once.
"""
from __future__ import annotations

from collections.abc import Iterator

from sp_ode.core.cpu_pool import cores_before_pinning, pin_worker
from sp_ode.sweeps import _paths as paths

# Times a chunk may be lost with its worker before the sweep gives up.
RETRIES = 3


class SweepClusterError(RuntimeError):
    """The Dask scheduler could not be reached, or a chunk failed on every retry."""


def pin_workers(client, cores: list[int]) -> None:
    """Register a worker plugin that pins worker k to `cores[k]` (existing and future workers)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    class PinOneCore(WorkerPlugin):
        name = "sp-ode-pin-one-core"

        def __init__(self, cores):
            self.cores = list(cores)

        def setup(self, worker):
            pin_worker(worker.name, self.cores)

    client.register_plugin(PinOneCore(cores))


def _connect(client, connect_timeout: float):
    """(Client, owned): a Client for "local", an address, or a given Client."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise SweepClusterError("`client` needs dask.distributed: pip install 'sp-ode[dask]'.") from exc
    if isinstance(client, Client):
        return client, None
    if client == "local":
        # one single-threaded worker process per core: a chunk is a single-threaded vmapped solve
        # … each pinned to a core of its own before its first JAX computation (sp_ode.core.cpu_pool:
        # jaxlib 0.10.2's batched LAPACK kernels can deadlock a multi-threaded XLA pool)
        cores = cores_before_pinning()
        cluster = LocalCluster(n_workers=len(cores), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        client = Client(cluster)
        pin_workers(client, cores)
        return client, cluster
    if isinstance(client, str):
        try:
            return Client(client, timeout=f"{connect_timeout}s"), None
        except (OSError, TimeoutError) as exc:
            raise SweepClusterError(f"`client`: no Dask scheduler answered at {client!r} within "
                                    f"{connect_timeout:g} s ({type(exc).__name__}); start one with "
                                    "`dask scheduler`, or pass client='local'.") from None
    raise TypeError(f"`client` must be None, 'local', a scheduler address or a dask.distributed.Client; "
                    f"got {type(client).__name__}.")


def run_chunks(client, plan: paths.SweepPlan, chunks: list, connect_timeout: float) -> Iterator[dict]:
    """Yield `run_chunk(plan, chunk)` for each chunk, in order, computed on Dask workers."""
    client, cluster = _connect(client, connect_timeout)
    owned = cluster is not None
    try:
        # A worker killed while holding the scattered plan can make the scheduler forget the
        # chunks that depend on it ("already forgotten"): the plan is then scattered again and
        # the remaining chunks resubmitted.  Results are only yielded here, once per chunk.
        pending = list(chunks)
        for attempt in range(RETRIES + 1):
            [plan_future] = client.scatter([plan], broadcast=True, hash=False)
            futures = [client.submit(paths.run_chunk, plan_future, chunk, pure=False, retries=RETRIES,
                                     key=f"sp-ode-sweep-chunk-{chunk.index}-{id(plan):x}-{attempt}")
                       for chunk in pending]
            try:
                while pending:
                    try:
                        result = futures[0].result()
                    except Exception as exc:
                        from distributed.client import FutureCancelledError
                        from distributed.scheduler import KilledWorker

                        if isinstance(exc, KilledWorker):
                            raise SweepClusterError(f"chunk {pending[0].index} was lost with its worker "
                                                    f"{RETRIES + 1} times; see the workers' logs.") from exc
                        if isinstance(exc, FutureCancelledError) and attempt < RETRIES:
                            break  # resubmit what is left (outer loop)
                        raise
                    yield result
                    pending.pop(0)
                    futures.pop(0)
            finally:
                client.cancel(futures)
            if not pending:
                return
        raise SweepClusterError(f"chunk {pending[0].index} was cancelled by the scheduler {RETRIES + 1} times.")
    finally:
        if owned:
            client.close()
            cluster.close()
