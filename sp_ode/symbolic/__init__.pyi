"""Public names of `sp_ode.symbolic` (read by type checkers and by `sp_ode.core.lazy`)."""
from .generator import (
    SignUndecidableError as SignUndecidableError,
    birth_death_generator as birth_death_generator,
    check_symbolic_generator as check_symbolic_generator,
    complete_generator as complete_generator,
    ring_generator as ring_generator,
    symbolic_generator as symbolic_generator,
)
from .io import (
    GeneratorFile as GeneratorFile,
    GeneratorFileError as GeneratorFileError,
    read_claim as read_claim,
    read_generator as read_generator,
)
from .reversibility import (
    ReversibilityReport as ReversibilityReport,
    detailed_balance as detailed_balance,
    kolmogorov_criterion as kolmogorov_criterion,
)
from .stationary import (
    MAX_TREES as MAX_TREES,
    BridgeReport as BridgeReport,
    StationaryCertificate as StationaryCertificate,
    SymbolicSizeError as SymbolicSizeError,
    SymbolicStationary as SymbolicStationary,
    SymbolicTimeoutError as SymbolicTimeoutError,
    numeric_bridge as numeric_bridge,
    symbolic_stationary as symbolic_stationary,
    verify_stationary as verify_stationary,
)
