"""Public names of `sp_ode` (read by type checkers and by `sp_ode.core.lazy`)."""
from . import (
    core as core,
    manifolds as manifolds,
    markov as markov,
    networks as networks,
    sweeps as sweeps,
    symbolic as symbolic,
    systems as systems,
    verification as verification,
)
from .core.cache import (
    use_compilation_cache as use_compilation_cache,
)
from .core.errors import (
    Error as Error,
    SpOdeWarning as SpOdeWarning,
)
from .core.expressions import (
    ExpressionSyntaxError as ExpressionSyntaxError,
)
from .core.memory import (
    MemoryBudgetError as MemoryBudgetError,
)
from .core.precision import (
    Float32Warning as Float32Warning,
    float64 as float64,
)
from .manifolds.critical_manifold import (
    ManifoldNotFoundError as ManifoldNotFoundError,
    continue_manifold as continue_manifold,
    critical_manifold as critical_manifold,
    locate_loss_of_hyperbolicity as locate_loss_of_hyperbolicity,
    normal_hyperbolicity as normal_hyperbolicity,
)
from .manifolds.initial_layer import (
    InitialLayerWarning as InitialLayerWarning,
    LayerBasinError as LayerBasinError,
    LayerShift as LayerShift,
)
from .manifolds.reduced import (
    reduced_system as reduced_system,
    simulate_reduced as simulate_reduced,
)
from .manifolds.slow_manifold import (
    SlowManifold as SlowManifold,
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
    GeneratorFamily as GeneratorFamily,
    get_family as get_family,
)
from .markov.generator import (
    DetailedBalanceCheck as DetailedBalanceCheck,
    NotIrreducibleError as NotIrreducibleError,
    birth_death as birth_death,
    check_detailed_balance as check_detailed_balance,
    check_generator as check_generator,
    closed_classes as closed_classes,
    communicating_classes as communicating_classes,
    from_rates as from_rates,
    from_transition_matrix as from_transition_matrix,
    is_irreducible as is_irreducible,
    uniformize as uniformize,
)
from .markov.spectral import (
    group_inverse as group_inverse,
    group_inverse_apply as group_inverse_apply,
    spectral_gap as spectral_gap,
)
from .markov.stationary import (
    METHODS as METHODS,
    stationary_distribution as stationary_distribution,
    stationary_distributions as stationary_distributions,
    stationary_jax as stationary_jax,
    stationary_residual as stationary_residual,
)
from .networks.cme.lyapunov import (
    LyapunovCertificate as LyapunovCertificate,
    find_lyapunov as find_lyapunov,
)
from .networks.cme.stationary import (
    StationaryCME as StationaryCME,
    cme_stationary as cme_stationary,
)
from .networks.cme.transient import (
    TransientDistribution as TransientDistribution,
    transient_distribution as transient_distribution,
)
from .networks.events import (
    Event as Event,
)
from .networks.gillespy2 import (
    from_gillespy2 as from_gillespy2,
)
from .networks.models import (
    NETWORK_MODELS as NETWORK_MODELS,
    get_network_model as get_network_model,
)
from .networks.network import (
    NetworkError as NetworkError,
    ReactionNetwork as ReactionNetwork,
    TruncationError as TruncationError,
)
from .networks.sbml import (
    from_antimony as from_antimony,
    from_sbml as from_sbml,
)
from .networks.state_space import (
    StateSpace as StateSpace,
    TruncationReport as TruncationReport,
)
from .sweeps.sweep import (
    SweepClusterError as SweepClusterError,
    SweepMainGuardError as SweepMainGuardError,
    SweepResult as SweepResult,
    SweepResumeError as SweepResumeError,
    sweep as sweep,
)
from .symbolic.generator import (
    SignUndecidableError as SignUndecidableError,
    check_symbolic_generator as check_symbolic_generator,
    symbolic_generator as symbolic_generator,
)
from .symbolic.io import (
    read_generator as read_generator,
)
from .symbolic.reversibility import (
    detailed_balance as detailed_balance,
    kolmogorov_criterion as kolmogorov_criterion,
)
from .symbolic.stationary import (
    StationaryCertificate as StationaryCertificate,
    SymbolicSizeError as SymbolicSizeError,
    SymbolicStationary as SymbolicStationary,
    SymbolicTimeoutError as SymbolicTimeoutError,
    numeric_bridge as numeric_bridge,
    symbolic_stationary as symbolic_stationary,
    verify_stationary as verify_stationary,
)
from .systems.catalogue import (
    SYSTEMS as SYSTEMS,
    get_system as get_system,
)
from .systems.model import (
    check_model as check_model,
)
from .systems.network import (
    NetworkSystem as NetworkSystem,
)
from .systems.simulation import (
    SolverError as SolverError,
    Trajectory as Trajectory,
    simulate as simulate,
)
from .systems.system import (
    FastSlowSystem as FastSlowSystem,
    MasterEquationSystem as MasterEquationSystem,
)
from .verification.certificate import (
    ConvergenceCertificate as ConvergenceCertificate,
    convergence_certificate as convergence_certificate,
)
from .verification.network import (
    verify_network as verify_network,
)
from .verification.report import (
    VerifyReport as VerifyReport,
    verify as verify,
)
