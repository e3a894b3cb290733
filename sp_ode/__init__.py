"""sp-ode: singularly perturbed (fast–slow) ODEs.

    ε dx/dt = f(x, y),   dy/dt = g(x, y),   ε = 1/P.

When the fast dynamics are a Markov generator, f(x, y) = Q(y)ᵀx, the critical
manifold x = φ(y) is the stationary distribution p_st(y) (docs/theory.md §3.1, T1).

The namespace is the API: `import sp_ode; sp_ode.stationary_distribution(Q)`.
Names are declared in `__init__.pyi` (what type checkers and IDEs read) and load
lazily from the subpackage that owns them, so `import sp_ode` is cheap and pulls in
neither torch (never) nor sympy/jax (until a name that needs them is used).  The
subpackages, in the order data flows through them (docs/architecture.md):

- `sp_ode.core` — validation, numeric precision scope, files, figures, catalogues;
- `sp_ode.markov` — generators Q and their stationary distributions p_st;
- `sp_ode.networks` — reaction networks on a finite state projection, the certified CME answers;
- `sp_ode.symbolic` — exact stationarity by the matrix-tree theorem;
- `sp_ode.systems` — every model as a system (network systems included) and its integration;
- `sp_ode.manifolds` — critical and slow manifolds, the reduced flow;
- `sp_ode.verification` — `sp_ode.verify` and its checks;
- `sp_ode.sweeps` — parameter sweeps;
- `sp_ode.cli` — the `sp-ode` command line (imported by nothing else).

`sp_ode.seams` declares the internal seams, the non-public names one subpackage imports from another.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__version__ = "0.3.0"

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
__all__ = [*__all__, "__version__"]
