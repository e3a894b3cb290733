"""Public names of `sp_ode.markov` (read by type checkers and by `sp_ode.core.lazy`)."""
from .bounds import (
    ConvergenceError as ConvergenceError,
)
from .cme import (
    cme_two_species as cme_two_species,
)
from .families import (
    FAMILIES as FAMILIES,
)
from .families import (
    GeneratorFamily as GeneratorFamily,
)
from .families import (
    get_family as get_family,
)
from .generator import (
    NotIrreducibleError as NotIrreducibleError,
)
from .generator import (
    birth_death as birth_death,
)
from .generator import (
    check_generator as check_generator,
)
from .generator import (
    closed_classes as closed_classes,
)
from .generator import (
    communicating_classes as communicating_classes,
)
from .generator import (
    from_rates as from_rates,
)
from .generator import (
    from_transition_matrix as from_transition_matrix,
)
from .generator import (
    is_irreducible as is_irreducible,
)
from .generator import (
    require_irreducible as require_irreducible,
)
from .generator import (
    uniformize as uniformize,
)
from .spectral import (
    group_inverse as group_inverse,
)
from .spectral import (
    group_inverse_apply as group_inverse_apply,
)
from .spectral import (
    spectral_gap as spectral_gap,
)
from .stationary import (
    METHODS as METHODS,
)
from .stationary import (
    stationary_distribution as stationary_distribution,
)
from .stationary import (
    stationary_distributions as stationary_distributions,
)
from .stationary import (
    stationary_jax as stationary_jax,
)
from .stationary import (
    stationary_residual as stationary_residual,
)
