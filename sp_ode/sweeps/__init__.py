"""Parameter sweeps: N points of (ε, args), each by the cheapest path that meets `tol` (docs/theory.md §7.5).

`sp_ode.sweeps.sweep` plans, chunks, resumes and validates; the paths per chunk (corrected
reduced flows of order k, or the full stiff solve) are in `sp_ode.sweeps._paths`, the
Dask execution in `sp_ode.sweeps._dask`.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
