"""Verdicts on a fast–slow reduction (docs/theory.md §3.5, §7.3, §7.7).

`sp_ode.verify` (`sp_ode.verification.report`) is the one entry point for general,
master-equation and network systems.  Its checks: normal hyperbolicity on the region
the trajectories visit (`sp_ode.verification.region`); the identity φ = p_st by methods
that solve different problems (`sp_ode.verification.identity`, and for reaction networks
`sp_ode.verification.network`, its identity at scale in `sp_ode.verification.network_steps`); the
O(ε^{k+1}) convergence certificate (`sp_ode.verification.certificate`, rates fitted by
`sp_ode.verification.rates`).  Both verdicts record their checks as one list of steps
(`sp_ode.verification.steps`).  Figures are drawn in `sp_ode.verification.plotting`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
