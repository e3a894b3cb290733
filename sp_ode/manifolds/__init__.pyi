"""Public names of `sp_ode.manifolds` (read by type checkers and by `sp_ode.core.lazy`)."""
from .critical_manifold import (
    ManifoldNotFoundError as ManifoldNotFoundError,
    continue_manifold as continue_manifold,
    critical_manifold as critical_manifold,
    locate_loss_of_hyperbolicity as locate_loss_of_hyperbolicity,
    normal_hyperbolicity as normal_hyperbolicity,
)
from .initial_layer import (
    InitialLayerWarning as InitialLayerWarning,
    LayerBasinError as LayerBasinError,
    LayerShift as LayerShift,
)
from .reduced import (
    reduced_system as reduced_system,
    simulate_reduced as simulate_reduced,
)
from .slow_manifold import (
    SlowManifold as SlowManifold,
    slow_manifold as slow_manifold,
)
