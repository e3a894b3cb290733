"""FastSlowSystem / MasterEquationSystem: construction, validation, vector fields (no solves)."""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, strategies as st

from sp_ode.markov.families import FAMILIES
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem
from tests.checkers import EPS

# These tests evaluate f, g, φ and Q(y) themselves with JAX: in float64, as sp_ode does.
pytestmark = pytest.mark.usefixtures("x64")


def toy_f(t, x, y, args):
    return -x + y**2


def toy_g(t, x, y, args):
    return -x


def test_eps_and_P():
    s = FastSlowSystem(toy_f, toy_g, P=8)
    assert s.P == 8 and s.eps == 1 / 8
    s2 = s.with_eps(1e-3)
    assert s2.eps == 1e-3 and s2.P is None and s.P == 8  # a copy; the original is unchanged
    s3 = s2.with_P(16)
    assert s3.P == 16 and s3.eps == 1 / 16 and s3.f.fn is toy_f and s3.f is s.f
    with pytest.raises(AttributeError, match="immutable"):
        s.eps = 0.5


@pytest.mark.parametrize("kwargs, error, needle", [
    ({}, TypeError, "exactly one of `eps` and `P`"),
    ({"eps": 0.1, "P": 10}, TypeError, "exactly one of `eps` and `P`"),
    ({"eps": 0.0}, ValueError, "`eps` must be > 0"),
    ({"eps": -1.0}, ValueError, "`eps` must be > 0"),
    ({"eps": math.nan}, ValueError, "`eps` must be finite"),
    ({"eps": math.inf}, ValueError, "`eps` must be finite"),
    ({"eps": "0.1"}, TypeError, "`eps` must be a real number"),
    ({"P": 0}, ValueError, "`P` must be a positive integer"),
    ({"P": -4}, ValueError, "`P` must be a positive integer"),
    ({"P": 2.5}, TypeError, "`P` must be a positive integer"),
    ({"P": True}, TypeError, "`P` must be a positive integer"),
    ({"eps": 0.1, "m": 0}, ValueError, "`m` must be a positive integer"),
])
def test_bad_construction(kwargs, error, needle):
    with pytest.raises(error, match=needle):
        FastSlowSystem(toy_f, toy_g, **kwargs)


def test_non_callable_vector_field():
    with pytest.raises(TypeError, match="`f` must be callable"):
        FastSlowSystem(1.0, toy_g, eps=0.1)
    with pytest.raises(TypeError, match="`Q_of_y` must be callable"):
        MasterEquationSystem(np.eye(2), toy_g, eps=0.1)


def test_vector_field_toy():
    # closed form: at x = 0.5, y = 2, ε = 0.1: dx/dt = (−0.5 + 4)/0.1 = 35, dy/dt = −0.5
    s = FastSlowSystem(toy_f, toy_g, eps=0.1, m=1, d=1)
    np.testing.assert_allclose(s.vector_field(0.0, jnp.array([0.5, 2.0])), [35.0, -0.5], rtol=1e-15)
    with pytest.raises(ValueError, match="`m="):
        FastSlowSystem(toy_f, toy_g, eps=0.1).vector_field(0.0, jnp.zeros(2))


def test_check_shapes():
    s = FastSlowSystem(toy_f, toy_g, eps=0.1)
    assert s.check_shapes([0.0, 1.0], [1.0, 2.0]) == (2, 2)
    bad_f = FastSlowSystem(lambda t, x, y, a: jnp.zeros(3), toy_g, eps=0.1)
    with pytest.raises(ValueError, match=r"`f` must return an array of the shape of x, \(1,\); got \(3,\)"):
        bad_f.check_shapes([0.0], [1.0])
    bad_g = FastSlowSystem(toy_f, lambda t, x, y, a: jnp.sum(x), eps=0.1)
    with pytest.raises(ValueError, match=r"`g` must return an array of the shape of y, \(1,\); got \(\)"):
        bad_g.check_shapes([0.0], [1.0])
    declared = FastSlowSystem(toy_f, toy_g, eps=0.1, m=2, d=1)
    with pytest.raises(ValueError, match="`x0` must have shape"):
        declared.check_shapes([0.0], [1.0])


def test_slow_names_are_kept_and_checked():
    s = FastSlowSystem(toy_f, toy_g, eps=0.1, d=1, slow_names=["w"])
    assert s.slow_names == ("w",) and s.with_eps(0.01).slow_names == ("w",)
    assert FastSlowSystem(toy_f, toy_g, eps=0.1).slow_names is None   # default: messages say y
    me = MasterEquationSystem(FAMILIES["cycle3"], toy_g, eps=0.1, slow_names=("u",))
    assert me.slow_names == ("u",)
    # a name per component of y: counted at construction when d is given, else against y0
    with pytest.raises(ValueError, match=r"`slow_names` must name each of the d = 2 slow variables; got 1"):
        FastSlowSystem(toy_f, toy_g, eps=0.1, d=2, slow_names=("w",))
    with pytest.raises(ValueError, match=r"`slow_names` must name each component of y: 2 names"):
        FastSlowSystem(toy_f, toy_g, eps=0.1, slow_names=("s", "w")).check_shapes([0.0], [1.0])


