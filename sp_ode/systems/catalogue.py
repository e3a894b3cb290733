"""A catalogue of fast–slow systems with closed forms or known asymptotics.

Each entry is a factory `SYSTEMS[name](eps=None, P=None, **params)` returning a
`CatalogueEntry`: the system, a default time span and initial state, and what is
known about it — the critical manifold φ(y), the first-order slow-manifold
correction h₁(y) (h_ε = φ + ε h₁ + O(ε²), T3), the reduced solution y₀(t) and,
for linear systems, the exact solution.  `get_system(name, **overrides)` is the
checked front door.

=====================  ============================================================
name                   system and reference
=====================  ============================================================
`toy`                ε x' = −x + y², y' = −x (docs/theory.md §6); φ = y², h₁ = 2y³,
                       y₀(t) = 1/(1 + t), so y₀(2) = 1/3
`linear`             ε x' = A x + B y, y' = C x + D y (m = d = 2); exact
                       solution expm(M t) z₀; φ = −A⁻¹B y
`averaging2`         2-state switch Q(y) = [[−eʸ, eʸ], [1, −1]], y' = c x₀;
                       y₀ solves y + eʸ = y(0) + e^{y(0)} + c t (Lambert W)
`michaelis_menten`   ε c' = s − (s + κ) c, s' = −s + (s + κ − λ) c (standard
                       QSSA); φ = s/(s + κ), s₀(t) = κ W((s(0)/κ) e^{(s(0) − λt)/κ})
`vanderpol`          ε x' = y − (x³/3 − x), y' = −x on its attracting branch
                       (default span (0, 0.5), before the fold reached at
                       t → 3/2 − ln 2); with `t_span=(0, 4)` relaxation oscillations
                       of period → 3 − 2 ln 2
`fitzhugh_nagumo`    ε v' = v − v³/3 − w + I, w' = 0.08(v + 0.7 − 0.8w); folds at
                       w = ±2/3 + I; I = 0 stays on the left branch, I = 0.5 reaches
                       the fold w = −1/6 (relaxation oscillation)
`me3`/`me10`/      master equation over families cycle3/ring10/ring50,
`me50`               y' = c(⟨w, x⟩ − y); φ = p_st(y) (T1); any other family
                       through `master_equation_entry` (e.g. ring20, the benchmark)
=====================  ============================================================
"""
from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import jax.numpy as jnp
import numpy as np

from sp_ode.core.catalogue import Catalogue
from sp_ode.core.precision import float64_callable, in_float64
from sp_ode.core.validation import check_choice, check_finite, check_positive
from sp_ode.markov.families import FAMILIES
from sp_ode.systems.system import FastSlowSystem, MasterEquationSystem

__all__ = ["CatalogueEntry", "SYSTEMS", "get_system", "master_equation_entry", "DEFAULT_SYSTEM"]

DEFAULT_SYSTEM = "me3"


@dataclass(frozen=True, eq=False)
class CatalogueEntry:
    """A catalogue system with its defaults and references.

    Attributes
    ----------
    name : str
    system : FastSlowSystem
    t_span : (t0, t1)
        The default horizon.
    x0 : ndarray (m,)
        The default initial state.
    y0 : ndarray (d,)
        The default initial state.
    description
        One line.
    reference
        Where the expected numbers come from (closed form, asymptotics).
    phi : callable y (d,) -> (m,) or None
        Critical manifold f(φ(y), y) = 0, JAX-traceable (None when it is not a graph over y).
    h1 : callable y (d,) -> (m,) or None
        First-order correction of the slow manifold, closed form where known.
    reduced_solution : callable t (K,) -> y₀ (K, d) or None
        Closed form of the reduced flow from the default y0.
    exact_solution : callable t (K,) -> (x (K, m), y (K, d)) or None
        Closed form of the full system (at this ε) from the default state.
    asymptotics : dict
        Known limits, e.g. `{"period_limit": 3 − 2 ln 2}` for van der Pol.
    """

    name: str
    system: FastSlowSystem
    t_span: tuple[float, float]
    x0: np.ndarray
    y0: np.ndarray
    description: str
    reference: str
    phi: Callable | None = None
    h1: Callable | None = None
    reduced_solution: Callable | None = None
    exact_solution: Callable | None = None
    asymptotics: dict = field(default_factory=dict)

    @property
    def eps(self) -> float:
        return self.system.eps

    @in_float64
    def simulate(self, **kwargs):
        """`sp_ode.simulate` from the default t_span, x0, y0 (keywords override them)."""
        # the package's public door (which resolves entries through sp_ode.systems.resolve, which knows this
        # module): called by its public name, not by a sibling import that would close a circle
        from sp_ode.systems import simulate

        t_span = kwargs.pop("t_span", self.t_span)
        x0, y0 = kwargs.pop("x0", self.x0), kwargs.pop("y0", self.y0)
        return simulate(self.system, t_span, x0, y0, **kwargs)


