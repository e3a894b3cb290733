"""Public names of `sp_ode` (read by type checkers and by `sp_ode.core.lazy`)."""
from . import core as core
from . import manifolds as manifolds
from . import markov as markov
from . import networks as networks
from . import sweeps as sweeps
from . import symbolic as symbolic
from . import systems as systems
from . import verification as verification
from .core.expressions import (
    ExpressionSyntaxError as ExpressionSyntaxError,
)
from .core.memory import (
    MemoryBudgetError as MemoryBudgetError,
)
from .manifolds.critical_manifold import (
    ManifoldNotFoundError as ManifoldNotFoundError,
)
from .manifolds.critical_manifold import (
    continue_manifold as continue_manifold,
)
from .manifolds.critical_manifold import (
    critical_manifold as critical_manifold,
)
from .manifolds.critical_manifold import (
    locate_loss_of_hyperbolicity as locate_loss_of_hyperbolicity,
)
from .manifolds.critical_manifold import (
    normal_hyperbolicity as normal_hyperbolicity,
)
from .manifolds.reduced import (
    reduced_system as reduced_system,
)
from .manifolds.reduced import (
    simulate_reduced as simulate_reduced,
)
from .manifolds.slow_manifold import (
    SlowManifold as SlowManifold,
)
from .manifolds.slow_manifold import (
    slow_manifold as slow_manifold,
)
from .markov.bounds import (
    ConvergenceError as ConvergenceError,
)
from .markov.cme import (
    cme_two_species as cme_two_species,
)
from .markov.families import (
    FAMILIES as FAMILIES,
)
from .markov.families import (
    GeneratorFamily as GeneratorFamily,
)
from .markov.families import (
    get_family as get_family,
)
from .markov.generator import (
    NotIrreducibleError as NotIrreducibleError,
)
from .markov.generator import (
    birth_death as birth_death,
)
from .markov.generator import (
    check_generator as check_generator,
)
from .markov.generator import (
    closed_classes as closed_classes,
)
from .markov.generator import (
    communicating_classes as communicating_classes,
)
from .markov.generator import (
    from_rates as from_rates,
)
from .markov.generator import (
    from_transition_matrix as from_transition_matrix,
)
from .markov.generator import (
    is_irreducible as is_irreducible,
)
from .markov.generator import (
    uniformize as uniformize,
)
from .markov.spectral import (
    group_inverse as group_inverse,
)
from .markov.spectral import (
    group_inverse_apply as group_inverse_apply,
)
from .markov.spectral import (
    spectral_gap as spectral_gap,
)
from .markov.stationary import (
    METHODS as METHODS,
)
from .markov.stationary import (
    stationary_distribution as stationary_distribution,
)
from .markov.stationary import (
    stationary_distributions as stationary_distributions,
)
from .markov.stationary import (
    stationary_jax as stationary_jax,
)
from .markov.stationary import (
    stationary_residual as stationary_residual,
)
from .networks.models import (
    NETWORK_MODELS as NETWORK_MODELS,
)
from .networks.models import (
    get_network_model as get_network_model,
)
from .networks.network import (
    NetworkError as NetworkError,
)
from .networks.network import (
    ReactionNetwork as ReactionNetwork,
)
from .networks.network import (
    TruncationError as TruncationError,
)
from .networks.sbml import (
    from_antimony as from_antimony,
)
from .networks.sbml import (
    from_sbml as from_sbml,
)
from .networks.state_space import (
    StateSpace as StateSpace,
)
from .networks.state_space import (
    TruncationReport as TruncationReport,
)
from .networks.system import (
    NetworkSystem as NetworkSystem,
)
from .sweeps.sweep import (
    SweepClusterError as SweepClusterError,
)
from .sweeps.sweep import (
    SweepResult as SweepResult,
)
from .sweeps.sweep import (
    SweepResumeError as SweepResumeError,
)
from .sweeps.sweep import (
    sweep as sweep,
)
from .symbolic.generator import (
    SignUndecidableError as SignUndecidableError,
)
from .symbolic.generator import (
    check_symbolic_generator as check_symbolic_generator,
)
from .symbolic.generator import (
    symbolic_generator as symbolic_generator,
)
from .symbolic.io import (
    read_generator as read_generator,
)
from .symbolic.reversibility import (
    detailed_balance as detailed_balance,
)
from .symbolic.reversibility import (
    kolmogorov_criterion as kolmogorov_criterion,
)
from .symbolic.stationary import (
    StationaryCertificate as StationaryCertificate,
)
from .symbolic.stationary import (
    SymbolicSizeError as SymbolicSizeError,
)
from .symbolic.stationary import (
    SymbolicStationary as SymbolicStationary,
)
from .symbolic.stationary import (
    numeric_bridge as numeric_bridge,
)
from .symbolic.stationary import (
    symbolic_stationary as symbolic_stationary,
)
from .symbolic.stationary import (
    verify_stationary as verify_stationary,
)
from .systems.catalogue import (
    SYSTEMS as SYSTEMS,
)
from .systems.catalogue import (
    get_system as get_system,
)
from .systems.model import (
    check_model as check_model,
)
from .systems.simulation import (
    SolverError as SolverError,
)
from .systems.simulation import (
    Trajectory as Trajectory,
)
from .systems.simulation import (
    simulate as simulate,
)
from .systems.system import (
    FastSlowSystem as FastSlowSystem,
)
from .systems.system import (
    MasterEquationSystem as MasterEquationSystem,
)
from .verification.certificate import (
    ConvergenceCertificate as ConvergenceCertificate,
)
from .verification.certificate import (
    convergence_certificate as convergence_certificate,
)
from .verification.network import (
    verify_network as verify_network,
)
