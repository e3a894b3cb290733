"""The stages of `sp_ode.sweep`, by name, for benchmarks and experiments.

`sp_ode.sweep` (docs/theory.md §7.5, §7.13) is the one entry point users need; its stages live in
private modules so that they can change.  Scripts that set up a comparison with the sweep's own
pieces (`bench/`) import them from here:

* `SweepPlan`, `lanes_of`, `manifold_start` — a sweep's compiled plan, the per-point parameter
  lanes, and its vmapped start on the slow manifold h⁽ᵏ⁾(y0) (`x0="manifold"`);
* `network_manifold_start` — the same start for a `NetworkSystem` (sparse solves);
* `network` — the network-sweep module itself (Chebyshev manifold tables, sparse full solves).
"""
from sp_ode.sweeps import _network as network
from sp_ode.sweeps._network import manifold_start as network_manifold_start
from sp_ode.sweeps._paths import SweepPlan, lanes_of, manifold_start

__all__ = ["SweepPlan", "lanes_of", "manifold_start", "network_manifold_start", "network"]
