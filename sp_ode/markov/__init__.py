"""Markov generators Q and their stationary distributions p_st (docs/theory.md §2, §3.1, §7).

Data flow: a generator is validated (`sp_ode.markov.generator`), built from rates,
families Q(y) (`sp_ode.markov.families`) or chemical master equations
(`sp_ode.markov.cme`); its stationary distribution comes from `sp_ode.markov.stationary`
(GTH, `sp_ode.markov.solvers._gth`, on a band `sp_ode.markov.solvers._banded_gth`; bordered solve;
sparse AMG-preconditioned GMRES, `sp_ode.markov.solvers._sparse`, with its AIR hierarchy
`sp_ode.markov._air`; JAX), each answer with an error bound (`sp_ode.markov.bounds`,
`ConvergenceError`), and as the attractor of the frozen fast flow, with no linear solve
(`sp_ode.markov.attractor`); the solvers' building blocks by name in `sp_ode.markov.solvers`, exact
references in `sp_ode.markov.reference`; the spectrum and the group inverse, which need p_st, are in
`sp_ode.markov.spectral`; warm-started sparse solves along a path in
`sp_ode.markov.solvers.warm_start`, and their preconditioners in `sp_ode.markov.solvers.preconditioners`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
