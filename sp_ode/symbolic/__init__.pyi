"""Public names of `sp_ode.symbolic` (read by type checkers and by `sp_ode.core.lazy`)."""
from .generator import (
    SignUndecidableError as SignUndecidableError,
)
from .generator import (
    birth_death_generator as birth_death_generator,
)
from .generator import (
    check_symbolic_generator as check_symbolic_generator,
)
from .generator import (
    complete_generator as complete_generator,
)
from .generator import (
    ring_generator as ring_generator,
)
from .generator import (
    symbolic_generator as symbolic_generator,
)
from .io import (
    GeneratorFile as GeneratorFile,
)
from .io import (
    GeneratorFileError as GeneratorFileError,
)
from .io import (
    read_claim as read_claim,
)
from .io import (
    read_generator as read_generator,
)
from .reversibility import (
    ReversibilityReport as ReversibilityReport,
)
from .reversibility import (
    detailed_balance as detailed_balance,
)
from .reversibility import (
    kolmogorov_criterion as kolmogorov_criterion,
)
from .stationary import (
    MAX_TREES as MAX_TREES,
)
from .stationary import (
    BridgeReport as BridgeReport,
)
from .stationary import (
    StationaryCertificate as StationaryCertificate,
)
from .stationary import (
    SymbolicSizeError as SymbolicSizeError,
)
from .stationary import (
    SymbolicStationary as SymbolicStationary,
)
from .stationary import (
    numeric_bridge as numeric_bridge,
)
from .stationary import (
    symbolic_stationary as symbolic_stationary,
)
from .stationary import (
    verify_stationary as verify_stationary,
)
