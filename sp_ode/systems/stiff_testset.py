"""Four standard stiff problems as fast–slow systems, with published reference values.

The Test Set for IVP Solvers (F. Mazzia and C. Magherini, release 2.4, University of
Bari, 2008; Hairer & Wanner, *Solving ODEs II*, §IV.10) gives each problem with a
reference solution at the final time, computed there by RADAU5 in extended precision
(uround 1.01e-19, rtol = atol = 1.1e-18).  The values below are copied from the Test
Set's Fortran problem files (`vdpol.f`, `rober.f`, `orego.f`, `hires.f`,
subroutine `solut`), digit for digit.

Each problem is written as ε dx/dt = f(x, y), dy/dt = g(x, y) (docs/theory.md §2);
the splitting is a choice, stated per problem:

`vdpol`  van der Pol, ε = 1e-6: x = y₂ (the fast velocity), y = y₁.  The Test
           Set's own form ε y₂' = (1 − y₁²) y₂ − y₁, y₁' = y₂, t ∈ [0, 2].
`rober`  Robertson's reactions: x = y₂ (the fast intermediate species), y = (y₁, y₃),
           ε = 1/(3·10⁷), the fastest rate constant, so that
           f = (0.04 y₁ − 10⁴ y₂ y₃)/(3·10⁷) − y₂²; t ∈ [0, 10¹¹].
`orego`  the Oregonator: x = y₁, ε = 1/77.27 (the Test Set's scale parameter s),
           y = (y₂, y₃); t ∈ [0, 360].
`hires`  High Irradiance RESponse: no natural small parameter, so ε = 1; the split
           puts in x the three species of the fast reaction 280·y₆·y₈ (x = (y₆, y₇, y₈)),
           y = (y₁, …, y₅); t ∈ [0, 321.8122].

`StiffProblem.reference` is ordered as the state [x, y] of `sp_ode.simulate`;
`StiffProblem.order` maps it back to the Test Set's numbering.  The tolerances a
problem is run at follow the Test Set's practice of an absolute tolerance scaled
to the size of the components: `atol = atol_factor · rtol`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from sp_ode.core.catalogue import Catalogue
from sp_ode.systems.system import FastSlowSystem

__all__ = ["StiffProblem", "STIFF_PROBLEMS", "get_stiff_problem", "significant_digits"]


@dataclass(frozen=True, eq=False)
class StiffProblem:
    """A Test Set problem split as a fast–slow system.

    Attributes
    ----------
    name : str
    system : FastSlowSystem
    t_span : (t0, t1)
    x0, y0 : ndarray
        The initial fast and slow states
    reference : ndarray (m + d,)
        The published value at t1, ordered as [x, y]
    order : tuple of int, Test Set component numbers (1-based) of [x, y]
    atol_factor : float
        Atol = atol_factor · rtol
    splitting : str
        The choice of x, y and ε in words
    """

    name: str
    system: FastSlowSystem
    t_span: tuple[float, float]
    x0: np.ndarray
    y0: np.ndarray
    reference: np.ndarray
    order: tuple[int, ...]
    atol_factor: float
    splitting: str

    def atol(self, rtol: float) -> float:
        return self.atol_factor * rtol


def significant_digits(z_end, reference) -> float:
    """scd = −log10 ‖(z − ref)/ref‖∞, the Test Set's significant correct digits (relative error)."""
    z_end, reference = np.asarray(z_end, float), np.asarray(reference, float)
    rel = np.max(np.abs(z_end - reference) / np.abs(reference))
    return float(-np.log10(max(rel, 1e-300)))


# --- vdpol -------------------------------------------------------------------------------

def _vdpol_f(t, x, y, args):
    return (1.0 - y ** 2) * x - y


def _vdpol_g(t, x, y, args):
    return x


# --- rober -------------------------------------------------------------------------------

_K1, _K2, _K3 = 0.04, 3e7, 1e4


def _rober_f(t, x, y, args):
    return (_K1 * y[:1] - _K3 * x * y[1:]) / _K2 - x ** 2


def _rober_g(t, x, y, args):
    return jnp.concatenate([-_K1 * y[:1] + _K3 * x * y[1:], _K2 * x ** 2])


# --- orego -------------------------------------------------------------------------------

_S, _W, _Q = 77.27, 0.161, 8.375e-6


