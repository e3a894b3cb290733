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
  (see `neural._phi_system`), so the loss is an upper bound on the mean
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
from dataclasses import dataclass, field

import numpy as np
import torch

from neural._phi_system import (
    PhiSample,
    PhiSystem,
    evaluation_points,
    resolve_system,
    sample,
    sigma_min_on_complement,
    training_points,
)
from sp_ode.core.reporting import progress
from sp_ode.core.validation import check_choice, check_finite_array, check_positive, check_positive_int
from sp_ode.markov.generator import check_generator
from sp_ode.markov.spectral import group_inverse

EPS = np.finfo(np.float64).eps
ACTIVATIONS = {"tanh": torch.nn.Tanh, "silu": torch.nn.SiLU, "gelu": torch.nn.GELU}
OPTIMIZERS = ("lbfgs", "adam")
DEFAULT_LR = {"lbfgs": 1.0, "adam": 1e-2}
# Rounding allowance in the certificate check, in units of n·eps (see `_rounding_slack`).
SLACK_C = 64.0


# --- the model -------------------------------------------------------------------------

class PhiMLP(torch.nn.Module):
    """φ_θ : ℝᵈ → Δⁿ⁻¹, an MLP with a softmax output.

    z = 2(y − lower)/(upper − lower) − 1 maps the domain onto [−1, 1]ᵈ, then
    `depth` hidden layers of `width` units with `activation`, then a linear
    layer to n logits and a softmax.

    Parameters
    ----------
    d, n : int
        Dimension of y and number of states.
    width, depth : int
        Hidden width and number of hidden layers (depth ≥ 1).
    lower, upper : array_like (d,), optional
        The domain box used for input normalisation (default [−1, 1]ᵈ).
    activation : {"tanh", "silu", "gelu"}
    seed : int
        Seeds the initialisation (a private generator; global RNG untouched).

    Raises
    ------
    TypeError, ValueError
        Non-integer or non-positive sizes, unknown activation, or a bad box.
    """

    def __init__(self, d: int, n: int, *, width: int = 32, depth: int = 2, lower=None, upper=None,
                 activation: str = "tanh", seed: int = 0):
        super().__init__()
        self.d, self.n = check_positive_int("d", d), check_positive_int("n", n)
        self.width, self.depth = check_positive_int("width", width), check_positive_int("depth", depth)
        self.activation = check_choice("activation", activation, ACTIVATIONS)
        lower = -np.ones(d) if lower is None else check_finite_array("lower", lower).reshape(-1)
        upper = np.ones(d) if upper is None else check_finite_array("upper", upper).reshape(-1)
        if lower.shape != (d,) or upper.shape != (d,):
            raise ValueError(f"`lower` and `upper` must have shape ({d},); got {lower.shape} and {upper.shape}.")
        if np.any(upper <= lower):
            raise ValueError(f"`upper` must exceed `lower` on every axis; got lower = {lower}, upper = {upper}.")
        self.register_buffer("centre", torch.as_tensor((lower + upper) / 2, dtype=torch.float64))
        self.register_buffer("halfwidth", torch.as_tensor((upper - lower) / 2, dtype=torch.float64))
        layers, fan_in = [], d
        for _ in range(depth):
            layers += [torch.nn.Linear(fan_in, width, dtype=torch.float64), ACTIVATIONS[activation]()]
            fan_in = width
        self.out = torch.nn.Linear(fan_in, n, dtype=torch.float64)
        self.body = torch.nn.Sequential(*layers)
        gen = torch.Generator().manual_seed(int(seed))
        with torch.no_grad():
            for layer in self.body:
                if isinstance(layer, torch.nn.Linear):
                    # nn.Linear's default range U(±1/√fan_in), drawn from our own generator.
                    bound = 1.0 / math.sqrt(layer.in_features)
                    layer.weight.uniform_(-bound, bound, generator=gen)
                    layer.bias.uniform_(-bound, bound, generator=gen)
            # Zero output layer: φ_θ starts at the uniform distribution 1/n, the
            # maximum-entropy guess, and gradients still reach every layer.
            self.out.weight.zero_()
            self.out.bias.zero_()

    def logits(self, y: torch.Tensor) -> torch.Tensor:
        """Unnormalised log-probabilities, (..., d) -> (..., n)."""
        if y.shape[-1:] != (self.d,):
            raise ValueError(f"`y` must have last dimension d = {self.d}; got shape {tuple(y.shape)}.")
        z = (y.to(torch.float64) - self.centre) / self.halfwidth
        return self.out(self.body(z))

    def log_prob(self, y: torch.Tensor) -> torch.Tensor:
        """log φ_θ(y), (..., d) -> (..., n) (log-softmax: finite even where φ_θ underflows)."""
        return torch.log_softmax(self.logits(y), dim=-1)

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """φ_θ(y) on the simplex, (..., d) -> (..., n)."""
        return torch.softmax(self.logits(y), dim=-1)

    def jax_fn(self):
        """φ_θ as a pure JAX function y (d,) -> (n,), e.g. `phi=` of `sp_ode.simulate_reduced`.

        The function returns a float64 JAX array of shape (n,) for y of shape (d,) (or (..., n)
        for (..., d)): called directly it computes in float64 whatever the user's JAX setting;
        traced by `jax.jit`/`vmap`/`grad`, the trace's precision decides, so trace inside
        `with sp_ode.float64():` (as sp_ode's solvers do).  See `neural.phi_jax.phi_to_jax`
        (the weights are copied).
        The same function object is returned while the weights are unchanged, so repeated
        `simulate_reduced(phi=model)` calls reuse one compiled solve (sp_ode caches
        compilations by the function's identity); any in-place update of a parameter
        (an optimiser step, `load_state_dict`) bumps its version and gives a fresh copy.
        """
        from neural.phi_jax import phi_to_jax  # jax (1 s to import) only when a JAX copy is asked for

        versions = tuple((id(t), t._version) for t in list(self.parameters()) + list(self.buffers()))
        cached = getattr(self, "_jax_fn_cache", None)
        if cached is None or cached[0] != versions:
            cached = (versions, phi_to_jax(self))
            self._jax_fn_cache = cached
        return cached[1]

    def predict(self, y) -> np.ndarray:
        """φ_θ(y) as a float64 ndarray: y (N, d), (d,) or, for d = 1, (N,) -> (N, n) or (n,)."""
        arr = check_finite_array("y", y)
        # d = 1: a scalar is one point, a vector is N points; d > 1: only a (d,) vector is one point —
        # a flat array of N·d values is refused, never silently regrouped or cut to its first point.
        single = arr.ndim == 0 or (arr.ndim == 1 and self.d > 1)
        if self.d > 1 and arr.ndim == 1 and arr.shape[0] != self.d:
            raise ValueError(f"`y` must have shape (N, {self.d}) for N points (or ({self.d},) for one point) "
                             f"since d = {self.d}; got a flat array of shape {arr.shape}.")
        if arr.ndim < 2:
            arr = arr.reshape(-1, self.d)
        if arr.ndim != 2 or arr.shape[1] != self.d:
            raise ValueError(f"`y` must have shape (N, {self.d}) or ({self.d},); got {np.shape(y)}.")
        with torch.no_grad():
            out = self(torch.as_tensor(arr)).numpy()
        return out[0] if single else out


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


