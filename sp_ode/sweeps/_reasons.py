"""Why each point of a sweep went where it went: one code per point, one sentence per code.

`SweepResult.reason` holds a `Reason` per point; `SweepResult.reasons()` counts them per path with
these sentences, and the cost model's numbers (`SweepResult.plan`) say how much each choice was
predicted to cost.
"""
from __future__ import annotations

from enum import IntEnum


class Reason(IntEnum):
    """Why a point took its path (stored as a small integer per point)."""

    REDUCED_OK = 0          # its reduced path's estimate ≤ safety·tol
    FULL_ASKED = 1          # route="full"
    FULL_COMPILE = 2        # reduced paths would not repay their compilation and probe
    FULL_DEARER = 3         # the probed reduced path costs no less per point than the full solve
    FULL_PREDICTED = 4      # no order ≤ max_order predicted within safety·tol at this ε
    FULL_LAYER = 5          # x0 off the manifold: the initial-layer shift alone exceeds safety·tol
    FULL_ESTIMATE = 6       # the reduced path was solved, its estimate exceeded safety·tol
    RESOLVED = 7            # validation found true error > tol: the reference solve is kept
    FAILED = 8              # the full solve failed (y is inf)
    FULL_NO_MANIFOLD = 9    # no reduced path for this system (network: d ≠ 1)
    FULL_FIRST = 10         # in the first chunk, which is solved fully to price the full route
    RESOLVED_MARGIN = 11    # not validated, but its path's worst true/estimate ratio × its estimate > tol


TEXT = {
    Reason.REDUCED_OK: "estimate ≤ safety·tol on the reduced path",
    Reason.FULL_ASKED: "route='full' asked for",
    Reason.FULL_COMPILE: "reduced paths would not repay their compilation",
    Reason.FULL_DEARER: "the full solve is no dearer per point than the reduced path",
    Reason.FULL_PREDICTED: "no reduced order predicted within safety·tol at this ε",
    Reason.FULL_LAYER: "x0 off the manifold and its initial layer not projected within safety·tol",
    Reason.FULL_ESTIMATE: "reduced path tried: its estimate exceeded safety·tol",
    Reason.RESOLVED: "re-solved: validation found true error > tol",
    Reason.FAILED: "the full solve failed",
    Reason.FULL_NO_MANIFOLD: "no reduced path for this system (see the plan's notes)",
    Reason.FULL_FIRST: "first chunk: solved fully, it prices the full route",
    Reason.RESOLVED_MARGIN: "re-solved: its path's worst true/estimate ratio × its estimate > tol",
}
