"""φ_θ: an MLP onto the simplex as a variational approximation of p_st(y) (docs/theory.md §3.1 (T1), T4).

For a generator family Q(y), y ∈ D ⊂ ℝᵈ, the critical manifold of the fast
subsystem dx/dτ = Q(y)ᵀx is φ(y) = p_st(y) (T1).  T4 characterises p_st(y) two
ways, and each gives a training loss for φ_θ : D → Δⁿ⁻¹ (softmax output):

- `kl` (supervised): E_y KL(p_st(y) ‖ φ_θ(y)), with p_st from
  `sp_ode.stationary_distribution` (GTH) precomputed on the training set;
- `residual` (unsupervised, never sees p_st): E_y ‖Q(y)ᵀφ_θ(y)‖₂² / σ(y)²,
  with σ(y) = σ_min(Q(y)ᵀU) the smallest singular value of A = Q(y)ᵀ on 1^⊥
  (U an orthonormal basis of 1^⊥).  Why this normalisation: the raw residual
  scales with the rates (on cycle3, ‖Q(y)‖₂ ranges over 4.4…21.6 and σ(y) over
  1.2…4.7 across D), so unnormalised it would weigh the same error up to
  (4.7/1.2)² ≈ 15× more at the fast-rate end of D; divided by σ(y)² each term
  is the square of a p-free a-posteriori bound, ‖φ_θ(y) − p_st(y)‖₂ ≤ ‖Qᵀφ_θ‖₂/σ(y)
  (see `neural.phi.families`), so the loss is an upper bound on the mean
  squared error ‖φ_θ − p_st‖₂² in the same units at every y, and its minimiser
  is still p_st(y) pointwise.  σ(y) is computed from Q(y) alone.

The certificate (T4).  For q on the simplex, q − p_st ∈ 1^⊥ = range(A), and
A^# A = I − p_st 1ᵀ, so q − p_st = A^#(Aq) and

    ‖φ_θ(y) − p_st(y)‖₂ ≤ ‖A^#‖₂ · ‖Q(y)ᵀφ_θ(y)‖₂,

with ‖A^#‖₂ the operator 2-norm (largest singular value) of the group inverse
from `sp_ode.group_inverse`.  Since ‖·‖∞ ≤ ‖·‖₂ it also bounds the maximum
absolute error.  The sharper p-free bound ‖Qᵀφ_θ‖₂/σ(y) ≤ ‖A^#‖₂‖Qᵀφ_θ‖₂ is
reported beside it.

Training runs in float64 on the CPU, full batch, L-BFGS (strong-Wolfe line
search) by default or Adam; inputs are mapped affinely from D to [−1, 1]ᵈ, and
the last layer starts at zero so that φ_θ starts at the uniform distribution.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from neural.phi.families import (
    PhiSystem,
    evaluation_points,
    resolve_system,
    sample,
    sigma_min_on_complement,
    training_points,
)
from neural.phi.model import PhiMLP, torch_threads
from neural.phi.result import EPS, SLACK_C, PhiFit, evaluate_sample
from neural.phi.sparse import SparseFamily
from neural.phi.surrogate import fit_surrogate
from sp_ode.core.reporting import progress
from sp_ode.core.validation import check_choice, check_finite_array, check_positive, check_positive_int
from sp_ode.markov.generator import check_generator
from sp_ode.markov.spectral import group_inverse

if TYPE_CHECKING:
    from neural.phi.result import PhiSystemLike
    from sp_ode.core.typing import ArrayLike, Float, GeneratorMatrix

OPTIMIZERS = ("lbfgs", "adam")
DEFAULT_LR = {"lbfgs": 1.0, "adam": 1e-2}


# --- losses ----------------------------------------------------------------------------

def kl_loss(log_phi: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Mean over points of KL(p ‖ φ) = Σ_i p_i (log p_i − log φ_i); log_phi, p (N, n) -> scalar (0 at φ = p)."""
    return (torch.special.xlogy(p, p) - p * log_phi).sum(-1).mean()


