"""sp_ode.sweep on Dask: a real scheduler and two worker processes on 127.0.0.1.

The scheduler and workers are started with the `dask scheduler` / `dask worker`
command-line tools (separate processes, single-threaded, random free ports) and
stopped in a finally.  Expected results are the single-process sweep's, bit for
bit (same compiled code, same chunks).  Michaelis–Menten (docs/theory.md §3.6)
with max_order 0 keeps each worker's compilations short.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

distributed = pytest.importorskip("distributed", reason="the `dask` extra is not installed")

from sp_ode.sweeps.sweep import MANIFEST, SweepClusterError, sweep  # noqa: E402

# One worker runs this module (make test: --dist loadgroup), so its module fixture is built once, not per worker.
pytestmark = pytest.mark.xdist_group("test_dask")

TS = np.array([0.5, 1.0, 2.0])
N = 96
OPTS = dict(ts=TS, tol=1e-6, chunk_size=8, max_order=0, validate_fraction=0.0, progress_bar=False)
DASK = str(Path(sys.executable).with_name("dask"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _params():
    rng = np.random.default_rng(3)
    return {"eps": np.exp(rng.uniform(np.log(1e-6), np.log(1e-2), N)), "kappa": rng.uniform(0.5, 2.0, N)}


def _run(**kw):
    # λ = 0.3 has no float32 representation: a worker that rounded the parameters (a float64 JAX array
    # unpickled outside JAX's float64 scope, as before FastSlowSystem.__getstate__) differs from here
    from sp_ode.systems.catalogue import michaelis_menten

    e = michaelis_menten(lam=0.3)
    return sweep(e.system, _params(), (0.0, 2.0), "manifold", [1.0], **{**OPTS, **kw})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """(address, Client, {name: Popen}) of a scheduler and two single-threaded worker processes."""
    from dask.distributed import Client

    logs = tmp_path_factory.mktemp("dask")
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = {}
    client = None
    try:
        procs["scheduler"] = subprocess.Popen(
            [DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
            stdout=open(logs / "scheduler.log", "w"), stderr=subprocess.STDOUT, env=env)
        for name in ("w0", "w1"):
            procs[name] = subprocess.Popen(
                [DASK, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny",
                 "--no-dashboard", "--name", name, "--local-directory", str(logs / name)],
                stdout=open(logs / f"{name}.log", "w"), stderr=subprocess.STDOUT, env=env)
        client = Client(address, timeout="30s")
        client.wait_for_workers(2, timeout=60)
        yield address, client, procs
    finally:
        # stopped, not shut down gracefully: in the full suite one process regularly let its 10 s of
        # SIGTERM grace run out (a 10.5 s teardown, measured twice); nothing is read from them after the tests
        if client is not None:
            client.close(timeout=5)
        for p in procs.values():
            if p.poll() is None:
                p.terminate()
        deadline = time.monotonic() + 2
        for p in procs.values():
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)


@pytest.mark.slow
def test_two_workers_match_single_process_exactly_through_a_killed_worker(cluster, tmp_path):
    """Both workers run chunks; as soon as one worker is seen processing a chunk it is
    killed by PID.  Dask reschedules its chunks on the other; the result equals the
    single-process sweep bit for bit and each chunk (hence each point) is stored once."""
    import json

    address, client, procs = cluster
    killed = []

    # worker address -> name, read once in this thread (the watcher only asks what is processing)
    names = {addr: w.get("name") for addr, w in client.scheduler_info()["workers"].items()}

    def kill_busy_worker():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not killed:
            try:
                manifest = tmp_path / MANIFEST
                done = json.loads(manifest.read_text())["done"] if manifest.is_file() else []
                processing = client.processing()  # the first chunks compile for seconds: a worker is caught busy
            except Exception:  # a transient read while the manifest or the scheduler state changes
                processing, done = {}, []
            for addr, keys in processing.items():
                name = names.get(addr)
                if keys and name in ("w0", "w1"):
                    os.kill(procs[name].pid, signal.SIGKILL)
                    killed.append((name, len(done)))
                    return
            time.sleep(0.02)

    watcher = threading.Thread(target=kill_busy_worker, daemon=True)
    watcher.start()
    remote = _run(client=address, out=tmp_path)
    watcher.join(timeout=5)
    assert killed, "no worker was caught with chunks assigned"
    assert killed[0][1] < N // OPTS["chunk_size"], "the kill came after the last chunk"
    local = _run()
    for name in ("y", "path", "estimate", "status"):
        np.testing.assert_array_equal(getattr(remote, name), getattr(local, name))
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    assert manifest["done"] == list(range(N // OPTS["chunk_size"]))   # each chunk once, every point once
    assert remote.computed_chunks == tuple(range(N // OPTS["chunk_size"]))


@pytest.mark.slow
def test_a_yk_table_network_sweep_on_the_cluster_equals_this_process(cluster):
    """A network sweep of ε with a continuum of a rate constant: the (y, kA) table the cost model builds is shipped
    with the plan to the workers (whichever survived the test above), and their chunks give this process's
    numbers bit for bit."""
    from sp_ode.networks.network import ReactionNetwork
    from sp_ode.systems.network import NetworkSystem

    address, _, _ = cluster
    net = ReactionNetwork("0 -> A, N*(0.1 + 0.2*y)*kA; A -> 0, 1; A -> A + B, 1; B -> 0, 1",
                          parameters={"N": 6.0, "kA": 1.0}, slow=["y"], name="cascade_k")
    system = NetworkSystem(net, net.state_space(bounds={"A": 5, "B": 5}), {"y": "1 - y - 2*y*E[B]/N"}, eps=1e-4)
    rng = np.random.default_rng(4)
    params = {"eps": 10 ** rng.uniform(-6, -4, 32), "kA": rng.uniform(0.8, 1.2, 32)}
    kw = dict(ts=TS, tol=1e-6, chunk_size=16, validate_fraction=0.0, progress_bar=False)
    local = sweep(system, params, (0.0, 2.0), "manifold", [0.2], **kw)
    assert local.plan["k_table"] == "kA" and np.all(local.path >= 0)        # the (y, k) table route
    remote = sweep(system, params, (0.0, 2.0), "manifold", [0.2], client=address, **kw)
    assert remote.plan["executor"]["executor"] == "dask" and remote.plan["k_table"] == "kA"
    for name in ("y", "path", "estimate", "status", "reason"):
        np.testing.assert_array_equal(getattr(remote, name), getattr(local, name), err_msg=name)


def test_unreachable_scheduler_fails_fast():
    address = f"tcp://127.0.0.1:{_free_port()}"     # nothing listens there
    start = time.monotonic()
    with pytest.raises(SweepClusterError, match="no Dask scheduler answered"):
        _run(client=address, connect_timeout=2.0)
    assert time.monotonic() - start < 30


def test_a_scheduler_that_accepts_and_never_answers_times_out():
    """A socket that accepts TCP connections and never says a word: connect_timeout=2 ends the wait in
    seconds (it hung for more than 420 s: the deadline held only until the connection was accepted)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])       # keep it open, never answer
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        start = time.monotonic()
        with pytest.raises(SweepClusterError, match="within 2 s"):
            _run(client=f"tcp://127.0.0.1:{server.getsockname()[1]}", connect_timeout=2.0)
        assert time.monotonic() - start < 10
        assert held, "the test server never saw a connection"
    finally:
        stop.set()
        thread.join(timeout=2)
        for c in held:
            c.close()
        server.close()


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="CPU affinity is Linux-only")
def test_local_cluster_pins_each_worker_to_its_own_core():
    """client="local": one worker per core, each pinned to a distinct single core before any JAX work
    (sp_ode.core.cpu_pool: a one-thread XLA pool cannot deadlock in jaxlib 0.10.2's batched LAPACK)."""
    from sp_ode.core.cpu_pool import available_cores
    from sp_ode.sweeps._dask import connect

    client, cluster, _ = connect("local", 10.0)
    try:
        seen = client.run(lambda: sorted(os.sched_getaffinity(0)))
    finally:
        client.close()
        cluster.close()
    cores = available_cores()
    assert len(seen) == len(cores)
    assert all(len(v) == 1 for v in seen.values())
    assert sorted(v[0] for v in seen.values()) == cores


