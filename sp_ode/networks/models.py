"""A catalogue of reaction networks with slow variables and known answers (docs/theory.md §6, §7.6).

Each entry is a [`NetworkModel`][sp_ode.networks.models.NetworkModel]: the network, the projection it is meant to be
solved on, an ODE for each slow variable in expectations of the fast state (the
input of [`sp_ode.systems.network.NetworkSystem`][sp_ode.systems.network.NetworkSystem]), a starting slow
state, and the closed form it is checked against.

================  ===================================================================
`telegraph`     gene switching G_off ⇌ G_on (k_on·y, k_off), mRNA M made at k_m by G_on and
                  degraded at g_m.  Stationary mRNA law: the Poisson–beta mixture
                  P(m) = ∫₀¹ Poi(m; (k_m/g_m)u) Beta(u; k_on·y/g_m, k_off/g_m) du
                  (Peccoud & Ycart 1995; Raj et al. 2006).  Slow protein y' = k_p E[M] − g_p y.
`birth_death`   0 → M at k·y, M → 0 at g: Poisson(k·y/g), exactly so on {0…N} too (detailed
                  balance; births blocked at N).  Slow y' = a − b·E[M]·y.
`michaelis_menten`  E_T enzymes (few), E → C at k_f·y (binding substrate y), C → E at k_b
                  (unbinding) and k_cat (catalysis).  Each enzyme is an independent two-state
                  chain, so C ~ Binomial(E_T, y/(y + K_M)), K_M = (k_b + k_cat)/k_f, and the reduced
                  substrate flow y' = −k_cat E[C] = −k_cat E_T y/(K_M + y) is the stochastic QSSA
                  propensity of Rao & Arkin (2003), solved by y + K_M ln y = y0 + K_M ln y0 − k_cat E_T t.
`toggle_switch` A and B repress each other's production (Hill K, h); inducer y scales A's
                  production.  Bistable: p_st bimodal, nearly decoupled (NCD).  At y = 1 it is
                  the CME of [`sp_ode.cme_two_species`][sp_ode.markov.cme.cme_two_species] (an independent builder) and symmetric
                  under A ↔ B.  Slow y' = r(1 − y) − c·y·E[A]/N.
`cascade`       0 → A at N(0.1 + 0.2y), A → 0, A → A + B, B → 0 (all at 1) on an N×N grid:
                  monostable 2-D CME; E[A] = E[B] = N(0.1 + 0.2y) in closed form (linear
                  moment equations).  Slow y' = 1 − y − 2y·E[B]/N.  The benchmark model (n = N²).
================  ===================================================================
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sp_ode.core.catalogue import Catalogue
from sp_ode.networks.network import ReactionNetwork
from sp_ode.networks.state_space import StateSpace

__all__ = ["NetworkModel", "NETWORK_MODELS", "get_network_model", "telegraph", "birth_death",
           "michaelis_menten", "toggle_switch", "cascade", "poisson_beta_pmf"]


@dataclass(frozen=True, eq=False)
class NetworkModel:
    """A catalogue network with its projection, slow ODEs and closed forms.

    Attributes
    ----------
    name : str
    network : ReactionNetwork
    space_kwargs : dict
        Keyword arguments of `network.state_space`.
    slow : dict
        The slow ODEs, `{name: "rhs with E[...]"}`.
    y0 : ndarray (d,)
    closed_form : dict of str -> callable
        Known answers, e.g. `{"marginal M": fn(y) -> pmf}`; documented per model.
    eps : float
        The model's time-scale ratio ε: the one value every entry point uses for it
        (`sp_ode.systems.resolve.as_system`), 1e-2 unless the model says otherwise.
    t_span : (t0, t1)
        The default horizon on the slow clock.
    """

    name: str
    network: ReactionNetwork
    space_kwargs: dict
    slow: dict
    y0: np.ndarray
    closed_form: dict[str, Callable] = field(default_factory=dict)
    eps: float = 1e-2
    t_span: tuple[float, float] = (0.0, 2.0)

    def space(self) -> StateSpace:
        return self.network.state_space(**self.space_kwargs)


def poisson_beta_pmf(m: np.ndarray, alpha: float, beta: float, lam: float) -> np.ndarray:
    """P(M = m) of the telegraph model: Poisson(λu) mixed over u ~ Beta(α, β).

    Series form: P(m) = λᵐ/m! · (α)_m/(α+β)_m · ₁F₁(α + m; α + β + m; −λ)
    (Raj et al. 2006).  Evaluated with `scipy.special.hyp1f1` in log space.
    """
    from scipy.special import gammaln, hyp1f1

    m = np.asarray(m, dtype=np.float64)
    log = (m * np.log(lam) - gammaln(m + 1) + gammaln(alpha + m) - gammaln(alpha) + gammaln(alpha + beta)
           - gammaln(alpha + beta + m))
    return np.exp(log) * hyp1f1(alpha + m, alpha + beta + m, -lam)


def telegraph(N: int = 80, *, k_on: float = 1.0, k_off: float = 2.0, k_m: float = 20.0, g_m: float = 1.0,
              k_p: float = 0.1, g_p: float = 1.0) -> NetworkModel:
    """Telegraph gene expression, mRNA bound N (n = 2(N + 1))."""
    net = ReactionNetwork("G_off -> G_on, k_on*y; G_on -> G_off, k_off; G_on -> G_on + M, k_m; M -> 0, g_m",
                          parameters={"k_on": k_on, "k_off": k_off, "k_m": k_m, "g_m": g_m, "k_p": k_p, "g_p": g_p},
                          slow=["y"], name="telegraph")

    def marginal(y):
        return poisson_beta_pmf(np.arange(N + 1), k_on * float(np.ravel(y)[0]) / g_m, k_off / g_m, k_m / g_m)

    return NetworkModel("telegraph", net, {"bounds": {"M": N}, "initial": {"G_off": 1}},
                        {"y": "k_p*E[M] - g_p*y"}, np.array([1.0]), {"marginal M": marginal})


def birth_death(N: int = 60, *, k: float = 10.0, g: float = 1.0, a: float = 1.0, b: float = 0.1) -> NetworkModel:
    """Birth–death M with slow production factor y; p_st = Poisson(k·y/g) conditioned on {0…N}."""
    from scipy.stats import poisson

    net = ReactionNetwork("0 -> M, k*y; M -> 0, g", parameters={"k": k, "g": g, "a": a, "b": b}, slow=["y"],
                          name="birth_death")

    def marginal(y):
        pmf = poisson.pmf(np.arange(N + 1), k * float(np.ravel(y)[0]) / g)
        return pmf / pmf.sum()

    return NetworkModel("birth_death", net, {"bounds": {"M": N}}, {"y": "a - b*E[M]*y"}, np.array([1.0]),
                        {"marginal M": marginal})


def michaelis_menten(E_T: int = 3, *, k_f: float = 1.0, k_b: float = 1.0, k_cat: float = 1.0) -> NetworkModel:
    """Few-enzyme Michaelis–Menten with the substrate y slow (module docstring)."""
    from scipy.special import lambertw
    from scipy.stats import binom

    net = ReactionNetwork("bind: E -> C, k_f*y; unbind: C -> E, k_b; cat: C -> E, k_cat",
                          parameters={"k_f": k_f, "k_b": k_b, "k_cat": k_cat}, slow=["y"], name="michaelis_menten")
    K_M = (k_b + k_cat) / k_f

    def marginal(y):
        y = float(np.ravel(y)[0])
        return binom.pmf(np.arange(E_T + 1), E_T, y / (y + K_M))

    def reduced(t, y0):
        """y(t) of y' = −k_cat E_T y/(K_M + y): K_M·W((y0/K_M)·exp((y0 − k_cat E_T t)/K_M))."""
        y0 = float(np.ravel(y0)[0])
        t = np.asarray(t, dtype=np.float64)
        return K_M * np.real(lambertw((y0 / K_M) * np.exp((y0 - k_cat * E_T * t) / K_M)))

    return NetworkModel("michaelis_menten", net, {"initial": {"E": E_T}}, {"y": "-k_cat*E[C]"}, np.array([2.0]),
                        {"marginal C": marginal, "reduced y": reduced, "rao_arkin_rate":
                         lambda y: k_cat * E_T * y / (K_M + y)})