def residual_loss(phi: torch.Tensor, Q: torch.Tensor, sigma: torch.Tensor) -> torch.Tensor:
    """Mean of ‖Q(y)ᵀφ(y)‖₂² / σ(y)²; phi (N, n), Q (N, n, n), sigma (N,) -> scalar.

    Each term is the square of the p-free bound on ‖φ − p_st‖₂ (module docstring).
    """
    r = torch.einsum("kji,kj->ki", Q, phi)  # (Qᵀφ)_i = Σ_j Q_ji φ_j
    return ((r * r).sum(-1) / sigma**2).mean()


LOSSES = ("kl", "residual")


# --- the certificate -------------------------------------------------------------------

@dataclass(frozen=True)
class PhiCertificate:
    """The a-posteriori bounds at one point (all 2-norms).

    residual : ‖Qᵀq‖₂;  ginv_norm : ‖A^#‖₂;  bound : ginv_norm · residual (T4);
    sigma : σ_min(QᵀU);  sharp_bound : residual / sigma (≤ bound).
    """

    residual: float
    ginv_norm: float
    bound: float
    sigma: float
    sharp_bound: float


def phi_certificate(Q: GeneratorMatrix, q: Float[ArrayLike, " n"]) -> PhiCertificate:
    """T4's bound on ‖q − p_st‖₂ for one generator Q and one distribution q, from Q alone.

    Reference implementation (one point, plain NumPy, `sp_ode.group_inverse`);
    [`evaluate_phi`][neural.phi.result.evaluate_phi] computes the same numbers vectorised over many points.

    Parameters
    ----------
    Q : array_like (n, n), an irreducible generator
    q : array_like (n,)
        With 1ᵀq = 1 (the identity q − p = A^#(Qᵀq) needs q − p ∈ 1^⊥)

    Returns
    -------
    PhiCertificate

    Raises
    ------
    TypeError, ValueError
        Q not a generator, q of the wrong shape, not finite or 1ᵀq ≠ 1.
    sp_ode.NotIrreducibleError
        Q reducible (p_st, hence the bound, is then not defined).
    """

    Q = check_generator(Q)
    Q = Q.toarray() if hasattr(Q, "toarray") else Q
    n = Q.shape[0]
    q = check_finite_array("q", q)
    if q.shape != (n,):
        raise ValueError(f"`q` must have shape ({n},) to match Q; got {q.shape}.")
    if abs(q.sum() - 1.0) > SLACK_C * n * EPS:
        raise ValueError(f"`q` must sum to 1 (the bound holds for q − p_st ∈ 1^⊥); got 1ᵀq = {q.sum()!r}.")
    G = group_inverse(Q)
    residual = float(np.linalg.norm(Q.T @ q))
    ginv = float(np.linalg.norm(G, 2))
    sigma = float(sigma_min_on_complement(Q[None])[0])
    return PhiCertificate(residual, ginv, ginv * residual, sigma, residual / sigma)


# --- training --------------------------------------------------------------------------

