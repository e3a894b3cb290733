"""Reaction networks: CME solves at scale, the transient FSP (also against GillesPy2's SSA on its example models), the SBML and DSMTS test suites.

Each module runs as ``python -m bench.networks.<name>`` from the repository root (``--smoke``: seconds).
"""
