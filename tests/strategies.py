"""Hypothesis strategies that build valid objects by construction."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays


@st.composite
def generators(draw, min_n: int = 1, max_n: int = 8, log_rate_range: float = 6.0):
    """An irreducible generator: random rates on a random pattern plus a ring i → i+1 (which makes it irreducible).

    Rates span `log_rate_range` decades so tolerances are exercised with badly scaled chains.
    """
    n = draw(st.integers(min_n, max_n))
    logs = draw(arrays(np.float64, (n, n), elements=st.floats(-log_rate_range / 2, log_rate_range / 2)))
    mask = draw(arrays(np.bool_, (n, n)))
    R = np.where(mask, 10.0 ** logs, 0.0)
    ring = np.roll(np.eye(n), 1, axis=1) * 10.0 ** logs.T  # independent magnitudes on the ring
    R = np.where(ring > 0, np.maximum(R, ring), R)
    np.fill_diagonal(R, 0.0)
    return R - np.diag(R.sum(axis=1))
