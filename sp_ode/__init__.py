"""sp-ode: singularly perturbed (fast–slow) ODEs.

    ε dx/dt = f(x, y),   dy/dt = g(x, y),   ε = 1/P.

When the fast dynamics are a Markov generator, f(x, y) = Q(y)ᵀx, the critical
manifold x = φ(y) is the stationary distribution p_st(y) (DESIGN.md §3, T1).

The namespace is the API: ``import sp_ode; sp_ode.stationary_distribution(Q)``.
Names load lazily from their modules, so ``import sp_ode`` is cheap and pulls in
neither torch (never) nor sympy/jax (until a name that needs them is used).
"""
from __future__ import annotations

from sp_ode._lazy import lazy_namespace

__version__ = "0.1.0"

# public name -> private module that defines it.  Each section belongs to one
# concept; add names to your own section only.
_LAZY: dict[str, str] = {
    # --- generators (sp_ode.generator) ---
    "NotIrreducibleError": "sp_ode.generator",
    "check_generator": "sp_ode.generator",
    "from_rates": "sp_ode.generator",
    "birth_death": "sp_ode.generator",
    "uniformize": "sp_ode.generator",
    "from_transition_matrix": "sp_ode.generator",
    "communicating_classes": "sp_ode.generator",
    "closed_classes": "sp_ode.generator",
    "is_irreducible": "sp_ode.generator",
    "spectral_gap": "sp_ode.generator",
    "group_inverse": "sp_ode.generator",
    "group_inverse_apply": "sp_ode.generator",
    # --- stationary distributions (sp_ode.stationary) ---
    "stationary_distribution": "sp_ode.stationary",
    "stationary_distributions": "sp_ode.stationary",
    "stationary_residual": "sp_ode.stationary",
    "METHODS": "sp_ode.stationary",
    # --- generator families Q(y) (sp_ode.families) ---
    "GeneratorFamily": "sp_ode.families",
    "get_family": "sp_ode.families",
    "FAMILIES": "sp_ode.families",
    # --- chemical master equation (sp_ode.cme) ---
    "cme_two_species": "sp_ode.cme",
    # --- fast-slow systems (issue 3) ---
    "FastSlowSystem": "sp_ode.system",
    "MasterEquationSystem": "sp_ode.system",
    "simulate": "sp_ode.simulation",
    "Trajectory": "sp_ode.simulation",
    "SolverError": "sp_ode.simulation",
    "simulate_reduced": "sp_ode.reduced",
    "reduced_system": "sp_ode.reduced",
    "get_system": "sp_ode.systems",
    "SYSTEMS": "sp_ode.systems",
    "critical_manifold": "sp_ode.manifold",
    "continue_manifold": "sp_ode.manifold",
    "normal_hyperbolicity": "sp_ode.manifold",
    "locate_loss_of_hyperbolicity": "sp_ode.manifold",
    "ManifoldNotFoundError": "sp_ode.manifold",
    "slow_manifold": "sp_ode.invariant_manifold",
    "SlowManifold": "sp_ode.invariant_manifold",
    "convergence_certificate": "sp_ode.certificate",
    "ConvergenceCertificate": "sp_ode.certificate",
    # --- symbolic (issue 4) ---
    "symbolic_stationary": "sp_ode.symbolic",
    "symbolic_generator": "sp_ode.symbolic",
    "check_symbolic_generator": "sp_ode.symbolic",
    "verify_stationary": "sp_ode.symbolic",
    "detailed_balance": "sp_ode.symbolic",
    "kolmogorov_criterion": "sp_ode.symbolic",
    "numeric_bridge": "sp_ode.symbolic",
    "SymbolicStationary": "sp_ode.symbolic",
    "StationaryCertificate": "sp_ode.symbolic",
    "SignUndecidableError": "sp_ode.symbolic",
    "SymbolicSizeError": "sp_ode.symbolic",
}

__all__ = sorted(_LAZY) + ["__version__"]


__getattr__, __dir__ = lazy_namespace(__name__, _LAZY)
