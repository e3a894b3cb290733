"""The benchmarks: each module is a script run from the repository root as ``python -m bench.<topic>.<name>``.

One sub-package per topic, as the library's: `bench.markov` (stationary distributions, the
symbolic solver), `bench.systems` (fast–slow solves, stiff problems, first answers),
`bench.networks` (reaction networks, SBML/DSMTS), `bench.sweeps`, `bench.lm` (the fast–slow
language model) and `bench.phi` (the learned manifold φ_θ).  Each script takes ``--smoke``
(tests/bench runs every one that way); a run without ``--out`` writes its record to a fresh
``results/<topic>/<name>.json`` (`bench._common.default_record`; never over an existing one, and
nothing at ``--smoke``);
`bench.render` regenerates the tables of the documentation pages from those records.

Nothing in `sp_ode` or `neural` imports this package (an import-linter contract).
"""
