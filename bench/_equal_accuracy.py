"""Equal accuracy, not equal rtol: the loosest tolerance at which a solver meets an error target.

Shared by the speed benchmarks of issue 3 (bench_eps_cost.py, bench_batched.py): every path is
timed at the loosest rtol of a ladder whose measured error against a tight reference is at most
the common target, so speed ratios compare equal errors.
"""
from __future__ import annotations

from collections.abc import Callable


def loosest_rtol(solve: Callable, error_of: Callable, target: float, ladder) -> dict:
    """Walk `ladder` (loose to tight); stop at the first rtol whose ``error_of(solve(rtol)) ≤ target``.

    A failed solve (``not traj.success``) counts as an infinite error.  Returns
    {"reached", "rtol" (None if not reached), "error" (of the chosen rtol, else the last finite
    one tried or None), "tried": [(rtol, error), ...]}.
    """
    tried = []
    for rtol in ladder:
        traj = solve(rtol)
        err = error_of(traj) if traj.success else float("inf")
        tried.append((rtol, err))
        if err <= target:
            return {"reached": True, "rtol": rtol, "error": err, "tried": tried}
    last = tried[-1][1] if tried else float("inf")
    return {"reached": False, "rtol": None, "error": None if last == float("inf") else last, "tried": tried}
