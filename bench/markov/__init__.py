"""Stationary distributions of Markov generators (GTH, sparse, banded, fuzzed bounds) and the symbolic solver.

Each module runs as ``python -m bench.markov.<name>`` from the repository root (``--smoke``: seconds).
"""
