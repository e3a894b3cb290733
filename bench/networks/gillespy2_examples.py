"""GillesPy2's example models (its test suite's ``example_models``), as `gillespy2.Model` builders.

Each builder writes one of GillesPy2's example models with GillesPy2's own parameters, initial
counts, volume and output times (the keyword arguments default to them; tests/networks/test_gillespy2.py
builds smaller variants of the dimerisation and Michaelis–Menten models through the same builders).
`EXAMPLES` lists them all, by name, in the order `bench.networks.transient_vs_ssa` runs them — the
ones whose CME does not fit in memory, or that carry features outside the CME (events, rules,
continuous species), included, so the benchmark says what happens to each.

gillespy2 is imported inside the builders: importing this module needs nothing optional.
"""
from __future__ import annotations

import numpy as np


def _model(name, species, parameters, reactions, times, volume=1.0):
    """A gillespy2.Model from plain tables: species {name: count}, parameters {name: value},
    reactions [(name, reactants, products, rate or None, propensity_function or None)]."""
    import gillespy2

    m = gillespy2.Model(name=name, volume=volume)
    m.add_parameter([gillespy2.Parameter(name=k, expression=v) for k, v in parameters.items()])
    m.add_species([gillespy2.Species(name=k, initial_value=v) for k, v in species.items()])
    for rname, reactants, products, rate, propensity in reactions:
        kw = {"rate": rate} if propensity is None else {"propensity_function": propensity}
        m.add_reaction(gillespy2.Reaction(name=rname, reactants=reactants, products=products, **kw))
    m.timespan(gillespy2.TimeSpan(np.asarray(times, dtype=float)))
    return m


def dimerization(k_c: float = 0.005, k_d: float = 0.08, monomer: int = 30, volume: float = 1.0):
    """Dimerization: 2 monomer <-> dimer (monomer + 2·dimer conserved), t ∈ 0 … 100 (101 times)."""
    return _model("dimerization", {"monomer": monomer, "dimer": 0}, {"k_c": k_c, "k_d": k_d},
                  [("r_creation", {"monomer": 2}, {"dimer": 1}, "k_c", None),
                   ("r_dissociation", {"dimer": 1}, {"monomer": 2}, "k_d", None)],
                  np.linspace(0, 100, 101), volume)


def michaelis_menten(rate1: float = 0.0017, rate2: float = 0.5, rate3: float = 0.1, A: int = 301, B: int = 120,
                     volume: float = 1.0):
    """Michaelis_Menten: A + B <-> C -> B + D (B the enzyme), t ∈ 0 … 100 (101 times)."""
    return _model("michaelis_menten", {"A": A, "B": B, "C": 0, "D": 0},
                  {"rate1": rate1, "rate2": rate2, "rate3": rate3},
                  [("r1", {"A": 1, "B": 1}, {"C": 1}, "rate1", None),
                   ("r2", {"C": 1}, {"A": 1, "B": 1}, "rate2", None),
                   ("r3", {"C": 1}, {"B": 1, "D": 1}, "rate3", None)],
                  np.linspace(0, 100, 101), volume)


def example():
    """Example: degradation Sp → 0 at k1 = 3 from Sp = 100, t ∈ 0 … 20 (101 times)."""
    return _model("example", {"Sp": 100}, {"k1": 3.0}, [("S_degradation", {"Sp": 1}, {}, "k1", None)],
                  np.linspace(0, 20, 101))


def degradation():
    """Degradation: A → 0 at k1 = 0.1 from A = 2000, t = 0, 1, …, 150."""
    return _model("degradation", {"A": 2000}, {"k1": 0.1}, [("r1", {"A": 1}, {}, "k1", None)], np.arange(0, 151))


def toggle_switch():
    """Toggle_Switch (Gardner et al. 1999): Hill-repressed production of A and B, decay; t ∈ 0 … 250 (251 times)."""
    return _model("toggle_switch", {"A": 10, "B": 10},
                  {"alpha1": 10.0, "alpha2": 10.0, "beta": 2.0, "gamma": 2.0, "mu": 1.0},
                  [("cu", {}, {"A": 1}, None, "alpha1/(1+pow(B, beta))"),
                   ("cv", {}, {"B": 1}, None, "alpha2/(1+pow(A, gamma))"),
                   ("du", {"A": 1}, {}, "mu", None), ("dv", {"B": 1}, {}, "mu", None)],
                  np.linspace(0, 250, 251))


def tyson_2_state_oscillator():
    """tyson-2-state (Novák & Tyson 2008), volume 300, t ∈ 0 … 100 (101 times)."""
    return _model("tyson_2_state", {"X": int(0.65609071 * 300.0), "Y": int(0.85088331 * 300.0)},
                  {"p": 2.0, "kt": 20.0, "kd": 1.0, "a0": 0.005, "a1": 0.05, "a2": 0.1, "kdx": 1.0},
                  [("X_production", {}, {"X": 1}, None, "300 * 1.0 / (1.0 + (Y * Y / (300 * 300)))"),
                   ("X_degradation", {"X": 1}, {}, "kdx", None),
                   ("Y_production", {"X": 1}, {"X": 1, "Y": 1}, "kt", None),
                   ("Y_degradation", {"Y": 1}, {}, "kd", None),
                   ("Y_nonlin", {"Y": 1}, {}, None, "Y / a0 + a1 * (Y / 300) + a2 * Y * Y / (300 * 300)")],
                  np.linspace(0, 100, 101), 300.0)


