"""sp_ode leaves JAX's process-wide configuration alone (docs/theory.md §9; issue 12 item 7).

Run in a fresh interpreter (the flag is process state): a float32 JAX program gives the
same dtypes and values before and after importing and using every public entry point,
while sp_ode's own results are float64 and inputs of other dtypes are converted or
rejected by name.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

# One worker runs this module (make test: --dist loadgroup), so its module fixture is built once, not per worker.
pytestmark = pytest.mark.xdist_group("test_precision")

_SCRIPT = textwrap.dedent(r'''
    import json, warnings
    import jax, jax.numpy as jnp
    import numpy as np

    def user_program():
        a = jnp.ones(3) * 0.1
        b = jnp.arange(3)
        c = jax.jit(lambda v: v @ v)(a)
        return {"a": str(a.dtype), "b": str(b.dtype), "c": str(c.dtype), "x64": bool(jax.config.jax_enable_x64),
                "value": float(c)}

    before = user_program()
    import sp_ode
    used = {}
    me3 = sp_ode.get_system("me3"); toy = sp_ode.get_system("toy")
    tr = sp_ode.simulate(me3, (0.0, 0.2), me3.x0, me3.y0); used["simulate"] = str(tr.x.dtype)
    tr = sp_ode.simulate(toy, (0.0, 0.2), toy.x0, toy.y0, backend="scipy"); used["simulate_scipy"] = str(tr.x.dtype)
    tr = sp_ode.simulate_reduced(me3, (0.0, 0.2), me3.y0); used["simulate_reduced"] = str(tr.y.dtype)
    cm = sp_ode.critical_manifold(me3.system, np.array([0.3])); used["critical_manifold"] = str(np.asarray(cm).dtype)
    h = sp_ode.slow_manifold(me3.system, 1); used["slow_manifold"] = str(np.asarray(h(np.array([0.3]))).dtype)
    Q32 = np.array([[-1.0, 1.0], [2.0, -2.0]], dtype=np.float32)
    used["stationary_distribution"] = str(np.asarray(sp_ode.stationary_distribution(Q32)).dtype)
    used["stationary_jax"] = str(sp_ode.stationary_jax(jnp.asarray(Q32)).dtype)
    used["stationary_method_jax"] = str(np.asarray(sp_ode.stationary_distribution(Q32, method="jax")).dtype)
    try:  # under the user's float32 trace sp_ode refuses rather than computing in float32
        jax.jit(sp_ode.stationary_jax)(jnp.asarray(Q32))
        used["stationary_jax_traced_f32"] = "accepted"
    except TypeError as exc:
        used["stationary_jax_traced_f32"] = "TypeError" if "`Q`" in str(exc) else str(exc)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cert = sp_ode.convergence_certificate(toy, [16, 32, 64, 128], order=1, num_times=21, extend=False)
    used["convergence_certificate"] = type(cert).__name__
    after = user_program()
    print(json.dumps({"before": before, "after": after, "used": used}))
''')


@pytest.fixture(scope="module")
def report():
    env = {"JAX_PLATFORMS": "cpu", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_user_float32_program_is_unchanged(report):
    before, after = report["before"], report["after"]
    assert before == {"a": "float32", "b": "int32", "c": "float32", "x64": False, "value": before["value"]}
    assert after == before  # same dtypes, same flag, bit-identical value


def test_sp_ode_computes_in_float64_whatever_the_user_setting(report):
    used = report["used"]
    for name in ("simulate", "simulate_scipy", "simulate_reduced", "critical_manifold", "slow_manifold",
                 "stationary_distribution", "stationary_jax", "stationary_method_jax"):
        assert used[name] == "float64", (name, used[name])
    assert used["stationary_jax_traced_f32"] == "TypeError"  # rejected by name, not silently float32
    assert used["convergence_certificate"] == "ConvergenceCertificate"


def test_the_check_sees_a_global_flip():
    # The negative control: a program that flips the flag changes the user's dtypes, and
    # the comparison above would catch it.
    script = _SCRIPT.split("before = user_program()")[0] + textwrap.dedent('''
        before = user_program()
        jax.config.update("jax_enable_x64", True)
        print(json.dumps({"before": before, "after": user_program()}))
    ''')
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                         env={"JAX_PLATFORMS": "cpu", "PATH": "/usr/bin:/bin"})
    rep = json.loads(out.stdout.strip().splitlines()[-1])
    assert rep["after"] != rep["before"]


def test_float32_states_are_converted():
    # A float32 x0/y0 is accepted and computed in float64 (the JAX flag is off in this process).
    import jax

    import sp_ode

    assert not jax.config.jax_enable_x64
    me3 = sp_ode.get_system("me3")
    tr = sp_ode.simulate(me3, (0.0, 0.1), np.asarray(me3.x0, np.float32), np.asarray(me3.y0, np.float32))
    assert tr.x.dtype == np.float64 and tr.success
    assert not jax.config.jax_enable_x64
