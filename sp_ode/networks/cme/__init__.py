"""Certified solutions of a reaction network's chemical master equation (docs/theory.md §7.6–§7.16).

- `transient` — p(t) on a finite state projection with its FSP bound, adaptively grown, with
  time- and state-triggered events (`sp_ode.networks.events`) applied exactly; `_collocation` — the
  stiff projections' Radau integration, certified by the integral of its defect;
- `_moments`, `_closed_moments`, `_intervals`, `_propensity_bound` — certified mean and SD
  intervals: the closed moment equations of affine networks, the escaped mass by a weighted
  Lyapunov bound, bounded (Hill, Michaelis–Menten) propensities;
- `lyapunov`, `stationary` — the stationary law of the infinite CME with a Foster–Lyapunov
  truncation bound, reported apart from the linear algebra;
- `tensor_train` — that law on boxes past the sparse route's memory, in quantised tensor-train form
  (AMEn), certified on the Kronecker grid (§7.16).

Their public names are declared, and re-exported, by `sp_ode.networks`; this package imports the
model layer (`sp_ode.networks.network`, `state_space`, `events`) and nothing imports it back.
"""
