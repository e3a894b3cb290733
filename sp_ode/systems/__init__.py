"""Fast–slow systems ε dx/dt = f(x, y), dy/dt = g(x, y) and their integration (docs/theory.md §2–3, §9).

Data flow: a system (`sp_ode.systems.system`; a user's own model checked by
`sp_ode.systems.model`; the catalogue `sp_ode.systems.catalogue`, the stiff test set
`sp_ode.systems.stiff_testset`), its functions wrapped to compute in float64
(`sp_ode.systems.vector_field`), is integrated by `sp_ode.systems.simulation` with the
options of `sp_ode.systems.options` on the engines of `sp_ode.systems.integration`
(diffrax, scipy); a failed solve is named by
`sp_ode.systems.diagnosis`.  Manifolds, verification and sweeps build on this package.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

# Names that lived here before the layout by concern; they resolve with a DeprecationWarning.
_MOVED = {
    'simulate_reduced': 'sp_ode.manifolds.reduced',
    'reduced_system': 'sp_ode.manifolds.reduced',
    'critical_manifold': 'sp_ode.manifolds.critical_manifold',
    'continue_manifold': 'sp_ode.manifolds.critical_manifold',
    'normal_hyperbolicity': 'sp_ode.manifolds.critical_manifold',
    'locate_loss_of_hyperbolicity': 'sp_ode.manifolds.critical_manifold',
    'ManifoldNotFoundError': 'sp_ode.manifolds.critical_manifold',
    'slow_manifold': 'sp_ode.manifolds.slow_manifold',
    'SlowManifold': 'sp_ode.manifolds.slow_manifold',
    'convergence_certificate': 'sp_ode.verification.certificate',
    'ConvergenceCertificate': 'sp_ode.verification.certificate',
    'GivenManifold': 'sp_ode.verification.certificate',
    'fit_rate': 'sp_ode.verification.rates',
    'RateFit': 'sp_ode.verification.rates',
    'identity_check': 'sp_ode.verification.identity',
    'attractor_distribution': 'sp_ode.markov.attractor',
    'IdentityCheck': 'sp_ode.verification.identity',
    'visited_region': 'sp_ode.verification.region',
    'VisitedRegion': 'sp_ode.verification.region',
    'verify_network': 'sp_ode.verification.network',
    'network_identity': 'sp_ode.verification.network',
    'NetworkVerdict': 'sp_ode.verification.network',
    'sweep': 'sp_ode.sweeps.sweep',
    'SweepResult': 'sp_ode.sweeps.sweep',
    'SweepResumeError': 'sp_ode.sweeps.sweep',
    'SweepClusterError': 'sp_ode.sweeps.sweep',
    'NetworkSystem': 'sp_ode.networks.system',
    'NetworkPath': 'sp_ode.networks.system',
    'ManifoldTable': 'sp_ode.networks.system',
}

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__, moved=_MOVED)