def schlogl():
    """Schlogl (1972): A + X → 2X, B + X → C (k = 1), all counts 300; t ∈ 0 … 10⁵ (100 times)."""
    return _model("schlogl", {"A": 300, "B": 300, "C": 300, "X": 300}, {"k1": 1.0, "k2": 1.0},
                  [("j1", {"A": 1, "X": 1}, {"X": 2}, "k1", None), ("j2", {"B": 1, "X": 1}, {"C": 1}, "k2", None)],
                  np.linspace(0, 100000, 100))


def oregonator():
    """Oregonator: F = 2 catalyst, A 250, B 500, C 1000; t ∈ 0 … 5 (501 times)."""
    return _model("oregonator", {"F": 2, "A": 250, "B": 500, "C": 1000, "P": 0},
                  {"k1": 2.0, "k2": 0.1, "k3": 104.0, "k4": 4e-7, "k5": 26.0},
                  [("reaction1", {"B": 1, "F": 1}, {"A": 1, "F": 1}, "k1", None),
                   ("reaction2", {"A": 1, "B": 1}, {"P": 1}, "k2", None),
                   ("reaction3", {"A": 1, "F": 1}, {"A": 2, "C": 1, "F": 1}, "k3", None),
                   ("reaction4", {"A": 2}, {"P": 1}, "k4", None),
                   ("reaction5", {"C": 1, "F": 1}, {"B": 1, "F": 1}, "k5", None)],
                  np.linspace(0, 5, 501))


def trichloroethylene():
    """Trichloroethylene (UNCA iGEM 2017): a first-order chain of six species from TCE 300, Epoxide 120;
    t ∈ 0 … 10⁴ (100 times)."""
    chain = ["TCE", "Epoxide", "Dichloracatate", "LossOfOneCL", "Glyoxylate", "Output"]
    rates = ["K2", "K3", "K4", "K4", "K5"]
    return _model("trichloroethylene", dict(zip(chain, [300, 120, 0, 0, 0, 0])),
                  {"K1": 0.00045 * 0.000025, "K2": 14.0, "K3": 0.033, "K4": 500 * 0.0001, "K5": 500 * 0.0001},
                  [(f"J{i + 1}", {chain[i]: 1}, {chain[i + 1]: 1}, rates[i], None) for i in range(5)],
                  np.linspace(0, 10000, 100))


def vilar_oscillator():
    """VilarOscillator (Vilar et al. 2002): nine species (two genes, their mRNAs, A, R, the complex C);
    t ∈ 0 … 200 (201 times)."""
    p = {"alphaA": 50, "alphaA_prime": 500, "alphaR": 0.01, "alphaR_prime": 50, "betaA": 50, "betaR": 5,
         "deltaMA": 10, "deltaMR": 0.5, "deltaA": 1, "deltaR": 0.2, "gammaA": 1, "gammaR": 1, "gammaC": 2,
         "thetaA": 50, "thetaR": 100}
    r = [("r1", {"A": 1, "R": 1}, {"C": 1}, "gammaC"), ("r2", {"A": 1}, {}, "deltaA"),
         ("r3", {"C": 1}, {"R": 1}, "deltaA"), ("r4", {"R": 1}, {}, "deltaR"),
         ("r5", {"A": 1, "Da": 1}, {"Da_prime": 1}, "gammaA"), ("r6", {"Da_prime": 1}, {"A": 1, "Da": 1}, "thetaA"),
         ("r7", {"Da": 1}, {"Da": 1, "Ma": 1}, "alphaA"), ("r8", {"Da_prime": 1}, {"Da_prime": 1, "Ma": 1}, "alphaA_prime"),
         ("r9", {"Ma": 1}, {}, "deltaMA"), ("r10", {"Ma": 1}, {"A": 1, "Ma": 1}, "betaA"),
         ("r11", {"A": 1, "Dr": 1}, {"Dr_prime": 1}, "gammaR"), ("r12", {"Dr_prime": 1}, {"A": 1, "Dr": 1}, "thetaR"),
         ("r13", {"Dr": 1}, {"Dr": 1, "Mr": 1}, "alphaR"), ("r14", {"Dr_prime": 1}, {"Dr_prime": 1, "Mr": 1}, "alphaR_prime"),
         ("r15", {"Mr": 1}, {}, "deltaMR"), ("r16", {"Mr": 1}, {"Mr": 1, "R": 1}, "betaR")]
    species = {"Da": 1, "Da_prime": 0, "Ma": 0, "Dr": 1, "Dr_prime": 0, "Mr": 0, "C": 0, "A": 0, "R": 0}
    return _model("vilar_oscillator", species, {k: float(v) for k, v in p.items()},
                  [(n, a, b, k, None) for n, a, b, k in r], np.linspace(0, 200, 201))


