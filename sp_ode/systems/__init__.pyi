"""Public names of `sp_ode.systems` (read by type checkers and by `sp_ode.core.lazy`)."""
from .catalogue import (
    DEFAULT_SYSTEM as DEFAULT_SYSTEM,
    SYSTEMS as SYSTEMS,
    CatalogueEntry as CatalogueEntry,
    averaging2 as averaging2,
    fitzhugh_nagumo as fitzhugh_nagumo,
    get_system as get_system,
    linear as linear,
    master_equation_entry as master_equation_entry,
    michaelis_menten as michaelis_menten,
    toy as toy,
    vanderpol as vanderpol,
)
from .model import (
    ModelCheck as ModelCheck,
    check_model as check_model,
)
from .network import (
    ManifoldTable as ManifoldTable,
    NetworkPath as NetworkPath,
    NetworkSystem as NetworkSystem,
)
from .simulation import (
    SolverError as SolverError,
    Trajectory as Trajectory,
    simulate as simulate,
)
from .system import (
    FastSlowSystem as FastSlowSystem,
    MasterEquationSystem as MasterEquationSystem,
)
from .vector_field import (
    as_vector_field as as_vector_field,
)
