"""Public names of `sp_ode.markov` (read by type checkers and by `sp_ode.core.lazy`)."""
from .attractor import (
    Attractor as Attractor,
    attractor_distribution as attractor_distribution,
)
from .bounds import (
    ConvergenceError as ConvergenceError,
)
from .cme import (
    cme_two_species as cme_two_species,
)
from .families import (
    FAMILIES as FAMILIES,
    GeneratorFamily as GeneratorFamily,
    get_family as get_family,
)
from .generator import (
    DetailedBalanceCheck as DetailedBalanceCheck,
    NotIrreducibleError as NotIrreducibleError,
    birth_death as birth_death,
    check_detailed_balance as check_detailed_balance,
    check_generator as check_generator,
    closed_classes as closed_classes,
    communicating_classes as communicating_classes,
    from_rates as from_rates,
    from_transition_matrix as from_transition_matrix,
    input_unit_roundoff as input_unit_roundoff,
    is_irreducible as is_irreducible,
    require_irreducible as require_irreducible,
    uniformize as uniformize,
)
from .spectral import (
    group_inverse as group_inverse,
    group_inverse_apply as group_inverse_apply,
    spectral_gap as spectral_gap,
)
from .stationary import (
    METHODS as METHODS,
    stationary_distribution as stationary_distribution,
    stationary_distributions as stationary_distributions,
    stationary_jax as stationary_jax,
    stationary_residual as stationary_residual,
)
