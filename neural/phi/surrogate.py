"""φ_θ as a certified surrogate for p_st(y) at scale: sparse Q(y), several slow inputs, no p_st in training.

The family y ↦ Q(y) is sparse (`neural.phi.sparse`: a reaction network's FSP
generator, or a callable returning `scipy.sparse`), y ranges over a box of d ≤ 8 inputs,
and n reaches 10⁴ (10⁵ on a GPU).  Training minimises the residual of T4 (docs/theory.md §3.4),

    L(θ) = mean_y ‖Q(y)ᵀφ_θ(y)‖₂² / s(y)²,    s(y) = max_i |Q_ii(y)| (the fastest exit rate),

over a scrambled Sobol (or Latin-hypercube) design of training points, evaluated matrix-free
from the transition list; p_st is never computed for it.  Dividing by s(y)² makes each term
dimensionless (a residual relative to the rates) so that no corner of the box dominates
only because its rates are larger.  Optionally a KL term λ·mean_a KL(p_st(y_a) ‖ φ_θ(y_a))
on the anchors' exact solves is added; the two parts are recorded separately.

The anchors (`neural.phi.certificate`) are a small Sobol design of exact sparse solves
whose hitting-time vectors certify φ_θ anywhere a one-line check passes (docs/theory.md §7.8);
`neural.PhiFit.certified_predict` (the fit this module returns) evaluates φ_θ at many points with the certificate at
each and falls back to the exact solve where it exceeds `tol`.

Training: full-batch L-BFGS (strong Wolfe) by default, or Adam on mini-batches; float64; a
tqdm bar; atomic checkpoints every `checkpoint_every` steps and exact resume (model,
optimiser, step, history, anchors, the batch generator); an optional wall-clock budget.
"""
from __future__ import annotations

import io
import math
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from neural.phi.certificate import Anchor, certify, make_anchor
from neural.phi.model import PhiMLP, torch_threads
from neural.phi.result import NEAREST, SURROGATE_FORMAT, PhiFit, anchors_from_state, anchors_to_state, nearest_anchors
from neural.phi.sparse import SparseFamily, design_points, residual_torch
from sp_ode.core.errors import SpOdeWarning
from sp_ode.core.files import atomic_write_bytes
from sp_ode.core.reporting import progress
from sp_ode.core.validation import (
    check_choice,
    check_nonnegative,
    check_positive,
    check_positive_int,
)

__all__ = ["fit_surrogate", "design_points", "SURROGATE_FORMAT"]

OPTIMIZERS = ("lbfgs", "adam")
WEIGHTINGS = ("chi2", "l2")


def _exit_scale(src: np.ndarray, V: np.ndarray, n: int) -> np.ndarray:
    """s(y) per row of V (B, m): the largest total exit rate over the states."""
    return np.array([np.bincount(src, weights=v, minlength=n).max() for v in V])