def _eps_or_P(eps, P, default_eps):
    return (default_eps, None) if eps is None and P is None else (eps, P)


# --- toy (docs/theory.md §6) --------------------------------------------------------------------

def _toy_f(t, x, y, args):
    return -x + y**2


def _toy_g(t, x, y, args):
    return -x


# Module-level (not per-call lambdas): compiled reduced solves are cached on φ's identity.
@float64_callable
def _toy_phi(y):
    return y**2


@float64_callable
def _toy_h1(y):
    return 2 * y**3


@in_float64
def toy(eps: float | None = None, P: int | None = None, y0: float = 1.0) -> CatalogueEntry:
    """ε x' = −x + y², y' = −x; x(0) = 0, y(0) = y0 (docs/theory.md §6).

    φ = y²; the invariance equation ε φ'(y)·g = f(φ + ε h₁, y) at first order gives
    h₁ = 2y³ (and at second order h₂ = 2y h₁ + y² h₁' = 10y⁴); the reduced flow
    y' = −y² gives y₀(t) = y0/(1 + y0 t) (1/3 at t = 2 for y0 = 1).

    Errors at t = 2 for y0 = 1, from matched asymptotics: the initial layer puts y
    ahead of y₀ by ε, and δ = y − y₀ obeys δ' = −2y₀δ − 2εy₀³, so
    δ(2) = −ε(2 ln 3 − 1)/9 = −0.1331ε; x − φ(y) → εh₁(1/3) = 0.0741ε; and
    x − (φ + εh₁) → ε²h₂(1/3) = 0.1235ε².  (docs/theory.md §6 quotes 1.33ε, 0.741ε and
    1.23ε², ten times these; simulations at ε = 1e-3 give 0.1332ε for the slow error.)
    """
    eps, P = _eps_or_P(eps, P, 1e-2)
    y0 = check_finite("y0", y0)
    system = FastSlowSystem(_toy_f, _toy_g, eps=eps, P=P, m=1, d=1, name="toy")
    return CatalogueEntry(
        "toy", system, (0.0, 2.0), np.zeros(1), np.array([y0]),
        "ε x' = −x + y², y' = −x (docs/theory.md §6)",
        "closed forms: φ = y², h₁ = 2y³, y₀(t) = y(0)/(1 + y(0) t)",
        phi=_toy_phi, h1=_toy_h1,
        reduced_solution=lambda t: (y0 / (1 + y0 * np.asarray(t, float)))[:, None],
        asymptotics={"slow_error_coefficient": -(2 * math.log(3) - 1) / 9,   # y(2) − 1/3 ≈ this · ε
                     "manifold_error_coefficient": 2 / 27,                 # x(2) − φ ≈ this · ε
                     "corrected_error_coefficient": 10 / 81},              # x(2) − φ − εh₁ ≈ this · ε²
    )


# --- linear ---------------------------------------------------------------------------------

_LIN = {
    "A": np.array([[-1.0, 0.5], [0.3, -2.0]]),   # Hurwitz: eigenvalues −0.87, −2.13
    "B": np.eye(2),
    "C": np.array([[0.0, -1.0], [1.0, 0.0]]),
    "D": np.array([[-0.5, 0.5], [-0.5, -0.5]]),  # reduced matrix D − C A⁻¹B: eigenvalues −0.60, −0.29
}


