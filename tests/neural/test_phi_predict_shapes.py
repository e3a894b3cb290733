"""PhiMLP.predict validates its input shape (issue 12, item 10): for d > 1 a flat array is an error."""
from __future__ import annotations

import numpy as np
import pytest

from neural.phi.fit import PhiMLP


def test_flat_array_for_d_gt_1_is_refused():
    m = PhiMLP(2, 4, width=8, depth=1, lower=[-1, 0], upper=[1, 2])
    # six numbers could be three points (3, 2): guessing either way is silently wrong, so it is an error
    with pytest.raises(ValueError, match=r"shape \(N, 2\).*flat array of shape \(6,\)"):
        m.predict(np.zeros(6))
    with pytest.raises(ValueError, match=r"shape \(N, 2\)"):
        m.predict(np.zeros(3))
    # the accepted forms: (N, d) and one point (d,)
    assert m.predict(np.zeros((3, 2))).shape == (3, 4)
    assert m.predict(np.zeros(2)).shape == (4,)


def test_d_equal_1_accepts_vectors_and_scalars():
    m = PhiMLP(1, 3, width=4, depth=1)
    assert m.predict(np.linspace(-1, 1, 5)).shape == (5, 3)
    assert m.predict(0.3).shape == (3,)
    assert m.predict(np.zeros((5, 1))).shape == (5, 3)
    with pytest.raises(ValueError, match=r"\(N, 1\)"):
        m.predict(np.zeros((5, 2)))
