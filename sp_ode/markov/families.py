"""Built-in y-dependent generator families Q(y) (docs/theory.md §2, §6).

A family is a map y ∈ D ⊂ ℝᵈ ↦ Q(y), an n×n generator (rates Q[i, j] ≥ 0,
rows summing to zero) that is irreducible and smooth on the domain D.  These
are the reference problems for the manifold identity φ(y) = p_st(y) (T1), the
fast–slow catalogue (`sp_ode.systems`) and the φ_θ fits (`neural.phi`).

Every `Q` here is written once in the array namespace of its argument: a
NumPy `y` gives a NumPy matrix, a JAX `y` (or tracer) gives a JAX matrix, so
the same family is `jit`/`vmap`/`grad`-compatible without importing JAX here.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sp_ode.core.catalogue import Catalogue
from sp_ode.core.validation import check_finite_array, check_positive_int


def array_namespace(y):
    """`jax.numpy` for JAX arrays and tracers, `numpy` otherwise."""
    if type(y).__module__.startswith("jax"):
        import jax.numpy as jnp

        return jnp
    return np


def _from_rates(R, xp):
    """Q = R − diag(R 1): a generator from a matrix of off-diagonal rates."""
    n = R.shape[-1]
    R = R * (1.0 - xp.eye(n))
    return R - xp.diag(R.sum(axis=-1))


@dataclass(frozen=True)
class GeneratorFamily:
    """A smooth family of irreducible generators Q(y) on a box domain.

    Attributes
    ----------
    name
        Catalogue name.
    n
        Number of states (the fast dimension m = n).
    d
        Dimension of y.
    rates
        Callable y (d,) -> Q (n, n), in the namespace of `y`.
    lower, upper
        The box domain D = [lower, upper] ⊂ ℝᵈ, each shape (d,).
    description
        One line for tables and reports.
    states : tuple of n str, optional
        The states' names (tables and figures use them instead of indices).
    """

    name: str
    n: int
    d: int
    rates: Callable
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    description: str = ""
    closed_form: Callable | None = field(default=None, compare=False)
    states: tuple[str, ...] | None = field(default=None, compare=False)

    def __call__(self, y):
        """Q(y), shape (n, n); `y` has shape (d,) (a scalar is accepted when d = 1)."""
        xp = array_namespace(y)
        y = xp.reshape(xp.asarray(y, dtype=xp.float64), (self.d,))
        return self.rates(y)

    def check_y(self, y, name: str = "y") -> np.ndarray:
        """Validate y for this family: finite, shape (d,) or (N, d); returns float64 (…, d)."""
        y = check_finite_array(name, y)
        if self.d == 1 and y.ndim <= 1:
            y = y.reshape(-1, 1) if y.ndim == 1 else y.reshape(1)
        if y.shape[-1:] != (self.d,) or y.ndim > 2:
            raise ValueError(f"`{name}` must have shape (d,) or (N, d) with d = {self.d} for family {self.name!r}; got {y.shape}.")
        return y

    def batch(self, ys) -> np.ndarray:
        """Q at many points: ys (N, d) -> (N, n, n) NumPy array."""
        ys = np.asarray(ys, dtype=np.float64).reshape(-1, self.d)
        return np.stack([np.asarray(self(y)) for y in ys])

    def grid(self, num: int = 41) -> np.ndarray:
        """A regular grid over the domain: (num, 1) for d = 1, (num**d, d) otherwise."""
        num = check_positive_int("num", num)
        axes = [np.linspace(lo, hi, num) for lo, hi in zip(self.lower, self.upper)]
        mesh = np.meshgrid(*axes, indexing="ij")
        return np.stack([m.ravel() for m in mesh], axis=-1)


# --- the families -------------------------------------------------------------

def _switch2(y):
    xp = array_namespace(y)
    a, b = xp.exp(y[0]), xp.ones_like(y[0])
    return xp.stack([xp.stack([-a, a]), xp.stack([b, -b])])


def _switch2_closed_form(y):
    """p_st = (b, a)/(a + b) with a = e^y, b = 1 (docs/theory.md §6)."""
    a = np.exp(np.asarray(y, dtype=np.float64).reshape(-1)[0])
    return np.array([1.0, a]) / (1.0 + a)


def _cycle3(y):
    """A non-reversible 3-state cycle: the clockwise rates grow with y, the others do not."""
    xp = array_namespace(y)
    s = y[0]
    one = xp.ones_like(s)
    R = xp.stack([
        xp.stack([0.0 * one, 2.0 * xp.exp(s), 0.5 * one]),
        xp.stack([1.0 * one, 0.0 * one, 1.0 + xp.exp(-s)]),
        xp.stack([1.5 * xp.exp(s / 2), 0.3 * one, 0.0 * one]),
    ])
    return _from_rates(R, xp)


def _cycle3_2d(y):
    """3 states, two slow variables: y₀ tilts the cycle, y₁ the exit rates of state 2."""
    xp = array_namespace(y)
    s, u = y[0], y[1]
    one = xp.ones_like(s)
    R = xp.stack([
        xp.stack([0.0 * one, xp.exp(s), 0.5 + 0.25 * xp.tanh(u)]),
        xp.stack([1.0 * one, 0.0 * one, xp.exp(-s + 0.5 * u)]),
        xp.stack([xp.exp(u), 0.4 * one, 0.0 * one]),
    ])
    return _from_rates(R, xp)


def _make_ring(n: int):
    """n-state ring with position-dependent forward/backward rates and a drift set by y.

    Forward i→i+1: e^{y}(1 + ½ sin(2πi/n)); backward i→i−1: 1 + ½ cos(2πi/n).
    Non-reversible for y ≠ 0 (a net current round the ring), irreducible for all y.
    """
    angles = 2 * np.pi * np.arange(n) / n
    fwd0 = 1.0 + 0.5 * np.sin(angles)
    bwd0 = 1.0 + 0.5 * np.cos(angles)
    shift = np.roll(np.eye(n), 1, axis=1)  # shift[i, i+1] = 1

    def ring(y):
        xp = array_namespace(y)
        fwd = xp.exp(y[0]) * xp.asarray(fwd0)
        R = fwd[:, None] * xp.asarray(shift) + xp.asarray(bwd0)[:, None] * xp.asarray(shift.T)
        return _from_rates(R, xp)

    return ring


FAMILIES: Catalogue[GeneratorFamily] = Catalogue("generator family", {
    f.name: f
    for f in [
        GeneratorFamily("cycle3", 3, 1, _cycle3, (-2.0,), (2.0,),
                        "3-state non-reversible cycle, rates e^{±y} (the default)"),
        GeneratorFamily("switch2", 2, 1, _switch2, (-2.0,), (2.0,),
                        "2-state switch a = e^y, b = 1; p_st = (b, a)/(a + b)",
                        closed_form=_switch2_closed_form),
        GeneratorFamily("cycle3_2d", 3, 2, _cycle3_2d, (-1.5, -1.5), (1.5, 1.5),
                        "3-state cycle driven by two slow variables"),
        GeneratorFamily("ring10", 10, 1, _make_ring(10), (-1.0,), (1.0,),
                        "10-state driven ring"),
        GeneratorFamily("ring20", 20, 1, _make_ring(20), (-1.0,), (1.0,),
                        "20-state driven ring"),
        GeneratorFamily("ring50", 50, 1, _make_ring(50), (-1.0,), (1.0,),
                        "50-state driven ring"),
    ]
}, builders=False)

DEFAULT_FAMILY = "cycle3"


def get_family(name: str = DEFAULT_FAMILY) -> GeneratorFamily:
    """The built-in family called `name` (see `FAMILIES`)."""
    return FAMILIES.lookup(name)
