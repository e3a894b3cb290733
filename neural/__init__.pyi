"""Public names of `neural` (read by type checkers and by `sp_ode.core.lazy`)."""
from .checkpoint import (
    CheckpointError as CheckpointError,
)
from .checkpoint import (
    CheckpointMismatchError as CheckpointMismatchError,
)
from .config import (
    ARMS as ARMS,
)
from .config import (
    PRESETS as PRESETS,
)
from .config import (
    ModelConfig as ModelConfig,
)
from .config import (
    small as small,
)
from .config import (
    tiny as tiny,
)
from .data import (
    ByteCorpus as ByteCorpus,
)
from .data import (
    MarkovSource as MarkovSource,
)
from .data import (
    get_batch as get_batch,
)
from .data import (
    load_corpus as load_corpus,
)
from .data import (
    load_text as load_text,
)
from .data import (
    markov_corpus as markov_corpus,
)
from .model import (
    FastSlowLM as FastSlowLM,
)
from .phi import (
    PhiCertificate as PhiCertificate,
)
from .phi import (
    PhiEvaluation as PhiEvaluation,
)
from .phi import (
    PhiFit as PhiFit,
)
from .phi import (
    PhiMLP as PhiMLP,
)
from .phi import (
    evaluate_phi as evaluate_phi,
)
from .phi import (
    fit_phi as fit_phi,
)
from .phi import (
    kl_loss as kl_loss,
)
from .phi import (
    phi_certificate as phi_certificate,
)
from .phi import (
    residual_loss as residual_loss,
)
from .phi_io import (
    PhiFileError as PhiFileError,
)
from .phi_io import (
    load_phi as load_phi,
)
from .phi_io import (
    save_phi as save_phi,
)
from .phi_jax import (
    phi_to_jax as phi_to_jax,
)
from .pooling import (
    add_to_blocks as add_to_blocks,
)
from .pooling import (
    block_mean_pool as block_mean_pool,
)
from .pooling import (
    lag_one_block as lag_one_block,
)
from .sources import (
    RegimeSource as RegimeSource,
)
from .train import (
    TrainConfig as TrainConfig,
)
from .train import (
    TrainResult as TrainResult,
)
