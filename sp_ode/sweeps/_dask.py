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

**A local cluster only where it pays.**  `client="local"` starts one worker process per core, each
importing sp_ode and compiling its programs before its first chunk.  `LocalWhenFaster` first solves a
chunk in this process and predicts both ways from counted work (`sp_ode.sweeps._cost.cluster_forecast`:
never a clock, so the same call always chooses the same way); the cluster is started only where it is
predicted faster, or where `force_cluster=True`.  A user's own Client or scheduler address is used as
given.  A script that calls the sweep outside `if __name__ == "__main__":` is refused before any
worker starts (`check_main_guard`): each spawned worker would re-run it from the top.

**Every network wait has a deadline.**  Connecting (`connect_timeout`) runs in a helper thread and
is abandoned when the deadline passes — a scheduler address that accepts the TCP connection and
never answers cannot hang the sweep; scattering has the same deadline; waiting for a chunk polls
the scheduler every `POLL` seconds and gives up when it has not answered for `connect_timeout`.
"""
from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator

from sp_ode.core.cpu_pool import cores_before_pinning, pin_worker
from sp_ode.core.errors import Error
from sp_ode.core.files import user_modules

# Times a chunk may be lost with its worker before the sweep gives up.
RETRIES = 3
POLL = 5.0


class SweepClusterError(Error, RuntimeError):
    """The Dask scheduler could not be reached in time, or a chunk failed on every retry."""


class SweepMainGuardError(Error, RuntimeError):
    """`client="local"` called from a script's top level, outside `if __name__ == "__main__":`.

    The local cluster's worker processes are spawned: each imports the main script afresh, and an
    unguarded sweep call there would start a cluster again inside every worker (multiprocessing then
    fails with "Nanny failed to start").  Raised before any worker starts."""


_GUARD = 'if __name__ == "__main__":'


def _is_main_test(test: ast.expr) -> bool:
    """`__name__ == "__main__"` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


def _guarded(statements: list, line: int) -> bool:
    """Whether `line` lies in the body of an `if __name__ == "__main__":` among `statements` (nested too)."""
    for st in statements:
        if not st.lineno <= line <= (st.end_lineno or st.lineno):
            continue
        if isinstance(st, ast.If) and _is_main_test(st.test) and any(
                b.lineno <= line <= (b.end_lineno or b.lineno) for b in st.body):
            return True
        inner = [x for name in ("body", "orelse", "finalbody") for x in getattr(st, name, ())]
        inner += [x for h in getattr(st, "handlers", ()) for x in h.body]
        return _guarded(inner, line)
    return False


def _main_reruns_in_workers() -> bool:
    """Whether a spawned worker re-runs `__main__` (the rule of `multiprocessing.spawn.get_preparation_data`:
    a script or a module run with -m does, a package's `__main__.py` and an interactive session do not)."""
    try:
        import dask
    except ImportError:          # no dask: `connect` says so; the default start method is spawn
        return True
    if dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork":
        return False
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return not (name == "__main__" or name.endswith(".__main__"))
    return getattr(main, "__file__", None) is not None


def check_main_guard() -> None:
    """Raise SweepMainGuardError when starting a local cluster from here would make each worker re-run
    this sweep call: in a spawned child re-executing the main script (as `__mp_main__`), or in the main
    process when the script's top-level line that leads here is not under `if __name__ == "__main__":`
    (read from its source; where the source cannot be read, the child's check still holds)."""
    import multiprocessing.process

    frame = sys._getframe(1)
    main = sys.modules.get("__main__")
    rerun = None
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            name = frame.f_globals.get("__name__")
            if name == "__mp_main__" or (name == "__main__" and getattr(multiprocessing.process.current_process(),
                                                                        "_inheriting", False)):
                raise SweepMainGuardError(
                    f"`client='local'`: this is a worker process re-running {frame.f_code.co_filename!r} from "
                    f"the top; put the sweep call under `{_GUARD}` in that script.")
            if main is not None and frame.f_globals is vars(main):
                rerun = frame
        frame = frame.f_back
    if rerun is None or not _main_reruns_in_workers():
        return
    path, line = rerun.f_code.co_filename, rerun.f_lineno
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return
    if not _guarded(tree.body, line):
        raise SweepMainGuardError(
            f"`client='local'` starts worker processes that each re-run {path!r} from the top, and its line "
            f"{line} (which calls the sweep) is not under `{_GUARD}`: put it there, with whatever only the "
            "main process should do.")


class InProcess:
    """Chunks in this process, one after the other."""

    workers = 1
    settled = True

    def map(self, fn: Callable, plan, items: list) -> Iterator:
        for item in items:
            yield fn(plan, item)

    def settle(self, forecast: dict) -> None:
        pass

    def describe(self) -> dict:
        return {"executor": "in-process"}

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


