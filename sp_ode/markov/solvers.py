"""The building blocks of `stationary_distribution`, by name, for benchmarks and experiments.

`stationary_distribution` (docs/theory.md §7.1–7.2, §7.9) is the one entry point users need; its
stages live in private modules so that they can change.  Scripts that measure a stage on its own
(`bench/`) import it from here, so that what they depend on is visible in one place:

* `gth_blocked` — dense GTH, the subtraction-free elimination in blocks (§7.2);
* `band_plan` — the bandwidth profile that banded GTH would use (its cost model, §7.9);
* `pinned_system`, `locate_mass` — the pinned M-matrix system A_k x = b of the sparse solve and
  its starting guess (§7.1); `pinned_direct_stationary` — that system solved by SuperLU;
* `AirCycles`, `AIR_OPTIONS` — the AIR preconditioner of the sparse solve;
* `quiet_stdout` — silences pyamg's C++ core, which prints to file descriptor 1;
* `COST_CONSTANTS`, `predicted_seconds` — the fitted cost model of the default route (§7.9).
"""
from sp_ode.markov._air import AIR_OPTIONS, AirCycles
from sp_ode.markov._banded_gth import band_plan
from sp_ode.markov._gth import gth_blocked
from sp_ode.markov._sparse import locate_mass, pinned_direct_stationary, pinned_system, quiet_stdout
from sp_ode.markov.stationary import COST_CONSTANTS, predicted_seconds

__all__ = ["gth_blocked", "band_plan", "pinned_system", "locate_mass", "pinned_direct_stationary", "AirCycles",
           "AIR_OPTIONS", "quiet_stdout", "COST_CONSTANTS", "predicted_seconds"]