def phi_certificate(Q, q) -> PhiCertificate:
    """T4's bound on ‖q − p_st‖₂ for one generator Q and one distribution q, from Q alone.

    Reference implementation (one point, plain NumPy, `sp_ode.group_inverse`);
    [`evaluate_phi`][neural.phi.evaluate_phi] computes the same numbers vectorised over many points.

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


def _rounding_slack(Q: np.ndarray, q: np.ndarray, ginv: np.ndarray) -> np.ndarray:
    """What float64 rounding alone may add to ‖q − p‖₂ beyond the computed bound, per point (N,).

    fl(Qᵀq) differs from Qᵀq by at most n·eps·(|Q|ᵀ|q|) componentwise, and p_st
    (GTH) and 1ᵀq are accurate to a few n·eps; SLACK_C covers the constants.
    """
    n = Q.shape[-1]
    r_err = SLACK_C * n * EPS * np.linalg.norm(np.einsum("kji,kj->ki", np.abs(Q), np.abs(q)), axis=-1)
    return ginv * r_err + SLACK_C * n * EPS


# --- evaluation ------------------------------------------------------------------------

@dataclass(frozen=True)
class PhiEvaluation:
    """φ_θ against p_st at N points, with the certificate (all arrays (N,) unless noted).

    y (N, d), phi (N, n), p_st (N, n);
    abs_error = max_i |φ_i − p_i|;  error_2 = ‖φ − p‖₂;  tv = ½‖φ − p‖₁;  kl = KL(p ‖ φ);
    residual = ‖Qᵀφ‖₂;  certificate = ‖A^#‖₂·residual (T4);  sharp_certificate = residual/σ;
    holds = error_2 ≤ sharp_certificate + slack (hence ≤ certificate + slack), slack the rounding allowance;
    extrapolation : whether the points lie outside the training domain;
    skipped (K, d) : extrapolation points dropped because Q(y) is not an irreducible generator there.
    """

    y: np.ndarray
    phi: np.ndarray
    p_st: np.ndarray
    abs_error: np.ndarray
    error_2: np.ndarray
    tv: np.ndarray
    kl: np.ndarray
    residual: np.ndarray
    certificate: np.ndarray
    sharp_certificate: np.ndarray
    slack: np.ndarray
    holds: np.ndarray
    extrapolation: bool = False
    skipped: np.ndarray | None = None

    def summary(self) -> dict:
        """Scalars for reports: maxima over the points, and whether the certificate held everywhere."""
        if len(self.y) == 0:
            return {"n_points": 0, "extrapolation": self.extrapolation,
                    "skipped": 0 if self.skipped is None else len(self.skipped)}
        return {
            "n_points": int(len(self.y)),
            "extrapolation": self.extrapolation,
            "max_abs_error": float(self.abs_error.max()),
            "argmax_abs_error_y": self.y[int(np.argmax(self.abs_error))].tolist(),
            "max_error_2": float(self.error_2.max()),
            "max_tv": float(self.tv.max()),
            "max_kl": float(self.kl.max()),
            "mean_kl": float(self.kl.mean()),
            "max_residual": float(self.residual.max()),
            "max_certificate": float(self.certificate.max()),
            "max_sharp_certificate": float(self.sharp_certificate.max()),
            # how loose the bound is where it matters: certificate / true 2-norm error
            "median_certificate_ratio": float(np.median(self.certificate / np.maximum(self.error_2, 1e-300))),
            "certificate_holds": bool(self.holds.all()),
            "certificate_violations": int((~self.holds).sum()),
            "skipped": 0 if self.skipped is None else int(len(self.skipped)),
        }


def evaluate_sample(model: PhiMLP, s: PhiSample, *, extrapolation: bool = False) -> PhiEvaluation:
    with torch.no_grad():
        log_phi = model.log_prob(torch.as_tensor(s.y)).numpy()
    phi = np.exp(log_phi)
    diff = phi - s.p
    error_2 = np.linalg.norm(diff, axis=-1)
    kl = np.sum(np.where(s.p > 0, s.p * (np.log(np.where(s.p > 0, s.p, 1.0)) - log_phi), 0.0), axis=-1)
    residual = np.linalg.norm(np.einsum("kji,kj->ki", s.Q, phi), axis=-1)
    certificate = s.ginv_norm * residual
    sharp = residual / s.sigma
    slack = _rounding_slack(s.Q, phi, s.ginv_norm)
    # The sharp bound is the smaller one, so checking it checks T4's bound too.
    holds = (error_2 <= sharp + slack) & (error_2 <= certificate + slack)
    return PhiEvaluation(s.y, phi, s.p, np.abs(diff).max(-1), error_2, 0.5 * np.abs(diff).sum(-1),
                         np.maximum(kl, 0.0), residual, certificate, sharp, slack, holds, extrapolation, s.skipped)


def evaluate_phi(model: PhiMLP, system="cycle3", ys=None, *, domain=None,
                 extrapolation: bool = False) -> PhiEvaluation:
    """Compare φ_θ with p_st at the points `ys` and certify the error.

    Parameters
    ----------
    model : PhiMLP
    system : family name, GeneratorFamily, `'file.py:FUNCTION'` or callable (see `fit_phi`)
    ys : array_like (N, d), optional
        Default: the held-out grid inside the domain, or with `extrapolation=True` the shell
        outside it (there, points where Q(y) is not an irreducible generator are skipped and
        listed in `skipped`, since A1–A2 are only assumed on the domain).
    domain : optional, as in `fit_phi`

    Returns
    -------
    PhiEvaluation

    Raises
    ------
    TypeError
        `model` is not a PhiMLP.
    ValueError
        `ys` of the wrong shape or not finite; model and system disagree on d or n; a Q(y)
        inside the domain that is not a generator (the message names y).
    sp_ode.NotIrreducibleError
        Q(y) reducible at some y inside the domain (the message names y).
    """
    if not isinstance(model, PhiMLP):
        raise TypeError(f"`model` must be a neural.PhiMLP; got {type(model).__name__}.")
    sys_ = system if isinstance(system, PhiSystem) else resolve_system(system, domain)
    _check_match(model, sys_)
    if ys is None:
        inside, outside = evaluation_points(sys_)
        ys = outside if extrapolation else inside
    else:
        ys = check_finite_array("ys", ys)
        ys = ys.reshape(-1, 1) if (sys_.d == 1 and ys.ndim == 1) else ys
        if ys.ndim != 2 or ys.shape[1] != sys_.d:
            raise ValueError(f"`ys` must have shape (N, d) with d = {sys_.d}; got {ys.shape}.")
    s = sample(sys_, ys, skip_invalid=extrapolation)
    if len(s) == 0:
        return PhiEvaluation(*(np.zeros((0,)) for _ in range(12)), extrapolation=extrapolation, skipped=s.skipped)
    return evaluate_sample(model, s, extrapolation=extrapolation)


def _check_match(model: PhiMLP, system: PhiSystem) -> None:
    if model.d != system.d or model.n != system.n:
        raise ValueError(f"`model` maps ℝ^{model.d} to {model.n} states but system {system.name!r} has "
                         f"d = {system.d}, n = {system.n}.")


# --- training --------------------------------------------------------------------------

@dataclass
class PhiFit:
    """The result of [`fit_phi`][neural.phi.fit_phi].

    Attributes
    ----------
    model : PhiMLP (trained)
    system : PhiSystem
    loss : "kl" or "residual"
    final_loss : float
        The training loss after the last step
    history : dict of lists
        `step`, `loss` at every recorded step and, when monitored,
        `max_abs_error` and `max_certificate` on the held-out monitor grid
    status : "ok"
        Or "nonfinite" when the loss stopped being finite (training stopped there)
    message : str
    train_seconds, setup_seconds : float
        Optimisation time; validation and precomputation time
    config : dict
        Every setting used
    """

    model: PhiMLP
    system: PhiSystem
    loss: str
    final_loss: float
    history: dict
    status: str
    message: str
    train_seconds: float
    setup_seconds: float
    config: dict = field(default_factory=dict)

    def evaluate(self, ys=None, *, extrapolation: bool = False) -> PhiEvaluation:
        """[`evaluate_phi`][neural.phi.evaluate_phi] on this fit's system."""
        return evaluate_phi(self.model, self.system, ys, extrapolation=extrapolation)


