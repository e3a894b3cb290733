"""Public names of `sp_ode.sweeps` (read by type checkers and by `sp_ode.core.lazy`)."""
from .sweep import (
    SweepClusterError as SweepClusterError,
)
from .sweep import (
    SweepResult as SweepResult,
)
from .sweep import (
    SweepResumeError as SweepResumeError,
)
from .sweep import (
    sweep as sweep,
)