def toggle_switch(N: int = 50, *, a: float = 20.0, K: float = 6.0, h: float = 3.0, r: float = 1.0,
                  c: float = 1.0) -> NetworkModel:
    """Stochastic toggle switch on {0…N−1}² with inducer y (bistable; module docstring)."""
    net = ReactionNetwork("0 => A, a*y/(1 + (B/K)^h); A -> 0, 1; 0 => B, a/(1 + (A/K)^h); B -> 0, 1",
                          parameters={"a": a, "K": K, "h": h, "r": r, "c": c, "N": float(N)}, slow=["y"],
                          name="toggle_switch")
    return NetworkModel("toggle_switch", net, {"bounds": {"A": N - 1, "B": N - 1}},
                        {"y": "r*(1 - y) - c*y*E[A]/N"}, np.array([1.0]),
                        {"cme_two_species kwargs at y = 1": lambda: {"N": N, "production": a, "repression": (K, h)}})


def cascade(N: int = 32) -> NetworkModel:
    """Monostable two-species cascade on {0…N−1}² (the benchmark model; module docstring)."""
    net = ReactionNetwork("0 -> A, N*(0.1 + 0.2*y); A -> 0, 1; A -> A + B, 1; B -> 0, 1",
                          parameters={"N": float(N)}, slow=["y"], name="cascade")

    def means(y):
        y = float(np.ravel(y)[0])
        return {"A": N * (0.1 + 0.2 * y), "B": N * (0.1 + 0.2 * y)}

    return NetworkModel("cascade", net, {"bounds": {"A": N - 1, "B": N - 1}}, {"y": "1 - y - 2*y*E[B]/N"},
                        np.array([0.2]), {"means": means})


NETWORK_MODELS: Catalogue[NetworkModel] = Catalogue("network model", {
    "telegraph": telegraph, "birth_death": birth_death, "michaelis_menten": michaelis_menten,
    "toggle_switch": toggle_switch, "cascade": cascade,
}, builders=True)


def get_network_model(name: str, **kwargs) -> NetworkModel:
    """A catalogue model by name (keyword arguments go to its builder).

    Raises
    ------
    ValueError
        Unknown name (the message lists the valid ones).
    """

    return NETWORK_MODELS.lookup(name, **kwargs)
