"""The fast–slow attention language model (docs/theory.md §4).

Per layer ℓ, on the residual stream h ∈ ℝ^{T'×d} (T' ≤ T tokens, block size P, ε = 1/P):

1. a = LN₁(h);  h ← h + CausalAttn(a)          fast path, full causal or sliding window W
2. s_k = (1/P) Σ_{t ∈ block k} a_t             causal block-mean pooling of LN₁(h)
3. z = SlowAttn(s)                              attention over blocks, causal (k attends to ≤ k)
4. h_t ← h_t + g_ℓ ⊙ W_o z_{⌊t/P⌋−1}            one-block lag; block 0 receives a learned null z_{−1}
5. h ← h + MLP(LN₂(h))                          fast path continued

Choices (documented because docs/theory.md leaves them open):

* **Which LN feeds the pooling.**  LN₁, the fast attention's own input: the pooled
  tokens are averages of exactly what the fast attention reads, and the slow path
  costs no extra normalisation pass over T' tokens.
* **Where the feedback enters.**  After the fast attention and before the MLP, so the
  MLP of the same layer can already transform the slow information.  With g_ℓ = 0 the
  added term is exactly 0 and the layer is bit-for-bit the dense layer.
* **Gate.**  g_ℓ ∈ ℝ^d (elementwise), initialised to 0; W_o is initialised non-zero
  (GPT-2 residual rule), so ∂L/∂g_ℓ = Σ_t (∂L/∂h_t) ⊙ W_o z_{b−1} ≠ 0 at init.
* **Slow path has no dropout**: it draws no random numbers, so with the gates at zero a
  coupled model consumes the same RNG stream as the dense one, in training too.
* **Weight tying**: the output head shares the token-embedding matrix (as GPT-2 and
  nanoGPT do).
* **Windowed attention costs T·W, not T².**  Once T' ≥ 8W the sliding window is computed by
  `neural.lm.attention`'s chunked kernel (W queries against the 2W keys of their own and the
  previous chunk); below that the masked T × T kernel is cheaper and is used (`"auto"`).
  Either gives the same logits to float rounding.
* **Lengths.**  Any T' ≤ T is accepted, multiple of P or not; no padding is needed
  (see `neural.lm.pooling`): the prefix of length T' gives the same logits as the
  first T' positions of a longer input, which is what leak-freedom means.

Init rules (GPT-2): every Linear weight and embedding N(0, 0.02²); the projections
that write into the residual stream (attention out, MLP out, W_o) N(0, (0.02/√(2L))²);
biases 0; LayerNorm scale 1, shift 0; null vector N(0, 0.02²); gate 0.  The fast-path
weights are drawn from one RNG stream and the slow-path weights from another, both
seeded from `seed`, so `dense`, `coupled` and `frozen` built with the same seed
share their fast-path weights exactly.
"""
from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F

from neural.lm.attention import (
    KERNELS,
    window_attention,
    window_mask as window_mask,  # re-exported: the mask is part of the model API
)
from neural.lm.config import ModelConfig
from neural.lm.pooling import add_to_blocks, block_mean_pool, lag_one_block, n_fed_blocks

INIT_STD = 0.02
"""GPT-2 initialisation scale of weights and embeddings."""

IGNORE_INDEX = -1
"""Target value excluded from the loss (as in nanoGPT)."""

_SLOW = "slow"  # name of the per-layer slow-path submodule; its parameters are the slow path


