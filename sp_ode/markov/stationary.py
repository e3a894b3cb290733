"""Stationary distributions p_st of Markov generators (docs/theory.md §2–3, T1, §7).

p_st solves Qᵀp = 0, 1ᵀp = 1, p ≥ 0; it is unique and strictly positive when Q
is irreducible (T1).  [`stationary_distribution`][sp_ode.markov.stationary.stationary_distribution] validates Q once and
dispatches to a registry of methods, **each answer carrying an error bound**
(docs/theory.md §7):

========  ==================================================================
`gth`   Grassmann–Taksar–Heyman elimination (blocked, BLAS-3) over the whole
          float range (`sp_ode.markov.solvers._gth`): subtraction-free; a-priori
          componentwise bound |p̂_i − p_i| ≤ c·n³·u·p_i (§7.2).  `log=True`
          returns log p_st, also for entries below 1e-308.  Default for dense Q.
`solve` LU solve of the bordered system (Qᵀ with one redundant equation
          replaced by 1ᵀp = 1); normwise accurate only.
`sparse`AMG-preconditioned GMRES for large sparse Q (`sp_ode.markov.solvers._sparse`), its answer
          then refined in log space and certified entrywise where it can be (§7.9).
`jax`   [`stationary_jax`][sp_ode.markov.stationary.stationary_jax], a pure-JAX bordered solve: `jit`/`vmap`/
          `grad`-compatible (the bound is computed afterwards in NumPy).
`banded`GTH in band storage after a reverse Cuthill–McKee permutation
          (`sp_ode.markov.solvers._banded_gth`): the componentwise accuracy of GTH for
          large sparse chains of small bandwidth (chains, grids), O(n·b²).
========  ==================================================================

**The default for `scipy.sparse` input** (§7.9) is banded or dense GTH whenever it fits in memory
and `predicted_seconds` puts it within `GTH_COST_FACTOR` × the sparse solve, else the
sparse solve; `info["selection"]` gives the predictions and the rule.  Every answer says which
kind of bound it carries: entrywise (`componentwise_bound`: GTH's a-priori bound, or the
certificate of a refined sparse answer) or only normwise — then `uncertified_below` is the level
below which its entries are not certified at all.

`solve`, `sparse` and `jax` carry the a-posteriori bound
‖q − p_st‖₁ ≤ 2·max_i E_i[τ_k]·‖Qᵀq‖₁ of `sp_ode.markov.bounds` (§7.1,
hitting times of a pinned state k, certified by one extra solve that reuses the
factorisation).  When a bound exceeds `tol` the call escalates — `solve` and
`jax` to `gth`; `sparse` to dense `gth` when n ≤ `DENSE_GTH_MAX` —
and raises [`ConvergenceError`][sp_ode.markov.bounds.ConvergenceError] when nothing meets
`tol`.  Nothing is ever returned with a bound above `tol`, except by `gth`
and `banded` under the default `tol` (they are the most accurate methods there
are; their bound is reported).  Stacks `(..., n, n)` of dense generators give `(..., n)`.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from sp_ode.core.memory import MemoryBudgetError, check_memory
from sp_ode.core.precision import UNIT_ROUNDOFF, float64, in_float64
from sp_ode.core.validation import check_choice
from sp_ode.markov.bounds import ConvergenceError, componentwise_refinement, input_rounding_bound, posterior_bound
from sp_ode.markov.generator import check_generator, closed_classes, input_unit_roundoff, require_irreducible
from sp_ode.markov.solvers import (
    band_plan,
    banded_gth,
    gth_componentwise_bound,
    gth_solve,
    quiet_stdout,
    sparse_stationary,
)

if TYPE_CHECKING:
    import jax

    from sp_ode.core.typing import ArrayLike, Float, GeneratorMatrix

#: Default `tol`: largest accepted ℓ1 error bound for solve, sparse and jax (six digits of mass;
#: the 10⁶-state CME benchmark certifies ~3e-9, near the float64 floor 2·max E[τ]·u·‖|Q|ᵀp‖₁).
DEFAULT_TOL = 1e-6
#: Largest n for which a sparse Q is escalated to dense GTH (8n² bytes: 288 MB).
DENSE_GTH_MAX = 6000
#: Largest band array (8·n·(2b + 1) bytes) for which a sparse Q is escalated to banded GTH.
BANDED_GTH_MAX_BYTES = 2e9
# Below this size a stack is solved by the batch-vectorised loop; above, one blocked solve per matrix.
_BATCH_VECTORISE_MAX_N = 64
#: The default route on a sparse Q takes banded or dense GTH when it is predicted to cost at most this
#: many times the sparse solve (docs/theory.md §7.9).
GTH_COST_FACTOR = 2.0
#: Largest n for which the default sparse route attempts the componentwise certificate (§7.9) …
COMPONENTWISE_AUTO_MAX_N = 10**6
#: … within this many times the sparse solve's own time (it is abandoned, and the answer labelled
#: normwise, when it would take longer).
COMPONENTWISE_BUDGET_FACTOR = 4.0
#: … and never less than this many seconds (a small chain's solve is fast; its refinement may try both seeds).
COMPONENTWISE_MIN_BUDGET = 2.0
# Cost model of the default route, in seconds on one core (fitted by bench/markov/stationary_default.py,
# record results/markov/stationary_default.json): banded GTH c0·n + c1·Σ_k L_k² (L_k the window of step k,
# blocked from bandwidth 32 on), dense GTH c0·n + c1·n³, the sparse solve c0 + c1·nnz + c2·n/b (n/b, the
# chain's length in bands: on 1-D chains the Krylov solve's steps grow with it — birth–death of 3·10⁴
# states took 6.1 s where nnz alone predicted 0.3 s).
# The sparse route also pays for its componentwise certificate (§7.9) when it attempts one: c·n seconds,
# the median over the 14 cases of docs/bench/stationary_default.md (1e-4 … 5e-4 s per state), capped by the
# certificate's own budget max(COMPONENTWISE_BUDGET_FACTOR × solve, COMPONENTWISE_MIN_BUDGET) — without
# it the route took the bare solve's 0.26 s for the 10⁴-state cascade, which then cost 1.2 s against
# banded GTH's 0.32 s (docs/bench/stationary_choice.md).
COST_CONSTANTS = {"banded": (3.8e-5, 2.1e-8), "banded_blocked": (3.0e-5, 9.0e-10), "gth": (3.6e-5, 4.8e-11),
         "sparse": (0.015, 2.9e-6, 2.4e-4), "certificate": (2.8e-4,)}


def _check_dense(n: int, what: str) -> None:
    """Refuse a dense copy of an n×n sparse Q before it is made: the copy and GTH's working copy, 16n² bytes."""
    check_memory(16 * n * n, what=f"{what} (a dense {n}×{n} copy of Q and its elimination)",
                 remedy="Use method='sparse' (or 'banded') on the sparse Q.")


