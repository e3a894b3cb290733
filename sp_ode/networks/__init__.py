"""Reaction networks: the chemical master equation on a finite state projection (docs/theory.md §7.6–7.7).

Data flow: a `ReactionNetwork` is read from reaction strings (`sp_ode.networks.network`, the
syntax read by `sp_ode.networks._rates`, rates parsed by a grammar that evaluates nothing,
`sp_ode.core.expressions`), SBML or Antimony (`sp_ode.networks.sbml`, kinetic laws built from
the MathML tree by `sp_ode.networks._sbml_math` with each reaction's local parameters in scope,
events by `sp_ode.networks._sbml_events`), GillesPy2 models (`sp_ode.networks.gillespy2`) or
taken from the model catalogue (`sp_ode.networks.models`); its conservation laws
(`sp_ode.networks.conservation`) bound the projection; its `StateSpace`
(`sp_ode.networks.state_space`) is the finite state projection, enumerated in blocks under a
memory estimate, with its truncation report; the generator Q(y) over that space has a fixed
sparsity pattern (`sp_ode.networks.sparse_generator`), on which the fast–slow `NetworkSystem` of
the layer above is built (`sp_ode.systems.network`); the transient law p(t)
with its FSP bound and an adaptive projection is `sp_ode.networks.cme.transient`, with time- and
state-triggered event assignments represented exactly on the projection by `sp_ode.networks.events`;
the stationary law of the infinite CME, with a Foster–Lyapunov bound on the truncation
(`sp_ode.networks.cme.lyapunov`), is `sp_ode.networks.cme.stationary`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
