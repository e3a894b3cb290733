"""Public names of `sp_ode.sweeps` (read by type checkers and by `sp_ode.core.lazy`)."""
from .sweep import (
    SweepClusterError as SweepClusterError,
    SweepMainGuardError as SweepMainGuardError,
    SweepResult as SweepResult,
    SweepResumeError as SweepResumeError,
    sweep as sweep,
)
