"""Sliding-window causal attention whose cost grows as T·W (docs/theory.md §4, the windowed fast path).

With queries, keys and values q, k, v ∈ ℝ^{T×D} per head and a window W ≥ 1, query i attends to
the W most recent keys, itself included:

    o_i = Σ_{j ∈ N(i)} softmax_j(q_i·k_j / √D) v_j,        N(i) = {j : i − W < j ≤ i}.

Three kernels compute the same o (they differ in float rounding only), and `"auto"` picks one:

* `"masked"` — the reference: one attention over all T × T scores with the band mask of
  `window_mask`.  It costs T² per head, however small W is (what the project used first).
* `"chunked"` — split the positions into chunks of C = W.  Chunk c holds the queries
  cW … cW + W − 1, and every key any of them may see, cW − W + 1 … cW + W − 1, lies in chunk
  c − 1 or chunk c.  So each chunk attends to the 2W keys of its own and the previous chunk,
  through one (W × 2W) band mask shared by every chunk but the first (whose previous chunk does
  not exist and is masked out): query offset i may see key offset j (key position (c − 1)W + j)
  iff i < j ≤ i + W.  All chunks go to `F.scaled_dot_product_attention` in one batched call, so
  the cost is 2W scores per query, T·2W per head: linear in T.  A length that is not a multiple
  of W is padded at the end; padded keys lie after every real query, so causality masks them,
  and padded queries are dropped.
* `"flex"` — `torch.nn.attention.flex_attention` with a block-sparse mask (compiled).  In
  torch 2.13 it has no backward pass on CPU, so on CPU it serves inference only; on a GPU it
  trains (`bench/lm/gpu_attention.py`).
* `"auto"` (the model's default) — `"chunked"` when T ≥ 8W, else `"masked"`.  The chunked
  kernel computes 2W scores per query against T/2 for the causal flash kernel (which skips the
  masked half), plus the copies that build the key chunks.  Measured on one CPU thread (a training
  step of the 2-layer, width-64 model, `bench/lm/attention.py`) it costs 1.46× the masked
  kernel at T = 4W (T = 256, W = 64), 0.96× at T = 8W and 0.62× at T = 16W: the window has to be
  small against T before chunks pay.

Leak-freedom is the statement N(i) ⊆ {j ≤ i}: nothing at a position after i reaches o_i, for any
of the kernels; `tests/neural/lm/test_windowed_attention.py` checks it, and checks that a kernel
reaching one key forward fails both that test and the equality test, and one reaching one key
further back fails the equality test.
"""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

__all__ = ["KERNELS", "AUTO_CHUNKED_MIN_T_OVER_W", "window_mask", "window_attention", "masked_window_attention",
           "chunked_window_attention", "flex_window_attention"]

KERNELS = ("auto", "chunked", "masked", "flex")
"""Names of the sliding-window kernels; ``"auto"`` is the default of :class:`neural.FastSlowLM`."""

AUTO_CHUNKED_MIN_T_OVER_W = 8
"""``"auto"`` uses the chunked kernel when T ≥ this × W (the measured crossover, module docstring)."""


def window_mask(length: int, window: int, device: torch.device | str | None = None) -> torch.Tensor:
    """Sliding-window causal mask, shape (T', T'): query i attends to key j iff i − W < j ≤ i."""
    i = torch.arange(length, device=device)[:, None]
    j = torch.arange(length, device=device)[None, :]
    return (j <= i) & (i - j < window)


def _check_qkv(q: object, k: object, v: object, window: object) -> None:
    for name, x in (("q", q), ("k", k), ("v", v)):
        if not isinstance(x, torch.Tensor) or not x.is_floating_point():
            raise TypeError(f"`{name}` must be a floating-point torch.Tensor; got {type(x).__name__}.")
        if x.ndim != 4:
            raise ValueError(f"`{name}` must have shape (B, H, T, D); got {tuple(x.shape)}.")
    if not q.shape == k.shape == v.shape:
        raise ValueError(f"`q`, `k`, `v` must have one shape; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}.")
    if q.shape[2] < 1:
        raise ValueError(f"`q` must hold at least one position (T ≥ 1); got shape {tuple(q.shape)}.")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise ValueError(f"`window` must be None or a positive integer; got {window!r}.")


def window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int | None, *,
                     kernel: str = "auto", dropout_p: float = 0.0) -> torch.Tensor:
    """Causal attention restricted to a sliding window of `window` keys, by the named kernel.

    Parameters
    ----------
    q, k, v : Tensor, shape (B, H, T, D)
    window : int or None
        W ≥ 1; None (or W ≥ T) is plain causal attention (`is_causal=True`), whatever the kernel.
    kernel : "auto" (default: chunked when T ≥ 8W, else masked), "chunked" (cost ∝ T·W), "masked"
        (the T × T reference) or "flex".
    dropout_p
        Attention dropout (training only); the `"flex"` kernel has none.

    Returns
    -------
    Tensor, shape (B, H, T, D)

    Raises
    ------
    TypeError
        If q, k or v is not a floating-point tensor.
    ValueError
        For shapes that are not one (B, H, T, D), a window that is not a positive integer or None,
        an unknown kernel, or dropout with the `"flex"` kernel.
    NotImplementedError
        `"flex"` on CPU with gradients required (torch 2.13 has no CPU backward for it).
    """
    _check_qkv(q, k, v, window)
    if kernel not in KERNELS:
        raise ValueError(f"`kernel` must be one of {KERNELS}; got {kernel!r}.")
    if not (isinstance(dropout_p, (int, float)) and 0.0 <= dropout_p < 1.0):
        raise ValueError(f"`dropout_p` must be in [0, 1); got {dropout_p!r}.")
    if kernel == "flex" and dropout_p:
        raise ValueError(f"the 'flex' kernel has no attention dropout; got `dropout_p`={dropout_p}.")
    return _dispatch(q, k, v, window, kernel, dropout_p)


