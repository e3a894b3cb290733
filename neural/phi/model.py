"""The φ_θ network: an MLP onto the simplex, with a dense or a factored log-space head (docs/theory.md §3.4).

φ_θ(y) = softmax(ℓ_θ(y)), so mass 1 and non-negativity hold by construction for any n;
the head produces the logits ℓ_θ(y) ∈ ℝⁿ (log φ_θ up to a constant) from the hidden
features h(y) ∈ ℝ^width of the MLP body.

`head="dense"`: ℓ = W h + b, W of shape (n, width) — n·(width + 1) parameters.

`head="factored"`, for a product-form state space (a reaction network of S species,
each state i a vector of counts x_i = (x_i1, …, x_iS), n ≤ ∏ sizes):

    ℓ_i(y) = Σ_s (U_s h + c_s)[x_is] + Σ_{s<t} Σ_{r<R} g_str(y) u_str[x_is] v_str[x_it] + b_i,

additive per species (a product-form law, exactly, when the interaction terms vanish) plus a
rank-R interaction per pair of species and a per-state offset b.  Why log space: the stationary
law of a chemical master equation is close to an exponential family in the counts — a Poisson
law is log p(x) = x·log λ − λ − log x!, *linear* in the two features (log λ, λ) with a fixed
per-state offset — so a few features h(y) and a per-species linear read-out carry most of it.
Parameters: Σ_s sizes_s·(width + 1) + pairs·R·(sizes_s + sizes_t + width + 1) + n, instead of
n·(width + 1).
"""
from __future__ import annotations

import contextlib
import itertools
import math
from typing import TYPE_CHECKING

import numpy as np
import torch

from sp_ode.core.summary import Summarised, number, shape_of
from sp_ode.core.validation import check_choice, check_finite_array, check_positive_int

if TYPE_CHECKING:
    from collections.abc import Sequence

    from sp_ode.core.typing import ArrayLike, Float, Int

ACTIVATIONS = {"tanh": torch.nn.Tanh, "silu": torch.nn.SiLU, "gelu": torch.nn.GELU}
HEADS = ("dense", "factored")