def _lin_f(t, x, y, args):
    return args["A"] @ x + args["B"] @ y


def _lin_g(t, x, y, args):
    return args["C"] @ x + args["D"] @ y


_LIN_H0 = -np.linalg.solve(_LIN["A"], _LIN["B"])                                   # φ = H₀y
_LIN_H1 = np.linalg.solve(_LIN["A"], _LIN_H0 @ (_LIN["C"] @ _LIN_H0 + _LIN["D"]))  # h₁ = H₁y


@float64_callable
def _lin_phi(y):
    return jnp.asarray(_LIN_H0) @ y


@float64_callable
def _lin_h1(y):
    return jnp.asarray(_LIN_H1) @ y


@in_float64
def linear(eps: float | None = None, P: int | None = None) -> CatalogueEntry:
    """ε x' = A x + B y, y' = C x + D y with A Hurwitz (m = d = 2).

    Exact: z(t) = expm(M t) z(0), M = [[A/ε, B/ε], [C, D]].  φ(y) = H₀y with
    H₀ = −A⁻¹B; the invariance equation ε H(C H + D) = A H + B at first order gives
    h₁ = H₁y, H₁ = A⁻¹H₀(C H₀ + D); reduced y₀(t) = expm((D + C H₀) t) y(0).
    """
    import scipy.linalg

    eps, P = _eps_or_P(eps, P, 1e-2)
    args = {k: jnp.asarray(v) for k, v in _LIN.items()}
    system = FastSlowSystem(_lin_f, _lin_g, eps=eps, P=P, args=args, m=2, d=2, name="linear")
    A, B, C, D = (_LIN[k] for k in "ABCD")
    H0 = _LIN_H0
    x0, y0 = np.array([1.0, -1.0]), np.array([1.0, 0.5])
    M = np.block([[A / system.eps, B / system.eps], [C, D]])

    @float64_callable
    def exact(t):
        z = np.stack([scipy.linalg.expm(M * ti) @ np.concatenate([x0, y0]) for ti in np.atleast_1d(t)])
        return z[:, :2], z[:, 2:]

    @float64_callable
    def reduced(t):
        return np.stack([scipy.linalg.expm((D + C @ H0) * ti) @ y0 for ti in np.atleast_1d(t)])

    return CatalogueEntry(
        "linear", system, (0.0, 2.0), x0, y0, "linear fast–slow system, m = d = 2",
        "exact solution scipy.linalg.expm(M t) z(0), M = [[A/ε, B/ε], [C, D]]",
        phi=_lin_phi, h1=_lin_h1,
        reduced_solution=reduced, exact_solution=exact,
    )


# --- two-state averaging ----------------------------------------------------------------------

def _avg_g(t, x, y, args):
    return args["c"] * x[:1]


@float64_callable
def _switch_phi(y):
    a = jnp.exp(y[0])
    return jnp.stack([1.0, a]) / (1.0 + a)  # p_st = (b, a)/(a + b), b = 1 (docs/theory.md §6)


@in_float64
def averaging2(eps: float | None = None, P: int | None = None, c: float = 1.0, y0: float = -1.0) -> CatalogueEntry:
    """A fast 2-state switch slaved to y drives y through the time spent in state 0.

    Q(y) = [[−eʸ, eʸ], [1, −1]] (family switch2), y' = c x₀.  Averaging over the
    fast switching gives y' = c p₀(y) = c/(1 + eʸ), so y + eʸ = s(t) := y(0) + e^{y(0)} + c t
    and y₀(t) = s − W(e^s) (Lambert W, principal branch).
    """
    from scipy.special import lambertw

    eps, P = _eps_or_P(eps, P, 1e-2)
    c, y0 = check_positive("c", c), check_finite("y0", y0)
    system = MasterEquationSystem(FAMILIES["switch2"], _avg_g, eps=eps, P=P,
                                  args={"c": jnp.asarray(c)}, name="averaging2")

    @float64_callable
    def reduced(t):
        s = y0 + math.exp(y0) + c * np.asarray(t, float)
        return np.real(s - lambertw(np.exp(s)))[:, None]

    return CatalogueEntry(
        "averaging2", system, (0.0, 3.0), np.array([1.0, 0.0]), np.array([y0]),
        "two-state averaging: switch Q(y), y' = c x₀",
        "reduced closed form y₀ = s − W(e^s), s = y(0) + e^{y(0)} + c t; φ = (1, eʸ)/(1 + eʸ)",
        phi=_switch_phi, reduced_solution=reduced,
    )