def fit_surrogate(family: SparseFamily, *, loss: str = "residual", weighting: str = "chi2", width: int = 64,
                  depth: int = 2,
                  activation: str = "tanh", head: str = "dense", rank: int = 2, n_train: int = 512,
                  design: str = "sobol", steps: int = 300, optimizer: str = "lbfgs", lr: float | None = None,
                  batch: int | None = None, n_anchors: int = 16, kl_weight: float = 0.0, n_monitor: int = 16,
                  record_every: int | None = None, seed: int = 0, checkpoint: str | Path | None = None,
                  checkpoint_every: int = 25, resume: bool = False, time_budget: float | None = None,
                  device: str = "cpu", show_progress: bool = False, threads: int | None = 1) -> PhiFit:
    """Fit φ_θ to a sparse family with the residual loss (module docstring); returns a [`PhiFit`][neural.phi.result.PhiFit].

    Parameters
    ----------
    family : SparseFamily
    loss : {"residual"}
        The training loss (the supervised "kl" of small families needs p_st at every training
        point; here the optional `kl_weight` term uses the anchors' solves only).
    width, depth, activation, head, rank
        The network ([`neural.PhiMLP`][neural.phi.model.PhiMLP]); `head="factored"` needs a network family.
    n_train : int
        Training points, a scrambled Sobol (`design="sobol"`) or Latin-hypercube (`"lhs"`) design.
    steps : int
        Optimiser iterations.
    optimizer : {"lbfgs", "adam"}
    lr : float, optional
        1 for L-BFGS, 3e-3 for Adam (cosine-decayed to 1 %).
    batch : int, optional
        Mini-batch size (Adam): a fresh random subset of the design per step.  Default: full batch.
    n_anchors : int
        Exact solves on a separate Sobol design, kept to certify (and, with `kl_weight`, to supervise).
    kl_weight : float
        Weight λ ≥ 0 of the optional KL term on the anchors (0: trained from Q(y) alone).
    n_monitor : int
        Held-out points with exact solves, for the learning curve only (never in the gradient).
    record_every : int, optional
        History interval (default steps/50).
    seed : int
    checkpoint : path, optional
        A file written atomically every `checkpoint_every` steps and at the end.
    resume : bool
        Continue from `checkpoint` (model, optimiser, step, history, anchors and batch RNG
        restored; the run must have the same settings).
    time_budget : float, optional
        Stop training after this many seconds (the status says so).
    device : str
        "cpu" or a torch device such as "cuda" (propensities are then evaluated on the device).
    show_progress : bool
    threads : int or None
        torch intra-op threads while training (restored afterwards).

    Returns
    -------
    PhiFit
        With `system` the family, `anchors` the exact solves, and `history` holding
        `loss_residual`, `loss_kl`, and on the monitor points `max_error_l1` (true) and
        `max_certificate` (the anchored certificate).

    Raises
    ------
    TypeError, ValueError
        Bad settings; a factored head on a family without species coordinates; `resume` without
        a checkpoint or with one from other settings.
    """
    threads = None if threads is None else check_positive_int("threads", threads)
    with torch_threads(threads):
        return _fit(family, loss, weighting, width, depth, activation, head, rank, n_train, design, steps, optimizer, lr,
                    batch, n_anchors, kl_weight, n_monitor, record_every, seed, checkpoint, checkpoint_every,
                    resume, time_budget, device, show_progress)