def _dispatch(q, k, v, window, kernel, dropout_p):
    """`window_attention` without the checks (the model calls this on trusted shapes)."""
    if window is None or window >= q.shape[2]:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)
    if kernel == "auto":
        kernel = "chunked" if q.shape[2] >= AUTO_CHUNKED_MIN_T_OVER_W * window else "masked"
    if kernel == "chunked":
        return _chunked(q, k, v, window, dropout_p)
    if kernel == "masked":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=window_mask(q.shape[2], window, q.device),
                                              dropout_p=dropout_p)
    return _flex(q, k, v, window)


def masked_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int, *,
                            dropout_p: float = 0.0) -> torch.Tensor:
    """The reference kernel: all T × T scores, the band of `window_mask` kept (cost ∝ T²)."""
    return window_attention(q, k, v, window, kernel="masked", dropout_p=dropout_p)


def chunked_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int, *,
                             dropout_p: float = 0.0) -> torch.Tensor:
    """Chunks of W queries, each against the 2W keys of its own and the previous chunk (cost ∝ T·W)."""
    return window_attention(q, k, v, window, kernel="chunked", dropout_p=dropout_p)


def flex_window_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, window: int) -> torch.Tensor:
    """`flex_attention` with a block-sparse sliding-window mask (compiled; CPU: no backward)."""
    return window_attention(q, k, v, window, kernel="flex")


def _band(chunk: int, window: int, n_chunks: int, device) -> torch.Tensor:
    """(n, C, 2C) mask of the chunked kernel: query offset i sees key offset j iff i + C − W < j ≤ i + C.

    Key offset j < C is the previous chunk; chunk 0 has none, so its first C key columns are masked.
    With C = W the band is i < j ≤ i + W.
    """
    i = torch.arange(chunk, device=device)[:, None]
    j = torch.arange(2 * chunk, device=device)[None, :]
    band = (j > i + chunk - window) & (j <= i + chunk)
    mask = band.expand(n_chunks, chunk, 2 * chunk).clone()
    mask[0, :, :chunk] = False
    return mask


def _chunked(q, k, v, window, dropout_p):
    batch, heads, length, dim = q.shape
    chunk = window  # C = W: the fewest scores per query (2W); larger chunks measured slower on CPU
    n = -(-length // chunk)
    pad = n * chunk - length
    if pad:  # (B, H, T, D) -> (B, H, n·C, D); padded keys come after every real query
        q, k, v = (F.pad(x, (0, 0, 0, pad)) for x in (q, k, v))

    def own_and_previous(x):
        # (B, H, n·C, D) -> (B, H, n, C, D) -> (B, H, n, 2C, D): [chunk c−1, chunk c] per chunk c
        xc = x.view(batch, heads, n, chunk, dim)
        previous = torch.cat([xc.new_zeros(batch, heads, 1, chunk, dim), xc[:, :, :-1]], dim=2)
        return torch.cat([previous, xc], dim=3)

    out = F.scaled_dot_product_attention(q.view(batch, heads, n, chunk, dim), own_and_previous(k),
                                         own_and_previous(v), attn_mask=_band(chunk, window, n, q.device),
                                         dropout_p=dropout_p)
    # (B, H, n, C, D) -> (B, H, n·C, D) -> the T real positions
    return out.reshape(batch, heads, n * chunk, dim)[:, :, :length]


@functools.lru_cache(maxsize=1)
def _compiled_flex():
    from torch.nn.attention.flex_attention import flex_attention

    # flex_attention is only block-sparse (and fast) when compiled; eager runs a dense reference
    return torch.compile(flex_attention, dynamic=False)


@functools.lru_cache(maxsize=32)
def _flex_block_mask(length: int, window: int, device: str, block_size: int):
    from torch.nn.attention.flex_attention import create_block_mask

    def in_window(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) & (q_idx - kv_idx < window)

    return create_block_mask(in_window, None, None, length, length, device=device, BLOCK_SIZE=block_size)


def _flex(q, k, v, window):
    if q.device.type == "cpu" and torch.is_grad_enabled() and any(x.requires_grad for x in (q, k, v)):
        raise NotImplementedError(
            "the 'flex' kernel has no backward pass on CPU in torch 2.13; train on CPU with kernel='chunked' "
            "(or run the flex kernel under torch.no_grad())."
        )
    # CPU: small blocks skip most of a narrow band (32 measured ~8× faster than 128 at W = 16);
    # the GPU kernel tiles by 128
    block_size = 128 if q.device.type == "cuda" else max(32, 1 << (window - 1).bit_length())
    mask = _flex_block_mask(q.shape[2], window, str(q.device), block_size)
    import torch._dynamo as dynamo

    # one compiled kernel per shape; past dynamo's default of 8 it would fall back, silently, to the
    # unfused flex path that materialises all T × T scores.  Raised for this call only.
    with dynamo.config.patch(recompile_limit=max(64, dynamo.config.recompile_limit)):
        return _compiled_flex()(q, k, v, block_mask=mask)