@pytest.mark.parametrize("names, error, needle", [
    ("w", TypeError, r"`slow_names` must be a sequence of labels"),
    (("w", 1), TypeError, r"`slow_names\[1\]` must be a label \(a string\); got int"),
    (("w", " "), ValueError, r"`slow_names\[1\]` must be a non-empty label"),
    (("w", "w"), ValueError, r"`slow_names` must be distinct labels; \['w'\]"),
])
def test_bad_slow_names_are_refused(names, error, needle):
    with pytest.raises(error, match=needle):
        FastSlowSystem(toy_f, toy_g, eps=0.1, slow_names=names)


class _Boom(Exception):
    pass


def test_user_exception_surfaces_unchanged():
    boom = _Boom("inside f")

    def f(t, x, y, args):
        raise boom

    with pytest.raises(_Boom) as info:
        FastSlowSystem(f, toy_g, eps=0.1).check_shapes([0.0], [1.0])
    assert info.value is boom


def test_master_equation_from_family():
    fam = FAMILIES["cycle3"]
    s = MasterEquationSystem(fam, lambda t, x, y, a: x[:1] - y, eps=1e-2)
    assert (s.n, s.m, s.d) == (3, 3, 1)
    y = np.array([0.3])
    np.testing.assert_array_equal(s.Q(y), fam(y))
    x = np.array([0.2, 0.3, 0.5])
    # f = Q(y)ᵀx, the master equation (docs/theory.md §2), evaluated independently in NumPy
    np.testing.assert_allclose(s.f(0.0, jnp.asarray(x), jnp.asarray(y), None), fam(y).T @ x, rtol=1e-14)
    with pytest.raises(ValueError, match="`n` must match family 'cycle3'"):
        MasterEquationSystem(fam, lambda t, x, y, a: y, eps=1e-2, n=4)
    with pytest.raises(ValueError, match="`Q_of_y` must return an \\(n, n\\) generator"):
        MasterEquationSystem(lambda y: jnp.zeros((2, 2)), lambda t, x, y, a: y, eps=0.1).check_shapes(
            jnp.ones(3) / 3, [0.0])


@given(st.lists(st.floats(0.01, 1.0), min_size=10, max_size=10), st.floats(-1.0, 1.0))
def test_master_equation_conserves_mass(weights, y):
    # 1ᵀQᵀx = (Q1)ᵀx = 0 for any x: the fast field is tangent to the simplex (docs/theory.md §2).
    s = MasterEquationSystem(FAMILIES["ring10"], lambda t, x, y, a: -y, P=100)
    x = np.asarray(weights) / np.sum(weights)
    fx = np.asarray(s.f(0.0, jnp.asarray(x), jnp.array([y]), None))
    Q = FAMILIES["ring10"](np.array([y]))
    assert abs(fx.sum()) <= 50 * 10 * EPS * np.max(np.abs(Q))


def test_master_equation_jacobian_matches_plain_autodiff():
    # f carries a hand-written JVP, d(Qᵀx) = Qᵀdx + (∂_yQ·dy)ᵀx, so that Jacobians build Q(y)
    # once; its first and second derivatives must equal those of the plain expression Q(y)ᵀx.
    fam = FAMILIES["cycle3_2d"]
    s = MasterEquationSystem(fam, lambda t, x, y, a: x[:2] - y, eps=1e-2)
    x, y = jnp.array([0.2, 0.3, 0.5]), jnp.array([0.4, -0.7])

    def plain(x, y):
        return fam(y).T @ x

    def ours(x, y):
        return s.f(0.0, x, y, None)

    for d in (jax.jacrev, jax.hessian):  # reverse mode, and forward-over-reverse
        mine_all = jax.jit(d(ours, argnums=(0, 1)))(x, y)
        for mine, ref in zip(mine_all, jax.jit(d(plain, argnums=(0, 1)))(x, y)):
            leaves = zip(jax.tree_util.tree_leaves(mine), jax.tree_util.tree_leaves(ref))
            for a, b in leaves:
                np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13 * float(jnp.max(jnp.abs(b))))


def test_master_equation_systems_over_one_family_share_f():
    # compiled solves are cached on the identity of f: a second system over the same Q_of_y
    # (e.g. every get_system("me3")) must not recompile
    fam = FAMILIES["cycle3"]
    a = MasterEquationSystem(fam, lambda t, x, y, args: -y, eps=1e-2)
    b = MasterEquationSystem(fam, lambda t, x, y, args: y, P=7)
    assert a.f is b.f
    assert MasterEquationSystem(FAMILIES["ring10"], a.g, eps=0.1).f is not a.f


def test_pickled_system_keeps_float64_parameters_outside_the_float64_scope():
    """A system sent to another process (Dask) keeps its parameters bit for bit: float64 JAX arrays
    are pickled as numpy arrays (unpickled outside JAX's float64 scope they came back float32)."""
    import pickle

    from sp_ode.systems.catalogue import michaelis_menten

    s = michaelis_menten(lam=0.3).system
    back = pickle.loads(pickle.dumps(s))
    assert back.args["lam"].dtype == np.float64 and float(back.args["lam"]) == 0.3
    assert float(np.float32(0.3)) != 0.3          # the check would catch a float32 round trip
    # copies made by with_eps/with_args still share the original leaves (no conversion on copy)
    assert s.with_eps(1e-3).args["lam"] is s.args["lam"]
