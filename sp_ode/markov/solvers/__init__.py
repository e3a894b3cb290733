"""The stationary solvers: the building blocks of `stationary_distribution`, by name.

`stationary_distribution` (`sp_ode.markov.stationary`, docs/theory.md §7.1–7.2, §7.9) is the one
entry point users need; its stages live in private modules of this package so that they can change:
`_gth` (dense GTH), `_banded_gth` (GTH in band storage), `_sparse` (AMG-preconditioned GMRES on the
pinned system); `warm_start` solves along a slow trajectory with the multigrid `preconditioners`.
Callers outside this package — `sp_ode.markov.stationary`, and scripts that measure a stage on its
own (`bench/`) — import the stages from here, so that what they depend on is visible in one place:

* `gth_solve`, `gth_blocked`, `gth_componentwise_bound` — dense GTH, the subtraction-free
  elimination in blocks, and its a-priori componentwise bound (§7.2);
* `banded_gth`, `band_plan` — GTH in band storage and the bandwidth profile it would use (its cost
  model, §7.9);
* `sparse_stationary` — the sparse solve; `pinned_system`, `locate_mass` — its pinned M-matrix system
  A_k x = b and starting guess (§7.1); `pinned_direct_stationary` — that system solved by SuperLU;
* `AirCycles`, `AIR_OPTIONS` — the AIR preconditioner of the sparse solve (`sp_ode.markov._air`,
  loaded with pyamg only when one of them is asked for);
* `quiet_stdout` — silences pyamg's C++ core, which prints to file descriptor 1.

The fitted cost model of the default route, `COST_CONSTANTS` and `predicted_seconds` (§7.9), is
part of the route itself, in `sp_ode.markov.stationary`.
"""
from sp_ode.markov.solvers._banded_gth import band_plan, banded_gth
from sp_ode.markov.solvers._gth import gth_blocked, gth_componentwise_bound, gth_solve
from sp_ode.markov.solvers._sparse import (
    locate_mass,
    pinned_direct_stationary,
    pinned_system,
    quiet_stdout,
    sparse_stationary,
)

__all__ = ["gth_solve", "gth_blocked", "gth_componentwise_bound", "banded_gth", "band_plan", "sparse_stationary",
           "pinned_system", "locate_mass", "pinned_direct_stationary", "AirCycles", "AIR_OPTIONS", "quiet_stdout"]

_AIR_NAMES = ("AirCycles", "AIR_OPTIONS")


def __getattr__(name: str):
    # The AIR names import pyamg: only when asked for, so that `stationary_distribution` does not pay for it.
    if name in _AIR_NAMES:
        from sp_ode.markov import _air

        return getattr(_air, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
