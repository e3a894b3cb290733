"""Public names of `sp_ode.manifolds` (read by type checkers and by `sp_ode.core.lazy`)."""
from .critical_manifold import (
    ManifoldNotFoundError as ManifoldNotFoundError,
)
from .critical_manifold import (
    continue_manifold as continue_manifold,
)
from .critical_manifold import (
    critical_manifold as critical_manifold,
)
from .critical_manifold import (
    locate_loss_of_hyperbolicity as locate_loss_of_hyperbolicity,
)
from .critical_manifold import (
    normal_hyperbolicity as normal_hyperbolicity,
)
from .reduced import (
    reduced_system as reduced_system,
)
from .reduced import (
    simulate_reduced as simulate_reduced,
)
from .slow_manifold import (
    SlowManifold as SlowManifold,
)
from .slow_manifold import (
    slow_manifold as slow_manifold,
)
