"""The fast–slow attention language model (docs/theory.md §4).

A byte-level transformer whose layers have two paths: a fast path of causal (optionally
W-windowed) attention over the T tokens, and a slow path of attention over the T/P causally
block-mean-pooled tokens (ε = 1/P), fed back to the tokens with a one-block lag through a
zero-initialised additive gate.

- `neural.lm.config`, `neural.lm.model` — `ModelConfig` and its presets, `FastSlowLM`;
- `neural.lm.attention`, `neural.lm.pooling` — the windowed fast path, block pooling and the lagged feedback;
- `neural.lm.data`, `neural.lm.sources` — byte corpora and Markov / regime-switching sources with exact Bayes floors;
- `neural.lm.train`, `neural.lm.checkpoint` — the training loop and exact-resume checkpoints;
- `neural.lm.fast_map` — a trained layer's fast map with its slow state frozen, iterated.

The public names are re-exported (lazily) by `neural`; import them from there.
"""
