"""Random generators for the numeric checks of proofs/ (a shared, seeded catalogue).

`random_irreducible(rng, n)`: a directed ring (which makes the graph strongly
connected) plus random extra edges, rates log-uniform over four decades — so
that the checks see badly scaled generators, not only tame ones.
`random_reducible(rng, n)`: two irreducible blocks with no edges between them
(two closed classes), the counterexample that shows assumption A2 is needed.
"""
from __future__ import annotations

import numpy as np


def random_irreducible(rng: np.random.Generator, n: int, density: float = 0.4) -> np.ndarray:
    R = np.where(rng.random((n, n)) < density, 10.0 ** rng.uniform(-2, 2, (n, n)), 0.0)
    for i in range(n):
        R[i, (i + 1) % n] = 10.0 ** rng.uniform(-2, 2)
    np.fill_diagonal(R, 0.0)
    return R - np.diag(R.sum(axis=1))


def random_reducible(rng: np.random.Generator, n: int) -> np.ndarray:
    k = n // 2
    Q = np.zeros((n, n))
    Q[:k, :k] = random_irreducible(rng, k)
    Q[k:, k:] = random_irreducible(rng, n - k)
    return Q


def sizes(smoke: bool) -> list[int]:
    return [2, 3, 5, 8, 13] if smoke else [2, 3, 4, 5, 8, 13, 21, 34, 55]
