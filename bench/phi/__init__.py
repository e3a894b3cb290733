"""The learned manifold φ_θ: small families (`bench.phi.fit`) and the certified surrogate at scale (`bench.phi.surrogate`).

Each module runs as ``python -m bench.phi.<name>`` from the repository root (``--smoke``: seconds).
"""