def fit_phi(system: PhiSystemLike = "cycle3", *, loss: str = "kl",
            domain: Float[ArrayLike, "d 2"] | Float[ArrayLike, " 2d"] | None = None, width: int = 32, depth: int = 2,
            activation: str = "tanh", steps: int = 500, optimizer: str = "lbfgs", lr: float | None = None,
            n_train: int | None = None, seed: int = 0, record_every: int | None = None,
            monitor: bool = True, n_monitor: int | None = None, show_progress: bool = False,
            threads: int | None = 1, **surrogate) -> PhiFit:
    """Train φ_θ on `system` with the `kl` or `residual` loss (module docstring).

    A *sparse* family — a callable returning `scipy.sparse`, an `sp_ode.NetworkSystem` or
    `NetworkModel`, or a network catalogue name (`"network:cascade"`) — is trained by
    `neural.phi.surrogate.fit_surrogate` (matrix-free residual on a Sobol design, anchors for
    the certificate, docs/theory.md §7.8) with the residual loss; `n_train` (default 512),
    `n_monitor` (default 16), `record_every` and the settings in `surrogate` (`head`,
    `rank`, `n_anchors`, `kl_weight`, `design`, `batch`, `checkpoint`, `resume`,
    `time_budget`, `device`) go there.

    Parameters
    ----------
    system : str, GeneratorFamily, NetworkSystem or callable
        A name in `sp_ode.FAMILIES` (default "cycle3") or of the network catalogue, a
        `GeneratorFamily`, `'path/to/file.py:OBJECT'`, or a callable y (d,) -> Q(y) (n, n),
        dense or `scipy.sparse` (needs `domain`).
    loss : {"kl", "residual"}
    domain : array_like (d, 2) or (2d,), optional
        The training box D; a family's own box by default.
    width, depth, activation
        The MLP (see [`PhiMLP`][neural.phi.model.PhiMLP]).
    steps : int
        Optimiser iterations (L-BFGS iterations, each ≤ 25 loss evaluations; or Adam steps).
    optimizer : {"lbfgs", "adam"}
    lr : float, optional
        1.0 for L-BFGS (the line search scales it), 1e-2 for Adam (cosine-decayed to 1 %).
    n_train : int, optional
        Training points, a tensor grid of Chebyshev–Lobatto nodes over D (default 256·d).
    seed : int
    record_every : int, optional
        History interval (default steps/100).
    monitor : bool
        Record the held-out max error and max certificate during training
        (p_st on a monitor grid, used for reporting only, never in the gradient).
    n_monitor : int, optional
        Points of the monitor grid (default 201 for d = 1, 961 otherwise).
    show_progress : bool
        A tqdm bar on stderr.
    threads : int or None
        torch intra-op threads during training (restored afterwards); None keeps
        torch's setting.  Default 1: the matrices here are tiny (N × width), so a
        second thread buys nothing, and on a loaded 2-core machine OpenMP's
        spin-waiting made 2 threads 26× slower per step than 1 (docs/bench/phi.md).

    Returns
    -------
    PhiFit
        [`PhiFit`][neural.phi.result.PhiFit], with `system` the dense `PhiSystem`, or the
        `SparseFamily` of a sparse family (as `fit_surrogate` returns it).

    Raises
    ------
    TypeError, ValueError
        Unknown loss/optimizer/system names, bad sizes, a malformed domain, mismatched d.
    ValueError, sp_ode.NotIrreducibleError
        Q(y) not an irreducible generator at a sampled y (the message names y).
    """
    threads = None if threads is None else check_positive_int("threads", threads)
    with torch_threads(threads):
        sys_ = system if isinstance(system, (PhiSystem, SparseFamily)) else resolve_system(system, domain)
        if isinstance(sys_, SparseFamily):
            if check_choice("loss", loss, LOSSES) != "residual":
                raise ValueError(f"`loss` must be 'residual' for the sparse family {sys_.name!r} (n = {sys_.n}): "
                                 "'kl' needs p_st at every training point; add kl_weight=λ for a KL term on the "
                                 "anchors' exact solves instead.")
            return fit_surrogate(sys_, width=width, depth=depth, activation=activation, steps=steps,
                                 optimizer=optimizer, lr=lr, n_train=512 if n_train is None else n_train, seed=seed,
                                 record_every=record_every, n_monitor=(16 if n_monitor is None else n_monitor)
                                 if monitor else 0, show_progress=show_progress, threads=None, **surrogate)
        if surrogate:
            raise TypeError(f"fit_phi() got settings {sorted(surrogate)} that only apply to a sparse family; "
                            f"{sys_.name!r} is a dense family (n = {sys_.n}).")
        return _fit(sys_, loss, domain, width, depth, activation, steps, optimizer, lr, n_train, seed,
                    record_every, monitor, n_monitor, show_progress)


