"""Shared foundations of sp_ode, imported by every other subpackage and importing none.

- `validation` — boundary validators that name the argument, the rule and what was seen;
- `precision` — the one place that owns numeric precision: float64 JAX, scoped;
- `files` — JSON records, atomic writes, loading a user's `file.py:OBJECT`;
- `reporting` — progress bars and matplotlib figures without global state;
- `lazy` — lazy package namespaces;
- `expressions` — the one grammar every expression read from text goes through (never eval);
- `memory` — memory estimated before it is allocated, refused with the estimate;
- `summary` — short text and HTML summaries of result objects (`print(result)`, notebooks);
- `chebyshev` — the one adaptive Chebyshev builder (nested Lobatto nodes, a change-based error estimate).
"""
