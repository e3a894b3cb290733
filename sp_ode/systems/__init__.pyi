"""Public names of `sp_ode.systems` (read by type checkers and by `sp_ode.core.lazy`)."""
from .catalogue import (
    DEFAULT_SYSTEM as DEFAULT_SYSTEM,
)
from .catalogue import (
    SYSTEMS as SYSTEMS,
)
from .catalogue import (
    CatalogueEntry as CatalogueEntry,
)
from .catalogue import (
    averaging2 as averaging2,
)
from .catalogue import (
    fitzhugh_nagumo as fitzhugh_nagumo,
)
from .catalogue import (
    get_system as get_system,
)
from .catalogue import (
    linear as linear,
)
from .catalogue import (
    master_equation_entry as master_equation_entry,
)
from .catalogue import (
    michaelis_menten as michaelis_menten,
)
from .catalogue import (
    toy as toy,
)
from .catalogue import (
    vanderpol as vanderpol,
)
from .model import (
    ModelCheck as ModelCheck,
)
from .model import (
    check_model as check_model,
)
from .simulation import (
    SolverError as SolverError,
)
from .simulation import (
    Trajectory as Trajectory,
)
from .simulation import (
    simulate as simulate,
)
from .system import (
    FastSlowSystem as FastSlowSystem,
)
from .system import (
    MasterEquationSystem as MasterEquationSystem,
)
from .vector_field import (
    as_vector_field as as_vector_field,
)
