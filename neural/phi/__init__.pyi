"""Public names of `neural.phi` (read by type checkers and by `sp_ode.core.lazy`)."""
from .certificate import (
    CertifiedPrediction as CertifiedPrediction,
)
from .files import (
    PhiFileError as PhiFileError,
    load_phi as load_phi,
    save_phi as save_phi,
)
from .fit import (
    PhiCertificate as PhiCertificate,
    fit_phi as fit_phi,
    kl_loss as kl_loss,
    phi_certificate as phi_certificate,
    residual_loss as residual_loss,
)
from .jax_copy import (
    phi_to_jax as phi_to_jax,
)
from .model import (
    PhiMLP as PhiMLP,
)
from .result import (
    PhiEvaluation as PhiEvaluation,
    PhiFit as PhiFit,
    evaluate_phi as evaluate_phi,
)
from .surrogate import (
    fit_surrogate as fit_surrogate,
)