# --- Michaelis–Menten ---------------------------------------------------------------------------

def _mm_f(t, x, y, args):
    return y - (y + args["kappa"]) * x


def _mm_g(t, x, y, args):
    return -y + (y + args["kappa"] - args["lam"]) * x


@functools.lru_cache(maxsize=64)
def _mm_closed_forms(kappa: float, lam: float):
    """(φ, h₁) for given κ, λ — the same function objects for the same values (cache keys)."""
    @float64_callable
    def phi(y):
        return y / (y + kappa)

    @float64_callable
    def h1(y):
        return kappa * lam * y / (y + kappa) ** 4
    return phi, h1


@in_float64
def michaelis_menten(eps: float | None = None, P: int | None = None, kappa: float = 1.0, lam: float = 0.5,
                     s0: float = 1.0) -> CatalogueEntry:
    """Michaelis–Menten kinetics in the standard QSSA scaling.

    Substrate s = y (slow), complex c = x (fast): ε c' = s − (s + κ)c,
    s' = −s + (s + κ − λ)c, c(0) = 0, s(0) = s0.  φ(s) = s/(s + κ); the reduced
    flow s' = −λ s/(s + κ) integrates to s₀(t) = κ W((s0/κ) e^{(s0 − λt)/κ})
    (Schnell & Mendoza 1997); first order h₁ = κλ s/(s + κ)⁴.
    """
    from scipy.special import lambertw

    eps, P = _eps_or_P(eps, P, 1e-2)
    kappa, s0 = check_positive("kappa", kappa), check_positive("s0", s0)
    lam = check_positive("lam", lam)
    args = {"kappa": jnp.asarray(kappa), "lam": jnp.asarray(lam)}
    system = FastSlowSystem(_mm_f, _mm_g, eps=eps, P=P, args=args, m=1, d=1, name="michaelis_menten", slow_names=("s",))

    @float64_callable
    def reduced(t):
        arg = (s0 / kappa) * np.exp((s0 - lam * np.asarray(t, float)) / kappa)
        return (kappa * np.real(lambertw(arg)))[:, None]

    return CatalogueEntry(
        "michaelis_menten", system, (0.0, 5.0), np.zeros(1), np.array([s0]),
        "Michaelis–Menten, standard QSSA scaling",
        "φ = s/(s + κ); reduced s₀(t) = κ W((s(0)/κ) e^{(s(0) − λt)/κ}); h₁ = κλ s/(s + κ)⁴",
        phi=_mm_closed_forms(kappa, lam)[0], h1=_mm_closed_forms(kappa, lam)[1],
        reduced_solution=reduced,
    )


# --- van der Pol ----------------------------------------------------------------------------------

def _vdp_f(t, x, y, args):
    return y - (x**3 / 3 - x)


def _vdp_g(t, x, y, args):
    return -x


