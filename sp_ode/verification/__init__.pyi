"""Public names of `sp_ode.verification` (read by type checkers and by `sp_ode.core.lazy`)."""
from .certificate import (
    ConvergenceCertificate as ConvergenceCertificate,
)
from .certificate import (
    GivenManifold as GivenManifold,
)
from .certificate import (
    RateFit as RateFit,
)
from .certificate import (
    convergence_certificate as convergence_certificate,
)
from .certificate import (
    fit_rate as fit_rate,
)
from .identity import (
    IdentityCheck as IdentityCheck,
)
from .identity import (
    attractor_distribution as attractor_distribution,
)
from .identity import (
    identity_check as identity_check,
)
from .network import (
    NetworkVerdict as NetworkVerdict,
)
from .network import (
    network_identity as network_identity,
)
from .network import (
    verify_network as verify_network,
)
from .region import (
    VisitedRegion as VisitedRegion,
)
from .region import (
    visited_region as visited_region,
)
