"""neural: the fast–slow attention language model and φ_θ (docs/theory.md §4, T4).

Fast path: causal attention over T tokens.  Slow path: attention over the T/P
causally block-mean-pooled tokens (ε = 1/P), fed back with a one-block lag
through a zero-initialised additive gate.

- `neural.lm` — the language model: its configuration, the fast–slow layers, windowed causal
  attention, block-mean pooling with the lag, byte-level text and Markov sources with exact Bayes
  floors, the training loop with its exactly resumable checkpoints, the fast map of a trained layer;
- `neural.phi` — φ_θ, the learned critical manifold, with its certificate;
- `neural.commands` — the `sp-ode train` and `sp-ode fit-phi` subcommands;
- `neural.seams` — the internal seams between these subpackages (see `sp_ode.seams`).

The namespace is the API: `import neural; neural.FastSlowLM(neural.tiny())`.
Names load lazily from their modules, so `import neural` does not import torch
until a name that needs it is used.
"""
from __future__ import annotations

from sp_ode.core.lazy import lazy_namespace

# The public names and the module defining each are listed once, in __init__.pyi.
__getattr__, __dir__, __all__ = lazy_namespace(__name__, __file__)