@in_float64
def vanderpol(eps: float | None = None, P: int | None = None) -> CatalogueEntry:
    """Van der Pol in Liénard form: ε x' = y − (x³/3 − x), y' = −x, on one attracting branch.

    The critical manifold y = x³/3 − x folds at x = ±1 (not a graph over y: φ is
    None; the branch through the initial state is followed by Newton).  From
    (x, y) = (2, 2/3) the trajectory slides down the attracting branch x > 1 and
    reaches the fold (1, −2/3) at t = 3/2 − ln 2 ≈ 0.807 in the limit; the default
    time span (0, 0.5) stops well before it (x ≈ 1.60, y ≈ −0.23 at t = 0.5 on the reduced flow), so
    the reduction holds and `sp-ode verify` measures the Tikhonov rates (docs/theory.md §3.5).
    Past the fold the trajectory jumps: relaxation oscillations whose period tends to
    2∫₁² (x − 1/x) dx = 3 − 2 ln 2 ≈ 1.6137 as ε → 0, with an O(ε^{2/3}) correction
    from the folds: near (1, −2/3) the scaling x − 1 = ε^{1/3}U, t − t* = ε^{2/3}T gives
    the Riccati equation U' = −T − U², which blows up at T = |a₁| = 2.33811 (a₁ the first
    zero of Ai), so the first jump comes at t = 3/2 − ln 2 + 2.33811 ε^{2/3} + O(ε ln ε)
    (Mishchenko & Rozov 1980).  `t_span=(0, 4)` shows the oscillation (and verify's
    fold report).  Stiff: runs at ε down to 1e-6.
    """
    eps, P = _eps_or_P(eps, P, 1e-3)
    system = FastSlowSystem(_vdp_f, _vdp_g, eps=eps, P=P, m=1, d=1, name="vanderpol")
    return CatalogueEntry(
        "vanderpol", system, (0.0, 0.5), np.array([2.0]), np.array([2.0 / 3.0]),
        "van der Pol (Liénard form) on its attracting branch x > 1, before the fold",
        "fold at (x, y) = (1, −2/3), reached at t → 3/2 − ln 2; from (2, 2/3) the first jump is at "
        "t = 3/2 − ln 2 + 2.33811 ε^{2/3} + …; period → 3 − 2 ln 2",
        asymptotics={"period_limit": 3 - 2 * math.log(2), "first_jump_time_limit": 1.5 - math.log(2),
                     "jump_delay_coefficient": 2.338107410459767, "fold_y": -2.0 / 3.0},
    )


# --- FitzHugh–Nagumo -------------------------------------------------------------------------------

def _fhn_f(t, x, y, args):
    return x - x**3 / 3 - y + args["I"]


def _fhn_g(t, x, y, args):
    return args["a"] * (x + args["b"] - args["c"] * y)


@in_float64
def fitzhugh_nagumo(eps: float | None = None, P: int | None = None, I: float = 0.0, v0: float = -2.0,  # noqa: E741
                    w0: float = 0.0) -> CatalogueEntry:
    """FitzHugh–Nagumo: ε v' = v − v³/3 − w + I, w' = 0.08 (v + 0.7 − 0.8 w); v fast, w slow.

    The critical manifold w = v − v³/3 + I has folds at v = ±1, w = ±2/3 + I; the
    left branch v < −1 is attracting (D_x f = 1 − v² < 0) for w > −2/3 + I.
    I = 0 (default): the reduced flow on the left branch has a stable equilibrium at
    v* ≈ −1.1994, w* ≈ −0.6243 (v* + 0.7 = 0.8(v* − v*³/3)), above the fold w = −2/3,
    so from (−2, 0) the trajectory stays on the attracting branch and the reduction
    holds for all t.  I = 0.5: the equilibrium moves to the middle (repelling) branch,
    the slow flow carries w down to the fold w = −1/6 (reached at t ≈ 3) and the
    trajectory jumps: a relaxation oscillation, where the reduction ends
    (docs/theory.md §3.5).
    """
    eps, P = _eps_or_P(eps, P, 1e-3)
    I, v0, w0 = check_finite("I", I), check_finite("v0", v0), check_finite("w0", w0)  # noqa: E741
    args = {"I": jnp.asarray(I), "a": jnp.asarray(0.08), "b": jnp.asarray(0.7), "c": jnp.asarray(0.8)}
    system = FastSlowSystem(_fhn_f, _fhn_g, eps=eps, P=P, args=args, m=1, d=1, name="fitzhugh_nagumo", slow_names=("w",))
    return CatalogueEntry(
        "fitzhugh_nagumo", system, (0.0, 20.0), np.array([v0]), np.array([w0]),
        f"FitzHugh–Nagumo, I = {I:g} (v fast, w slow)",
        "folds at v = ±1, w = ±2/3 + I; for I = 0 the left-branch equilibrium w* ≈ −0.6243 lies above the "
        "fold w = −2/3",
        asymptotics={"fold_y": (-2.0 / 3.0 + I, 2.0 / 3.0 + I)},
    )


