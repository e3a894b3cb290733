"""Parameter sweeps (`sp_ode.sweep`) against their baselines, on ODE systems and reaction networks; the GPU script.

Each module runs as ``python -m bench.sweeps.<name>`` from the repository root (``--smoke``: seconds).
"""
