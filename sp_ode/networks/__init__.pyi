"""Public names of `sp_ode.networks` (read by type checkers and by `sp_ode.core.lazy`)."""
from .models import (
    NETWORK_MODELS as NETWORK_MODELS,
)
from .models import (
    NetworkModel as NetworkModel,
)
from .models import (
    get_network_model as get_network_model,
)
from .network import (
    NegativeCountError as NegativeCountError,
)
from .network import (
    NetworkError as NetworkError,
)
from .network import (
    NetworkSyntaxError as NetworkSyntaxError,
)
from .network import (
    PropensityError as PropensityError,
)
from .network import (
    Reaction as Reaction,
)
from .network import (
    ReactionNetwork as ReactionNetwork,
)
from .network import (
    TruncationError as TruncationError,
)
from .network import (
    UnknownSymbolError as UnknownSymbolError,
)
from .network import (
    UnusedSlowVariableError as UnusedSlowVariableError,
)
from .sbml import (
    SBMLFeatureError as SBMLFeatureError,
)
from .sbml import (
    from_antimony as from_antimony,
)
from .sbml import (
    from_sbml as from_sbml,
)
from .state_space import (
    StateSpace as StateSpace,
)
from .state_space import (
    TruncationReport as TruncationReport,
)
from .system import (
    ManifoldTable as ManifoldTable,
)
from .system import (
    NetworkPath as NetworkPath,
)
from .system import (
    NetworkSystem as NetworkSystem,
)
