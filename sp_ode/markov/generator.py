"""Markov generators Q (docs/theory.md §2): validation, builders, structure.

Convention: `Q[i, j] ≥ 0` is the rate i → j (i ≠ j) and every row sums to
zero, so the master equation reads dp/dt = Qᵀp and 1ᵀp is conserved.

Contents
--------
- [`check_generator`][sp_ode.markov.generator.check_generator] — the boundary validator (dense or `scipy.sparse`).
- Builders: [`from_rates`][sp_ode.markov.generator.from_rates], [`birth_death`][sp_ode.markov.generator.birth_death], [`uniformize`][sp_ode.markov.generator.uniformize],
  [`from_transition_matrix`][sp_ode.markov.generator.from_transition_matrix] (Q ↔ P = I + Q/λ).
- Structure: [`communicating_classes`][sp_ode.markov.generator.communicating_classes], [`closed_classes`][sp_ode.markov.generator.closed_classes],
  [`is_irreducible`][sp_ode.markov.generator.is_irreducible], [`NotIrreducibleError`][sp_ode.markov.generator.NotIrreducibleError].

The spectrum and the group inverse, which need p_st, live in
`sp_ode.markov.spectral`.
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from sp_ode.core.errors import Error
from sp_ode.core.validation import check_finite_array, check_nonnegative, check_positive

if TYPE_CHECKING:
    from sp_ode.core.typing import ArrayLike, Float, GeneratorMatrix

EPS = np.finfo(np.float64).eps

# Row sums must vanish up to rounding: ROW_SUM_C · n · eps · (sum of |rates| in the row).
ROW_SUM_C = 64.0


class NotIrreducibleError(Error, ValueError):
    """The generator has more than one communicating class where one was required.

    Attributes
    ----------
    closed_classes : list of ndarray
        The closed (recurrent) classes; each carries its own stationary
        distribution (see [`sp_ode.stationary_distributions`][sp_ode.markov.stationary.stationary_distributions]).
    """

    def __init__(self, message: str, closed_classes: list[np.ndarray]):
        super().__init__(message)
        self.closed_classes = closed_classes


def format_classes(classes: list[np.ndarray], limit: int = 4, states=None) -> str:
    """Classes of states as "{0, 1}, {2}" (by name when `states` labels them), at most `limit` of them."""
    shown = []
    for c in classes[:limit]:
        idx = c.tolist()
        names = [str(i) if states is None else str(states[i]) for i in idx[:6]]
        shown.append("{" + ", ".join(names) + (", …" if len(idx) > 6 else "") + "}")
    return ", ".join(shown) + (f" and {len(classes) - limit} more" if len(classes) > limit else "")


# --- validation ----------------------------------------------------------------

def input_unit_roundoff(Q: GeneratorMatrix) -> float:
    """The relative rounding of the rates as given: u of their float dtype (2⁻²⁴ for float32), else float64's u.

    Integer and boolean entries are exact; anything that is not a floating array counts as float64.
    """
    dtype = getattr(Q, "dtype", None)
    if dtype is None:
        return EPS / 2
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        return EPS / 2
    if np.issubdtype(dtype, np.floating):
        return max(float(np.finfo(dtype).eps) / 2, EPS / 2)
    return EPS / 2


def _state(states, i: int) -> str:
    return str(int(i)) if states is None else repr(states[int(i)])


def _where(states, index: tuple) -> str:
    """An index of Q (…, i, j) — with state names when there are labels."""
    if states is None:
        return f"index {index}"
    i, j = index[-2:]
    return f"index {index} (rate {states[int(i)]} -> {states[int(j)]})"


def _check_dense(Q, name: str, batch: bool, states=None) -> np.ndarray:
    if isinstance(Q, (str, bytes)) or Q is None:
        raise TypeError(f"`{name}` must be a square array or scipy.sparse matrix; got {type(Q).__name__}.")
    try:
        arr = np.asarray(Q)
    except Exception:
        raise TypeError(f"`{name}` must be a square array or scipy.sparse matrix; got {type(Q).__name__}.") from None
    if arr.dtype == object:
        raise TypeError(f"`{name}` must have a real numeric dtype; got object (ragged lists or symbolic entries? "
                        "for sympy matrices use sp_ode.symbolic).")
    if np.iscomplexobj(arr):
        raise TypeError(f"`{name}` must be real; got complex dtype {arr.dtype}.")
    if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"`{name}` must have a real numeric dtype; got {arr.dtype}.")
    if arr.ndim < 2 or (arr.ndim > 2 and not batch):
        want = "2-D (n, n)" if not batch else "at least 2-D (..., n, n)"
        raise ValueError(f"`{name}` must be {want}; got shape {arr.shape}.")
    if arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"`{name}` must be square; got shape {arr.shape}.")
    if arr.shape[-1] == 0:
        raise ValueError(f"`{name}` must have at least one state; got shape {arr.shape}.")
    in_dtype = arr.dtype
    u_in = input_unit_roundoff(arr)
    arr = check_finite_array(name, arr)
    n = arr.shape[-1]
    if states is not None and len(states) != n:
        states = None  # labels for another size: fall back to indices rather than mislabel
    off = ~np.eye(n, dtype=bool)
    neg = (arr < 0) & off
    if neg.any():
        where = tuple(int(i) for i in np.argwhere(neg)[0])
        raise ValueError(f"`{name}` off-diagonal rates must be >= 0; got {arr[where]:.3g} at {_where(states, where)}.")
    row_sums = arr.sum(axis=-1)
    scale = np.abs(arr).sum(axis=-1)
    # Rows must vanish up to the rounding of the rates as given: a float32 Q (e.g. built with
    # jax.numpy outside the float64 scope) has row sums of about n·2⁻²⁴·Σ|Q_ij|, not n·2⁻⁵³.
    unit = max(EPS, 2 * u_in)
    tol = ROW_SUM_C * n * unit * np.maximum(scale, np.finfo(np.float64).tiny)
    bad = np.abs(row_sums) > tol
    if bad.any():
        worst = float(np.max(np.abs(row_sums)))
        diag = np.diagonal(arr, axis1=-2, axis2=-1)
        if np.all(diag >= 0) and np.allclose(row_sums, 1.0, rtol=0, atol=1e-8):
            raise ValueError(f"`{name}` rows must sum to zero (max |row sum| {worst:.2g}); this looks like a "
                             "transition matrix P (rows sum to one) — pass Q = P - I, or use "
                             "sp_ode.from_transition_matrix(P).")
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        row = f"row {where}" if states is None else f"row {where} (state {states[where[-1]]})"
        allowance = (f"; {in_dtype} input is allowed {ROW_SUM_C:g}·n·{unit:.2g}·Σ|Q_ij| for its rounding, and this "
                     f"row is beyond that too" if unit > EPS else "")
        raise ValueError(f"`{name}` rows must sum to zero (max |row sum| {worst:.2g}, first at {row}){allowance}; "
                         "set each diagonal entry to minus the sum of the rates leaving that state.")
    if unit > EPS:
        # Reduced-precision input (float32, float16): the rates are what was given, the diagonal
        # is re-formed in float64 from them (the float32 one carries its own rounding), so the
        # answer is exact for the given rates; their rounding enters the error bound
        # (`sp_ode.markov.bounds.input_rounding_bound`).
        arr = np.where(off, arr, 0.0)
        arr = arr - np.eye(n) * arr.sum(axis=-1, keepdims=True)
    return arr


def _check_sparse(Q, name: str) -> sp.csr_array:
    if np.iscomplexobj(Q.data if hasattr(Q, "data") else np.zeros(0)):
        raise TypeError(f"`{name}` must be real; got complex dtype {Q.dtype}.")
    if Q.dtype == object or not (np.issubdtype(Q.dtype, np.number) or Q.dtype == bool):
        raise TypeError(f"`{name}` must have a real numeric dtype; got {Q.dtype}.")
    if Q.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D (n, n); got shape {Q.shape}.")
    if Q.shape[0] != Q.shape[1]:
        raise ValueError(f"`{name}` must be square; got shape {Q.shape}.")
    if Q.shape[0] == 0:
        raise ValueError(f"`{name}` must have at least one state; got shape {Q.shape}.")
    unit = max(EPS, 2 * input_unit_roundoff(Q))
    A = sp.csr_array(Q, dtype=np.float64)
    A.sum_duplicates()
    if not np.all(np.isfinite(A.data)):
        raise ValueError(f"`{name}` must be finite; got a non-finite stored entry.")
    coo = A.tocoo()
    neg = (coo.data < 0) & (coo.row != coo.col)
    if neg.any():
        k = int(np.argmax(neg))
        raise ValueError(f"`{name}` off-diagonal rates must be >= 0; got {coo.data[k]:.3g} at index "
                         f"({int(coo.row[k])}, {int(coo.col[k])}).")
    n = A.shape[0]
    row_sums = np.asarray(A.sum(axis=1)).ravel()
    scale = np.asarray(abs(A).sum(axis=1)).ravel()
    bad = np.abs(row_sums) > ROW_SUM_C * n * unit * np.maximum(scale, np.finfo(np.float64).tiny)
    if bad.any():
        allowance = f" ({Q.dtype} input, allowed {ROW_SUM_C:g}·n·{unit:.2g}·Σ|Q_ij|)" if unit > EPS else ""
        raise ValueError(f"`{name}` rows must sum to zero (max |row sum| {np.max(np.abs(row_sums)):.2g}, first at "
                         f"row {int(np.argmax(bad))}){allowance}; set each diagonal entry to minus the row's "
                         "off-diagonal sum.")
    if unit > EPS:  # reduced-precision rates: the diagonal re-formed from them in float64 (as for dense Q)
        A.setdiag(0.0)
        A.eliminate_zeros()
        A = sp.csr_array(A - sp.diags_array(np.asarray(A.sum(axis=1)).ravel()))
    return A


def check_generator(Q: GeneratorMatrix, name: str = "Q", *, batch: bool = False,
                    states: Sequence[str] | None = None) -> np.ndarray | sp.csr_array:
    """Validate a generator and return it as float64.

    Rules, each with its own message: an array or `scipy.sparse` matrix;
    real numeric dtype; 2-D (or `(..., n, n)` with `batch=True`); square;
    n ≥ 1; finite; off-diagonal rates ≥ 0; every row sums to zero within
    64·n·eps·Σ_j|Q_ij| (a row-stochastic P is recognised and named), eps that of
    the input's dtype: a float32 Q (a `jnp` array made outside JAX's float64 mode)
    is accepted with eps = 2⁻²³, and returned in float64 with its diagonal re-formed
    from its rates (`input_unit_roundoff` gives the rates' rounding for error bounds).

    Parameters
    ----------
    Q : array_like (n, n) or (..., n, n), or scipy.sparse (n, n)
    name : str
        The argument name used in messages.
    batch : bool
        Accept a stack of generators (dense only).
    states : sequence of n str, optional
        State names for the messages (a negative rate, a bad row).

    Returns
    -------
    ndarray (float64) or scipy.sparse.csr_array (float64)

    Raises
    ------
    TypeError
        Wrong kind of object or dtype (object, complex, non-numeric).
    ValueError
        Wrong shape or a rule above violated.
    """
    if sp.issparse(Q):
        return _check_sparse(Q, name)
    return _check_dense(Q, name, batch, states)


# --- builders ------------------------------------------------------------------

def _index(name: str, value, n: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` state indices must be integers; got {value!r}.")
    if value < 0 or (n is not None and value >= n):
        raise ValueError(f"`{name}` state index {value} is out of range for n = {n}.")
    return int(value)


def from_rates(rates: Mapping | Iterable, n: int | None = None, *,
               sparse: bool = False) -> Float[np.ndarray, "n n"] | sp.csr_array:
    """Build Q from rates `{(i, j): r}` or an edge list `[(i, j, r), ...]`.

    Repeated edges add.  The diagonal is set to minus the row sums.

    Parameters
    ----------
    rates : mapping or iterable of (i, j, r)
    n : int, optional
        Number of states (default: 1 + the largest index).
    sparse : bool
        Return a CSR array instead of a dense one.

    Raises
    ------
    TypeError, ValueError
        Non-integer or out-of-range indices, i = j, negative or non-finite rates.
    """
    items = list(rates.items()) if isinstance(rates, Mapping) else list(rates)
    edges = []
    for item in items:
        if isinstance(rates, Mapping):
            (i, j), r = item
        else:
            if len(item) != 3:
                raise ValueError(f"`rates` edge-list items must be (i, j, rate); got {item!r}.")
            i, j, r = item
        i, j = _index("rates", i, n), _index("rates", j, n)
        if i == j:
            raise ValueError(f"`rates` must not contain self-loops; got ({i}, {j}).")
        edges.append((i, j, check_nonnegative(f"rates[{i}, {j}]", r)))
    if n is None:
        n = 1 + max((max(i, j) for i, j, _ in edges), default=-1)
    if n < 1:
        raise ValueError("`rates` is empty and `n` was not given; a generator needs at least one state.")
    rows, cols, vals = (np.array(v) for v in zip(*edges)) if edges else (np.zeros(0, int),) * 2 + (np.zeros(0),)
    R = sp.coo_array((vals.astype(np.float64), (rows.astype(int), cols.astype(int))), shape=(n, n)).tocsr()
    Q = R - sp.diags_array(np.asarray(R.sum(axis=1)).ravel())
    return sp.csr_array(Q) if sparse else Q.toarray()


def birth_death(birth: Float[ArrayLike, " n-1"], death: Float[ArrayLike, " n-1"], *,
                sparse: bool = False) -> Float[np.ndarray, "n n"] | sp.csr_array:
    """Birth–death generator on states 0 … n−1.

    `birth[k]` = λ_k is the rate k → k+1 (k = 0 … n−2) and `death[k]` =
    μ_{k+1} the rate k+1 → k.  Stationary law (docs/theory.md §6, detailed balance):
    p_k ∝ Π_{i<k} λ_i / μ_{i+1}.

    Raises
    ------
    ValueError
        Lengths differ, or a rate is negative or not finite.
    """
    lam = check_finite_array("birth", birth, ndim=1)
    mu = check_finite_array("death", death, ndim=1)
    if lam.shape != mu.shape:
        raise ValueError(f"`birth` and `death` must have the same length n-1; got {lam.size} and {mu.size}.")
    for arg, v in (("birth", lam), ("death", mu)):
        if np.any(v < 0):
            raise ValueError(f"`{arg}` rates must be >= 0; got {v.min():.3g}.")
    n = lam.size + 1
    R = sp.diags_array([lam, mu], offsets=[1, -1], shape=(n, n), format="csr")
    Q = sp.csr_array(R - sp.diags_array(np.asarray(R.sum(axis=1)).ravel()))
    return Q if sparse else Q.toarray()


def uniformize(Q: GeneratorMatrix, lam: float | None = None, *,
               margin: float = 1.0) -> tuple[np.ndarray | sp.csr_array, float | np.ndarray]:
    """Uniformisation: P = I + Q/λ with λ ≥ max_i (exit rate of i) (default: `margin` times that maximum).

    P is row-stochastic and has the same stationary distribution as Q.  Its diagonal is
    formed as 1 − (exit rate)/λ from the off-diagonal rates, never from the stored Q_ii:
    no subtraction of nearly equal numbers.  With `margin` > 1 every P_ii ≥ 1 − 1/margin
    > 0, so the chain is aperiodic (`sp_ode.markov.attractor` uses 1.125).  The one
    uniformisation of sp_ode.

    Parameters
    ----------
    Q : array_like (n, n) or (..., n, n), or scipy.sparse (n, n)
    lam : float, optional
        Λ (a single generator only).
    margin : float ≥ 1
        The default λ is margin·max exit rate (1 when every rate is 0).

    Returns
    -------
    P : ndarray (..., n, n) or csr_array (n, n)
    lam : float, or ndarray (...) for a stack
    """
    Q = check_generator(Q, batch=True)
    margin = check_positive("margin", margin)
    if margin < 1:
        raise ValueError(f"`margin` must be >= 1 so that P = I + Q/λ is stochastic; got {margin}.")
    if sp.issparse(Q):
        off = Q.copy()
        off.setdiag(0.0)
        off.eliminate_zeros()
        exit_rate = np.asarray(off.sum(axis=1)).ravel()
    else:
        off = np.where(np.eye(Q.shape[-1], dtype=bool), 0.0, Q)
        exit_rate = off.sum(axis=-1)
    qmax = np.max(exit_rate, axis=-1) if exit_rate.size else np.zeros(exit_rate.shape[:-1])
    if lam is None:
        lam = np.where(qmax > 0, margin * qmax, 1.0)
    else:
        if np.ndim(qmax):
            raise ValueError("`lam` applies to one generator; for a stack leave it None.")
        lam = check_positive("lam", lam)
        if lam < float(qmax) * (1 - 1e-12):
            raise ValueError(f"`lam` must be >= the largest exit rate {float(qmax):.6g} so that P = I + Q/lam is "
                             f"stochastic; got {lam:.6g}.")
    if sp.issparse(Q):
        lam = float(lam)
        return (off / lam + sp.diags_array(1.0 - exit_rate / lam)).tocsr(), lam
    lam_arr = np.asarray(lam, dtype=np.float64)
    P = off / lam_arr[..., None, None] + np.eye(Q.shape[-1]) * (1.0 - exit_rate / lam_arr[..., None])[..., None]
    return P, (float(lam_arr) if lam_arr.ndim == 0 else lam_arr)


def from_transition_matrix(P: Float[ArrayLike, "n n"], lam: float = 1.0) -> Float[np.ndarray, "n n"]:
    """The generator Q = λ(P − I) of a row-stochastic transition matrix P.

    Off-diagonal rates are λ P_ij; each diagonal entry is set to minus its row's
    off-diagonal sum rather than computed as λ(P_ii − 1), which would cancel
    when P_ii ≈ 1 (uniformisation with a large λ).
    """
    lam = check_positive("lam", lam)
    P = P.toarray() if sp.issparse(P) else P
    P = check_finite_array("P", P, ndim=2)
    if P.shape[0] != P.shape[1]:
        raise ValueError(f"`P` must be square; got shape {P.shape}.")
    if np.any(P < 0):
        raise ValueError(f"`P` entries must be >= 0; got {P.min():.3g}.")
    sums = P.sum(axis=1)
    if not np.allclose(sums, 1.0, rtol=0, atol=ROW_SUM_C * P.shape[0] * EPS):
        raise ValueError(f"`P` rows must sum to one; got row sums in [{sums.min():.6g}, {sums.max():.6g}].")
    R = lam * P
    np.fill_diagonal(R, 0.0)
    return R - np.diag(R.sum(axis=1))


# --- structure -----------------------------------------------------------------

def _adjacency(Q) -> sp.csr_array:
    """The rate graph i → j (Q_ij > 0, i ≠ j) as a CSR pattern."""
    if sp.issparse(Q):
        A = sp.csr_array(Q > 0)
        A.setdiag(False)
        A.eliminate_zeros()
        return A
    A = np.asarray(Q) > 0
    np.fill_diagonal(A, False)
    return sp.csr_array(A)


def communicating_classes(Q: GeneratorMatrix) -> list[np.ndarray]:
    """Communicating classes (strongly connected components of the rate graph i → j, Q_ij > 0).

    Returns
    -------
    list of ndarray of int, sorted by their smallest state.
    """
    Q = check_generator(Q)
    k, labels = connected_components(_adjacency(Q), directed=True, connection="strong")
    classes = [np.flatnonzero(labels == c) for c in range(k)]
    return sorted(classes, key=lambda c: int(c[0]))


def closed_classes(Q: GeneratorMatrix) -> list[np.ndarray]:
    """The closed (recurrent) communicating classes: no rate leaves them."""
    Q = check_generator(Q)
    adj = _adjacency(Q)
    k, labels = connected_components(adj, directed=True, connection="strong")
    coo = adj.tocoo()
    leaks = labels[coo.row] != labels[coo.col]
    open_ = np.zeros(k, dtype=bool)
    open_[labels[coo.row[leaks]]] = True
    classes = [np.flatnonzero(labels == c) for c in range(k) if not open_[c]]
    return sorted(classes, key=lambda c: int(c[0]))


def _irreducible_unchecked(Q) -> bool:
    if Q.shape[0] == 1:
        return True
    if not sp.issparse(Q) and np.count_nonzero(Q > 0) == Q.shape[0] * (Q.shape[0] - 1):
        return True  # every off-diagonal rate positive: the rate graph is complete
    k, _ = connected_components(_adjacency(Q), directed=True, connection="strong")
    return k == 1


def is_irreducible(Q: GeneratorMatrix) -> bool:
    """True when every state reaches every other (one communicating class)."""
    return _irreducible_unchecked(check_generator(Q))


def require_irreducible(Q: GeneratorMatrix, name: str = "Q", states: Sequence[str] | None = None) -> None:
    """Raise [`NotIrreducibleError`][sp_ode.markov.generator.NotIrreducibleError] naming the closed classes unless Q (already checked) is irreducible.

    `states` (n labels) names the states of the classes instead of their indices.
    """
    if not _irreducible_unchecked(Q):
        classes = closed_classes(Q)
        n_comm = len(communicating_classes(Q))
        if states is not None and len(states) != Q.shape[-1]:
            states = None
        raise NotIrreducibleError(
            f"`{name}` must be irreducible; it has {n_comm} communicating classes, of which {len(classes)} "
            f"closed: {format_classes(classes, states=states)}. Use sp_ode.stationary_distributions(Q) for one stationary "
            "distribution per closed class.",
            classes,
        )


# --- reversibility (numeric) ------------------------------------------------------

#: Relative rounding allowed in each rate as given, in units of its dtype's u: a rate computed by a
#: handful of floating operations (a product, an exp) carries a few u; 8 covers them.
RATE_ROUNDING_UNITS = 8.0


@dataclass(frozen=True)
class DetailedBalanceCheck:
    """Whether π_i Q_ij = π_j Q_ji holds for every pair, up to rounding (`check_detailed_balance`).

    Attributes
    ----------
    reversible
        Every pair balanced within its tolerance (and no one-way rate).
    potential : ndarray (n,) or None
        The normalised π of the spanning tree (= p_st when reversible).
    worst
        Largest |log(π_i Q_ij / (π_j Q_ji))| over the pairs off the tree (0 for a tree-shaped chain).
    tolerance
        The tolerance at the worst pair (by the ratio worst / tolerance).
    pair
        (i, j) of the worst pair, or of the one-way rate; None when there is none.
    checked
        Number of pairs compared off the tree (each tree pair balances by construction).
    message
        One line: the verdict, the worst pair by state name and the numbers.
    """

    reversible: bool
    potential: np.ndarray | None
    worst: float
    tolerance: float
    pair: tuple[int, int] | None
    checked: int
    message: str


def check_detailed_balance(Q: GeneratorMatrix, *, states: Sequence[str] | None = None) -> DetailedBalanceCheck:
    """Numeric detailed balance of a float generator, with a tolerance derived from rounding (docs/theory.md §7.12).

    A chain is reversible when a potential π > 0 has π_i Q_ij = π_j Q_ji for every pair; then
    p_st ∝ π.  π is built along a breadth-first spanning tree of the undirected rate graph
    (log π_j = log π_i + log Q_ij − log Q_ji from the root, in logs so that no product
    overflows), which balances every tree pair exactly; every other pair (i, j) is then
    checked: r_ij = log(π_i Q_ij) − log(π_j Q_ji) is 0 for a reversible chain, and its
    computed value is wrong by at most the rounding of the rates on the two tree paths and
    the pair (each rate within `RATE_ROUNDING_UNITS`·u_in of an exact one, u_in the unit
    roundoff of the input's dtype: 2⁻²⁴ for float32) plus that of the logarithms
    (u·(1 + max|log Q_ij|) each): tol_ij = 2(D_i + D_j + 1)·(8·u_in + 2u·(1 + L)), D the
    tree depths.  A rate with no reverse (Q_ij > 0 = Q_ji) is an exact violation.

    The symbolic check, exact for rates with symbols, is `sp_ode.detailed_balance`.

    Parameters
    ----------
    Q : array_like (n, n) or scipy.sparse (n, n)
        An irreducible generator (float32 accepted).
    states : sequence of n str, optional
        State names for the message.

    Returns
    -------
    DetailedBalanceCheck

    Raises
    ------
    TypeError, ValueError
        Q is not a generator (`check_generator`); `states` not n labels.
    NotIrreducibleError
        Q has more than one communicating class (detailed balance is then a property of each class).
    """
    from scipy.sparse.csgraph import breadth_first_order

    u_in = input_unit_roundoff(Q)
    Q = check_generator(Q, "Q", states=states)
    n = Q.shape[0]
    if states is not None:
        states = [str(s) for s in states]
        if len(states) != n:
            raise ValueError(f"`states` must name each of the n = {n} states; got {len(states)} labels.")
    require_irreducible(Q, "Q", states=states)
    A = sp.coo_array(Q)
    keep = (A.row != A.col) & (A.data > 0)
    rate = {(int(i), int(j)): float(v) for i, j, v in zip(A.row[keep], A.col[keep], A.data[keep])}
    u = EPS / 2

    def name(i: int) -> str:
        return str(i) if states is None else states[i]

    for (i, j) in rate:
        if (j, i) not in rate:
            msg = (f"not reversible: the rate {name(i)} -> {name(j)} is {rate[(i, j)]:.6g} and the reverse rate "
                   f"{name(j)} -> {name(i)} is 0 (detailed balance needs both or neither).")
            return DetailedBalanceCheck(False, None, math.inf, 0.0, (i, j), 0, msg)
    if n == 1:
        return DetailedBalanceCheck(True, np.ones(1), 0.0, 0.0, None, 0, "reversible (one state).")
    support = sp.csr_array((np.ones(len(rate)), tuple(np.array(list(rate)).T)), shape=(n, n))
    order, pred = breadth_first_order(support, 0, directed=False, return_predecessors=True)
    log_pi = np.zeros(n)
    depth = np.zeros(n, dtype=np.int64)
    tree = set()
    for j in order[1:]:
        i = int(pred[j])
        log_pi[j] = log_pi[i] + math.log(rate[(i, j)]) - math.log(rate[(j, i)])
        depth[j] = depth[i] + 1
        tree.add((min(i, j), max(i, j)))
    L = max(abs(math.log(v)) for v in rate.values())
    per_rate = RATE_ROUNDING_UNITS * u_in + 2 * u * (1.0 + L)
    worst, worst_tol, worst_ratio, pair, checked = 0.0, 0.0, -1.0, None, 0
    for (i, j), q in rate.items():
        if i > j or (i, j) in tree:
            continue
        checked += 1
        r = abs(log_pi[i] + math.log(q) - log_pi[j] - math.log(rate[(j, i)]))
        tol = 2.0 * (depth[i] + depth[j] + 1) * per_rate
        if r / tol > worst_ratio:
            worst, worst_tol, worst_ratio, pair = r, tol, r / tol, (i, j)
    pi = np.exp(log_pi - log_pi.max())
    pi /= pi.sum()
    if pair is None:
        return DetailedBalanceCheck(True, pi, 0.0, 0.0, None, 0,
                                    "reversible: the rate graph is a tree, so every pair balances.")
    i, j = pair
    ok = worst <= worst_tol
    verdict = "reversible" if ok else "not reversible"
    msg = (f"{verdict}: the worst pair {name(i)} <-> {name(j)} has π_i Q_ij / (π_j Q_ji) = {math.exp(worst):.12g} "
           f"(|log| = {worst:.3g}, tolerance {worst_tol:.3g} from the rounding of the rates, dtype u = {u_in:.3g}); "
           f"{checked} pair(s) off the spanning tree checked.")
    return DetailedBalanceCheck(ok, pi if ok else None, worst, worst_tol, pair, checked, msg)