def lac_operon():
    """LacOperon (Heath & Cao 2014): twelve species, 25 reactions (two with custom propensities);
    t ∈ 0 … 100 (10 times)."""
    k = [0.111, 15.0, 103.8, 0.001, 1992.7, 2.40, 1.293e-6, 12.0, 1.293e-6, 9963.2, 0.50, 0.010, 30, 0.249, 0.10,
         60000, 0.920, 0.920, 0.462, 0.462, 0.20, 0.20, 0.20, 0.20, 0.20]
    hill = "((3e-7)/((8e-16)*(6.0221367e14))**(2))*({})*(I)*(I-1)"
    r = [({"Ytot": 1}, {"MR": 1}, None), ({"MR": 1}, {"MR": 1, "R": 1}, None), ({"R": 2}, {"R2": 1}, None),
         ({"R2": 1}, {"R": 2}, None), ({"R2": 1, "O": 1}, {"R2O": 1}, None), ({"R2O": 1}, {"R2": 1, "O": 1}, None),
         ({"I": 2, "R2": 1}, {"I2R2": 1}, hill.format("R2")), ({"I2R2": 1}, {"I": 2, "R2": 1}, None),
         ({"I": 2, "R2O": 1}, {"I2R2": 1, "O": 1}, hill.format("R2O")), ({"I2R2": 1, "O": 1}, {"I": 2, "R2O": 1}, None),
         ({"O": 1}, {"O": 1, "MY": 1}, None), ({"R2O": 1}, {"R2O": 1, "MY": 1}, None), ({"MY": 1}, {"MY": 1, "Y": 1}, None),
         ({"Y": 1, "Iex": 1}, {"YIex": 1}, None), ({"YIex": 1}, {"Y": 1, "Iex": 1}, None),
         ({"YIex": 1}, {"Y": 1, "I": 1}, None), ({"Iex": 1}, {"I": 1}, None), ({"I": 1}, {"Iex": 1}, None),
         ({"MR": 1}, {"Ytot": 1}, None), ({"MY": 1}, {"Ytot": 1}, None), ({"R": 1}, {"Ytot": 1}, None),
         ({"R2": 1}, {"Ytot": 1}, None), ({"Y": 1}, {"Ytot": 1}, None), ({"YIex": 1}, {"I": 1}, None),
         ({"I2R2": 1}, {"I": 2}, None)]
    names = ["MR", "R", "R2", "O", "R2O", "I", "Iex", "I2R2", "MY", "Y", "YIex", "Ytot"]
    return _model("lac_operon", {s: int(s == "O") for s in names}, {f"k{i + 1}": float(v) for i, v in enumerate(k)},
                  [(f"j{i + 1}", a, b, None if f else f"k{i + 1}", f) for i, (a, b, f) in enumerate(r)],
                  np.linspace(0, 100, 10))


def multi_firing_event():
    """MultiFiringEvent: the Example's degradation (k1 = 0.01) with two events resetting Sp; t ∈ 0 … 60 (181 times)."""
    import gillespy2

    m = _model("multi_firing_event", {"Sp": 100}, {"k1": 0.01, "ev_time1": 20.0, "ev_time2": 30.0},
               [("R", {"Sp": 1}, {}, "k1", None)], np.linspace(0, 60, 181))
    m.add_event([gillespy2.Event(name="event1", trigger=gillespy2.EventTrigger(expression="t>ev_time1"),
                                 assignments=[gillespy2.EventAssignment(variable="Sp", expression="0"),
                                              gillespy2.EventAssignment(variable="ev_time1", expression="ev_time1+15")]),
                 gillespy2.Event(name="event2", trigger=gillespy2.EventTrigger(expression="t>ev_time2", persistent=True),
                                 assignments=[gillespy2.EventAssignment(variable="Sp", expression="100"),
                                              gillespy2.EventAssignment(variable="k1", expression=".1"),
                                              gillespy2.EventAssignment(variable="ev_time2", expression="ev_time2+15")])])
    return m


#: name -> builder, every example model of GillesPy2's test suite (its `example_no_tspan` is `example`
#: without output times, and its `robust_model` a test of rules, events and continuous species: not CME models)
EXAMPLES = {"example": example, "dimerization": dimerization, "degradation": degradation,
            "michaelis_menten": michaelis_menten, "toggle_switch": toggle_switch,
            "tyson_2_state": tyson_2_state_oscillator, "schlogl": schlogl, "oregonator": oregonator,
            "trichloroethylene": trichloroethylene, "vilar_oscillator": vilar_oscillator, "lac_operon": lac_operon,
            "multi_firing_event": multi_firing_event}
