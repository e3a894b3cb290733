"""sp-ode: singularly perturbed (fast–slow) ODEs.

    ε dx/dt = f(x, y),   dy/dt = g(x, y),   ε = 1/P.

When the fast dynamics are a Markov generator, f(x, y) = Q(y)ᵀx, the critical
manifold x = φ(y) is the stationary distribution p_st(y) (docs/theory.md §3.1, T1).

The namespace is the API: ``import sp_ode; sp_ode.stationary_distribution(Q)``.
Names load lazily from the subpackage that owns them, so ``import sp_ode`` is
cheap and pulls in neither torch (never) nor sympy/jax (until a name that needs
them is used).  The subpackages, in the order data flows through them:

- :mod:`sp_ode.core` — validation, numeric precision scope, files and figures;
- :mod:`sp_ode.markov` — generators Q and their stationary distributions p_st;
- :mod:`sp_ode.systems` — fast–slow systems, simulation, manifolds, certificate;
- :mod:`sp_ode.symbolic` — exact stationarity by the matrix-tree theorem;
- :mod:`sp_ode.cli` — the ``sp-ode`` command line (imported by nothing else).
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__version__ = "0.2.0"

# public name -> module that defines it, grouped by the subpackage that owns it.
_LAZY: dict[str, str] = {
    # --- sp_ode.markov: generators ---
    "NotIrreducibleError": "sp_ode.markov.generator",
    "ConvergenceError": "sp_ode.markov.bounds",
    "check_generator": "sp_ode.markov.generator",
    "from_rates": "sp_ode.markov.generator",
    "birth_death": "sp_ode.markov.generator",
    "uniformize": "sp_ode.markov.generator",
    "from_transition_matrix": "sp_ode.markov.generator",
    "communicating_classes": "sp_ode.markov.generator",
    "closed_classes": "sp_ode.markov.generator",
    "is_irreducible": "sp_ode.markov.generator",
    "spectral_gap": "sp_ode.markov.spectral",
    "group_inverse": "sp_ode.markov.spectral",
    "group_inverse_apply": "sp_ode.markov.spectral",
    # --- sp_ode.markov: stationary distributions ---
    "stationary_distribution": "sp_ode.markov.stationary",
    "stationary_distributions": "sp_ode.markov.stationary",
    "stationary_residual": "sp_ode.markov.stationary",
    "stationary_jax": "sp_ode.markov.stationary",
    "METHODS": "sp_ode.markov.stationary",
    # --- sp_ode.markov: generator families Q(y) and CME builders ---
    "GeneratorFamily": "sp_ode.markov.families",
    "get_family": "sp_ode.markov.families",
    "FAMILIES": "sp_ode.markov.families",
    "cme_two_species": "sp_ode.markov.cme",
    # --- sp_ode.markov: reaction networks (CME on a finite state projection) ---
    "ReactionNetwork": "sp_ode.markov.network",
    "NetworkError": "sp_ode.markov.network",
    "TruncationError": "sp_ode.markov.network",
    "get_network_model": "sp_ode.markov.network_models",
    "NETWORK_MODELS": "sp_ode.markov.network_models",
    "from_sbml": "sp_ode.markov.sbml",
    "from_antimony": "sp_ode.markov.sbml",
    # --- sp_ode.systems: fast-slow systems ---
    "FastSlowSystem": "sp_ode.systems.system",
    "MasterEquationSystem": "sp_ode.systems.system",
    "simulate": "sp_ode.systems.simulation",
    "Trajectory": "sp_ode.systems.simulation",
    "SolverError": "sp_ode.systems.simulation",
    "simulate_reduced": "sp_ode.systems.reduced",
    "reduced_system": "sp_ode.systems.reduced",
    "get_system": "sp_ode.systems.catalogue",
    "SYSTEMS": "sp_ode.systems.catalogue",
    "critical_manifold": "sp_ode.systems.critical_manifold",
    "continue_manifold": "sp_ode.systems.critical_manifold",
    "normal_hyperbolicity": "sp_ode.systems.critical_manifold",
    "locate_loss_of_hyperbolicity": "sp_ode.systems.critical_manifold",
    "ManifoldNotFoundError": "sp_ode.systems.critical_manifold",
    "slow_manifold": "sp_ode.systems.slow_manifold",
    "SlowManifold": "sp_ode.systems.slow_manifold",
    "convergence_certificate": "sp_ode.systems.certificate",
    "ConvergenceCertificate": "sp_ode.systems.certificate",
    "sweep": "sp_ode.systems.sweep",
    "SweepResult": "sp_ode.systems.sweep",
    "SweepResumeError": "sp_ode.systems.sweep",
    "SweepClusterError": "sp_ode.systems.sweep",
    "NetworkSystem": "sp_ode.systems.network_system",
    "verify_network": "sp_ode.systems.network_verify",
    "check_model": "sp_ode.systems.model",
    # --- sp_ode.symbolic ---
    "symbolic_stationary": "sp_ode.symbolic.stationary",
    "symbolic_generator": "sp_ode.symbolic.generator",
    "check_symbolic_generator": "sp_ode.symbolic.generator",
    "verify_stationary": "sp_ode.symbolic.stationary",
    "detailed_balance": "sp_ode.symbolic.reversibility",
    "kolmogorov_criterion": "sp_ode.symbolic.reversibility",
    "numeric_bridge": "sp_ode.symbolic.stationary",
    "SymbolicStationary": "sp_ode.symbolic.stationary",
    "StationaryCertificate": "sp_ode.symbolic.stationary",
    "SignUndecidableError": "sp_ode.symbolic.generator",
    "SymbolicSizeError": "sp_ode.symbolic.stationary",
    "read_generator": "sp_ode.symbolic.io",
}

__all__ = sorted(_LAZY) + ["__version__"]


__getattr__, __dir__ = lazy_namespace(__name__, _LAZY)
