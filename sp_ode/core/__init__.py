"""Shared foundations of sp_ode, imported by every other subpackage and importing none.

- :mod:`~sp_ode.core.validation` — boundary validators that name the argument, the rule and what was seen;
- :mod:`~sp_ode.core.precision` — the one place that owns numeric precision: float64 JAX, scoped;
- :mod:`~sp_ode.core.files` — JSON records, atomic writes, loading a user's ``file.py:OBJECT``;
- :mod:`~sp_ode.core.reporting` — progress bars and matplotlib figures without global state;
- :mod:`~sp_ode.core.lazy` — lazy package namespaces;
- :mod:`~sp_ode.core.claims` — the harness of machine-checked claims behind ``proofs/``;
- :mod:`~sp_ode.core.expressions` — the one grammar every expression read from text goes through (never eval);
- :mod:`~sp_ode.core.memory` — memory estimated before it is allocated, refused with the estimate.
"""
