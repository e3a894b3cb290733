"""The fast map of a trained layer with its slow state frozen, iterated (docs/theory.md §5, the mapping table).

In the ODE ε dx/dt = f(x, y) the fast state, with y held fixed, relaxes to the critical manifold
x = φ(y), f(φ(y), y) = 0 (§3.1–3.2).  The network counterpart measured here: layer ℓ of a
[`neural.FastSlowLM`][neural.lm.model.FastSlowLM] acting on a residual stream x with its slow input frozen,

    Φ_y(x) = u + MLP(LN₂(u)),    u = x + Attn(LN₁(x)) + c(y),

where y = (s_k) are the block means of LN₁(h) of the layer's actual input h, and
c(y)_b = g_ℓ ⊙ W_o z_{b−1}(y) is the trained slow feedback they produce (§4, steps 2–5), held
fixed while x moves.  Φ_y(h) is exactly what the layer computes.  Iterating x_{n+1} = Φ_y(x_n)
from x_0 = h asks whether the layer's fast part has a fixed point x* = φ(y) for the frozen y.

Φ_y is a residual map x + Δ_y(x), so a fixed point needs Δ_y(x*) = 0.  Since Δ_y depends on x
through layer norms, a map whose increments do not vanish drifts: x_n ≈ n·v + w, and only the
*normalised* state LN₁(x_n) — the quantity the slow path pools — converges, to a* = LN₁(v)
(algebraically, like 1/n: no spectral gap).  `iterate_fast_map` therefore reports both:

* the raw step ‖x_{n+1} − x_n‖ (rms per token) at the first and last iteration: a fixed point
  makes it → 0; a drift keeps it ≈ ‖v‖ while ‖x_n‖ grows linearly;
* the normalised step ‖LN₁(x_{n+1}) − LN₁(x_n)‖ / ‖LN₁(x_n)‖ and the limit a*, estimated as
  LN₁(x_N) and, independently, as LN₁ of the last increment (their distance is the estimate's error);
* the distance of the trained layer's output to that limit, D = ‖LN₁(Φ_y(h)) − a*‖ / ‖a*‖
  (per token, then rms), and the same in the slow coordinates (block means), D_pool;
* D with the feedback removed (c = 0, its own limit), to see what the trained feedback changes.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import torch

from neural.lm.pooling import add_to_blocks
from sp_ode.core.summary import Summarised, number

if TYPE_CHECKING:
    from neural.lm.model import FastSlowLM

__all__ = ["FastMapResult", "frozen_fast_map", "iterate_fast_map"]


@dataclass(frozen=True, repr=False)
class FastMapResult(Summarised):
    """What iterating one layer's frozen-y fast map did (all norms rms over tokens and sequences).

    Attributes
    ----------
    layer
        ℓ.
    n_iter : N
        The iterations run.
    converged
        True when the raw step fell below `tol` × ‖x₀‖ (a fixed point of Φ_y itself).
    direction_converged
        True when the normalised step fell below `tol`.
    raw_step_first, raw_step_last
        ‖x₁ − x₀‖ and ‖x_N − x_{N−1}‖ (rms per token).
    state_norm_first, state_norm_last
        ‖x₀‖ and ‖x_N‖ (rms per token).
    drift_rate
        (‖x_N‖ − ‖x_{N/2}‖)/(N/2): growth of the state per iteration (0 at a fixed point).
    normalised_step_last
        ‖LN₁(x_N) − LN₁(x_{N−1})‖ / ‖LN₁(x_{N−1})‖.
    normalised_step_decay
        Fitted exponent p of normalised step ∝ n^(−p) over the last half
        (a geometric, spectral-gap convergence shows as a large, growing p).
    limit_error
        ‖LN₁(x_N) − LN₁(x_N − x_{N−1})‖ / ‖a*‖, the uncertainty of the limit a*.
    distance
        D = ‖LN₁(Φ_y(h)) − a*‖ / ‖a*‖, the trained layer's output against the limit.
    distance_pooled
        The same for block means (the slow coordinates of the next layer).
    distance_no_feedback
        D of the layer with c = 0, against its own limit.
    feedback_norm : ‖c(y)‖ (rms per token)
        The size of the frozen slow feedback.
    """

    layer: int
    n_iter: int
    converged: bool
    direction_converged: bool
    raw_step_first: float
    raw_step_last: float
    state_norm_first: float
    state_norm_last: float
    drift_rate: float
    normalised_step_last: float
    normalised_step_decay: float
    limit_error: float
    distance: float
    distance_pooled: float
    distance_no_feedback: float
    feedback_norm: float

    def to_dict(self) -> dict:
        return asdict(self)

    def _summary_title(self) -> str:
        state = "converged" if self.converged else "direction converged" if self.direction_converged \
            else "not converged"
        return f"FastMapResult: layer {self.layer}, {state} after {self.n_iter} iterations"

    def _summary_rows(self) -> list[tuple[str, str]]:
        return [("distance D", f"{number(self.distance)} (pooled {number(self.distance_pooled)}, "
                               f"no feedback {number(self.distance_no_feedback)})"),
                ("limit error", number(self.limit_error)),
                ("raw step", f"{number(self.raw_step_first)} → {number(self.raw_step_last)}"),
                ("normalised step", f"{number(self.normalised_step_last)} (decay n^-{number(self.normalised_step_decay, 3)})"),
                ("state norm", f"{number(self.state_norm_first)} → {number(self.state_norm_last)}"),
                ("feedback norm", number(self.feedback_norm))]


def _rms(x: torch.Tensor) -> float:
    # rms over tokens of the per-token Euclidean norm: (B, T', d) -> scalar
    return float(x.double().pow(2).sum(-1).mean().sqrt())


def frozen_fast_map(block, h: torch.Tensor, window: int | None, kernel: str = "auto", *, feedback: bool = True):
    """(Φ_y, c): layer `block`'s map with the slow state frozen at y = pool(LN₁(h)), and the feedback c(y).

    Φ_y(h) equals `block(h, window, kernel)` exactly; for x ≠ h the feedback stays c(y) instead of
    following x.  `feedback=False` (or a dense block) uses c = 0.
    """
    if block.slow is not None and feedback:
        c = block.slow(block.ln_1(h))  # (B, ⌈T'/P⌉, d), computed once: y is frozen
    else:
        c = None

    def phi(x: torch.Tensor) -> torch.Tensor:
        u = x + block.attn(block.ln_1(x), window, kernel)
        if c is not None:
            u = add_to_blocks(u, c, block.pool)
        return u + block.mlp(block.ln_2(u))

    return phi, c


def _limit(phi, h: torch.Tensor, ln, n_iter: int):
    """Iterate; return (a*, first raw step, last raw step, norms, normalised steps, limit error)."""
    x = h
    norms, nsteps = [_rms(x)], []
    first = last = None
    prev_ln = ln(x)
    for n in range(n_iter):
        x_next = phi(x)
        step = x_next - x
        if n == 0:
            first = _rms(step)
        last = _rms(step)
        cur_ln = ln(x_next)
        nsteps.append(_rms(cur_ln - prev_ln) / max(_rms(prev_ln), 1e-30))
        norms.append(_rms(x_next))
        x, prev_ln = x_next, cur_ln
    a_star = prev_ln
    a_alt = ln(step)  # the direction of the last increment: the same limit for a drift x_n ≈ n·v
    err = _rms(a_star - a_alt) / max(_rms(a_star), 1e-30) if last > 0 else 0.0
    return a_star, first, last, norms, nsteps, err


@torch.no_grad()
def iterate_fast_map(model: FastSlowLM, idx: torch.Tensor, *, n_iter: int = 400,
                     tol: float = 1e-6) -> list[FastMapResult]:
    """Iterate every layer's frozen-y fast map Φ_y from that layer's actual input (module docstring).

    Parameters
    ----------
    model
        Neural.FastSlowLM (any arm; a dense layer has c = 0).
    idx : LongTensor
        Shape (B, T'), the sequences whose slow states are frozen.
    n_iter
        N ≥ 4 iterations per layer.
    tol
        Convergence threshold of the raw step (relative to ‖x₀‖) and of the normalised step.

    Returns
    -------
    list of `FastMapResult`, one per layer.

    Raises
    ------
    TypeError
        If `model` is not a [`neural.FastSlowLM`][neural.lm.model.FastSlowLM], or `idx` is not an integer tensor.
    ValueError
        If `n_iter` < 4, `tol` is not positive, or `idx` is not (B, T') with T' ≤ T.
    """
    from neural.lm.model import FastSlowLM

    if not isinstance(model, FastSlowLM):
        raise TypeError(f"`model` must be a neural.FastSlowLM; got {type(model).__name__}.")
    if isinstance(n_iter, bool) or not isinstance(n_iter, int) or n_iter < 4:
        raise ValueError(f"`n_iter` must be an integer ≥ 4; got {n_iter!r}.")
    if not (isinstance(tol, (int, float)) and tol > 0):
        raise ValueError(f"`tol` must be a positive number; got {tol!r}.")
    if not isinstance(idx, torch.Tensor) or idx.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"`idx` must be an integer torch.Tensor of token ids; got {getattr(idx, 'dtype', type(idx))}.")
    if idx.ndim != 2 or not 1 <= idx.shape[1] <= model.config.seq_len or idx.shape[0] < 1:
        raise ValueError(f"`idx` must have shape (B, T') with 1 ≤ T' ≤ {model.config.seq_len}; got {tuple(idx.shape)}.")
    was_training = model.training
    model.eval()
    window, kernel, P = model.config.window, model.window_kernel, model.config.pool
    n_pool = idx.shape[1] // P
    h = model.embed(idx)  # the first layer's actual input
    out = []
    for layer, block in enumerate(model.blocks):
        ln = block.ln_1
        phi, c = frozen_fast_map(block, h, window, kernel)
        a_star, first, last, norms, nsteps, err = _limit(phi, h, ln, n_iter)
        phi0, _ = frozen_fast_map(block, h, window, kernel, feedback=False)
        a0_star = _limit(phi0, h, ln, n_iter)[0]
        one = ln(phi(h))  # the trained layer's output, normalised
        one0 = ln(phi0(h))
        half = n_iter // 2
        ns = torch.tensor(nsteps[half:], dtype=torch.float64).clamp_min(1e-300)
        n = torch.arange(half + 1, n_iter + 1, dtype=torch.float64)
        slope = float(torch.linalg.lstsq(torch.stack([torch.ones_like(n), n.log()], 1), ns.log()[:, None]).solution[1])

        def pooled(a):
            # (B, T', d) -> (B, K, d) block means over whole blocks
            return a[:, : n_pool * P].reshape(a.shape[0], n_pool, P, a.shape[2]).mean(2)

        out.append(FastMapResult(
            layer=layer, n_iter=n_iter,
            converged=last <= tol * max(norms[0], 1e-30), direction_converged=nsteps[-1] <= tol,
            raw_step_first=first, raw_step_last=last, state_norm_first=norms[0], state_norm_last=norms[-1],
            drift_rate=(norms[-1] - norms[half]) / (n_iter - half), normalised_step_last=nsteps[-1],
            normalised_step_decay=-slope, limit_error=err,
            distance=_rms(one - a_star) / max(_rms(a_star), 1e-30),
            distance_pooled=_rms(pooled(one) - pooled(a_star)) / max(_rms(pooled(a_star)), 1e-30),
            distance_no_feedback=_rms(one0 - a0_star) / max(_rms(a0_star), 1e-30),
            feedback_norm=0.0 if c is None else _rms(add_to_blocks(torch.zeros_like(h), c, P)),
        ))
        h = phi(h)  # the next layer's actual input
    model.train(was_training)
    return out