# --- client="local": refused without the main guard, started only where predicted faster ---------------------

SCRIPT = '''
import numpy as np
import sp_ode

entry = sp_ode.get_system("michaelis_menten")
{indent}result = sp_ode.sweep(entry.system, {{"eps": np.array([1e-4, 1e-3])}}, (0.0, 1.0), "manifold", [1.0],
{indent}                      ts=[1.0], tol=1e-6, route="full", validate_fraction=0.0, progress_bar=False,
{indent}                      client="local")
{indent}print("executor:", result.plan["executor"]["executor"])
'''


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_without_the_main_guard_is_refused_before_any_worker_starts(tmp_path, guarded):
    """Unguarded, client="local" ended in "Nanny failed to start" under a wall of multiprocessing
    "bootstrapping phase … freeze_support()" tracebacks (each spawned worker re-ran the script); now one typed
    error naming the guard, and no worker started.  The same script under the guard runs (exit 0)."""
    text = SCRIPT.format(indent="    " if guarded else "")
    if guarded:
        text = text.replace("\n    result", '\nif __name__ == "__main__":\n    result', 1)
    script = tmp_path / "script.py"
    script.write_text(text)
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=240, env=env,
                          cwd=tmp_path)
    if guarded:
        assert proc.returncode == 0, proc.stderr
        assert "executor: in-process" in proc.stdout       # 2 points: a cluster would not pay (below)
        return
    assert proc.returncode != 0
    assert proc.stderr.count("SweepMainGuardError:") == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("sp_ode.sweeps._dask.SweepMainGuardError:") and 'if __name__ == "__main__":' in last
    assert "line 6" in last and "script.py" in last
    for wall in ("Nanny failed to start", "freeze_support", "bootstrapping phase"):
        assert wall not in proc.stderr


