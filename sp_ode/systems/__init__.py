"""Fast–slow systems ε dx/dt = f(x, y), dy/dt = g(x, y) and their integration (docs/theory.md §2–3, §9).

Data flow: a system (`sp_ode.systems.system`; a user's own model checked by
`sp_ode.systems.model`; the catalogue `sp_ode.systems.catalogue`, the stiff test set
`sp_ode.systems.stiff_testset`; a reaction network's sparse master equation with slow variables,
`sp_ode.systems.network`; any accepted object turned into one of these by `sp_ode.systems.resolve`),
its functions wrapped to compute in float64 (`sp_ode.systems.vector_field`), is integrated by
`sp_ode.systems.simulation` with the options of `sp_ode.systems.options` on the engines of
`sp_ode.systems.integration` (diffrax, scipy); a failed solve is named by
`sp_ode.systems.diagnosis`.  Manifolds, verification and sweeps build on this package.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
