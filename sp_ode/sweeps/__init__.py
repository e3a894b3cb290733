"""Parameter sweeps: N points of (ε, args), each by the cheapest path that meets `tol` (docs/theory.md §7.5).

`sp_ode.sweeps.sweep` plans, chunks, resumes and validates, and asks an engine for everything that
depends on how a point is solved (the dense engine's input checks and plan in `sp_ode.sweeps._dense`); the paths per chunk (corrected
reduced flows of order k, or the full stiff solve) are in `sp_ode.sweeps._paths`, for reaction
networks in `sp_ode.sweeps._network`, with the manifold terms of `sp_ode.sweeps._terms` and
the points of one ODE solved as one stacked system in `sp_ode.sweeps._stacked`; the cost
model that picks each point's order is `sp_ode.sweeps._cost`, the code saying why in
`sp_ode.sweeps._reasons`; a sweep's fingerprint (`sp_ode.sweeps._fingerprint`) and its
resumable folder (`sp_ode.sweeps._folder`) let it resume; the Dask execution is in
`sp_ode.sweeps._dask`; the contract both engines keep (`SweepEngine`) is `sp_ode.sweeps.engine`, and
the stages by name, for benchmarks, in `sp_ode.sweeps.stages`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
