"""Shared foundations of sp_ode, imported by every other subpackage and importing none.

- `errors` — `Error` and `SpOdeWarning`, the bases of every exception and warning the library issues;
- `validation` — boundary validators that name the argument, the rule and what was seen;
- `precision` — the one place that owns numeric precision: float64 JAX, scoped;
- `files` — JSON records, atomic writes, loading a user's `file.py:OBJECT`;
- `reporting` — progress bars and matplotlib figures without global state;
- `lazy` — lazy package namespaces;
- `catalogue` — the one container and lookup of every catalogue of reference objects (systems, families, models);
- `expressions` — the one grammar every expression read from text goes through (never eval);
- `expression_size` — the size of a sympy expression and the limits that bound the grammar's work;
- `memory` — memory estimated before it is allocated, refused with the estimate;
- `cache` — compiled programs kept in memory for one process, on disk across processes when asked;
- `cpu_pool` — one core per process for the processes sp_ode starts (never the caller's own);
- `errors` — `Error` and `SpOdeWarning`, the bases of every error and warning the library raises;
- `typing` — the annotations' aliases (array shapes in jaxtyping's notation, `TimeSpan`, `PathLike`);
- `summary` — short text and HTML summaries of result objects (`print(result)`, notebooks);
- `chebyshev` — the one adaptive Chebyshev builder (nested Lobatto nodes, a change-based error estimate).
"""
