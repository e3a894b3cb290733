"""Exact stationarity of generators with symbolic rates (docs/theory.md §3.1; proofs/proof.md).

Data flow: a matrix of sympy expressions is checked to be a generator
(:mod:`~sp_ode.symbolic.generator`); its stationary distribution comes from the
Markov chain tree theorem (:mod:`~sp_ode.symbolic.tree` enumerates the spanning
in-trees, :mod:`~sp_ode.symbolic.stationary` sums their weights in a polynomial
ring — never ``Matrix.nullspace``) and is certified exactly; reversibility
(detailed balance, Kolmogorov cycles) is in :mod:`~sp_ode.symbolic.reversibility`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

_LAZY: dict[str, str] = {
    name: module
    for module, names in {
        "sp_ode.symbolic.generator": ["SignUndecidableError", "check_symbolic_generator", "symbolic_generator",
                                      "complete_generator", "ring_generator", "birth_death_generator"],
        "sp_ode.symbolic.stationary": ["SymbolicSizeError", "SymbolicStationary", "StationaryCertificate",
                                       "BridgeReport", "symbolic_stationary", "verify_stationary",
                                       "numeric_bridge", "MAX_TREES"],
        "sp_ode.symbolic.reversibility": ["ReversibilityReport", "detailed_balance", "kolmogorov_criterion"],
        "sp_ode.symbolic.io": ["GeneratorFileError", "GeneratorFile", "read_generator", "read_claim"],
    }.items()
    for name in names
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_namespace(__name__, _LAZY)
