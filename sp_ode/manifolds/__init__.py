"""Critical and slow manifolds and the reduced flow (docs/theory.md §3, T1–T3).

Data flow: the critical manifold φ(y), f(φ(y), y) = 0 (`sp_ode.manifolds.critical_manifold`,
continued in y, with normal hyperbolicity and where it is lost), solved by the Newton
kernels of `sp_ode.manifolds.newton`; the slow manifold h_ε = φ + εh₁ + … from the
invariance equation (`sp_ode.manifolds.slow_manifold`); the reduced flow y' = g(h_ε(y), y)
(`sp_ode.manifolds.reduced`), whose cost does not depend on ε; where a start off the slow
manifold joins it, the initial layer (`sp_ode.manifolds.initial_layer`).
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
