"""Public names of `sp_ode` (read by type checkers and by `sp_ode.core.lazy`).

A name a subpackage declares in its own stub is imported from that subpackage
(`from .systems import simulate as simulate`): each name is declared once, where it lives.
"""
__version__: str

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
from .manifolds import (
    InitialLayerWarning as InitialLayerWarning,
    LayerBasinError as LayerBasinError,
    LayerShift as LayerShift,
    ManifoldNotFoundError as ManifoldNotFoundError,
    SlowManifold as SlowManifold,
    continue_manifold as continue_manifold,
    critical_manifold as critical_manifold,
    locate_loss_of_hyperbolicity as locate_loss_of_hyperbolicity,
    normal_hyperbolicity as normal_hyperbolicity,
    reduced_system as reduced_system,
    simulate_reduced as simulate_reduced,
    slow_manifold as slow_manifold,
)
from .markov import (
    FAMILIES as FAMILIES,
    METHODS as METHODS,
    ConvergenceError as ConvergenceError,
    DetailedBalanceCheck as DetailedBalanceCheck,
    GeneratorFamily as GeneratorFamily,
    NotIrreducibleError as NotIrreducibleError,
    birth_death as birth_death,
    check_detailed_balance as check_detailed_balance,
    check_generator as check_generator,
    closed_classes as closed_classes,
    cme_two_species as cme_two_species,
    communicating_classes as communicating_classes,
    from_rates as from_rates,
    from_transition_matrix as from_transition_matrix,
    get_family as get_family,
    group_inverse as group_inverse,
    group_inverse_apply as group_inverse_apply,
    is_irreducible as is_irreducible,
    spectral_gap as spectral_gap,
    stationary_distribution as stationary_distribution,
    stationary_distributions as stationary_distributions,
    stationary_jax as stationary_jax,
    stationary_residual as stationary_residual,
    uniformize as uniformize,
)
from .networks import (
    NETWORK_MODELS as NETWORK_MODELS,
    Event as Event,
    LyapunovCertificate as LyapunovCertificate,
    NetworkError as NetworkError,
    ReactionNetwork as ReactionNetwork,
    StateSpace as StateSpace,
    StationaryCME as StationaryCME,
    TransientDistribution as TransientDistribution,
    TruncationError as TruncationError,
    TruncationReport as TruncationReport,
    cme_stationary as cme_stationary,
    find_lyapunov as find_lyapunov,
    from_antimony as from_antimony,
    from_gillespy2 as from_gillespy2,
    from_sbml as from_sbml,
    get_network_model as get_network_model,
    transient_distribution as transient_distribution,
)
from .sweeps import (
    SweepClusterError as SweepClusterError,
    SweepMainGuardError as SweepMainGuardError,
    SweepResult as SweepResult,
    SweepResumeError as SweepResumeError,
    sweep as sweep,
)
from .symbolic import (
    SignUndecidableError as SignUndecidableError,
    StationaryCertificate as StationaryCertificate,
    SymbolicSizeError as SymbolicSizeError,
    SymbolicStationary as SymbolicStationary,
    SymbolicTimeoutError as SymbolicTimeoutError,
    check_symbolic_generator as check_symbolic_generator,
    detailed_balance as detailed_balance,
    kolmogorov_criterion as kolmogorov_criterion,
    numeric_bridge as numeric_bridge,
    read_generator as read_generator,
    symbolic_generator as symbolic_generator,
    symbolic_stationary as symbolic_stationary,
    verify_stationary as verify_stationary,
)
from .systems import (
    SYSTEMS as SYSTEMS,
    FastSlowSystem as FastSlowSystem,
    MasterEquationSystem as MasterEquationSystem,
    NetworkSystem as NetworkSystem,
    SolverError as SolverError,
    Trajectory as Trajectory,
    check_model as check_model,
    get_system as get_system,
    simulate as simulate,
)
from .verification import (
    ConvergenceCertificate as ConvergenceCertificate,
    VerifyReport as VerifyReport,
    convergence_certificate as convergence_certificate,
    verify as verify,
    verify_network as verify_network,
)
