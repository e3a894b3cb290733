"""Causal block-mean pooling and the one-block-lag feedback (docs/theory.md §4, steps 2 and 4).

With block size P (ε = 1/P), token t lies in block b = ⌊t/P⌋.  The slow variable is the
block mean of the normalised residual stream,

    s_k = (1/P) Σ_{t = kP}^{kP+P−1} LN(h)_t ,          k = 0, 1, …

and the slow path's output z_k is fed back with a **one-block lag**: token t receives
z_{b−1}, block 0 receives a learned null vector z_{−1}.  Since z_{b−1} depends only on
tokens < bP ≤ t, nothing a token receives depends on a token after it.

Sequences whose length T' is not a multiple of P need no padding: the trailing
partial block's own pooled token would only feed the block after it, which does not
exist, so only the ⌈T'/P⌉ − 1 complete blocks that some token consumes are pooled.
"""
from __future__ import annotations

import torch


def n_fed_blocks(length: int, pool: int) -> int:
    """Number of blocks whose pooled token is consumed by some token: ⌈T'/P⌉ − 1.

    Every one of them is a complete block, because (⌈T'/P⌉ − 1)·P ≤ T' − 1.
    """
    return -(-length // pool) - 1


def block_mean_pool(u: torch.Tensor, pool: int, n_blocks: int | None = None) -> torch.Tensor:
    """Block means s_k = (1/P) Σ_{t in block k} u_t of the first `n_blocks` blocks.

    Parameters
    ----------
    u : Tensor, shape (B, T', d)
        Normalised residual stream LN(h).
    pool : int
        Block size P.
    n_blocks : int, optional
        How many leading complete blocks to pool; default ⌊T'/P⌋.

    Returns
    -------
    Tensor, shape (B, n_blocks, d)
    """
    batch, length, width = u.shape
    if n_blocks is None:
        n_blocks = length // pool
    # (B, T', d) -> (B, K, P, d) over the first K·P tokens, mean over the P tokens of a block
    return u[:, : n_blocks * pool].reshape(batch, n_blocks, pool, width).mean(dim=2)


def lag_one_block(z: torch.Tensor, null: torch.Tensor, n_out: int) -> torch.Tensor:
    """Shift the slow outputs one block later: out_b = z_{b−1}, out_0 = null.

    Parameters
    ----------
    z : Tensor, shape (B, K, d)
        Slow-path outputs z_0 … z_{K−1}, K ≥ n_out − 1.
    null : Tensor, shape (d,)
        The learned null vector received by block 0.
    n_out : int
        Number of blocks that receive feedback, ⌈T'/P⌉.

    Returns
    -------
    Tensor, shape (B, n_out, d)
    """
    batch = z.shape[0]
    # (d,) -> (B, 1, d): the same null vector for every sequence
    head = null.expand(batch, 1, null.shape[-1]).to(z.dtype)
    return torch.cat([head, z[:, : n_out - 1]], dim=1)


def add_to_blocks(h: torch.Tensor, delta: torch.Tensor, pool: int) -> torch.Tensor:
    """h_t + delta_{⌊t/P⌋}: add one vector per block to every token of that block.

    Parameters
    ----------
    h : Tensor, shape (B, T', d)
    delta : Tensor, shape (B, ⌈T'/P⌉, d)
    pool : int

    Returns
    -------
    Tensor, shape (B, T', d)
    """
    batch, length, width = h.shape
    n_out = delta.shape[1]
    if n_out * pool == length:
        # (B, T', d) -> (B, K, P, d); (B, K, d) -> (B, K, 1, d) broadcasts over the block
        # without materialising a (B, T', d) copy of delta.
        return (h.view(batch, n_out, pool, width) + delta[:, :, None, :]).view(batch, length, width)
    # trailing partial block: (B, K, d) -> (B, K·P, d) -> first T' tokens
    return h + delta.repeat_interleave(pool, dim=1)[:, :length]
