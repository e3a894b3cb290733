"""sp-ode: singularly perturbed (fast–slow) ODEs.

    ε dx/dt = f(x, y),   dy/dt = g(x, y),   ε = 1/P.

When the fast dynamics are a Markov generator, f(x, y) = Q(y)ᵀx, the critical
manifold x = φ(y) is the stationary distribution p_st(y) (DESIGN.md §3, T1).

The namespace is the API: ``import sp_ode; sp_ode.stationary_distribution(Q)``.
Names load lazily from their modules, so ``import sp_ode`` is cheap and pulls in
neither torch (never) nor sympy/jax (until a name that needs them is used).
"""
from __future__ import annotations

import importlib

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
    # --- fast-slow systems (issue 3) ---
    # --- symbolic (issue 4) ---
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        # `sp_ode.systems` and other submodules resolve like attributes.
        try:
            return importlib.import_module(f"sp_ode.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"sp_ode.{name}":
                raise
        raise AttributeError(f"module 'sp_ode' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # cache: later lookups skip __getattr__
    return value


def __dir__():
    return __all__
