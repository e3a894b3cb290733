"""φ_θ rebuilt as a pure JAX function (docs/theory.md §3.3–3.4), e.g. `phi=` of `sp_ode.simulate_reduced`.

The JAX function computes exactly the torch forward pass of `neural.PhiMLP` — the
affine map of the box onto [−1, 1]ᵈ, hidden layers z ← act(W z + b), the dense or factored
head's logits (`neural.phi.model`), softmax —
with the same activation definitions (tanh; SiLU; exact, erf-based GELU, torch's
default), from NumPy copies of the weights, so the two agree to rounding in float64.
This module does not import `neural.phi.model` (which calls it from `PhiMLP.jax_fn`).
"""
from __future__ import annotations

from collections.abc import Callable

import torch

from sp_ode.core.precision import float64_callable

__all__ = ["phi_to_jax"]

# activation name -> (jax, jnp) -> function; the names of neural.phi.model.ACTIVATIONS
_ACTIVATIONS = {
    "tanh": lambda jax, jnp: jnp.tanh,
    "silu": lambda jax, jnp: jax.nn.silu,
    "gelu": lambda jax, jnp: (lambda z: jax.nn.gelu(z, approximate=False)),
}


def phi_to_jax(model: torch.nn.Module) -> Callable:
    """φ_θ as a pure JAX function y (d,) -> (n,) (or (..., d) -> (..., n)), usable as `phi=`.

    The weights are copied to NumPy float64 once; later changes to `model` do not affect
    the function.  Returns a JAX array of shape (n,) (or (..., n)), float64: called directly
    it computes in float64 whatever the user's JAX setting (`sp_ode.core.precision.float64_callable`);
    under a JAX transformation (`jit`, `vmap`, `grad`) the enclosing trace decides, so
    trace inside `with sp_ode.float64():` (sp_ode's own solvers always do).

    Raises
    ------
    TypeError
        `model` is not a PhiMLP.
    ValueError
        Its activation is not one of tanh, silu, gelu.
    """
    import jax
    import jax.numpy as jnp

    needed = ("body", "centre", "halfwidth", "activation", "d", "n", "head")
    if not (isinstance(model, torch.nn.Module) and all(hasattr(model, a) for a in needed)):
        raise TypeError(f"`model` must be a neural.PhiMLP; got {type(model).__name__}.")
    if model.activation not in _ACTIVATIONS:
        raise ValueError(f"`model.activation` must be one of {tuple(_ACTIVATIONS)}; got {model.activation!r}.")
    act = _ACTIVATIONS[model.activation](jax, jnp)

    def np_(t):
        return t.detach().cpu().numpy().copy()

    layers = [(np_(m.weight), np_(m.bias)) for m in model.body if isinstance(m, torch.nn.Linear)]
    centre, half = np_(model.centre), np_(model.halfwidth)
    d = model.d
    if model.head == "dense":
        w_out, b_out = np_(model.out.weight), np_(model.out.bias)

        def head(h):
            return h @ w_out.T + b_out
    else:
        coords = np_(model.coords)
        factors = [(np_(f.weight), np_(f.bias), coords[:, s]) for s, f in enumerate(model.factors)]
        # the (R, n) interaction profiles u[x_s]·v[x_t] do not depend on y: formed once here
        inter = [(np_(g.weight), np_(g.bias), np_(u)[:, coords[:, s]] * np_(v)[:, coords[:, t]])
                 for (s, t), g, u, v in zip(model.pairs, model.gates, model.u, model.v)]
        bias = np_(model.state_bias)

        def head(h):
            out = bias
            for W, b, idx in factors:
                out = out + jnp.take(h @ W.T + b, idx, axis=-1)
            for W, b, uv in inter:
                out = out + (h @ W.T + b) @ uv
            return out

    def phi(y):
        y = jnp.asarray(y)
        z = ((y.reshape(d) if y.ndim == 0 else y) - centre) / half  # a scalar y is one point when d = 1
        for W, b in layers:
            z = act(z @ W.T + b)
        return jax.nn.softmax(head(z), axis=-1)

    phi.__name__ = f"phi_theta_d{d}_n{model.n}"
    return float64_callable(phi)
