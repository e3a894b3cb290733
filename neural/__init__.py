"""neural: the fast–slow attention language model and φ_θ (docs/theory.md §4, T4).

Fast path: causal attention over T tokens.  Slow path: attention over the T/P
causally block-mean-pooled tokens (ε = 1/P), fed back with a one-block lag
through a zero-initialised additive gate.

The namespace is the API: ``import neural; neural.FastSlowLM(neural.tiny())``.
Names load lazily from their modules, so ``import neural`` does not import torch
until a name that needs it is used.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

# public name -> module that defines it.  Each section belongs to one concept;
# add names to your own section only.
_LAZY: dict[str, str] = {
    # --- model (issue 5) ---
    "ModelConfig": "neural.config",
    "PRESETS": "neural.config",
    "ARMS": "neural.config",
    "tiny": "neural.config",
    "small": "neural.config",
    "FastSlowLM": "neural.model",
    "block_mean_pool": "neural.pooling",
    "lag_one_block": "neural.pooling",
    "add_to_blocks": "neural.pooling",
    # --- data and training (issue 5) ---
    # (the training function is `neural.train.train`: the name `neural.train` is its module)
    "ByteCorpus": "neural.data",
    "MarkovSource": "neural.data",
    "load_text": "neural.data",
    "markov_corpus": "neural.data",
    "load_corpus": "neural.data",
    "get_batch": "neural.data",
    "TrainConfig": "neural.train",
    "TrainResult": "neural.train",
    "CheckpointError": "neural.checkpoint",
    "CheckpointMismatchError": "neural.checkpoint",
    # --- regime-switching sources with exact context-limited floors (issue 14) ---
    "RegimeSource": "neural.sources",
    # --- phi (issue 6) ---
    "PhiMLP": "neural.phi",
    "PhiFit": "neural.phi",
    "PhiEvaluation": "neural.phi",
    "PhiCertificate": "neural.phi",
    "fit_phi": "neural.phi",
    "evaluate_phi": "neural.phi",
    "phi_certificate": "neural.phi",
    "kl_loss": "neural.phi",
    "residual_loss": "neural.phi",
    # --- phi files (issue 13) ---
    "save_phi": "neural.phi_io",
    "load_phi": "neural.phi_io",
    "phi_to_jax": "neural.phi_jax",
    "PhiFileError": "neural.phi_io",
    # --- sliding-window attention at cost T·W; a layer's fast map with the slow state frozen ---
    "window_attention": "neural.attention",
    "iterate_fast_map": "neural.fast_map",
    "FastMapResult": "neural.fast_map",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = lazy_namespace(__name__, _LAZY)
