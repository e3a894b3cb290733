"""The internal seams of sp_ode: what one subpackage imports from another that is not public API.

The public API is what the stubs declare (`sp_ode/__init__.pyi` and each subpackage's); users import
only that.  Inside the library the subpackages also meet at narrower doors — the validated cores
(`simulate_checked`, `run_engines`, `SolveOptions`), the boundary validators (`check_*`), the one
resolver (`as_system`), the shared foundations of `core`.  Each such name is declared here, once,
with the subpackages (or `neural`'s) that import it: a change to one of these is a change to a
contract between packages, and the importers to look at are listed beside it.

`tests/test_layout.py` keeps this table exact: an import across subpackages of a name that is neither
public nor declared here fails, and so does an entry nothing imports any more.  The table is data:
nothing imports this module at run time.
"""
from __future__ import annotations

#: {defining module: {name: the subpackages that import it}}
SEAMS: dict[str, dict[str, tuple[str, ...]]] = {
    'sp_ode.cli': {
        'main': ('neural.commands',),
        'program': ('sp_ode',),
    },
    'sp_ode.cli.common': {
        'EXIT_FAILED': ('neural.commands',),
        'UsageError': ('neural.commands',),
        'refuse_existing': ('neural.commands',),
        'run_folder': ('neural.commands',),
    },
    'sp_ode.core.cache': {
        'LRUCache': ('sp_ode.manifolds', 'sp_ode.sweeps', 'sp_ode.systems'),
    },
    'sp_ode.core.catalogue': {
        'Catalogue': ('sp_ode.markov', 'sp_ode.networks', 'sp_ode.systems'),
    },
    'sp_ode.core.chebyshev': {
        'ChebyshevConvergenceError': ('sp_ode.sweeps', 'sp_ode.systems'),
        'FIRST_DEGREE': ('sp_ode.sweeps',),
        'TensorChebyshev': ('sp_ode.sweeps',),
        'chebyshev_fit': ('sp_ode.sweeps', 'sp_ode.systems'),
        'chebyshev_fit_tensor': ('sp_ode.sweeps',),
    },
    'sp_ode.core.cpu_pool': {
        'cores_before_pinning': ('sp_ode.sweeps',),
        'pin_to_one_core': ('sp_ode.cli',),
        'pin_worker': ('sp_ode.sweeps',),
    },
    'sp_ode.core.expressions': {
        'FUNCTIONS': ('sp_ode.symbolic',),
        'build_function': ('sp_ode.networks',),
        'build_number': ('sp_ode.networks',),
        'build_operator': ('sp_ode.networks', 'sp_ode.symbolic'),
        'build_product': ('sp_ode.networks',),
        'build_sum': ('sp_ode.networks',),
        'parse_expression': ('sp_ode.networks', 'sp_ode.symbolic'),
        'parse_number': ('sp_ode.cli',),
        'substitute': ('sp_ode.networks',),
    },
    'sp_ode.core.files': {
        'atomic_write_bytes': ('neural.lm', 'neural.phi', 'sp_ode.cli', 'sp_ode.sweeps'),
        'dumps': ('neural.commands', 'sp_ode.cli', 'sp_ode.verification'),
        'load_object': ('neural.phi', 'sp_ode.cli', 'sp_ode.systems'),
        'user_modules': ('sp_ode.sweeps',),
        'write_json': ('neural.commands', 'neural.lm', 'neural.phi', 'sp_ode.cli', 'sp_ode.sweeps', 'sp_ode.verification'),
    },
    'sp_ode.core.lazy': {
        'lazy_namespace': ('neural', 'neural.phi', 'sp_ode', 'sp_ode.manifolds', 'sp_ode.markov', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.symbolic', 'sp_ode.systems', 'sp_ode.verification'),
    },
    'sp_ode.core.memory': {
        'DEFAULT_FRACTION': ('sp_ode.networks',),
        'available_memory': ('sp_ode.markov', 'sp_ode.networks'),
        'check_memory': ('sp_ode.cli', 'sp_ode.markov', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.verification'),
    },
    'sp_ode.core.precision': {
        'UNIT_ROUNDOFF': ('neural.commands', 'sp_ode.markov'),
        'float32_leaves': ('sp_ode.systems',),
        'float64_callable': ('neural.phi', 'sp_ode.manifolds', 'sp_ode.systems'),
        'in_float64': ('sp_ode.manifolds', 'sp_ode.markov', 'sp_ode.sweeps', 'sp_ode.systems', 'sp_ode.verification'),
    },
    'sp_ode.core.reporting': {
        'figures': ('neural.commands', 'neural.lm', 'neural.phi', 'sp_ode.cli', 'sp_ode.verification'),
        'progress': ('neural.lm', 'neural.phi', 'sp_ode.cli', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.symbolic', 'sp_ode.verification'),
    },
    'sp_ode.core.summary': {
        'Summarised': ('neural.lm', 'neural.phi', 'sp_ode.cli', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.symbolic', 'sp_ode.systems', 'sp_ode.verification'),
        'first_line': ('neural.lm', 'sp_ode.cli', 'sp_ode.networks', 'sp_ode.systems', 'sp_ode.verification'),
        'number': ('neural.lm', 'neural.phi', 'sp_ode.cli', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.symbolic', 'sp_ode.systems', 'sp_ode.verification'),
        'shape_of': ('neural.lm', 'neural.phi'),
    },
    'sp_ode.core.typing': {
        'ArrayLike': ('neural.phi', 'sp_ode.manifolds', 'sp_ode.markov', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.systems', 'sp_ode.verification'),
        'Float': ('neural.phi', 'sp_ode.manifolds', 'sp_ode.markov', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.systems', 'sp_ode.verification'),
        'GeneratorMatrix': ('neural.phi', 'sp_ode.markov'),
        'Int': ('neural.phi', 'sp_ode.verification'),
        'PathLike': ('sp_ode.sweeps', 'sp_ode.verification'),
        'PyTree': ('sp_ode.manifolds', 'sp_ode.systems'),
        'TimeSpan': ('sp_ode.manifolds', 'sp_ode.sweeps', 'sp_ode.systems', 'sp_ode.verification'),
    },
    'sp_ode.core.validation': {
        'check_choice': ('neural.commands', 'neural.lm', 'neural.phi', 'sp_ode.manifolds', 'sp_ode.markov', 'sp_ode.sweeps', 'sp_ode.systems', 'sp_ode.verification'),
        'check_finite': ('sp_ode.symbolic', 'sp_ode.systems', 'sp_ode.verification'),
        'check_finite_array': ('neural.phi', 'sp_ode.manifolds', 'sp_ode.markov', 'sp_ode.sweeps', 'sp_ode.symbolic', 'sp_ode.systems', 'sp_ode.verification'),
        'check_nonnegative': ('neural.lm', 'neural.phi', 'sp_ode.markov'),
        'check_positive': ('neural.lm', 'neural.phi', 'sp_ode.manifolds', 'sp_ode.markov', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.symbolic', 'sp_ode.systems', 'sp_ode.verification'),
        'check_positive_int': ('neural.lm', 'neural.phi', 'sp_ode.manifolds', 'sp_ode.markov', 'sp_ode.networks', 'sp_ode.sweeps', 'sp_ode.symbolic', 'sp_ode.systems', 'sp_ode.verification'),
        'did_you_mean': ('sp_ode.cli', 'sp_ode.networks'),
        'hint': ('sp_ode.cli', 'sp_ode.networks', 'sp_ode.systems'),
    },
    'sp_ode.manifolds.critical_manifold': {
        'max_real_part': ('sp_ode.verification',),
    },
    'sp_ode.manifolds.newton': {
        'as_points': ('sp_ode.verification',),
        'is_master': ('sp_ode.verification',),
        'require_system': ('sp_ode.verification',),
        'system_kernels': ('sp_ode.verification',),
    },
    'sp_ode.manifolds.reduced': {
        'reduced_system_checked': ('sp_ode.verification',),
        'simulate_reduced_checked': ('sp_ode.verification',),
    },
    'sp_ode.manifolds.slow_manifold': {
        'check_order': ('sp_ode.verification',),
        'slow_manifold_checked': ('sp_ode.verification',),
        'taylor_coefficient': ('sp_ode.sweeps',),
    },
    'sp_ode.markov.attractor': {
        'MARGIN': ('sp_ode.verification',),
        'MAX_STEPS': ('sp_ode.verification',),
        'RADIUS_MAX': ('sp_ode.verification',),
    },
    'sp_ode.markov.bounds': {
        'hitting_time_bound': ('sp_ode.networks',),
        'input_rounding_bound': ('neural.commands',),
        'posterior_bound': ('neural.phi',),
        'residual_l1_bound': ('sp_ode.networks',),
    },
    'sp_ode.markov.families': {
        'DEFAULT_FAMILY': ('sp_ode.cli',),
    },
    'sp_ode.markov.generator': {
        'ROW_SUM_C': ('sp_ode.systems',),
        'format_classes': ('sp_ode.systems', 'sp_ode.verification'),
    },
    'sp_ode.markov.reference': {
        'exact_stationary': ('sp_ode.verification',),
    },
    'sp_ode.markov.solvers.warm_start': {
        'SOLVERS': ('sp_ode.systems',),
        'WarmStationary': ('sp_ode.systems',),
    },
    'sp_ode.markov.stationary': {
        'DENSE_GTH_MAX': ('sp_ode.verification',),
    },
    'sp_ode.networks.network': {
        'parse_rate': ('sp_ode.systems',),
    },
    'sp_ode.networks.sparse_generator': {
        'PatternedGenerator': ('sp_ode.systems',),
    },
    'sp_ode.sweeps.sweep': {
        'CHUNKS': ('sp_ode.cli',),
        'MANIFEST': ('sp_ode.cli',),
        'STATUS_FAILED': ('sp_ode.cli',),
        'TIMINGS': ('sp_ode.cli',),
        'VALIDATION': ('sp_ode.cli',),
        'npz_bytes': ('sp_ode.cli',),
        'remove_orphans': ('sp_ode.cli',),
    },
    'sp_ode.systems': {
        'diagnosis': ('sp_ode.manifolds',),
        'integration': ('sp_ode.manifolds',),
    },
    'sp_ode.systems.integration': {
        'SMALL_PROGRAM_OPTIONS': ('sp_ode.sweeps',),
        'split_args': ('sp_ode.manifolds', 'sp_ode.sweeps'),
        'tree_spec': ('sp_ode.sweeps',),
    },
    'sp_ode.systems.network': {
        'padded_range': ('sp_ode.sweeps', 'sp_ode.verification'),
    },
    'sp_ode.systems.options': {
        'RTOL_FLOOR': ('sp_ode.sweeps',),
        'SolveOptions': ('sp_ode.manifolds', 'sp_ode.sweeps', 'sp_ode.verification'),
        'check_method': ('sp_ode.verification',),
    },
    'sp_ode.systems.resolve': {
        'EntryLike': ('sp_ode.manifolds', 'sp_ode.verification'),
        'NETWORK_PREFIX': ('sp_ode.cli',),
        'SYSTEM_TYPES': ('neural.phi', 'sp_ode.cli'),
        'SystemLike': ('sp_ode.manifolds', 'sp_ode.sweeps', 'sp_ode.verification'),
        'as_system': ('neural.phi', 'sp_ode.cli', 'sp_ode.manifolds', 'sp_ode.sweeps', 'sp_ode.verification'),
        'load_system': ('sp_ode.cli',),
    },
    'sp_ode.systems.simulation': {
        'DEFAULT_MAX_STEPS': ('sp_ode.manifolds',),
        'check_solver_options': ('sp_ode.manifolds',),
        'check_state': ('sp_ode.manifolds', 'sp_ode.sweeps'),
        'check_system': ('sp_ode.manifolds', 'sp_ode.sweeps', 'sp_ode.verification'),
        'check_t_span': ('sp_ode.sweeps', 'sp_ode.verification'),
        'check_ts': ('sp_ode.sweeps',),
        'finish': ('sp_ode.manifolds',),
        'prepare_batch': ('sp_ode.manifolds',),
        'run_engines': ('sp_ode.manifolds',),
        'simulate_checked': ('sp_ode.sweeps', 'sp_ode.verification'),
    },
    'sp_ode.systems.system': {
        'slow_symbol': ('sp_ode.manifolds', 'sp_ode.verification'),
    },
    'sp_ode.systems.vector_field': {
        'user_function_of': ('sp_ode.manifolds',),
    },
    'sp_ode.verification.report': {
        'SMOKE_PS': ('sp_ode.cli',),
        'resolve_case': ('sp_ode.cli',),
    },
}
