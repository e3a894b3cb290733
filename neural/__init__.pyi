"""Public names of `neural` (read by type checkers and by `sp_ode.core.lazy`)."""
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
from .phi.files import (
    PhiFileError as PhiFileError,
    load_phi as load_phi,
    save_phi as save_phi,
)
from .phi.fit import (
    PhiCertificate as PhiCertificate,
    PhiEvaluation as PhiEvaluation,
    PhiFit as PhiFit,
    evaluate_phi as evaluate_phi,
    fit_phi as fit_phi,
    kl_loss as kl_loss,
    phi_certificate as phi_certificate,
    residual_loss as residual_loss,
)
from .phi.jax_copy import (
    phi_to_jax as phi_to_jax,
)
from .phi.model import (
    PhiMLP as PhiMLP,
)
from .phi.surrogate import (
    CertifiedPrediction as CertifiedPrediction,
    SurrogateFit as SurrogateFit,
    fit_surrogate as fit_surrogate,
)
