"""Markov generators Q and their stationary distributions p_st (docs/theory.md §2, §3.1, §7).

Data flow: a generator is validated (:mod:`~sp_ode.markov.generator`), built from
rates, families Q(y) (:mod:`~sp_ode.markov.families`) or chemical master
equations (:mod:`~sp_ode.markov.cme`); its stationary distribution comes from
:mod:`~sp_ode.markov.stationary` (GTH, bordered solve, sparse iterative, JAX),
each answer with an error bound (:mod:`~sp_ode.markov.bounds`, ``ConvergenceError``),
with exact references in :mod:`~sp_ode.markov.reference`; the spectrum and the
group inverse, which need p_st, are in :mod:`~sp_ode.markov.spectral`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

_LAZY: dict[str, str] = {
    name: module
    for module, names in {
        "sp_ode.markov.generator": ["NotIrreducibleError", "check_generator", "from_rates", "birth_death",
                                    "uniformize", "from_transition_matrix", "communicating_classes",
                                    "closed_classes", "is_irreducible", "require_irreducible"],
        "sp_ode.markov.spectral": ["spectral_gap", "group_inverse", "group_inverse_apply"],
        "sp_ode.markov.stationary": ["stationary_distribution", "stationary_distributions",
                                     "stationary_residual", "stationary_jax", "METHODS"],
        "sp_ode.markov.families": ["GeneratorFamily", "get_family", "FAMILIES"],
        "sp_ode.markov.cme": ["cme_two_species"],
        "sp_ode.markov.network": ["ReactionNetwork", "Reaction", "StateSpace", "TruncationReport", "NetworkError",
                                  "NetworkSyntaxError", "UnknownSymbolError", "NegativeCountError",
                                  "PropensityError", "TruncationError", "UnusedSlowVariableError"],
        "sp_ode.markov.network_models": ["NetworkModel", "NETWORK_MODELS", "get_network_model"],
        "sp_ode.markov.sbml": ["from_sbml", "from_antimony", "SBMLFeatureError"],
        "sp_ode.markov.bounds": ["ConvergenceError"],
    }.items()
    for name in names
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_namespace(__name__, _LAZY)
