"""Where the chunks of `sp_ode.sweep` run: in this process, or as Dask tasks (docs/sweep_cluster.md).

Both executors have one interface — `map(fn, plan, items)` yields `fn(plan, item)` in order,
`workers` counts the processes — so `sp_ode.sweep` prices, runs and validates the same way on
either.

**On Dask.**  The sweep plan (system, base parameters, routing) is serialised once with
cloudpickle and scattered to every worker; a worker unpickles it once (cached on its digest), so
its compiled programs are built once per worker and reused by every chunk it runs.  A user's model
loaded from `file.py:OBJECT` lives in a module no worker can import, as do the sibling modules it
imported: those modules are registered with cloudpickle *by value* for the moment of pickling
(`sp_ode.core.files.user_modules`), so their functions travel with their code and globals and the
workers need no copy of the file, local or remote.  Chunk results come back in chunk order (so they
are checkpointed in order); a chunk whose worker dies is rerun elsewhere, and since only the client
records results, each point is stored once.

**Every network wait has a deadline.**  Connecting (`connect_timeout`) runs in a helper thread and
is abandoned when the deadline passes — a scheduler address that accepts the TCP connection and
never answers cannot hang the sweep; scattering has the same deadline; waiting for a chunk polls
the scheduler every `POLL` seconds and gives up when it has not answered for `connect_timeout`.
"""
from __future__ import annotations

import contextlib
import hashlib
import sys
import threading
import time
from collections.abc import Callable, Iterator

from sp_ode.core.cpu_pool import cores_before_pinning, pin_worker
from sp_ode.core.errors import Error
from sp_ode.core.files import user_modules

# Times a chunk may be lost with its worker before the sweep gives up.
RETRIES = 3
POLL = 5.0


class SweepClusterError(Error, RuntimeError):
    """The Dask scheduler could not be reached in time, or a chunk failed on every retry."""


class InProcess:
    """Chunks in this process, one after the other."""

    workers = 1

    def map(self, fn: Callable, plan, items: list) -> Iterator:
        for item in items:
            yield fn(plan, item)

    def close(self) -> None:
        pass


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


def _client_with_deadline(address: str, timeout: float):
    """`Client(address)` within `timeout` seconds, or SweepClusterError; an attempt still running at the
    deadline is abandoned in its (daemon) thread and closed if it ever connects."""
    from dask.distributed import Client

    box: dict = {}
    abandoned = threading.Event()

    def connect():
        try:
            c = Client(address, timeout=f"{timeout}s", set_as_default=False)
        except BaseException as exc:   # noqa: BLE001 - reported to the waiting thread
            box["error"] = exc
            return
        if abandoned.is_set():
            with contextlib.suppress(Exception):
                c.close(timeout=timeout)
        else:
            box["client"] = c

    thread = threading.Thread(target=connect, name="sp-ode-sweep-connect", daemon=True)
    thread.start()
    thread.join(timeout)
    if "client" in box:
        return box["client"]
    abandoned.set()
    why = type(box["error"]).__name__ if "error" in box else "no answer"
    raise SweepClusterError(f"`client`: no Dask scheduler answered at {address!r} within {timeout:g} s ({why}); "
                            "start one with `dask scheduler`, check the address, or pass client='local'.")


def connect(client, connect_timeout: float):
    """(Client, LocalCluster or None, owned) for "local", an address or a given Client."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise SweepClusterError("`client` needs dask.distributed: pip install 'sp-ode[dask]'.") from exc
    if isinstance(client, Client):
        return client, None, False
    if client == "local":
        # one single-threaded worker process per core: a chunk is a single-threaded stacked solve
        # … each pinned to a core of its own before its first JAX computation (sp_ode.core.cpu_pool:
        # jaxlib 0.10.2's batched LAPACK kernels can deadlock a multi-threaded XLA pool)
        cores = cores_before_pinning()
        cluster = LocalCluster(n_workers=len(cores), threads_per_worker=1, processes=True,
                               host="127.0.0.1", dashboard_address=None)
        c = Client(cluster, set_as_default=False)
        pin_workers(c, cores)
        return c, cluster, True
    if isinstance(client, str):
        return _client_with_deadline(client, connect_timeout), None, True
    raise TypeError(f"`client` must be None, 'local', a scheduler address or a dask.distributed.Client; "
                    f"got {type(client).__name__}.")


def dumps_by_value(obj) -> bytes:
    """cloudpickle bytes of `obj`, with the user's model modules (and their siblings) pickled by value."""
    import cloudpickle

    registered = []
    try:
        for name in user_modules():
            module = sys.modules.get(name)
            if module is None:
                continue
            try:
                cloudpickle.register_pickle_by_value(module)
            except ValueError:   # already registered by the caller: leave it to them
                continue
            registered.append(module)
        return cloudpickle.dumps(obj)
    finally:
        for module in registered:
            cloudpickle.unregister_pickle_by_value(module)


