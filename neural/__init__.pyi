"""Public names of `neural` (read by type checkers and by `sp_ode.core.lazy`).

A name a subpackage declares in its own stub is imported from that subpackage
(`from .systems import simulate as simulate`): each name is declared once, where it lives.
"""
from .lm.attention import (
    window_attention as window_attention,
)
from .lm.checkpoint import (
    CheckpointError as CheckpointError,
    CheckpointMismatchError as CheckpointMismatchError,
)
from .lm.config import (
    ARMS as ARMS,
    PRESETS as PRESETS,
    ModelConfig as ModelConfig,
    small as small,
    tiny as tiny,
)
from .lm.data import (
    ByteCorpus as ByteCorpus,
    MarkovSource as MarkovSource,
    get_batch as get_batch,
    load_corpus as load_corpus,
    load_text as load_text,
    markov_corpus as markov_corpus,
)
from .lm.fast_map import (
    FastMapResult as FastMapResult,
    iterate_fast_map as iterate_fast_map,
)
from .lm.model import (
    FastSlowLM as FastSlowLM,
)
from .lm.pooling import (
    add_to_blocks as add_to_blocks,
    block_mean_pool as block_mean_pool,
    lag_one_block as lag_one_block,
)
from .lm.sources import (
    RegimeSource as RegimeSource,
)
from .lm.train import (
    TrainConfig as TrainConfig,
    TrainResult as TrainResult,
)
from .phi import (
    CertifiedPrediction as CertifiedPrediction,
    PhiCertificate as PhiCertificate,
    PhiEvaluation as PhiEvaluation,
    PhiFileError as PhiFileError,
    PhiFit as PhiFit,
    PhiMLP as PhiMLP,
    evaluate_phi as evaluate_phi,
    fit_phi as fit_phi,
    fit_surrogate as fit_surrogate,
    kl_loss as kl_loss,
    load_phi as load_phi,
    phi_certificate as phi_certificate,
    phi_to_jax as phi_to_jax,
    residual_loss as residual_loss,
    save_phi as save_phi,
)