def fit_phi(system="cycle3", *, loss: str = "kl", domain=None, width: int = 32, depth: int = 2,
            activation: str = "tanh", steps: int = 500, optimizer: str = "lbfgs", lr: float | None = None,
            n_train: int | None = None, seed: int = 0, record_every: int | None = None,
            monitor: bool = True, n_monitor: int | None = None, show_progress: bool = False,
            threads: int | None = 1) -> PhiFit:
    """Train φ_θ on `system` with the `kl` or `residual` loss (module docstring).

    Parameters
    ----------
    system : str, GeneratorFamily or callable
        A name in `sp_ode.FAMILIES` (default "cycle3"), a `GeneratorFamily`,
        `'path/to/file.py:FUNCTION'`, or a callable y (d,) -> Q(y) (n, n) (needs `domain`).
    loss : {"kl", "residual"}
    domain : array_like (d, 2) or (2d,), optional
        The training box D; a family's own box by default.
    width, depth, activation
        The MLP (see [`PhiMLP`][neural.phi.PhiMLP]).
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

    Raises
    ------
    TypeError, ValueError
        Unknown loss/optimizer/system names, bad sizes, a malformed domain, mismatched d.
    ValueError, sp_ode.NotIrreducibleError
        Q(y) not an irreducible generator at a sampled y (the message names y).
    """
    threads = None if threads is None else check_positive_int("threads", threads)
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _fit(system, loss, domain, width, depth, activation, steps, optimizer, lr, n_train, seed,
                    record_every, monitor, n_monitor, show_progress)
    finally:
        torch.set_num_threads(before)


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