def _orego_f(t, x, y, args):
    return y[:1] + x * (1.0 - _Q * x - y[:1])


def _orego_g(t, x, y, args):
    return jnp.concatenate([(y[1:] - (1.0 + x) * y[:1]) / _S, _W * (x - y[1:])])


# --- hires -------------------------------------------------------------------------------

def _hires_f(t, x, y, args):
    y6, y7, y8 = x[0], x[1], x[2]
    r = 280.0 * y6 * y8
    return jnp.stack([-r + 0.69 * y[3] + 1.71 * y[4] - 0.43 * y6 + 0.69 * y7,
                      r - 1.81 * y7,
                      -r + 1.81 * y7])


def _hires_g(t, x, y, args):
    y1, y2, y3, y4, y5 = y[0], y[1], y[2], y[3], y[4]
    y6, y7 = x[0], x[1]
    return jnp.stack([-1.71 * y1 + 0.43 * y2 + 8.32 * y3 + 0.0007,
                      1.71 * y1 - 8.75 * y2,
                      -10.03 * y3 + 0.43 * y4 + 0.035 * y5,
                      8.32 * y2 + 1.71 * y3 - 1.12 * y4,
                      -1.745 * y5 + 0.43 * y6 + 0.43 * y7])


def _build() -> dict[str, StiffProblem]:
    a = np.array
    return {
        "vdpol": StiffProblem(
            "vdpol", FastSlowSystem(_vdpol_f, _vdpol_g, eps=1e-6, m=1, d=1, name="vdpol"), (0.0, 2.0),
            a([0.0]), a([2.0]), a([-0.8928097010247975, 1.706167732170483]), (2, 1), 1.0,
            "x = y2, y = y1, eps = 1e-6 (the Test Set's own parameter)"),
        "rober": StiffProblem(
            "rober", FastSlowSystem(_rober_f, _rober_g, eps=1.0 / _K2, m=1, d=2, name="rober"), (0.0, 1e11),
            a([0.0]), a([1.0, 0.0]),
            a([0.8333360770334713e-13, 0.2083340149701255e-7, 0.9999999791665050]), (2, 1, 3), 1e-7,
            "x = y2 (fast intermediate), y = (y1, y3), eps = 1/3e7 (fastest rate constant)"),
        "orego": StiffProblem(
            "orego", FastSlowSystem(_orego_f, _orego_g, eps=1.0 / _S, m=1, d=2, name="orego"), (0.0, 360.0),
            a([1.0]), a([2.0, 3.0]),
            a([0.1000814870318523e1, 0.1228178521549917e4, 0.1320554942846706e3]), (1, 2, 3), 1.0,
            "x = y1, y = (y2, y3), eps = 1/77.27 (the scale parameter s)"),
        "hires": StiffProblem(
            "hires", FastSlowSystem(_hires_f, _hires_g, eps=1.0, m=3, d=5, name="hires"), (0.0, 321.8122),
            a([0.0, 0.0, 0.0057]), a([1.0, 0.0, 0.0, 0.0, 0.0]),
            a([0.6238968252742796e-2, 0.2849998395185769e-2, 0.2850001604814231e-2,
               0.7371312573325668e-3, 0.1442485726316185e-3, 0.5888729740967575e-4,
               0.1175651343283149e-2, 0.2386356198831331e-2]), (6, 7, 8, 1, 2, 3, 4, 5), 1e-4,
            "x = (y6, y7, y8) (species of the fast reaction 280 y6 y8), y = (y1..y5), eps = 1 "
            "(no natural small parameter)"),
    }


@functools.cache
def _problems() -> dict[str, StiffProblem]:
    return _build()


def _builder(name: str):
    def build() -> StiffProblem:
        return _problems()[name]   # built once, reused: compiled solves are cached on the system
    build.__doc__ = f"The Test Set problem {name!r}."
    return build


STIFF_PROBLEMS: Catalogue[StiffProblem] = Catalogue(
    "stiff problem", {name: _builder(name) for name in ("vdpol", "rober", "orego", "hires")}, builders=True)


def get_stiff_problem(name: str) -> StiffProblem:
    """The Test Set problem `name` (one of `STIFF_PROBLEMS`), built once and reused.

    Raises
    ------
    ValueError
        Unknown `name` (the valid names are listed).
    """
    return STIFF_PROBLEMS.lookup(name)
