"""Type aliases of the public API: what the central inputs may be, with array shapes written as diffrax writes them.

`Float[ArrayLike, "n n"]` (jaxtyping's notation) is an n×n array of reals, given as anything
`numpy.asarray` accepts (a list, a NumPy or JAX array); the names in the string are dimensions shared
across one signature, so `group_inverse_apply(Q: GeneratorMatrix, v: Float[ArrayLike, " n"]) ->
Float[np.ndarray, " n"]` says v and the result have one entry per state of Q.  The letters: n states of
a generator, m fast and d slow variables of a fast–slow system, N points (of a grid, of a sweep), K sample
times (or values of P), S species; `*batch` any leading batch axes.

The shapes are documentation and what a type checker reads (for it `Float[A, "..."]` is `A`);
nothing checks them at run time here: the checks with messages are `sp_ode.core.validation`'s.
The package imports these names under `typing.TYPE_CHECKING` only, so `import sp_ode` stays
free of NumPy, SciPy and jaxtyping; user code may import this module (it loads those three).

What a *system* may be (`SystemLike`) is decided by `sp_ode.systems.resolve`, above this layer.
"""
from __future__ import annotations

import os

import scipy.sparse
from jaxtyping import Bool, Float, Int, PyTree, Shaped
from numpy.typing import ArrayLike

__all__ = ["ArrayLike", "Bool", "Float", "Int", "PyTree", "Shaped", "GeneratorMatrix", "PathLike", "TimeSpan"]

TimeSpan = tuple[float, float]
"""`(t0, t1)`: the interval of an integration, t0 < t1."""

PathLike = str | os.PathLike
"""A file or folder, as a string or a `pathlib.Path`."""

GeneratorMatrix = Float[ArrayLike, "n n"] | scipy.sparse.sparray | scipy.sparse.spmatrix
"""A generator matrix Q (rows sum to 0, off-diagonal ≥ 0), dense or SciPy sparse, with n states."""
