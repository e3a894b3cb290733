"""The internal seams of neural: what one of its subpackages imports from another that is not public API.

The counterpart of `sp_ode.seams` (which says why the table exists and how it is checked): here the
command-line subcommands (`neural.commands`) meet the language model (`neural.lm`) and φ_θ
(`neural.phi`) at the names below.  Nothing imports this module at run time.
"""
from __future__ import annotations

#: {defining module: {name: the subpackages that import it}}
SEAMS: dict[str, dict[str, tuple[str, ...]]] = {
    'neural.lm.train': {
        'FIGURE_FORMATS': ('neural.commands',),
        'NATS_TO_BITS': ('neural.commands',),
        'check_run_folder': ('neural.commands',),
        'train': ('neural.commands',),
    },
    'neural.phi.families': {
        'evaluation_points': ('neural.commands',),
        'resolve_system': ('neural.commands',),
        'sample': ('neural.commands',),
    },
    'neural.phi.figures': {
        'FORMATS': ('neural.commands',),
        'plot_certificate_vs_error': ('neural.commands',),
        'plot_learning_curve': ('neural.commands',),
        'write_figures': ('neural.commands',),
    },
    'neural.phi.fit': {
        'LOSSES': ('neural.commands',),
        'OPTIMIZERS': ('neural.commands',),
    },
    'neural.phi.result': {
        'evaluate_sample': ('neural.commands',),
    },
    'neural.phi.sparse': {
        'SparseFamily': ('neural.commands',),
        'design_points': ('neural.commands',),
    },
}