def _fit(system, loss, domain, width, depth, activation, steps, optimizer, lr, n_train, seed, record_every,
         monitor, n_monitor, show_progress) -> PhiFit:

    t0 = time.perf_counter()
    loss = check_choice("loss", loss, LOSSES)
    optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
    steps = check_positive_int("steps", steps)
    lr = DEFAULT_LR[optimizer] if lr is None else check_positive("lr", lr)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"`seed` must be an integer; got {type(seed).__name__}.")
    if seed < 0:
        raise ValueError(f"`seed` must be >= 0; got {seed}.")
    record_every = max(1, steps // 100) if record_every is None else check_positive_int("record_every", record_every)
    sys_ = system if isinstance(system, PhiSystem) else resolve_system(system, domain)
    model = PhiMLP(sys_.d, sys_.n, width=width, depth=depth, lower=sys_.lower, upper=sys_.upper,
                   activation=activation, seed=int(seed))

    # Precompute once: Q and σ on the training grid, and p_st only for the supervised loss.
    train = sample(sys_, training_points(sys_, n_train), with_p=(loss == "kl"), with_ginv=False)
    y_t, Q_t = torch.as_tensor(train.y), torch.as_tensor(train.Q)
    if loss == "kl":
        p_t = torch.as_tensor(train.p)

        def objective():
            return kl_loss(model.log_prob(y_t), p_t)
    else:
        sigma_t = torch.as_tensor(train.sigma)

        def objective():
            return residual_loss(model(y_t), Q_t, sigma_t)

    mon = None
    if monitor:
        if n_monitor is None:
            n_monitor = 201 if sys_.d == 1 else 961
        inside, _ = evaluation_points(sys_, n_eval=check_positive_int("n_monitor", n_monitor))
        mon = sample(sys_, inside)
    setup_seconds = time.perf_counter() - t0

    if optimizer == "lbfgs":
        # One L-BFGS iteration per step; the curvature history persists across calls.
        opt = torch.optim.LBFGS(model.parameters(), lr=lr, max_iter=1, max_eval=25, history_size=50,
                                tolerance_grad=0.0, tolerance_change=0.0, line_search_fn="strong_wolfe")
        sched = None
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=lr * 1e-2)

    def closure():
        opt.zero_grad()
        value = objective()
        value.backward()
        return value

    history = {"step": [], "loss": [], "max_abs_error": [], "max_certificate": []}

    def record(step: int, value: float) -> None:
        history["step"].append(step)
        history["loss"].append(value)
        if mon is not None:
            ev = evaluate_sample(model, mon)
            history["max_abs_error"].append(float(ev.abs_error.max()))
            history["max_certificate"].append(float(ev.certificate.max()))

    status, message = "ok", f"{steps} {optimizer} steps"
    with torch.no_grad():
        value = float(objective())
    record(0, value)
    t1 = time.perf_counter()
    bar = progress(range(1, steps + 1), desc=f"fit-phi {sys_.name} {loss}", disable=None if show_progress else True)
    for step in bar:
        opt.step(closure)
        if sched is not None:
            sched.step()
        if step % record_every == 0 or step == steps:
            with torch.no_grad():
                value = float(objective())
            if not math.isfinite(value):
                status, message = "nonfinite", f"the {loss} loss became {value} at step {step}; lower --lr"
                break
            bar.set_postfix(loss=f"{value:.3g}", refresh=False)
            record(step, value)
    bar.close()
    train_seconds = time.perf_counter() - t1
    config = {"system": sys_.name, "n": sys_.n, "d": sys_.d, "domain": np.stack([sys_.lower, sys_.upper], 1).tolist(),
              "loss": loss, "width": width, "depth": depth, "activation": activation, "steps": steps,
              "optimizer": optimizer, "lr": lr, "n_train": len(train), "seed": int(seed),
              "torch_threads": torch.get_num_threads()}
    return PhiFit(model, sys_, loss, history["loss"][-1] if status == "ok" else value, history, status, message,
                  train_seconds, setup_seconds, config)