def _gth(Q: np.ndarray, *, log: bool = False, **_) -> tuple[np.ndarray, dict]:
    p, extra = gth_solve(Q, log=log, batch_max_n=_BATCH_VECTORISE_MAX_N)
    cw = gth_componentwise_bound(Q.shape[-1]) if extra["underflow_terms"] == 0 else math.inf
    failure = None if extra["underflow_terms"] == 0 else (
        f"{extra['underflow_terms']} elimination term(s) underflowed even with scaling: no entrywise promise")
    return p, {"failure": failure,"algorithm": "GTH (subtraction-free elimination, exact exponents)", "iterations": 0,
               "bound": cw, "componentwise_bound": cw, "bound_kind": "a-priori componentwise c·n³·u (§7.2)",
               "negatives_clipped": 0, "most_negative": 0.0, "gth_scaled_reruns": extra["scaled"],
               "underflow_terms": extra["underflow_terms"]}


def _banded(Q, *, log: bool = False, plan=None, **_) -> tuple[np.ndarray, dict]:

    Q = sp.csr_array(Q)
    perm, b, nbytes = band_plan(Q) if plan is None else plan
    failure = None
    if nbytes > BANDED_GTH_MAX_BYTES:
        failure = f"band array needs {nbytes / 1e9:.3g} GB (bandwidth {b}) > {BANDED_GTH_MAX_BYTES / 1e9:g} GB"
    else:
        try:
            check_memory(nbytes, what=f"banded GTH (bandwidth {b})")
        except MemoryBudgetError as exc:
            failure = str(exc)
    if failure is not None:
        return np.full(Q.shape[0], np.nan), {
            "failure": failure, "bound": math.inf, "algorithm": "banded GTH (not run)", "iterations": 0,
            "bandwidth": b, "negatives_clipped": 0, "most_negative": 0.0}
    p, extra = banded_gth(Q, perm, b, log=log)
    cw = gth_componentwise_bound(Q.shape[0]) if extra["reliable"] else math.inf
    failure = None if extra["reliable"] else "an eliminated entry left the range where no update can underflow"
    return p, {"failure": failure, "algorithm": "GTH in band storage after reverse Cuthill-McKee (exact exponents)",
               "iterations": 0, "bound": cw, "componentwise_bound": cw,
               "bound_kind": "a-priori componentwise c·n³·u (§7.2)", "bandwidth": b,
               "negatives_clipped": 0, "most_negative": 0.0}


