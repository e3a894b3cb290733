"""Exact stationarity of generators with symbolic rates (docs/theory.md §3.1; proofs/proof.md).

Data flow: a matrix of sympy expressions is checked to be a generator
(`sp_ode.symbolic.generator`); its stationary distribution comes from the Markov chain
tree theorem (`sp_ode.symbolic.tree` enumerates the spanning in-trees,
`sp_ode.symbolic.stationary` sums their weights in a polynomial ring — never
`Matrix.nullspace`) and is certified exactly; reversibility (detailed balance,
Kolmogorov cycles) is in `sp_ode.symbolic.reversibility`; generator files in
`sp_ode.symbolic.io`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