_WORKER_PLANS: dict = {}


def _run_on_worker(blob: bytes, fn: Callable, item):
    """On a worker: the plan unpickled once per worker (by digest), then `fn(plan, item)`."""
    import pickle

    digest = hashlib.sha256(blob).hexdigest()
    plan = _WORKER_PLANS.get(digest)
    if plan is None:
        _WORKER_PLANS.clear()
        plan = _WORKER_PLANS[digest] = pickle.loads(blob)
    return fn(plan, item)


class OnDask:
    """Chunks as Dask tasks (module docstring)."""

    def __init__(self, client, connect_timeout: float):
        self.timeout = connect_timeout
        self.client, self.cluster, self.owned = connect(client, connect_timeout)
        try:
            info = self._answer(lambda: self.client.scheduler_info())
            self.workers = max(1, len(info.get("workers", {})))
        except BaseException:
            self.close()
            raise

    def _answer(self, call):
        """`call()` (a request to the scheduler) within the deadline."""
        box: dict = {}

        def run():
            try:
                box["value"] = call()
            except BaseException as exc:   # noqa: BLE001
                box["error"] = exc

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        thread.join(self.timeout)
        if "value" in box:
            return box["value"]
        if "error" in box:
            raise box["error"]
        raise SweepClusterError(f"the Dask scheduler did not answer within {self.timeout:g} s.")

    def map(self, fn: Callable, plan, items: list) -> Iterator:
        blob = dumps_by_value(plan)
        digest = hashlib.sha256(blob).hexdigest()[:12]
        pending = list(items)
        for attempt in range(RETRIES + 1):
            [blob_future] = self.client.scatter([blob], broadcast=True, hash=False, timeout=self.timeout)
            futures = [self.client.submit(_run_on_worker, blob_future, fn, item, pure=False, retries=RETRIES,
                                          key=f"sp-ode-sweep-{digest}-{getattr(item, 'index', i)}-{attempt}")
                       for i, item in enumerate(pending)]
            try:
                while pending:
                    head = futures[0]
                    try:
                        while True:    # wait in slices, asking the scheduler between them whether it is there
                            try:
                                result = head.result(timeout=POLL)
                                break
                            except TimeoutError:
                                self._alive()
                    except Exception as exc:
                        from distributed.client import FutureCancelledError
                        from distributed.scheduler import KilledWorker

                        if isinstance(exc, KilledWorker):
                            raise SweepClusterError(f"chunk {getattr(pending[0], 'index', 0)} was lost with its "
                                                    f"worker {RETRIES + 1} times; see the workers' logs.") from exc
                        if isinstance(exc, FutureCancelledError) and attempt < RETRIES:
                            break  # resubmit what is left (outer loop)
                        raise
                    yield result
                    pending.pop(0)
                    futures.pop(0)
            finally:
                with contextlib.suppress(Exception):
                    self.client.cancel(futures)
            if not pending:
                return
        raise SweepClusterError(f"chunk {getattr(pending[0], 'index', 0)} was cancelled by the scheduler "
                                f"{RETRIES + 1} times.")

    def _alive(self) -> None:
        """Raise SweepClusterError when the scheduler no longer answers within the deadline."""
        if self.client.status not in ("running", "connecting"):
            raise SweepClusterError(f"the Dask client lost its scheduler (status {self.client.status!r}).")
        start = time.monotonic()
        try:
            self._answer(lambda: self.client.run_on_scheduler(lambda: 0))
        except SweepClusterError:
            raise SweepClusterError(f"the Dask scheduler stopped answering (no reply within {self.timeout:g} s "
                                    f"after {time.monotonic() - start:.0f} s of waiting for a chunk).") from None

    def close(self) -> None:
        if self.owned:
            with contextlib.suppress(Exception):
                self.client.close(timeout=self.timeout)
            if self.cluster is not None:
                with contextlib.suppress(Exception):
                    self.cluster.close()


def executor(client, connect_timeout: float):
    """InProcess for None, else OnDask (connected within `connect_timeout`)."""
    return InProcess() if client is None else OnDask(client, connect_timeout)
