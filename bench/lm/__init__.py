"""The fast–slow language model: attention kernels, throughput, nanoGPT's recipe, the coupling experiments.

Each module runs as ``python -m bench.lm.<name>`` from the repository root (``--smoke``: seconds).
"""