def test_a_local_cluster_predicted_slower_is_not_started_and_the_result_says_why():
    """96 points of Michaelis–Menten: the counted work left after the chunk priced here is far below the
    start and compile cost of a worker, so client="local" runs in this process (a warning with the figures,
    the choice in result.plan["executor"]) and gives the in-process numbers bit for bit."""
    with pytest.warns(UserWarning, match="client='local' not started: predicted"):
        here = _run(client="local")
    ex = here.plan["executor"]
    assert ex["executor"] == "in-process" and ex["client"] == "local"
    f = ex["forecast"]
    assert f["points_left"] == N - OPTS["chunk_size"] and f["local_cluster_s"] >= f["in_process_s"]
    plain = _run()
    assert plain.plan["executor"] == {"executor": "in-process"}
    for name in ("y", "path", "estimate", "status"):
        np.testing.assert_array_equal(getattr(here, name), getattr(plain, name))


def test_the_cluster_forecast_is_counted_arithmetic():
    """w = 2 s of counted work over 8 points = 0.25 s per point; 100 points left: 25 s here, and on 2 workers
    T_start + 1 s compile + (25 + 4·TASK_S)/2 there (the cluster wins); with 10 points left it loses."""
    from sp_ode.sweeps import _cost

    priced = {"work": {"full": 1.5, "reduced_0": 0.5, "full_points": 8.0}, "points": np.arange(8)}
    f = _cost.cluster_forecast(priced, 100, 4, 2, 1.0)
    assert f["work_per_point_s"] == 0.25 and f["in_process_s"] == 25.0
    assert f["local_cluster_s"] == _cost.WORKER_START_S + 1.0 + (25.0 + 4 * _cost.TASK_S) / 2
    assert f["local_cluster_s"] < f["in_process_s"]
    small = _cost.cluster_forecast(priced, 10, 1, 2, 1.0)
    assert small["local_cluster_s"] > small["in_process_s"] == 2.5



@pytest.mark.parametrize("source, line, guarded", [
    ("import x\nx.sweep()\n", 2, False),
    ('if __name__ == "__main__":\n    x.sweep()\n', 2, True),
    ('if "__main__" == __name__:\n    x.sweep()\n', 2, True),
    ('try:\n    if __name__ == "__main__":\n        main()\nexcept E:\n    pass\n', 3, True),
    ('if __name__ == "__main__":\n    pass\nelse:\n    x.sweep()\n', 4, False),      # the else branch runs in workers
    ('if __name__ != "__main__":\n    x.sweep()\n', 2, False),
    ('def main():\n    x.sweep()\n\nmain()\n', 4, False),
])
def test_the_main_guard_is_read_from_the_line_that_leads_to_the_sweep(source, line, guarded):
    import ast

    from sp_ode.sweeps._dask import _guarded

    assert _guarded(ast.parse(source).body, line) is guarded
