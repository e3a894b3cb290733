"""Fast–slow solves: cost against ε, batched solves, stiff test problems, initial layers, first answers, cold commands.

Each module runs as ``python -m bench.systems.<name>`` from the repository root (``--smoke``: seconds).
"""
