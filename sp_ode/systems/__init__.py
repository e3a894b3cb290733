"""Fast–slow systems ε dx/dt = f(x, y), dy/dt = g(x, y) (docs/theory.md §2–3).

Data flow: a system (:mod:`~sp_ode.systems.system`, or the catalogue
:mod:`~sp_ode.systems.catalogue`) is integrated (:mod:`~sp_ode.systems.simulation`);
its critical manifold φ(y) (:mod:`~sp_ode.systems.critical_manifold`) and slow
manifold φ + εh₁ + … (:mod:`~sp_ode.systems.slow_manifold`) give the reduced flow
(:mod:`~sp_ode.systems.reduced`), and the convergence certificate
(:mod:`~sp_ode.systems.certificate`) measures the O(ε^{k+1}) rates on the region the
trajectory visits (:mod:`~sp_ode.systems.region`); :mod:`~sp_ode.systems.identity` checks
φ = p_st by methods that solve different problems.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

_LAZY: dict[str, str] = {
    name: module
    for module, names in {
        "sp_ode.systems.system": ["FastSlowSystem", "MasterEquationSystem"],
        "sp_ode.systems.simulation": ["simulate", "Trajectory", "SolverError"],
        "sp_ode.systems.reduced": ["simulate_reduced", "reduced_system"],
        "sp_ode.systems.catalogue": ["CatalogueEntry", "SYSTEMS", "DEFAULT_SYSTEM", "get_system",
                                     "master_equation_entry", "toy", "linear", "averaging2",
                                     "michaelis_menten", "vanderpol", "fitzhugh_nagumo"],
        "sp_ode.systems.critical_manifold": ["critical_manifold", "continue_manifold", "normal_hyperbolicity",
                                             "locate_loss_of_hyperbolicity", "ManifoldNotFoundError"],
        "sp_ode.systems.slow_manifold": ["slow_manifold", "SlowManifold"],
        "sp_ode.systems.certificate": ["convergence_certificate", "ConvergenceCertificate", "GivenManifold",
                                       "fit_rate", "RateFit"],
        "sp_ode.systems.identity": ["identity_check", "attractor_distribution", "IdentityCheck"],
        "sp_ode.systems.region": ["visited_region", "VisitedRegion"],
        "sp_ode.systems.network_system": ["NetworkSystem", "NetworkPath", "ManifoldTable"],
        "sp_ode.systems.network_verify": ["verify_network", "network_identity", "NetworkVerdict"],
        "sp_ode.systems.model": ["check_model", "ModelCheck"],
        "sp_ode.systems.vector_field": ["as_vector_field"],
        "sp_ode.systems.sweep": ["sweep", "SweepResult", "SweepResumeError", "SweepClusterError"],
    }.items()
    for name in names
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = lazy_namespace(__name__, _LAZY)