def _fit(family, loss, weighting, width, depth, activation, head, rank, n_train, design, steps, optimizer, lr, batch,
         n_anchors, kl_weight, n_monitor, record_every, seed, checkpoint, checkpoint_every, resume,
         time_budget, device, show_progress) -> PhiFit:
    t0 = time.perf_counter()
    if not isinstance(family, SparseFamily):
        raise TypeError(f"`family` must be a SparseFamily (neural.phi.sparse); got {type(family).__name__}.")
    check_choice("loss", loss, ("residual",))
    weighting = check_choice("weighting", weighting, WEIGHTINGS)
    optimizer = check_choice("optimizer", optimizer, OPTIMIZERS)
    steps, n_train = check_positive_int("steps", steps), check_positive_int("n_train", n_train)
    n_anchors = int(check_nonnegative("n_anchors", n_anchors))
    kl_weight = check_nonnegative("kl_weight", kl_weight)
    if kl_weight > 0 and n_anchors == 0:
        raise ValueError("`kl_weight` > 0 needs anchors (`n_anchors` ≥ 1): the KL term uses their exact solves.")
    lr = {"lbfgs": 1.0, "adam": 3e-3}[optimizer] if lr is None else check_positive("lr", lr)
    batch = None if batch is None else check_positive_int("batch", batch)
    record_every = max(1, steps // 50) if record_every is None else check_positive_int("record_every", record_every)
    if head == "factored" and family.coords is None:
        raise ValueError(f"`head='factored'` needs species coordinates; family {family.name!r} is a plain callable "
                         "Q(y) — pass a NetworkSystem, or use head='dense'.")
    if resume and (checkpoint is None or not Path(checkpoint).is_file()):
        raise ValueError(f"`resume=True` needs an existing `checkpoint` file; got {checkpoint!r}.")
    dev = torch.device(device)
    settings = {"system": family.name, "n": family.n, "d": family.d, "loss": loss, "weighting": weighting, "width": width, "depth": depth,
                "activation": activation, "head": head, "rank": rank, "n_train": n_train, "design": design,
                "steps": steps, "optimizer": optimizer, "lr": lr, "batch": batch, "n_anchors": n_anchors,
                "kl_weight": kl_weight, "n_monitor": n_monitor, "seed": int(seed),
                "domain": np.stack([family.lower, family.upper], 1).tolist()}
    model = PhiMLP(family.d, family.n, width=width, depth=depth, lower=family.lower, upper=family.upper,
                   activation=activation, seed=int(seed), head=head, coords=family.coords, rank=rank).to(dev)

    state = None
    if resume:
        state = torch.load(checkpoint, map_location="cpu", weights_only=True)
        if not isinstance(state, dict) or state.get("format") != SURROGATE_FORMAT:
            raise ValueError(f"`checkpoint` {str(checkpoint)!r} is not a φ_θ surrogate checkpoint.")
        diff = {k: (state["settings"].get(k), v) for k, v in settings.items()
                if k not in ("steps",) and state["settings"].get(k) != v}
        if diff:
            raise ValueError(f"`checkpoint` {str(checkpoint)!r} was written with other settings: "
                             f"{ {k: f'{a!r} there, {b!r} now' for k, (a, b) in diff.items()} }.")
        model.load_state_dict(state["model"])

    # The training design, its rates (fixed for the run) and their scales s(y).
    y_train = design_points(family.lower, family.upper, n_train, kind=design, seed=seed)
    src, dst, V = family.rates(y_train)
    scale = _exit_scale(src, V, family.n)
    tt = {"y": torch.as_tensor(y_train, device=dev), "src": torch.as_tensor(src, device=dev),
          "dst": torch.as_tensor(dst, device=dev), "V": torch.as_tensor(V, device=dev),
          "s": torch.as_tensor(scale, device=dev)}
    del V
    # Anchors (exact solves, for the certificate and the optional KL term) and monitor points.
    if state is not None:
        anchors = anchors_from_state(state["anchors"], family)
        monitor = anchors_from_state(state["monitor"], family)
    else:
        anchors = [make_anchor(family, y) for y in design_points(family.lower, family.upper, n_anchors,
                                                                 seed=seed + 1_000_003)]
        monitor = [make_anchor(family, y) for y in design_points(family.lower, family.upper, n_monitor,
                                                                 kind="lhs", seed=seed + 2_000_003)]
    if kl_weight > 0:
        ya = torch.as_tensor(np.stack([a.y for a in anchors]), device=dev)
        pa = torch.as_tensor(np.stack([a.p for a in anchors]), device=dev)
    setup_seconds = time.perf_counter() - t0

    gen = torch.Generator().manual_seed(int(seed) + 17)
    if state is not None and "batch_rng" in state:
        gen.set_state(state["batch_rng"])

    def parts(idx=None):
        y = tt["y"] if idx is None else tt["y"][idx]
        Vb = tt["V"] if idx is None else tt["V"][idx]
        sb = tt["s"] if idx is None else tt["s"][idx]
        logq = model.log_prob(y)
        r = residual_torch(logq.exp(), tt["src"], tt["dst"], Vb)
        if weighting == "chi2":
            # ‖r‖²_{L²(1/φ)}: r_j/√φ_j, the weight from log φ clamped where φ_j underflows (≈ e^-600)
            r = r * torch.exp(-0.5 * logq.clamp(min=-600.0))
        res = ((r / sb[:, None]) ** 2).sum(-1).mean()
        # KL(p_st ‖ φ_θ) averaged over the anchors
        kl = (torch.nn.functional.kl_div(model.log_prob(ya), pa, reduction="batchmean") if kl_weight > 0
              else torch.zeros((), dtype=res.dtype, device=dev))
        return res, kl

    if optimizer == "lbfgs":
        opt = torch.optim.LBFGS(model.parameters(), lr=lr, max_iter=1, max_eval=25, history_size=50,
                                tolerance_grad=0.0, tolerance_change=0.0, line_search_fn="strong_wolfe")
        sched = None
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=lr * 1e-2)
    history = {"step": [], "seconds": [], "loss": [], "loss_residual": [], "loss_kl": [], "max_error_l1": [],
               "max_certificate": []}
    start = 0
    trained_before = 0.0
    if state is not None:
        opt.load_state_dict(state["optimizer"])
        if sched is not None and state.get("scheduler"):
            sched.load_state_dict(state["scheduler"])
        history = state["history"]
        start = int(state["step"])
        trained_before = float(state["train_seconds"])

    def record(step: int, elapsed: float) -> tuple[float, float]:
        with torch.no_grad():
            res, kl = parts()
        res, kl = float(res), float(kl)
        history["step"].append(step)
        history["seconds"].append(elapsed)
        history["loss_residual"].append(res)
        history["loss_kl"].append(kl)
        history["loss"].append(res + kl_weight * kl)
        if monitor:
            errs, certs = _monitor_errors(model, family, monitor, anchors)
            history["max_error_l1"].append(max(errs))
            history["max_certificate"].append(max(certs))
        return res, kl

    def save(step: int, elapsed: float) -> None:
        if checkpoint is None:
            return
        blob = {"format": SURROGATE_FORMAT, "settings": settings, "step": step, "train_seconds": elapsed,
                "model": model.state_dict(), "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict() if sched is not None else {}, "history": history,
                "anchors": anchors_to_state(anchors), "monitor": anchors_to_state(monitor),
                "batch_rng": gen.get_state()}
        buf = io.BytesIO()
        torch.save(blob, buf)
        atomic_write_bytes(checkpoint, buf.getvalue())

    def closure():
        opt.zero_grad()
        idx = None if batch is None else torch.randint(0, n_train, (batch,), generator=gen).to(dev)
        res, kl = parts(idx)
        value = res + kl_weight * kl
        value.backward()
        return value

    status, message = "ok", f"{steps} {optimizer} steps"
    t1 = time.perf_counter()
    if start == 0:
        record(0, 0.0)
    bar = progress(range(start + 1, steps + 1), desc=f"fit-phi {family.name}", disable=None if show_progress else True)
    step = start
    for step in bar:
        opt.step(closure)
        if sched is not None:
            sched.step()
        elapsed = trained_before + time.perf_counter() - t1
        last = step == steps or (time_budget is not None and elapsed >= time_budget)
        if step % record_every == 0 or last:
            res, kl = record(step, elapsed)
            value = res + kl_weight * kl
            if not math.isfinite(value):
                status, message = "nonfinite", f"the loss became {value} at step {step}; lower `lr`"
                break
            bar.set_postfix(loss=f"{value:.3g}", refresh=False)
        if step % checkpoint_every == 0 or last:
            save(step, elapsed)
        if time_budget is not None and elapsed >= time_budget and step < steps:
            status, message = "ok", f"stopped at step {step} of {steps}: time budget {time_budget:g} s reached"
            break
    bar.close()
    train_seconds = trained_before + time.perf_counter() - t1
    if history["step"][-1] != step:
        record(step, train_seconds)
    save(step, train_seconds)
    config = {**settings, "steps_done": int(step), "torch_threads": torch.get_num_threads(), "device": str(dev),
              "parameters": int(sum(p.numel() for p in model.parameters())),
              "anchor_seconds": float(sum(a.seconds for a in anchors)),
              "monitor_seconds": float(sum(a.seconds for a in monitor))}
    model = model.cpu().eval()
    usefulness = _usefulness(model, family, monitor, anchors, history)
    if usefulness is not None:
        config["usefulness"] = usefulness
        if not usefulness["useful"]:
            message = f"{message}; {usefulness['text']}"
            warnings.warn(f"φ_θ on {family.name!r}: {usefulness['text']}", UselessSurrogateWarning, stacklevel=3)
    return PhiFit(model, family, loss, history["loss"][-1], history, status, message, train_seconds,
                  setup_seconds, config, anchors, monitor)


