"""Public names of `sp_ode.networks` (read by type checkers and by `sp_ode.core.lazy`)."""
from .cme.lyapunov import (
    LyapunovCertificate as LyapunovCertificate,
    find_lyapunov as find_lyapunov,
    propensity_supremum as propensity_supremum,
    truncation_bound as truncation_bound,
    truncation_certificate as truncation_certificate,
)
from .cme.stationary import (
    StationaryCME as StationaryCME,
    cme_stationary as cme_stationary,
)
from .cme.tensor_train import (
    NotSeparableError as NotSeparableError,
    SeparableGenerator as SeparableGenerator,
    TTDistribution as TTDistribution,
    qtt_box as qtt_box,
    tt_stationary as tt_stationary,
)
from .cme.transient import (
    MomentIntervals as MomentIntervals,
    TransientDistribution as TransientDistribution,
    fsp_transient as fsp_transient,
    transient_distribution as transient_distribution,
)
from .events import (
    Event as Event,
    EventError as EventError,
)
from .gillespy2 import (
    GillesPy2FeatureError as GillesPy2FeatureError,
    from_gillespy2 as from_gillespy2,
)
from .models import (
    NETWORK_MODELS as NETWORK_MODELS,
    NetworkModel as NetworkModel,
    get_network_model as get_network_model,
)
from .network import (
    NegativeCountError as NegativeCountError,
    NetworkError as NetworkError,
    NetworkSyntaxError as NetworkSyntaxError,
    PropensityError as PropensityError,
    Reaction as Reaction,
    ReactionNetwork as ReactionNetwork,
    TruncationError as TruncationError,
    UnknownSymbolError as UnknownSymbolError,
    UnusedSlowVariableError as UnusedSlowVariableError,
)
from .sbml import (
    SBMLFeatureError as SBMLFeatureError,
    from_antimony as from_antimony,
    from_sbml as from_sbml,
)
from .state_space import (
    CertifiedMarginal as CertifiedMarginal,
    StateSpace as StateSpace,
    TruncationReport as TruncationReport,
)