def _bordered_system(Q):
    """(Qᵀ with its last row replaced by 1ᵀ, e_n): the last equation of Qᵀp = 0 is redundant since 1ᵀQᵀ = 0."""
    M = np.swapaxes(Q, -1, -2).copy()
    M[..., -1, :] = 1.0
    rhs = np.zeros(Q.shape[:-1])
    rhs[..., -1] = 1.0
    return M, rhs


def _clip(p: np.ndarray) -> tuple[np.ndarray, int, float]:
    """Clip negatives to 0 and renormalise (normwise methods): (p, count clipped, largest |negative|)."""
    neg = p < 0
    count = int(np.count_nonzero(neg))
    largest = float(-p[neg].min()) if count else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.maximum(p, 0.0)
        p = p / p.sum(axis=-1, keepdims=True)
    return p + 0.0, count, largest


def _bounds_pinned_last(Q: np.ndarray, p: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Largest (ℓ1 bound, hitting time) over a stack, pinned at k = n − 1 with ŷ ≈ G⁻¹1 given per matrix."""
    n = Q.shape[-1]
    flatQ, flatp, flaty = Q.reshape(-1, n, n), p.reshape(-1, n), y.reshape(-1, n - 1)
    worst = (0.0, 0.0)
    for q, pp, yy in zip(flatQ, flatp, flaty):
        b, H = posterior_bound(q, pp, n - 1, yy)
        worst = (max(worst[0], b), max(worst[1], H))
        if math.isinf(b):
            break
    return worst


def _hitting_times_last(Q: np.ndarray) -> np.ndarray:
    """ŷ = G⁻¹1 with G = −Q[:-1, :-1] (mean hitting times of the last state), batched."""
    G = -Q[..., :-1, :-1]
    with np.errstate(all="ignore"):
        try:
            return np.linalg.solve(G, np.ones(Q.shape[:-1])[..., :-1, None])[..., 0]
        except np.linalg.LinAlgError:
            return np.full(Q.shape[:-2] + (Q.shape[-1] - 1,), np.nan)


def _normwise_info(Q, p, y, algorithm: str) -> tuple[np.ndarray, dict]:
    finite = bool(np.all(np.isfinite(p)))
    p, count, largest = _clip(p) if finite else (p, 0, 0.0)
    if Q.shape[-1] == 1:
        bound, H = 0.0, 0.0
    elif finite and np.all(np.isfinite(p)):
        bound, H = _bounds_pinned_last(Q, p, y)
    else:
        bound, H = math.inf, math.inf
    return p, {"algorithm": algorithm, "iterations": 0, "bound": bound, "componentwise_bound": None,
               "bound_kind": "a-posteriori ℓ1: 2·max E[τ_k]·‖Qᵀq‖₁ (§7.1)", "hitting_time": H,
               "negatives_clipped": count, "most_negative": largest}


def _solve(Q: np.ndarray, **_) -> tuple[np.ndarray, dict]:
    M, rhs = _bordered_system(Q)
    n = Q.shape[-1]
    # A numerically singular M is a status (bound ∞, escalation), not a warning on stderr.
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
        if Q.ndim == 2 and n > 1:
            # One LU of M serves both the solve and the hitting times: G = −Q[:-1, :-1] appears in
            # Mᵀ = [Q[:, :-1] | 1]; solving Mᵀu = (−1, 0) and Mᵀv = e_n and cancelling the last
            # unknown gives Q[:-1, :-1]u' = −1, i.e. u' = G⁻¹1 (certified afterwards by its residual).
            try:
                lu = scipy.linalg.lu_factor(M, check_finite=False)
                p = scipy.linalg.lu_solve(lu, rhs, check_finite=False)
                u = scipy.linalg.lu_solve(lu, np.r_[-np.ones(n - 1), 0.0], trans=1, check_finite=False)
                v = scipy.linalg.lu_solve(lu, np.eye(n)[-1], trans=1, check_finite=False)
                y = (u - (u[-1] / v[-1]) * v)[:-1]
            except (np.linalg.LinAlgError, ValueError, ZeroDivisionError):
                p, y = np.full(n, np.nan), np.full(n - 1, np.nan)
        else:
            try:
                p = np.linalg.solve(M, rhs[..., None])[..., 0]
            except np.linalg.LinAlgError:
                p = np.full(Q.shape[:-1], np.nan)
            y = _hitting_times_last(Q) if n > 1 else np.zeros(Q.shape[:-1])[..., :0]
    return _normwise_info(Q, p, y, "LU of the bordered system (Qᵀ, last row → 1ᵀ)")


@in_float64
def _jax(Q: np.ndarray, **_) -> tuple[np.ndarray, dict]:
    p = np.asarray(stationary_jax(Q), dtype=np.float64)
    y = _hitting_times_last(Q) if Q.shape[-1] > 1 else np.zeros(Q.shape[:-1])[..., :0]
    return _normwise_info(Q, p, y, "JAX bordered solve (jnp.linalg.solve)")


def _sparse(Q, *, tol: float, maxiter: int | None, **_) -> tuple[np.ndarray, dict]:

    return sparse_stationary(sp.csr_array(Q), bound_tol=tol, maxiter=maxiter)


def predicted_seconds(Q, plan=None) -> dict:
    """Predicted seconds of banded GTH, dense GTH and the sparse solve on a sparse Q (the default route's model).

    Returns a dict with `banded`, `gth`, `sparse` (seconds; `None` for a method that would
    not fit in memory — banded above `BANDED_GTH_MAX_BYTES` or the memory budget, dense above
    `DENSE_GTH_MAX` or the budget), `certificate` (the componentwise certificate of a sparse answer,
    uncapped), `bandwidth`, `nnz` and the `plan` of banded GTH.  Counts (n, nnz, the band's windows)
    times fitted constants: the prediction never reads the clock.
    """
    Q = sp.csr_array(Q)
    n, nnz = Q.shape[0], int(Q.nnz)
    perm, b, nbytes = band_plan(Q) if plan is None else plan
    L = np.minimum(b, n - 1 - np.arange(n - 1, dtype=np.float64)) if n > 1 else np.zeros(0)
    c0, c1 = COST_CONSTANTS["banded_blocked" if b >= 32 else "banded"]
    out = {"banded": c0 * n + c1 * float(np.sum(L * L)), "gth": None, "bandwidth": b, "nnz": nnz,
           "plan": (perm, b, nbytes)}
    if nbytes > BANDED_GTH_MAX_BYTES:
        out["banded"] = None
    else:
        try:
            check_memory(nbytes, what=f"banded GTH (bandwidth {b})")
        except MemoryBudgetError:
            out["banded"] = None
    if n <= DENSE_GTH_MAX:
        try:
            _check_dense(n, "dense GTH")
            c0, c1 = COST_CONSTANTS["gth"]
            out["gth"] = c0 * n + c1 * float(n) ** 3
        except MemoryBudgetError:
            pass
    c0, c1, c2 = COST_CONSTANTS["sparse"]
    out["sparse"] = c0 + c1 * nnz + c2 * n / max(b, 1)
    out["certificate"] = COST_CONSTANTS["certificate"][0] * n
    return out


def _auto_route(Q, log: bool, componentwise: bool | None = None) -> tuple[str, dict]:
    """The default method for a sparse Q: GTH (banded or dense) when it fits and costs ≤ GTH_COST_FACTOR × sparse.

    "sparse" is the sparse route as it will run: the solve plus, when it will be attempted, the
    componentwise certificate (capped by its budget, uncapped with `componentwise=True`).
    """
    pred = predicted_seconds(Q)
    plan = pred.pop("plan")
    solve, with_cert = pred["sparse"], ""
    if componentwise is not False and (componentwise or Q.shape[0] <= COMPONENTWISE_AUTO_MAX_N):
        cap = math.inf if componentwise else max(COMPONENTWISE_BUDGET_FACTOR * solve, COMPONENTWISE_MIN_BUDGET)
        pred["sparse"] = solve + min(pred["certificate"], cap)
        with_cert = f" (solve {solve:.2g} s + its componentwise certificate)"
    cheap = {m: t for m in ("banded", "gth") if (t := pred[m]) is not None
             and (log or t <= GTH_COST_FACTOR * pred["sparse"])}
    if cheap:
        method = min(cheap, key=cheap.get)
        why = (f"{method} GTH (componentwise exact) predicted {cheap[method]:.2g} s ≤ {GTH_COST_FACTOR:g} × the "
               f"sparse solve's {pred['sparse']:.2g} s{with_cert}" if not log else f"{method} GTH (log p_st needs GTH)")
    elif log:
        method, why = "banded", "log p_st needs GTH; neither banded nor dense GTH is predicted to fit in memory"
    else:
        method = "sparse"
        why = (f"GTH would cost more than {GTH_COST_FACTOR:g} × the sparse solve (predicted: banded "
               f"{_fmt_s(pred['banded'])}, dense {_fmt_s(pred['gth'])}, sparse {pred['sparse']:.2g} s{with_cert})")
    return method, {"rule": why, "predicted_seconds": {k: pred[k] for k in ("banded", "gth", "sparse")},
                    "predicted_sparse_solve": solve,
                    "bandwidth": pred["bandwidth"], "nnz": pred["nnz"], "plan": plan}


def _fmt_s(t) -> str:
    return "does not fit" if t is None else f"{t:.2g} s"


def _certify_componentwise(Q, p, info: dict, *, required: bool, seconds: float) -> tuple[np.ndarray, dict]:
    """Refine a sparse answer in log space and certify every entry (§7.9); label it normwise when that fails."""
    budget = None if required else max(COMPONENTWISE_BUDGET_FACTOR * seconds, COMPONENTWISE_MIN_BUDGET)
    with quiet_stdout():
        q, logq, ref = componentwise_refinement(Q, p, int(info["pinned_state"]), float(info["bound"]),
                                                budget_seconds=budget)
    info["refinement"] = ref
    if ref["certified"]:
        kappa = ref["componentwise_bound"]
        kappa = kappa / (1.0 - kappa)                          # relative to p_i rather than to p̂_i
        # ℓ1: Σ|p̂ − p| ≤ κ; and the triangle inequality through the unrefined answer and its bound
        l1 = min(kappa, float(info["bound"]) + float(np.abs(q - p).sum()) * (1 + 4 * 2.0**-53))
        info.update(bound=l1, componentwise_bound=kappa, uncertified_below=None,
                    bound_kind="a-posteriori componentwise (§7.9): x̂∘(1 ∓ δφ̂) bracket the pinned solution; "
                               "ℓ1 bound from it")
        info["algorithm"] += "; log-space relative refinement + componentwise certificate (§7.9)"
        return q, info
    return p, _label_normwise(info, ref["failure"])


def _label_normwise(info: dict, why: str | None) -> dict:
    """State plainly that the bound is normwise and give the level below which entries are not certified."""
    level = float(info["bound"])
    info.update(componentwise_bound=None, uncertified_below=level, componentwise_failure=why,
                bound_kind=(f"a-posteriori normwise ℓ1: 2·max E[τ_k]·‖Qᵀq‖₁ (§7.1) — NOT componentwise: every "
                            f"entry is within {level:.2g} absolutely, so entries below {level:.2g} are not "
                            "certified at all (their relative error is unbounded)"))
    return info


METHODS: dict[str, Callable] = {"gth": _gth, "solve": _solve, "sparse": _sparse, "jax": _jax, "banded": _banded}


def _require_irreducible_stack(Q: np.ndarray) -> None:
    """Irreducibility depends only on the pattern of positive rates: check each distinct pattern once."""
    flat = Q.reshape(-1, *Q.shape[-2:])
    patterns, first = np.unique(flat > 0, axis=0, return_index=True)
    for i in first:
        idx = np.unravel_index(int(i), Q.shape[:-2])
        require_irreducible(flat[i], name=f"Q[{', '.join(map(str, idx))}]")


def stationary_jax(Q: Float[ArrayLike, "*batch n n"]) -> Float[jax.Array, "*batch n"]:
    """p_st by a bordered solve in JAX: `jit`-, `vmap`- and `grad`-compatible.

    Solves [Qᵀ with last row → 1ᵀ] p = e_n.  Derivatives follow from the
    implicit function theorem through `jnp.linalg.solve`, giving
    Dp_st = −(A − p1ᵀ)⁻¹(∂A)p (T3).  No validation (it runs under tracing):
    validate with [`sp_ode.check_generator`][sp_ode.markov.generator.check_generator] first.

    Parameters
    ----------
    Q : array (..., n, n), JAX or NumPy

    Returns
    -------
    jax.Array (..., n)
    """
    import jax
    import jax.numpy as jnp


    if not isinstance(Q, jax.core.Tracer):  # called eagerly: compute in float64 whatever the user's setting
        with float64():
            return _stationary_jax(jnp.asarray(np.asarray(Q, dtype=np.float64)))
    if Q.dtype != jnp.float64:
        raise TypeError(f"`Q` must be float64 inside a JAX transformation; got {Q.dtype}. sp_ode computes "
                        "p_st in float64: trace inside `with sp_ode.float64():`.")
    return _stationary_jax(Q)


def _stationary_jax(Q):
    import jax.numpy as jnp

    M = jnp.swapaxes(Q, -1, -2).at[..., -1, :].set(1.0)
    rhs = jnp.zeros(Q.shape[:-1], dtype=M.dtype).at[..., -1].set(1.0)
    return jnp.linalg.solve(M, rhs[..., None])[..., 0]


def stationary_residual(Q: GeneratorMatrix, p: Float[ArrayLike, "*batch n"]) -> float:
    """‖Qᵀp‖∞ (absolute)."""
    Qt = Q.T if sp.issparse(Q) else np.swapaxes(np.asarray(Q), -1, -2)
    r = Qt @ p if sp.issparse(Q) else np.einsum("...ij,...j->...i", Qt, p)
    return float(np.max(np.abs(r)))


def _check_tol(tol) -> float | None:
    if tol is None:
        return None
    if isinstance(tol, bool) or not isinstance(tol, (int, float, np.integer, np.floating)):
        raise TypeError(f"`tol` must be a real number; got {type(tol).__name__}.")
    tol = float(tol)
    if not (math.isfinite(tol) and tol > 0):
        raise ValueError(f"`tol` must be finite and > 0 (a bound on ‖p − p_st‖₁); got {tol!r}.")
    return tol


def _check_maxiter(maxiter) -> int | None:
    if maxiter is None:
        return None
    if isinstance(maxiter, bool) or not isinstance(maxiter, (int, np.integer)):
        raise TypeError(f"`maxiter` must be an integer; got {type(maxiter).__name__}.")
    if maxiter < 1:
        raise ValueError(f"`maxiter` must be >= 1; got {maxiter}.")
    return int(maxiter)


def _escalation(method: str, n: int, auto: bool = False, predicted: dict | None = None) -> list[str]:
    if auto and method in ("banded", "gth"):
        # The default route chose GTH for speed; when it cannot keep its promise (banded GTH's range
        # guard), the fallbacks run in the order of their predicted cost, so that a failed banded GTH
        # hands over to the sparse solve, not to a dense GTH predicted 30× dearer (issue 35: the
        # 3721-state toggle switch took 20.5 s by dense GTH where the sparse solve takes 0.2 s).
        rest = (["gth"] if method == "banded" and n <= DENSE_GTH_MAX else []) + ["sparse"]
        if predicted is not None:
            rest.sort(key=lambda m: math.inf if predicted.get(m) is None else predicted[m])
        return rest
    if method in ("solve", "jax"):
        return ["gth"]
    if method == "sparse":
        return ["banded"] + (["gth"] if n <= DENSE_GTH_MAX else [])
    if method == "banded" and n <= DENSE_GTH_MAX:
        return ["gth"]
    return []


def _check_componentwise(value) -> bool | None:
    if value is None or isinstance(value, (bool, np.bool_)):
        return None if value is None else bool(value)
    raise TypeError(f"`componentwise` must be None, True or False; got {type(value).__name__}.")


def stationary_distribution(Q: GeneratorMatrix, method: str | None = None, *, tol: float | None = None,
                            maxiter: int | None = None, return_info: bool = False, log: bool = False,
                            states: Sequence[str] | None = None, componentwise: bool | None = None,
                            ) -> Float[np.ndarray, "*batch n"] | tuple[Float[np.ndarray, "*batch n"], dict]:
    """Stationary distribution p_st of an irreducible generator Q, with an error bound.

    Parameters
    ----------
    Q : array_like (n, n) or (..., n, n), or scipy.sparse (n, n)
        Generator(s): Q[i, j] ≥ 0 the rate i → j, rows summing to zero.  float32 input (a
        `jnp` array made outside JAX's float64 mode) is accepted: its rows need sum to zero
        only to float32 rounding, the diagonal is re-formed from the rates in float64, and
        the rates' rounding is added to the bound (`input_rounding`, docs/theory.md §7.12).
    method : {"gth", "solve", "sparse", "jax", "banded"}, optional
        Default "gth" for dense input.  For `scipy.sparse` input the default route
        picks banded or dense GTH (componentwise exact, §7.2) when it fits in memory and is
        predicted to cost at most `GTH_COST_FACTOR` × the sparse solve
        (`predicted_seconds`), else "sparse"; `info["selection"]` says which and why.
    tol : float, optional
        Largest accepted error bound on ‖p − p_st‖₁ (module docstring; default
        `DEFAULT_TOL` for solve, sparse and jax; GTH's a-priori bound is
        checked only when `tol` is given).  A method whose bound exceeds `tol`
        escalates to a stronger one; if none meets it, [`ConvergenceError`][sp_ode.markov.bounds.ConvergenceError].
    maxiter : int, optional
        Cap on the iterations of `sparse` (GMRES steps); ignored by direct methods.
    return_info : bool
        Also return a dict: `method` (the one that produced p), `requested_method`,
        `algorithm`, `iterations`, `residual` ‖Qᵀp‖∞, `bound` (on ‖p − p_st‖₁),
        `bound_kind`, `componentwise_bound` (relative, every entry: GTH's a-priori bound, or
        the certificate of a refined sparse answer; `None` when only the normwise bound holds),
        `uncertified_below` (normwise answers only: entries below this level carry no
        relative accuracy), `hitting_time` (the certified max_i E_i[τ_k] of the normwise bound),
        `negatives_clipped` and `most_negative` (largest magnitude clipped),
        `escalations` (one dict per rejected attempt: method, bound, reason),
        `tol`, `input_rounding` (the part of `bound` due to the rates' own rounding: nonzero
        for float32 input, docs/theory.md §7.12); `sparse` adds its solver report.
        `tol`; `selection` (default route on sparse input); `sparse` adds its solver
        report and `refinement` (the componentwise certificate's report).
    log : bool
        Return log p_st instead (methods "gth" and "banded"): accurate also for entries
        far below the float range (docs/theory.md §7.2).
    states : sequence of n str, optional
        Names of the states, used in the messages (a negative rate, a reducible chain's classes).
    componentwise : bool, optional
        For the sparse solve: refine its answer in log space and certify every entry
        (docs/theory.md §7.9).  `None` (default): attempted up to
        `COMPONENTWISE_AUTO_MAX_N` states within `COMPONENTWISE_BUDGET_FACTOR` × the
        solve's time, and the answer is labelled normwise (`uncertified_below`) when it does not
        certify; `True`: attempted without a time budget, and an answer that does not certify
        escalates to banded/dense GTH or raises [`ConvergenceError`][sp_ode.markov.bounds.ConvergenceError]; `False`: not attempted.

    Returns
    -------
    p : ndarray (n,) or (..., n)
        Float64, p ≥ 0, sum 1 (or log p when `log`).
    info : dict
        Only when `return_info`.

    Raises
    ------
    TypeError, ValueError
        Q is not a generator (see [`sp_ode.check_generator`][sp_ode.markov.generator.check_generator]), `method`
        unknown, `tol` not finite and > 0, `maxiter` < 1, `componentwise` not a bool, or
        `log=True` with a method other than "gth" or "banded".
    NotIrreducibleError
        Q has more than one communicating class (the message names the closed
        classes; see [`stationary_distributions`][sp_ode.markov.stationary.stationary_distributions]).
    ConvergenceError
        No method reached `tol` (or, with `componentwise=True`, a componentwise bound); the
        message names the bound, `tol` and what to try (a dense or banded escalation that would
        not fit in memory is one of the attempts).
    MemoryBudgetError
        A dense method asked for on a sparse Q whose dense copy would not fit
        (`sp_ode.core.memory`; estimated before the copy is made).
    """
    import time

    is_sparse = sp.issparse(Q)
    if not isinstance(log, (bool, np.bool_)):
        raise TypeError(f"`log` must be a bool; got {type(log).__name__}.")
    componentwise = _check_componentwise(componentwise)
    if method is not None:
        check_choice("method", method, METHODS)
    if log and method not in (None, "gth", "banded"):
        raise ValueError(f"`log=True` needs method 'gth' or 'banded' (the methods that represent p_st below "
                         f"the float range); got method={method!r}.")
    user_tol = _check_tol(tol)
    maxiter = _check_maxiter(maxiter)
    tol = DEFAULT_TOL if user_tol is None else user_tol
    u_in = input_unit_roundoff(Q)  # float32 rates (a jnp Q outside float64 mode) are accepted; their rounding is bounded
    in_dtype = getattr(Q, "dtype", None)
    Q = check_generator(Q, batch=not is_sparse, states=states)
    rounding = input_rounding_bound(Q.shape[-1], u_in) if u_in > UNIT_ROUNDOFF else 0.0
    if user_tol is not None and rounding > user_tol:
        raise ConvergenceError(
            f"stationary_distribution: `Q` is {in_dtype}: its rates are rounded to relative {u_in:.3g}, which alone "
            f"moves p_st by up to {rounding:.3g} per entry (docs/theory.md §7.12), more than `tol` = {user_tol:.3g}; "
            "build Q in float64 (inside `with sp_ode.float64():`) or pass a larger `tol`.",
            bound=rounding, tol=user_tol, info={"input_rounding": rounding})
    if Q.ndim == 2:
        require_irreducible(Q, states=states)
    else:
        _require_irreducible_stack(Q)
    n = Q.shape[-1]
    selection, plan = None, None
    if method is None:
        if is_sparse and n > 1:
            method, selection = _auto_route(Q, log, componentwise)
            plan = selection.pop("plan")
        else:
            method = "gth" if (log or not is_sparse) else "sparse"
    requested = method
    Qs = Q if is_sparse else None     # the sparse form, for the sparse solve and its certificate
    if is_sparse and method not in ("sparse", "banded"):
        if n > DENSE_GTH_MAX:
            raise ValueError(f"`method` {method!r} needs a dense matrix; Q is sparse with n = {n} > "
                             f"{DENSE_GTH_MAX} — use method='sparse'.")
        _check_dense(n, f"method {method!r}")
        Q = Q.toarray()
    if method in ("sparse", "banded") and not is_sparse:
        if Q.ndim != 2:
            raise ValueError(f"`method` {method!r} takes a single (n, n) generator; got shape {Q.shape}.")
        Q = sp.csr_array(Q)
    escalations = []
    for m in [method, *_escalation(method, n, auto=selection is not None and not log,
                                   predicted=None if selection is None else selection["predicted_seconds"])]:
        if m == "gth" and sp.issparse(Q):
            try:
                _check_dense(n, "escalation to dense GTH")
            except MemoryBudgetError as exc:   # not run: recorded like any other failed escalation
                escalations.append({"method": m, "bound": math.inf, "reason": str(exc)})
                continue
            Q = Q.toarray()
        if m in ("sparse", "banded") and not sp.issparse(Q):
            Q = Qs if Qs is not None else sp.csr_array(Q)
        if log and m not in ("gth", "banded"):
            continue
        t_m = time.perf_counter()
        p, extra = METHODS[m](Q, log=log, tol=tol, maxiter=maxiter, plan=plan if m == "banded" else None)
        t_m = time.perf_counter() - t_m
        if "method" in extra:  # the sparse solver's own description of its algorithm
            extra["algorithm"] = extra.pop("method")
        bound = extra["bound"]
        # GTH under the default tol: its (finite) a-priori bound is reported, not enforced (module docstring).
        accept = bound <= tol or (m in ("gth", "banded") and user_tol is None and math.isfinite(bound))
        if accept and m == "sparse" and componentwise is not False:
            if componentwise or n <= COMPONENTWISE_AUTO_MAX_N:
                p, extra = _certify_componentwise(Q, p, extra, required=bool(componentwise), seconds=t_m)
            else:
                extra = _label_normwise(extra, f"n = {n} > {COMPONENTWISE_AUTO_MAX_N} (pass componentwise=True to "
                                               "attempt the certificate)")
            bound = extra["bound"]
            if componentwise and extra["componentwise_bound"] is None:
                accept = False
                extra["failure"] = f"no componentwise certificate: {extra['componentwise_failure']}"
        elif accept and m == "sparse":
            extra = _label_normwise(extra, "componentwise=False")
        elif accept and m not in ("gth", "banded") and extra.get("componentwise_bound") is None:
            # an LU or JAX answer asked for by name: its a-posteriori bound is normwise only, said so plainly
            extra = _label_normwise(extra, f"method={m!r} certifies ‖p − p_st‖₁ only")
        if accept:
            break
        escalations.append({"method": m, "bound": bound,
                            "reason": extra.get("failure") or f"bound {bound:.3g} > tol {tol:.3g}",
                            # how far the method got (GMRES steps, its own convergence, time)
                            **{k: extra[k] for k in ("iterations", "converged", "seconds", "residual") if k in extra}})
    else:
        tried = ", ".join(f"{e['method']} (bound {e['bound']:.3g})" for e in escalations)
        hint = ("pass a larger `tol`" + (", a larger `maxiter`" if method == "sparse" else "")
                + (f", or method='gth' on a dense Q (feasible up to n ≈ {DENSE_GTH_MAX})" if n > DENSE_GTH_MAX else ""))
        raise ConvergenceError(
            f"stationary_distribution: no method met `tol` = {tol:.3g} on ‖p − p_st‖₁"
            + (" with a componentwise bound" if componentwise else "") + f"; tried {tried}. "
            f"Last: {escalations[-1]['reason']}. Try: {hint}.",
            bound=escalations[-1]["bound"], tol=tol, info={"escalations": escalations})
    if rounding:  # the rates' own rounding, on top of the method's bound (componentwise, hence also in ℓ1)
        bound = bound + rounding
        if extra.get("componentwise_bound") is not None:
            extra["componentwise_bound"] = extra["componentwise_bound"] + rounding
    if not return_info:
        return p
    residual = stationary_residual(Q, np.exp(p) if log else p)
    extra["input_rounding"] = rounding
    info = {**extra, "method": m, "requested_method": requested, "residual": residual, "bound": bound,
            "escalations": escalations, "tol": tol if (user_tol is not None or m not in ("gth", "banded")) else None}
    if selection is not None:
        info["selection"] = {**selection, "chosen": requested}
    info.setdefault("hitting_time", None)
    info.setdefault("converged", True)
    info.setdefault("uncertified_below", None)
    return p, info


def stationary_distributions(Q: GeneratorMatrix) -> tuple[list[np.ndarray], np.ndarray]:
    """One stationary distribution per closed class of a (possibly reducible) generator.

    Every stationary distribution of Q is a convex combination of these.

    Returns
    -------
    classes : list of ndarray of int
        The closed classes
    P : ndarray (K, n)
        Row k is supported on `classes[k]`

    Raises
    ------
    MemoryBudgetError
        A sparse Q whose dense copy would not fit in memory.
    """
    Q = check_generator(Q)
    if sp.issparse(Q):
        _check_dense(Q.shape[0], "stationary_distributions")
    Qd = Q.toarray() if sp.issparse(Q) else Q
    classes = closed_classes(Qd)
    P = np.zeros((len(classes), Qd.shape[0]))
    for k, c in enumerate(classes):
        # A closed class's block is itself an irreducible generator (no rate leaves it).
        P[k, c] = gth_solve(Qd[np.ix_(c, c)])[0]
    return classes, P