@contextlib.contextmanager
def torch_threads(threads: int | None):
    """torch's intra-op thread count set to `threads` for the duration, then put back as it was; None leaves
    it alone (a library does not change the user's torch settings unless asked, and then only for the call)."""
    if threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class PhiMLP(torch.nn.Module):
    """φ_θ : ℝᵈ → Δⁿ⁻¹, an MLP with a softmax output.

    z = 2(y − lower)/(upper − lower) − 1 maps the domain onto [−1, 1]ᵈ, then
    `depth` hidden layers of `width` units with `activation`, then the head (module
    docstring) to n logits and a softmax.

    Parameters
    ----------
    d, n : int
        Dimension of y and number of states.
    width, depth : int
        Hidden width and number of hidden layers (depth ≥ 1).
    lower, upper : array_like (d,), optional
        The domain box used for input normalisation (default [−1, 1]ᵈ).
    activation : {"tanh", "silu", "gelu"}
    seed : int
        Seeds the initialisation (a private generator; global RNG untouched).
    head : {"dense", "factored"}
        The output head (module docstring); "factored" needs `coords`.
    coords : array_like (n, S) of int, optional
        Per state, its index along each of the S factors (species counts), each in
        [0, sizes_s); the factored head's input.
    sizes : sequence of int (S,), optional
        The number of values along each factor (default `coords.max(axis=0) + 1`).
    rank : int
        Rank R of each pairwise interaction of the factored head (0: product form only).

    Raises
    ------
    TypeError, ValueError
        Non-integer or non-positive sizes, unknown activation or head, a bad box, or
        `coords` missing, of the wrong shape or negative for the factored head.
    """

    def __init__(self, d: int, n: int, *, width: int = 32, depth: int = 2,
                 lower: Float[ArrayLike, " d"] | None = None, upper: Float[ArrayLike, " d"] | None = None,
                 activation: str = "tanh", seed: int = 0, head: str = "dense",
                 coords: Int[ArrayLike, "n S"] | None = None, sizes: Sequence[int] | None = None,
                 rank: int = 2) -> None:
        super().__init__()
        self.d, self.n = check_positive_int("d", d), check_positive_int("n", n)
        self.width, self.depth = check_positive_int("width", width), check_positive_int("depth", depth)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        self.head = check_choice("head", head, HEADS)
        if isinstance(rank, bool) or not isinstance(rank, (int, np.integer)) or rank < 0:
            raise ValueError(f"`rank` must be an integer >= 0; got {rank!r}.")
        self.rank = int(rank)
        lower = -np.ones(d) if lower is None else check_finite_array("lower", lower).reshape(-1)
        upper = np.ones(d) if upper is None else check_finite_array("upper", upper).reshape(-1)
        if lower.shape != (d,) or upper.shape != (d,):
            raise ValueError(f"`lower` and `upper` must have shape ({d},); got {lower.shape} and {upper.shape}.")
        if np.any(upper <= lower):
            raise ValueError(f"`upper` must exceed `lower` on every axis; got lower = {lower}, upper = {upper}.")
        self.register_buffer("centre", torch.as_tensor((lower + upper) / 2, dtype=torch.float64))
        self.register_buffer("halfwidth", torch.as_tensor((upper - lower) / 2, dtype=torch.float64))
        layers, fan_in = [], d
        for _ in range(depth):
            layers += [torch.nn.Linear(fan_in, width, dtype=torch.float64), ACTIVATIONS[activation]()]
            fan_in = width
        if self.head == "dense":
            self.out = torch.nn.Linear(fan_in, n, dtype=torch.float64)
        self.body = torch.nn.Sequential(*layers)
        gen = torch.Generator().manual_seed(int(seed))
        with torch.no_grad():
            for layer in self.body:
                if isinstance(layer, torch.nn.Linear):
                    # nn.Linear's default range U(±1/√fan_in), drawn from our own generator.
                    bound = 1.0 / math.sqrt(layer.in_features)
                    layer.weight.uniform_(-bound, bound, generator=gen)
                    layer.bias.uniform_(-bound, bound, generator=gen)
            if self.head == "dense":
                # Zero output layer: φ_θ starts at the uniform distribution 1/n, the
                # maximum-entropy guess, and gradients still reach every layer.
                self.out.weight.zero_()
                self.out.bias.zero_()
        if self.head == "factored":
            self._build_factored(coords, sizes, gen)

    # --- the factored head ----------------------------------------------------------------
    def _build_factored(self, coords, sizes, gen: torch.Generator) -> None:
        if coords is None:
            raise ValueError("`coords` is required for head='factored': per state, its index along each factor "
                             "(e.g. the species counts `space.states` of a reaction network), shape (n, S).")
        c = np.asarray(coords)
        if c.ndim != 2 or c.shape[0] != self.n or c.shape[1] < 1:
            raise ValueError(f"`coords` must have shape (n, S) = ({self.n}, S ≥ 1); got {c.shape}.")
        if not np.issubdtype(c.dtype, np.integer) or c.min() < 0:
            raise ValueError("`coords` must hold nonnegative integers (indices along each factor).")
        self.register_buffer("coords", torch.as_tensor(c, dtype=torch.int64))
        sizes = (c.max(axis=0) + 1).tolist() if sizes is None else list(sizes)
        if len(sizes) != c.shape[1] or any(int(s) < int(m) + 1 for s, m in zip(sizes, c.max(axis=0))):
            raise ValueError(f"`sizes` must give, per factor, more values than the largest coordinate "
                             f"{(c.max(axis=0)).tolist()}; got {sizes}.")
        self.sizes = tuple(int(s) for s in sizes)
        w = self.width
        # Zero read-outs: φ_θ starts uniform, as with the dense head.
        self.factors = torch.nn.ModuleList([torch.nn.Linear(w, s, dtype=torch.float64) for s in self.sizes])
        for f in self.factors:
            torch.nn.init.zeros_(f.weight)
            torch.nn.init.zeros_(f.bias)
        self.pairs = list(itertools.combinations(range(len(self.sizes)), 2)) if self.rank else []
        self.gates = torch.nn.ModuleList()
        self.u = torch.nn.ParameterList()
        self.v = torch.nn.ParameterList()
        for s, t in self.pairs:
            gate = torch.nn.Linear(w, self.rank, dtype=torch.float64)
            torch.nn.init.zeros_(gate.weight)
            torch.nn.init.zeros_(gate.bias)
            self.gates.append(gate)
            # The gate starts at zero but its factors do not: a zero gate behind zero factors
            # would get no gradient (docs/theory.md §4, item 5, the same lesson).
            for size, plist in ((self.sizes[s], self.u), (self.sizes[t], self.v)):
                z = torch.empty(self.rank, size, dtype=torch.float64)
                z.normal_(0.0, 1.0, generator=gen)
                plist.append(torch.nn.Parameter(z / math.sqrt(size)))
        self.state_bias = torch.nn.Parameter(torch.zeros(self.n, dtype=torch.float64))
        # The whole box in lexicographic order (a network's state space without a total or a
        # conservation law): the logits are then outer sums, formed by broadcasting instead of
        # gathers — the same numbers, several times faster at n = 10⁴.
        self._grid_flag = None

    @property
    def _grid(self) -> bool:
        """Whether `coords` is the whole box in lexicographic order (re-read after `load_state_dict`)."""
        key = (id(self.coords), self.coords._version)
        if self._grid_flag is None or self._grid_flag[0] != key:
            c = self.coords.cpu().numpy()
            full = int(np.prod(self.sizes)) == self.n
            grid = full and np.array_equal(np.stack(np.unravel_index(np.arange(self.n), self.sizes), axis=1), c)
            self._grid_flag = (key, bool(grid))
        return self._grid_flag[1]

    @_grid.setter
    def _grid(self, value: bool) -> None:  # tests compare the two paths
        self._grid_flag = ((id(self.coords), self.coords._version), bool(value))

    def _factored_logits(self, h: torch.Tensor) -> torch.Tensor:
        lead = h.shape[:-1]
        h = h.reshape(-1, h.shape[-1])                                        # (B, width)
        if self._grid:
            return self._grid_logits(h).reshape(*lead, self.n)
        out = self.state_bias.expand(h.shape[0], self.n).clone()
        for s, f in enumerate(self.factors):
            out = out + f(h)[:, self.coords[:, s]]                            # (B, sizes_s) gathered to (B, n)
        for (s, t), gate, u, v in zip(self.pairs, self.gates, self.u, self.v):
            uv = u[:, self.coords[:, s]] * v[:, self.coords[:, t]]            # (R, n)
            out = out + gate(h) @ uv                                          # (B, R) @ (R, n)
        return out.reshape(*lead, self.n)

    def _grid_logits(self, h: torch.Tensor) -> torch.Tensor:
        B, S = h.shape[0], len(self.sizes)
        out = None
        for s, f in enumerate(self.factors):
            shape = [B] + [1] * S
            shape[1 + s] = self.sizes[s]
            term = f(h).view(shape)                                            # (B, 1, …, sizes_s, …, 1)
            out = term if out is None else out + term
        for (s, t), gate, u, v in zip(self.pairs, self.gates, self.u, self.v):
            inter = torch.einsum("br,ra,rc->bac", gate(h), u, v)               # (B, sizes_s, sizes_t)
            shape = [B] + [1] * S
            shape[1 + s], shape[1 + t] = self.sizes[s], self.sizes[t]
            out = out + inter.view(shape)
        return out.reshape(B, self.n) + self.state_bias

    # --- forward --------------------------------------------------------------------------
    def features(self, y: torch.Tensor) -> torch.Tensor:
        """Hidden features h(y), (..., d) -> (..., width)."""
        if y.shape[-1:] != (self.d,):
            raise ValueError(f"`y` must have last dimension d = {self.d}; got shape {tuple(y.shape)}.")
        z = (y.to(self.centre.dtype) - self.centre) / self.halfwidth
        return self.body(z)

    def logits(self, y: torch.Tensor) -> torch.Tensor:
        """Unnormalised log-probabilities, (..., d) -> (..., n)."""
        h = self.features(y)
        return self.out(h) if self.head == "dense" else self._factored_logits(h)

    def log_prob(self, y: torch.Tensor) -> torch.Tensor:
        """log φ_θ(y), (..., d) -> (..., n) (log-softmax: finite even where φ_θ underflows)."""
        return torch.log_softmax(self.logits(y), dim=-1)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """φ_θ(y) on the simplex, (..., d) -> (..., n)."""
        return torch.softmax(self.logits(y), dim=-1)

    def config(self) -> dict:
        """The constructor arguments (less `seed` and `coords`) as JSON-able values."""
        centre = self.centre.detach().cpu().numpy()
        half = self.halfwidth.detach().cpu().numpy()
        cfg = {"d": self.d, "n": self.n, "width": self.width, "depth": self.depth, "activation": self.activation,
               "lower": (centre - half).tolist(), "upper": (centre + half).tolist(), "head": self.head}
        if self.head == "factored":
            cfg.update(rank=self.rank, sizes=list(self.sizes))
        return cfg

    def jax_fn(self):
        """φ_θ as a pure JAX function y (d,) -> (n,), e.g. `phi=` of `sp_ode.simulate_reduced`.

        The function returns a float64 JAX array of shape (n,) for y of shape (d,) (or (..., n)
        for (..., d)): called directly it computes in float64 whatever the user's JAX setting;
        traced by `jax.jit`/`vmap`/`grad`, the trace's precision decides, so trace inside
        `with sp_ode.float64():` (as sp_ode's solvers do).  See `neural.phi.jax_copy.phi_to_jax`
        (the weights are copied).
        The same function object is returned while the weights are unchanged, so repeated
        `simulate_reduced(phi=model)` calls reuse one compiled solve (sp_ode caches
        compilations by the function's identity); any in-place update of a parameter
        (an optimiser step, `load_state_dict`) bumps its version and gives a fresh copy.
        """
        from neural.phi.jax_copy import phi_to_jax  # jax (1 s to import) only when a JAX copy is asked for

        versions = tuple((id(t), t._version) for t in list(self.parameters()) + list(self.buffers()))
        cached = getattr(self, "_jax_fn_cache", None)
        if cached is None or cached[0] != versions:
            cached = (versions, phi_to_jax(self))
            self._jax_fn_cache = cached
        return cached[1]

    def predict(self, y, *, chunk: int | None = None) -> np.ndarray:
        """φ_θ(y) as a float64 ndarray: y (N, d), (d,) or, for d = 1, (N,) -> (N, n) or (n,).

        `chunk` bounds the points per forward pass (default: about 2·10⁶ output entries
        per pass), so that N·n never has to fit in memory twice.
        """
        arr = check_finite_array("y", y)
        # d = 1: a scalar is one point, a vector is N points; d > 1: only a (d,) vector is one point —
        # a flat array of N·d values is refused, never silently regrouped or cut to its first point.
        single = arr.ndim == 0 or (arr.ndim == 1 and self.d > 1)
        if self.d > 1 and arr.ndim == 1 and arr.shape[0] != self.d:
            raise ValueError(f"`y` must have shape (N, {self.d}) for N points (or ({self.d},) for one point) "
                             f"since d = {self.d}; got a flat array of shape {arr.shape}.")
        if arr.ndim < 2:
            arr = arr.reshape(-1, self.d)
        if arr.ndim != 2 or arr.shape[1] != self.d:
            raise ValueError(f"`y` must have shape (N, {self.d}) or ({self.d},); got {np.shape(y)}.")
        chunk = max(1, 2_000_000 // self.n) if chunk is None else check_positive_int("chunk", chunk)
        device = self.centre.device
        out = np.empty((arr.shape[0], self.n))
        with torch.no_grad():
            for i in range(0, arr.shape[0], chunk):
                # small chunks reuse the allocator's blocks (no page faults on fresh memory), and the
                # softmax is formed in place and written once into `out`: N·n float64 is memory-bound
                L = self.logits(torch.as_tensor(arr[i:i + chunk], device=device))
                L -= L.max(dim=-1, keepdim=True).values
                L.exp_()
                L /= L.sum(dim=-1, keepdim=True)
                if device.type == "cpu":
                    torch.from_numpy(out[i:i + chunk]).copy_(L)
                else:
                    out[i:i + chunk] = L.cpu().numpy()
        return out[0] if single else out


class FitSummary(Summarised):
    """`print(fit)`, `fit.summary()` and the notebook view of a φ_θ fit (`neural.phi.result.PhiFit`, dense or sparse).

    A few lines: the loss and its final value, the network's size, the times, the last held-out
    error and certificate, and the history's size (never its numbers: `fit.history` has them).
    """

    def _summary_title(self) -> str:
        return f"{type(self).__name__}: φ_θ fitted to p_st of {getattr(self.system, 'name', '?')} ({self.status})"

    def _summary_rows(self) -> list[tuple[str, str]]:
        hist = self.history or {}
        steps = hist.get("step") or []
        rows = [("loss", f"{self.loss}, final {number(self.final_loss)} after {steps[-1] if steps else 0} steps"),
                ("model", f"{sum(p.numel() for p in self.model.parameters())} parameters"),
                ("time", f"train {self.train_seconds:.1f} s, setup {self.setup_seconds:.1f} s")]
        for key, label in (("max_abs_error", "held-out max |φ_θ − p_st|"),
                           ("max_error_l1", "held-out max ‖φ_θ − p_st‖₁"),
                           ("max_certificate", "held-out max certificate")):
            if hist.get(key):
                rows.append((label, number(hist[key][-1])))
        if self.anchors:
            rows.append(("anchors", f"{len(self.anchors)} exact solves"))
        use = (self.config or {}).get("usefulness")
        if use:
            rows.append(("beats the exact solve", ("yes: " if use["useful"] else "no: ") + use["text"]))
        rows.append(("history", shape_of(hist)))
        if self.message:
            rows.append(("message", self.message))
        return rows