@functools.cache
def _quiet_client_class():
    """A `dask.distributed.Client` whose failed start leaves nothing to close.

    A port that is no Dask scheduler (one that answers with other bytes: an HTTP server) makes
    `Client.start` raise, and the half-built client is closed later by its `__del__`, which waits
    `2·timeout` for a goodbye that cannot happen and then prints a TimeoutError traceback — after the
    sweep's own error line, at exit.  This one marks itself closed and stops its event loop at once."""
    from dask.distributed import Client

    class QuietClient(Client):
        def start(self, **kwargs):
            try:
                super().start(**kwargs)
            except BaseException:
                self._abandon()
                raise

        def _abandon(self) -> None:
            # nothing was set up with the scheduler: no close handshake to wait for
            self.status = "closed"
            with contextlib.suppress(Exception):
                self._loop_runner.stop(timeout=1.0)

    return QuietClient


def _client_with_deadline(address: str, timeout: float):
    """`Client(address)` within `timeout` seconds, or SweepClusterError; an attempt still running at the
    deadline is abandoned in its (daemon) thread and closed if it ever connects (quietly, if it fails:
    `_quiet_client_class`)."""
    Client = _quiet_client_class()

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
        check_main_guard()
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

    settled = True

    def __init__(self, client, connect_timeout: float):
        self.given = "local cluster" if client == "local" else "your Client" if not isinstance(client, str) else client
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

    def settle(self, forecast: dict) -> None:
        pass

    def describe(self) -> dict:
        return {"executor": "dask", "client": self.given, "workers": self.workers}

    def close(self) -> None:
        if self.owned:
            with contextlib.suppress(Exception):
                self.client.close(timeout=self.timeout)
            if self.cluster is not None:
                with contextlib.suppress(Exception):
                    self.cluster.close()


class LocalWhenFaster:
    """`client="local"`: chunks in this process until `settle` has a forecast, then on a LocalCluster only
    where it is predicted faster (or `force`: at once).  `workers` is the cluster's planned size (one
    worker per core), so the chunk size does not depend on the choice."""

    def __init__(self, connect_timeout: float, force: bool):
        check_main_guard()
        self.timeout = connect_timeout
        self.workers = len(cores_before_pinning())
        self.inner = None
        self.record: dict = {"executor": "in-process", "client": "local",
                             "why": "no chunk was left to compute: no cluster started"}
        if force:
            self.inner = OnDask("local", connect_timeout)
            self.record = {**self.inner.describe(), "why": "force_cluster=True"}

    @property
    def settled(self) -> bool:
        return self.inner is not None

    def map(self, fn: Callable, plan, items: list) -> Iterator:
        return (self.inner or InProcess()).map(fn, plan, items)

    def settle(self, forecast: dict) -> None:
        """Start the cluster where `forecast` (`sp_ode.sweeps._cost.cluster_forecast`) predicts it faster."""
        if self.inner is not None:
            return
        if forecast["points_left"] == 0:
            self.inner = InProcess()
            self.record = {"executor": "in-process", "client": "local",
                           "why": "the one chunk left was solved here while pricing a cluster: no cluster started"}
            return
        figures = (f"predicted {forecast['local_cluster_s']:.3g} s on a local cluster of {forecast['workers']} "
                   f"workers (each {forecast['worker_start_s']:.3g} s to start and {forecast['worker_compile_s']:.3g} "
                   f"s to compile) against {forecast['in_process_s']:.3g} s in this process for the "
                   f"{forecast['points_left']} points left (modelled seconds from counted work)")
        if forecast["local_cluster_s"] < forecast["in_process_s"]:
            self.inner = OnDask("local", self.timeout)
            self.record = {**self.inner.describe(), "why": figures, "forecast": dict(forecast)}
            return
        self.inner = InProcess()
        self.record = {"executor": "in-process", "client": "local", "why": figures, "forecast": dict(forecast)}
        warnings.warn(f"sweep: client='local' not started: {figures}; running in this process "
                      "(force_cluster=True, or --force-cluster, starts it anyway).", stacklevel=4)

    def describe(self) -> dict:
        return dict(self.record)

    def close(self) -> None:
        if self.inner is not None:
            self.inner.close()


def executor(client, connect_timeout: float, force_cluster: bool = False):
    """InProcess for None, LocalWhenFaster for "local", else OnDask (connected within `connect_timeout`)."""
    if client is None:
        return InProcess()
    if isinstance(client, str) and client == "local":
        return LocalWhenFaster(connect_timeout, force_cluster)
    return OnDask(client, connect_timeout)