# --- master-equation systems ------------------------------------------------------------------

def _me_g(t, x, y, args):
    return args["c"] * (jnp.dot(args["w"], x) - y)


def _me_weights(family) -> np.ndarray:
    """w_i inside the family's domain, so ⟨w, x⟩ ∈ D for x on the simplex and y stays in D."""
    n, hi = family.n, family.upper[0]
    if n == 3:
        return np.array([-1.5, 0.5, 1.8])
    return 0.9 * hi * np.cos(2 * np.pi * np.arange(n) / n + 0.3)


@in_float64
def master_equation_entry(family_name: str, name: str, eps: float | None = None, P: int | None = None, c: float = 1.0,
                          y0: float | None = None) -> CatalogueEntry:
    """ε x' = Q(y)ᵀx, y' = c(⟨w, x⟩ − y) over a built-in generator family.

    Since x ∈ Δⁿ⁻¹, ⟨w, x⟩ ∈ [min w, max w] ⊂ D, so y started in that interval
    stays in the family's domain.  φ(y) = p_st(y) (T1); the reduced flow
    y' = c(⟨w, p_st(y)⟩ − y) relaxes to a fixed point y* = ⟨w, p_st(y*)⟩.  Reference:
    p_st from `sp_ode.stationary_distribution` (GTH); no closed-form trajectory.
    """
    family = FAMILIES[check_choice("family_name", family_name, FAMILIES)]
    eps, P = _eps_or_P(eps, P, 1e-2)
    c = check_positive("c", c)
    w = _me_weights(family)
    y0 = (0.5 * family.upper[0] if y0 is None else check_finite("y0", y0))
    if not w.min() <= y0 <= w.max():
        raise ValueError(f"`y0` must lie in [min w, max w] = [{w.min():.3g}, {w.max():.3g}] for {name!r} so y "
                         f"stays in the family domain; got {y0}.")
    system = MasterEquationSystem(family, _me_g, eps=eps, P=P,
                                  args={"c": jnp.asarray(c), "w": jnp.asarray(w)}, name=name)
    x0 = np.zeros(family.n)
    x0[0] = 1.0  # start at a vertex of the simplex: a visible initial layer
    return CatalogueEntry(
        name, system, (0.0, 2.0), x0, np.array([y0]),
        f"master equation over {family_name} ({family.n} fast states), y' = c(⟨w, x⟩ − y)",
        "φ = p_st(y) (T1), checked against stationary_distribution; reduced flow by simulate_reduced",
        phi=system.stationary_phi(),
    )


def _me_factory(family_name: str, name: str):
    def factory(eps=None, P=None, c: float = 1.0, y0: float | None = None) -> CatalogueEntry:
        return master_equation_entry(family_name, name, eps=eps, P=P, c=c, y0=y0)
    factory.__name__ = name
    factory.__doc__ = master_equation_entry.__doc__
    return factory


SYSTEMS: Catalogue[CatalogueEntry] = Catalogue("system", {
    "toy": toy,
    "linear": linear,
    "averaging2": averaging2,
    "michaelis_menten": michaelis_menten,
    "vanderpol": vanderpol,
    "fitzhugh_nagumo": fitzhugh_nagumo,
    "me3": _me_factory("cycle3", "me3"),
    "me10": _me_factory("ring10", "me10"),
    "me50": _me_factory("ring50", "me50"),
}, builders=True)


@in_float64
def get_system(name: str = DEFAULT_SYSTEM, **overrides) -> CatalogueEntry:
    """The catalogue entry `name`, built with `overrides` (e.g. `eps=1e-3` or `P=256`).

    Returns
    -------
    CatalogueEntry
        `.system` is the FastSlowSystem; `sp_ode.simulate` also accepts the entry itself.

    Raises
    ------
    ValueError
        Unknown `name` (the message lists the valid names); bad override values.
    TypeError
        An override the system does not take (the message lists those it does).
    """
    return SYSTEMS.lookup(name, **overrides)