def _attend(qkv: torch.Tensor, n_head: int, *, mask: torch.Tensor | None, dropout_p: float,
            window: int | None = None, kernel: str = "auto") -> torch.Tensor:
    """Multi-head attention from packed projections.

    qkv : (B, L, 3d) -> returns (B, L, d).  With `window` the attention is the sliding window
    of `neural.lm.attention` computed by `kernel` (W ≥ L is plain causal); otherwise `mask`
    is None for plain causal attention, else a boolean (L, L) matrix, True where query i may
    attend to key j.
    """
    batch, length, three_d = qkv.shape
    width = three_d // 3
    # (B, L, 3d) -> 3 × (B, L, d) -> (B, L, H, d/H) -> (B, H, L, d/H)
    q, k, v = (x.view(batch, length, n_head, width // n_head).transpose(1, 2) for x in qkv.split(width, dim=2))
    if window is not None:
        y = window_attention(q, k, v, window, kernel=kernel, dropout_p=dropout_p)
    elif mask is None:
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)
    else:
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
    # (B, H, L, d/H) -> (B, L, H, d/H) -> (B, L, d)
    return y.transpose(1, 2).reshape(batch, length, width)


class CausalSelfAttention(nn.Module):
    """Fast path: causal (or sliding-window causal) self-attention over tokens."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        d = config.d_model
        self.n_head = config.n_head
        self.c_attn = nn.Linear(d, 3 * d, bias=config.bias)
        self.c_proj = nn.Linear(d, d, bias=config.bias)  # writes into the residual stream
        self.dropout = config.dropout
        self.resid_dropout = nn.Dropout(config.dropout)

    def forward(self, a: torch.Tensor, window: int | None, kernel: str = "auto") -> torch.Tensor:
        # a: (B, T', d) -> (B, T', d); window None is full causal attention
        p = self.dropout if self.training else 0.0
        y = _attend(self.c_attn(a), self.n_head, mask=None, dropout_p=p, window=window, kernel=kernel)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """Position-wise d -> mlp_ratio·d -> d with GELU."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        d = config.d_model
        self.c_fc = nn.Linear(d, config.mlp_ratio * d, bias=config.bias)
        self.c_proj = nn.Linear(config.mlp_ratio * d, d, bias=config.bias)  # writes into the residual stream
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class SlowPath(nn.Module):
    """Steps 2–4 of a layer: pool LN₁(h), attend over blocks causally, lag, gate.

    Returns the per-block feedback g_ℓ ⊙ W_o z_{b−1}, shape (B, ⌈T'/P⌉, d).
    """

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        d = config.d_model
        self.pool = config.pool
        self.n_head = config.n_head
        self.qkv = nn.Linear(d, 3 * d, bias=config.bias)  # SlowAttn projections
        self.proj = nn.Linear(d, d, bias=config.bias)  # W_o, non-zero at init
        self.null = nn.Parameter(torch.zeros(d))  # z_{−1}, received by block 0
        self.gate = nn.Parameter(torch.zeros(d))  # g_ℓ, zero at init

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        # a = LN₁(h): (B, T', d)
        n_out = -(-a.shape[1] // self.pool)  # ⌈T'/P⌉ blocks receive feedback
        n_fed = n_fed_blocks(a.shape[1], self.pool)  # only blocks 0 … ⌈T'/P⌉−2 feed anyone
        if n_fed > 0:
            s = block_mean_pool(a, self.pool, n_fed)  # (B, n_fed, d): slow variable y
            z = _attend(self.qkv(s), self.n_head, mask=None, dropout_p=0.0)  # block-causal, (B, n_fed, d)
        else:
            z = a.new_zeros(a.shape[0], 0, a.shape[2])
        z_lag = lag_one_block(z, self.null, n_out)  # (B, n_out, d): [z_{−1}, z_0, …]
        return self.gate * self.proj(z_lag)  # (B, n_out, d)


class Block(nn.Module):
    """One layer: fast attention, slow feedback (coupled/frozen arms only), MLP."""

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.pool = config.pool
        self.ln_1 = nn.LayerNorm(config.d_model, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.d_model, bias=config.bias)
        self.mlp = MLP(config)
        # registered last so the fast-path parameters come first in named_parameters()
        self.slow = SlowPath(config) if config.arm != "dense" else None

    def forward(self, h: torch.Tensor, window: int | None, kernel: str = "auto") -> torch.Tensor:
        # h: (B, T', d) -> (B, T', d)
        a = self.ln_1(h)
        h = h + self.attn(a, window, kernel)
        if self.slow is not None:
            h = add_to_blocks(h, self.slow(a), self.pool)
        return h + self.mlp(self.ln_2(h))


class FastSlowLM(nn.Module):
    """Byte-level language model with a fast token path and a slow block path (docs/theory.md §4).

    Parameters
    ----------
    config : ModelConfig
        Shapes and ablation arm: `"dense"` (no slow path), `"coupled"` (slow path
        and gates trained), `"frozen"` (slow-path weights fixed at init, gates trained).
    seed : int, optional
        Seed of the initialisation.  Default: drawn from torch's global RNG, so
        `torch.manual_seed(s)` before construction reproduces the model.  Models of
        different arms built with the same seed share their fast-path weights exactly.
    window_kernel : str, optional
        How a windowed fast path (`config.window`) is computed: `"auto"` (default: chunked
        when T' ≥ 8W, else masked), `"chunked"` (cost ∝ T·W), `"masked"` (the T × T
        reference) or `"flex"` (FlexAttention; no CPU backward in torch 2.13).  All three compute the same function to float rounding
        (`neural.lm.attention`), so the kernel is not part of the config or of a checkpoint;
        the attribute `window_kernel` may be changed on a built model.

    Raises
    ------
    TypeError
        If `config` is not a [`ModelConfig`][neural.lm.config.ModelConfig] or `seed` is not an int.
    ValueError
        If `window_kernel` is not one of `neural.lm.attention.KERNELS`.

    Examples
    --------
    >>> import torch, neural
    >>> model = neural.FastSlowLM(neural.tiny(), seed=0)
    >>> idx = torch.randint(0, 256, (2, 64))
    >>> logits, loss = model(idx, idx)
    >>> logits.shape
    torch.Size([2, 64, 256])
    """

    def __init__(self, config: ModelConfig, *, seed: int | None = None, window_kernel: str = "auto") -> None:
        super().__init__()
        if not isinstance(config, ModelConfig):
            raise TypeError(f"`config` must be a neural.ModelConfig; got {type(config).__name__}.")
        if window_kernel not in KERNELS:
            raise ValueError(f"`window_kernel` must be one of {KERNELS}; got {window_kernel!r}.")
        self.window_kernel = window_kernel
        if seed is None:
            seed = int(torch.randint(0, 2**62, (), dtype=torch.int64))
        elif isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"`seed` must be an int or None; got {type(seed).__name__}.")
        self.config = config
        d = config.d_model
        # torch's default inits draw from the global RNG, as many draws as the arm has
        # parameters; they are all overwritten by _init_weights, so run them on a forked
        # RNG: every arm then leaves the global RNG in the same state (same data order,
        # same dropout masks afterwards).
        with torch.random.fork_rng(devices=[]):
            self.wte = nn.Embedding(config.vocab_size, d)
            self.wpe = nn.Embedding(config.seq_len, d)
            self.drop = nn.Dropout(config.dropout)
            self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
            self.ln_f = nn.LayerNorm(d, bias=config.bias)
            self.lm_head = nn.Linear(d, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying
        self._init_weights(seed)
        if config.arm == "frozen":
            for p in self.slow_parameters():
                p.requires_grad_(False)

    # ------------------------------------------------------------------ init
    @torch.no_grad()
    def _init_weights(self, seed: int) -> None:
        resid_std = INIT_STD / math.sqrt(2 * self.config.n_layer)
        fast_gen = torch.Generator().manual_seed(seed)
        slow_gen = torch.Generator().manual_seed(seed + 1)
        norms = {id(p) for m in self.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters()}
        # named_parameters() deduplicates the tied lm_head weight; its order is the
        # registration order, fast-path parameters first within each block.
        for name, p in self.named_parameters():
            gen = slow_gen if f".{_SLOW}." in name else fast_gen
            leaf = name.rsplit(".", 1)[-1]
            if leaf in ("gate", "bias"):
                p.zero_()  # gate g_ℓ = 0; all biases (LayerNorm shifts included) 0
            elif id(p) in norms:
                p.fill_(1.0)  # LayerNorm scale
            elif name.endswith("c_proj.weight") or name.endswith(f"{_SLOW}.proj.weight"):
                # GPT-2 scaled-residual rule for projections into the residual stream
                p.copy_(torch.randn(p.shape, generator=gen) * resid_std)
            else:  # Linear weights, embeddings, null vector
                p.copy_(torch.randn(p.shape, generator=gen) * INIT_STD)

    # --------------------------------------------------------------- forward
    def embed(self, idx: torch.Tensor) -> torch.Tensor:
        """Token plus position embeddings, shape (B, T') -> (B, T', d)."""
        pos = torch.arange(idx.shape[1], device=idx.device)
        return self.drop(self.wte(idx) + self.wpe(pos))

    def forward_from_embeddings(self, x: torch.Tensor) -> torch.Tensor:
        """Logits from input embeddings: (B, T', d) -> (B, T', V).

        Used to differentiate logits with respect to the inputs (the Jacobian
        leak check); [`forward`][neural.lm.model.FastSlowLM.forward] is `forward_from_embeddings(embed(idx))`.

        Raises
        ------
        TypeError
            If `x` is not a floating-point tensor.
        ValueError
            If `x` is not (B, T', d) with T' ≤ `seq_len`.
        """
        cfg = self.config
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"`x` must be a floating-point torch.Tensor of embeddings; got {type(x).__name__}.")
        if x.ndim != 3 or x.shape[2] != cfg.d_model or not 1 <= x.shape[1] <= cfg.seq_len:
            raise ValueError(
                f"`x` must have shape (B, T', d) with d = {cfg.d_model} and 1 ≤ T' ≤ {cfg.seq_len}; "
                f"got {tuple(x.shape)}."
            )
        h = x
        for block in self.blocks:
            h = block(h, cfg.window, self.window_kernel)
        return self.lm_head(self.ln_f(h))

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Next-token logits, and the mean cross-entropy when `targets` are given.

        Parameters
        ----------
        idx : LongTensor, shape (B, T')
            Byte tokens in [0, V), 1 ≤ T' ≤ T (`config.seq_len`); T' need not be a
            multiple of P.
        targets : LongTensor, shape (B, T'), optional
            Next tokens; entries equal to `IGNORE_INDEX` (−1) are left out of the loss.

        Returns
        -------
        logits : Tensor, shape (B, T', V)
        loss : Tensor, shape ()
            Only with `targets`: mean cross-entropy in nats per token.

        Raises
        ------
        TypeError
            If `idx`/`targets` are not integer tensors.
        ValueError
            If shapes are wrong, T' > T, or (for CPU tensors) a token is outside [0, V).
        """
        self._check_tokens(idx, "idx")
        logits = self.forward_from_embeddings(self.embed(idx))
        if targets is None:
            return logits
        self._check_tokens(targets, "targets", shape=idx.shape)
        # (B, T', V) -> (B·T', V) against (B·T',); half-precision logits are scored in float32
        flat = logits.reshape(-1, logits.shape[-1])
        if flat.dtype in (torch.float16, torch.bfloat16):
            flat = flat.float()
        loss = F.cross_entropy(flat, targets.reshape(-1), ignore_index=IGNORE_INDEX)
        return logits, loss

    def _check_tokens(self, t: object, name: str, shape: torch.Size | None = None) -> None:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor of token ids; got {type(t).__name__}.")
        if t.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"`{name}` must be an integer (long) tensor; got dtype {t.dtype}.")
        if shape is not None:
            if t.shape != shape:
                raise ValueError(f"`{name}` must have the shape of `idx` {tuple(shape)}; got {tuple(t.shape)}.")
        elif t.ndim != 2 or t.shape[1] < 1 or t.shape[0] < 1:
            raise ValueError(f"`{name}` must have shape (B, T') with B, T' ≥ 1; got {tuple(t.shape)}.")
        elif t.shape[1] > self.config.seq_len:
            raise ValueError(
                f"`{name}` has T'={t.shape[1]} tokens, more than the context `seq_len`={self.config.seq_len}."
            )
        # A range check syncs with the device; on CUDA the embedding lookup asserts anyway.
        if t.device.type == "cpu" and not torch.compiler.is_compiling() and t.numel():
            lo = IGNORE_INDEX if name == "targets" else 0
            tmin, tmax = int(t.min()), int(t.max())
            if tmin < lo or tmax >= self.config.vocab_size:
                raise ValueError(
                    f"`{name}` entries must lie in [{lo}, {self.config.vocab_size}); got min {tmin}, max {tmax}."
                )

    # ------------------------------------------------------ slow path, gates
    def _slow_paths(self) -> list[SlowPath]:
        return [b.slow for b in self.blocks if b.slow is not None]

    def slow_parameters(self) -> list[nn.Parameter]:
        """The slow-path weights: SlowAttn projections, W_o and the null vector of every layer.

        The gates are not included (see [`gate_parameters`][neural.lm.model.FastSlowLM.gate_parameters]); the pooling reads
        LN₁, which belongs to the fast path.  Empty for the `dense` arm.  These are
        the parameters the `frozen` arm fixes at their initial values.
        """
        return [p for s in self._slow_paths() for n, p in s.named_parameters() if n != "gate"]

    def gate_parameters(self) -> list[nn.Parameter]:
        """The per-layer gates g_ℓ, each shape (d,); empty for the `dense` arm."""
        return [s.gate for s in self._slow_paths()]

    def gate_magnitudes(self) -> list[float]:
        """Mean |g_ℓ| per layer (length n_layer); an empty list for the `dense` arm."""
        return [float(g.detach().abs().mean()) for g in self.gate_parameters()]

    @torch.no_grad()
    def set_gates(self, value: float | torch.Tensor) -> None:
        """Set every gate g_ℓ to `value` (a scalar or a (d,) tensor), in place.

        Raises
        ------
        ValueError
            For the `dense` arm, which has no gates.
        """
        gates = self.gate_parameters()
        if not gates:
            raise ValueError("`set_gates`: the 'dense' arm has no gates; use arm='coupled' or 'frozen'.")
        for g in gates:
            g.copy_(torch.as_tensor(value, dtype=g.dtype, device=g.device).expand_as(g))

    @contextlib.contextmanager
    def forced_gates(self, value: float | torch.Tensor) -> Iterator[FastSlowLM]:
        """Context in which every gate equals `value`; the previous gates come back on exit.

        Used by the tests: leaks are only visible with the gates open (g ≠ 0).
        """
        saved = [g.detach().clone() for g in self.gate_parameters()]
        self.set_gates(value)
        try:
            yield self
        finally:
            with torch.no_grad():
                for g, old in zip(self.gate_parameters(), saved):
                    g.copy_(old)

    @torch.no_grad()
    def slow_influence(self, idx: torch.Tensor) -> list[float]:
        """Per layer, ‖g_ℓ ⊙ W_o z‖ / ‖h‖: how much the slow feedback moves the residual stream.

        The gate magnitude alone does not measure use (W_o can grow while g_ℓ stays small),
        so this is the ratio of Frobenius norms, over the batch and all T' positions, of the
        feedback added in step 4 (docs/theory.md §4) to the residual stream it is added to
        (h after the fast attention).  Evaluation mode; an empty list for the `dense` arm.

        Parameters
        ----------
        idx : LongTensor
            Shape (B, T'), 1 ≤ T' ≤ T.

        Returns
        -------
        list of n_layer floats (0 for a layer whose gate is closed).
        """
        self._check_tokens(idx, "idx")
        if self.config.arm == "dense":
            return []
        was_training = self.training
        self.eval()
        h = self.embed(idx)
        out = []
        for block in self.blocks:  # Block.forward, with the feedback measured before it is added
            a = block.ln_1(h)
            h = h + block.attn(a, self.config.window, self.window_kernel)
            delta = block.slow(a)  # (B, ⌈T'/P⌉, d), one vector per block
            fed = add_to_blocks(torch.zeros_like(h), delta, block.pool)  # (B, T', d)
            out.append(float(fed.float().norm() / h.float().norm().clamp_min(1e-30)))
            h = h + fed
            h = h + block.mlp(block.ln_2(h))
        self.train(was_training)
        return out

    def num_params(self, *, trainable_only: bool = False) -> int:
        """Number of parameters (the tied embedding/head matrix counted once)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not trainable_only)
