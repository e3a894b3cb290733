"""Public names of `sp_ode.verification` (read by type checkers and by `sp_ode.core.lazy`)."""
from .certificate import (
    ConvergenceCertificate as ConvergenceCertificate,
    GivenManifold as GivenManifold,
    convergence_certificate as convergence_certificate,
)
from .identity import (
    IdentityCheck as IdentityCheck,
    attractor_distribution as attractor_distribution,
    identity_check as identity_check,
)
from .network import (
    NetworkVerdict as NetworkVerdict,
    verify_network as verify_network,
)
from .network_steps import network_identity as network_identity
from .rates import (
    RateFit as RateFit,
    fit_rate as fit_rate,
)
from .region import (
    VisitedRegion as VisitedRegion,
    visited_region as visited_region,
)
from .report import (
    VerifyReport as VerifyReport,
    verify as verify,
)
from .steps import (
    Steps as Steps,
    VerdictStep as VerdictStep,
)