class UselessSurrogateWarning(SpOdeWarning):
    """A fitted φ_θ cannot be certified to `USEFUL_TOL` on held-out points: the exact solve would be used instead."""


USEFUL_TOL = 1e-3   # certified_predict's default tolerance: below it a point is answered without a solve
USEFUL_FRACTION = 0.5   # a surrogate certified at fewer held-out points than this saves less than half the solves


def _monitor_errors(model, family, monitor: list[Anchor], anchors: list[Anchor]) -> tuple[list, list]:
    """True ℓ1 errors and anchored certificates of φ_θ at the held-out monitor points."""
    q = model.predict(np.stack([a.y for a in monitor]))
    errs, certs = [], []
    for a, qa in zip(monitor, q):
        errs.append(float(np.abs(qa - a.p).sum()))
        Q = family.Q(a.y)
        certs.append(min([certify(Q, qa, b)["certificate"] for b in nearest_anchors(anchors, a.z, NEAREST)],
                         default=math.inf))
    return errs, certs


def _usefulness(model, family, monitor: list[Anchor], anchors: list[Anchor], history: dict) -> dict | None:
    """Whether φ_θ beats the exact solve: the share of held-out points its certificate answers at `USEFUL_TOL`.

    Below `USEFUL_FRACTION` the fit is reported as useless, plainly, with the training it would need:
    the learning curve max-certificate(step) ∝ step^b fitted over its second half (log–log least
    squares) and extrapolated to `USEFUL_TOL`; when it no longer falls (b > −0.05), the text says that
    more steps will not help (a wider network, more training points or anchors). None without monitor points.
    """
    if not monitor:
        return None
    errs, certs = _monitor_errors(model, family, monitor, anchors)
    certified = int(sum(c <= USEFUL_TOL for c in certs))
    frac = certified / len(certs)
    steps = np.asarray(history["step"], dtype=float)
    curve = np.asarray(history["max_certificate"], dtype=float)
    keep = (steps > 0) & np.isfinite(curve) & (curve > 0)
    steps, curve = steps[keep], curve[keep]
    steps, curve = steps[len(steps) // 2:], curve[len(curve) // 2:]
    needed = None
    slope = float(np.polyfit(np.log(steps), np.log(curve), 1)[0]) if len(steps) >= 3 else float("nan")
    if np.isfinite(slope) and slope < -0.05 and curve[-1] > USEFUL_TOL:
        needed = float(steps[-1] * (USEFUL_TOL / curve[-1]) ** (1.0 / slope))
    useful = frac >= USEFUL_FRACTION
    text = (f"φ_θ is certified to {USEFUL_TOL:g} at {certified} of {len(certs)} held-out points "
            f"(max ‖φ_θ − p_st‖₁ = {max(errs):.3g})")
    if not useful:
        text += (", so it cannot beat the exact solve: `certified_predict` would solve exactly at most points; "
                 + (f"the learning curve (certificate ∝ step^{slope:.2f}) reaches {USEFUL_TOL:g} after about "
                    f"{needed:.2g} steps" if needed is not None else
                    "its learning curve has stopped falling, so more steps will not help: use a wider network, "
                    "more training points or more anchors"))
    return {"useful": useful, "tol": USEFUL_TOL, "certified": certified, "held_out": len(certs),
            "max_error_l1": float(max(errs)), "max_certificate": float(max(certs)), "slope": slope,
            "steps_needed": needed, "text": text}
