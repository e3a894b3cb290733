"""Markov generators Q and their stationary distributions p_st (docs/theory.md §2, §3.1, §7).

Data flow: a generator is validated (`sp_ode.markov.generator`), built from rates,
families Q(y) (`sp_ode.markov.families`) or chemical master equations
(`sp_ode.markov.cme`); its stationary distribution comes from `sp_ode.markov.stationary`
(GTH, `sp_ode.markov._gth`, on a band `sp_ode.markov._banded_gth`; bordered solve; sparse
AMG-preconditioned GMRES, `sp_ode.markov._sparse`, with its AIR hierarchy `sp_ode.markov._air`;
JAX), each answer with an error bound (`sp_ode.markov.bounds`, `ConvergenceError`), and as the
attractor of the frozen fast flow, with no linear solve (`sp_ode.markov.attractor`); its building
blocks by name in `sp_ode.markov.solvers`, exact references in `sp_ode.markov.reference`; the
spectrum and the group inverse, which need p_st, are in `sp_ode.markov.spectral`; warm-started
sparse solves along a path in `sp_ode.markov.warm_start`, and their preconditioners in
`sp_ode.markov.preconditioners`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

# Names that lived here before the layout by concern; they resolve with a DeprecationWarning.
_MOVED = {
    'ReactionNetwork': 'sp_ode.networks.network',
    'Reaction': 'sp_ode.networks.network',
    'StateSpace': 'sp_ode.networks.state_space',
    'TruncationReport': 'sp_ode.networks.state_space',
    'NetworkError': 'sp_ode.networks.network',
    'NetworkSyntaxError': 'sp_ode.networks.network',
    'UnknownSymbolError': 'sp_ode.networks.network',
    'NegativeCountError': 'sp_ode.networks.network',
    'PropensityError': 'sp_ode.networks.network',
    'TruncationError': 'sp_ode.networks.network',
    'UnusedSlowVariableError': 'sp_ode.networks.network',
    'NetworkModel': 'sp_ode.networks.models',
    'NETWORK_MODELS': 'sp_ode.networks.models',
    'get_network_model': 'sp_ode.networks.models',
    'from_sbml': 'sp_ode.networks.sbml',
    'from_antimony': 'sp_ode.networks.sbml',
    'SBMLFeatureError': 'sp_ode.networks.sbml',
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__, moved=_MOVED)
