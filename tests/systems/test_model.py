"""Checks at the door for a user's own model (sp_ode.systems.model, README "Your own model").

Expected values: the shorthand and the four-argument forms of the same vector field must give
identical numbers (the wrapper adds no arithmetic); the 2-state generator Q = [[-a, a], [1, -1]]
has p_st = (1, a)/(1 + a) (docs/theory.md §6, two-state switch).
"""
from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import sp_ode
from sp_ode.cli import main
from sp_ode.systems.model import as_vector_field, check_model


def f2(x, y):
    return -(x - jnp.sin(y))


def g2(x, y):
    return -0.5 * y + x


def test_shorthand_is_wrapped_and_identical(x64):
    wrapped = as_vector_field("f", f2)
    x, y = jnp.array([0.3]), jnp.array([1.1])
    assert wrapped.__name__ == "f2"
    np.testing.assert_array_equal(wrapped(0.0, x, y, None), f2(x, y))
    assert as_vector_field("f", wrapped) is wrapped  # not wrapped twice

    def f4(t, x, y, args):
        return f2(x, y)

    # one wrapper per user function (compiled solves are cached on its identity), which keeps it
    assert as_vector_field("f", f4) is as_vector_field("f", f4) and as_vector_field("f", f4).fn is f4


def test_shorthand_system_simulates_like_the_full_signature():
    short = sp_ode.FastSlowSystem(f2, g2, eps=0.05)
    full = sp_ode.FastSlowSystem(lambda t, x, y, a: f2(x, y), lambda t, x, y, a: g2(x, y), eps=0.05)
    ts = np.linspace(0.0, 1.0, 5)
    a = sp_ode.simulate(short, (0.0, 1.0), [0.0], [1.0], ts=ts)
    b = sp_ode.simulate(full, (0.0, 1.0), [0.0], [1.0], ts=ts)
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.y, b.y)


def test_three_argument_function_is_refused():
    with pytest.raises(TypeError, match=r"`g` must take \(t, x, y, args\) or the shorthand \(x, y\); .* takes 3"):
        sp_ode.FastSlowSystem(f2, lambda t, x, y: y, eps=0.1)


def test_numpy_inside_f_names_the_function():
    def f_np(x, y):
        return np.tanh(x) - y  # numpy on a traced array

    system = sp_ode.FastSlowSystem(f_np, g2, eps=0.1)
    with pytest.raises(TypeError, match=r"`f` must be written with jax.numpy \(jnp.…\)"):
        check_model(system, [0.0], [1.0])


def test_python_if_inside_g_names_the_function():
    def g_if(x, y):
        return -y if x[0] > 0 else y

    system = sp_ode.FastSlowSystem(f2, g_if, eps=0.1)
    with pytest.raises(TypeError, match=r"`g` must be written with jax.numpy.*jnp.where"):
        check_model(system, [0.0], [1.0])


def test_wrong_output_shapes_name_expected_and_actual():
    system = sp_ode.FastSlowSystem(lambda x, y: jnp.concatenate([x, x]), g2, eps=0.1)
    with pytest.raises(ValueError, match=r"`f` must return shape \(m,\) = \(1,\), the shape of x0; got \(2,\)"):
        check_model(system, [0.0], [1.0])
    scalar_g = sp_ode.FastSlowSystem(f2, lambda x, y: jnp.sum(y), eps=0.1)
    with pytest.raises(ValueError, match=r"`g` must return shape \(d,\) = \(1,\).*got \(\)"):
        check_model(scalar_g, [0.0], [1.0])


def test_master_equation_dimensions_and_Q_shape(x64):
    def Q(y):
        a = jnp.exp(y[0])
        return jnp.array([[-a, a], [1.0, -1.0]])

    system = sp_ode.MasterEquationSystem(Q, lambda x, y: jnp.array([x[1] - 0.5]), P=16)
    found = check_model(system, [0.5, 0.5], [0.0])
    assert (found.m, found.d, found.n) == (2, 1, 2)
    # the wrapped g is the user's g: at y = 0, p_st = (1/2, 1/2) and g(p_st) = 0 (closed form).
    p = jnp.array([0.5, 0.5])
    assert float(found.system.g(0.0, p, jnp.array([0.0]), None)[0]) == 0.0
    with pytest.raises(ValueError, match=r"`Q_of_y` must return an \(n, n\) generator with n = len\(x0\) = 3"):
        check_model(system, [0.2, 0.3, 0.5], [0.0])


def test_bad_initial_states_and_objects():
    system = sp_ode.FastSlowSystem(f2, g2, eps=0.1)
    with pytest.raises(ValueError, match=r"`x0` must be a finite 1-D array"):
        check_model(system, [[0.0]], [1.0])
    with pytest.raises(TypeError, match=r"`system` must be an sp_ode.FastSlowSystem"):
        check_model(lambda x: x, [0.0], [1.0])


def test_verify_names_numpy_model_in_one_line(tmp_path, monkeypatch, capsys):
    (tmp_path / "mine.py").write_text(
        "import numpy as np\nimport jax.numpy as jnp\nimport sp_ode\n\n"
        "def Q(y):\n    a = np.exp(y[0])\n    return np.array([[-a, a], [1.0, -1.0]])\n\n"
        "system = sp_ode.MasterEquationSystem(Q, lambda x, y: jnp.array([x[0] - 0.5]), P=16)\n"
    )
    monkeypatch.chdir(tmp_path)
    code = main(["verify", "--system", "mine.py:system", "--x0", "0.5", "0.5", "--y0", "0", "--t-span", "0", "1",
                 "--smoke", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err
    assert err.startswith("sp-ode verify: error: `Q_of_y` must be written with jax.numpy")


@pytest.mark.parametrize("source, rule", [
    ("def Q(y):\n    return jnp.array([[1, 2]]\n", r"line \d+: not valid Python"),
    ("raise RuntimeError('factory exploded')\n", r"raised RuntimeError: factory exploded"),
])
def test_broken_model_file_is_one_line_naming_the_file(tmp_path, capsys, source, rule):
    import re

    path = tmp_path / "broken.py"
    path.write_text("import jax.numpy as jnp\n" + source)
    code = main(["verify", "--system", f"{path}:system", "--x0", "0.5", "--y0", "0", "--t-span", "0", "1",
                 "--smoke", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and str(path) in err and re.search(rule, err)

