"""φ_θ: an MLP onto the simplex as a variational approximation of p_st(y), with its certificate (docs/theory.md T4, §7.8).

- `neural.phi.model` — `PhiMLP`, the network (dense or factored softmax head);
- `neural.phi.fit` — `fit_phi`: fitting to a generator family by the KL or the residual loss, and the
  a-posteriori certificate ‖φ_θ − p_st‖ ≤ ‖A^#‖ ‖Q(y)ᵀφ_θ‖ at one point;
- `neural.phi.surrogate` — `fit_surrogate`: large sparse generators, trained from the residual on a
  design, every prediction certified or replaced by the exact sparse solve;
- `neural.phi.result` — `PhiFit`, what both fits return, and `PhiEvaluation`, φ_θ checked against p_st
  (`evaluate_phi`) with the certificate, for a dense family or a sparse one;
- `neural.phi.certificate` — the certificate of φ_θ at every evaluation point, at scale;
- `neural.phi.families`, `neural.phi.sparse` — generator families Q(y) resolved and sampled, and large
  sparse ones as transition lists with the residual matrix-free;
- `neural.phi.files`, `neural.phi.jax_copy` — a fit saved and reloaded, and rebuilt as a JAX function;
- `neural.phi.figures` — φ_θ against p_st, the error with its certificate, the training curves.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
