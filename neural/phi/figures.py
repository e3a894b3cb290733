"""Figures for a φ_θ fit: φ_θ against p_st, the error with its certificate, and training curves.

d = 1: curves over y (the training domain shaded, extrapolation outside it).
d = 2: heatmaps on the held-out grid, and a slice at the middle of y₁.
d > 2: only the training curves (a note says so).

Every figure is written in `fmt` (png, pdf or svg) at one `dpi`; a short run's training
curves get markers so that a handful of points stays legible.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from sp_ode.core.reporting import figures

MAX_COMPONENTS_2D = 4  # heatmap columns; larger n shows the first four states


def _merge(held, extra):
    """Held-out and extrapolation evaluations as one sorted d = 1 table."""
    ys = np.concatenate([held.y[:, 0], extra.y[:, 0]]) if len(extra.y) else held.y[:, 0]
    order = np.argsort(ys)

    def cat(name):
        a = getattr(held, name)
        b = getattr(extra, name)
        return (np.concatenate([a, b]) if len(extra.y) else a)[order]

    return ys[order], cat


def _state(system, i: int) -> str | None:
    """State `i`'s name when the system named its states (None: label by index)."""
    states = getattr(system, "states", None)
    return None if states is None else str(states[i])


def _shade_domain(ax, fit):
    lo, hi = fit.system.lower[0], fit.system.upper[0]
    ax.axvspan(lo, hi, color="0.92", zorder=0, label="training domain")


def plot_components(fit, held, extra, path: Path, plt, dpi: int = 150) -> Path:
    """φ_θ(y) (dashed) against p_st(y) (solid), per component."""
    d, n = fit.system.d, fit.system.n
    if d == 1:
        ys, cat = _merge(held, extra)
        P, F = cat("p_st"), cat("phi")
        fig, ax = plt.subplots(figsize=(7, 4))
        _shade_domain(ax, fit)
        for i in range(n):
            name = _state(fit.system, i)
            line, = ax.plot(ys, P[:, i], lw=1.5, label=(name if name is not None else f"$p_{{st,{i}}}$") if n <= 10
                            else None)
            ax.plot(ys, F[:, i], "--", color=line.get_color(), lw=1.2)
        ax.plot([], [], "k-", label="$p_{st}(y)$")
        ax.plot([], [], "k--", label=r"$\varphi_\theta(y)$")
        ax.set_xlabel("y")
        ax.set_ylabel("probability")
        ax.legend(fontsize=7, ncol=2 if n > 4 else 1, loc="best")
    else:
        m = int(round(len(held.y) ** 0.5))
        k = min(n, MAX_COMPONENTS_2D)
        fig, axes = plt.subplots(2, k, figsize=(3.2 * k, 5.6), squeeze=False)
        extent = [fit.system.lower[0], fit.system.upper[0], fit.system.lower[1], fit.system.upper[1]]
        for i in range(k):
            for row, (arr, label) in enumerate([(held.p_st, "p_{st}"), (held.phi, r"\varphi_\theta")]):
                ax = axes[row, i]
                im = ax.imshow(arr[:, i].reshape(m, m).T, origin="lower", extent=extent, aspect="auto",
                               vmin=held.p_st[:, i].min(), vmax=held.p_st[:, i].max())
                name = _state(fit.system, i)
                ax.set_title(f"${label}$ " + (f"of {name}" if name is not None else f"component {i}"), fontsize=9)
                ax.set_xlabel("$y_0$")
                ax.set_ylabel("$y_1$")
                fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(f"{fit.system.name}: " + r"$\varphi_\theta$" + f" ({fit.loss} loss) against $p_{{st}}$")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def plot_error(fit, held, extra, path: Path, plt, dpi: int = 150) -> Path:
    """The error against y on a log scale with the T4 certificate drawn over it."""
    d = fit.system.d
    floor = 1e-17
    if d == 1:
        ys, cat = _merge(held, extra)
        fig, ax = plt.subplots(figsize=(7, 4))
        _shade_domain(ax, fit)
        ax.semilogy(ys, np.maximum(cat("abs_error"), floor), label=r"$\|\varphi_\theta - p_{st}\|_\infty$")
        ax.semilogy(ys, np.maximum(cat("error_2"), floor), label=r"$\|\varphi_\theta - p_{st}\|_2$")
        ax.semilogy(ys, cat("certificate"), "k-", lw=1.2, label=r"certificate $\|A^\#\|_2\,\|Q^T\varphi_\theta\|_2$")
        ax.semilogy(ys, cat("sharp_certificate"), "k:", lw=1.2,
                    label=r"sharp $\|Q^T\varphi_\theta\|_2/\sigma_{min}$")
        ax.set_xlabel("y")
        ax.set_ylabel("error")
        ax.legend(fontsize=7)
    else:
        m = int(round(len(held.y) ** 0.5))
        extent = [fit.system.lower[0], fit.system.upper[0], fit.system.lower[1], fit.system.upper[1]]
        fig, axes = plt.subplots(1, 3, figsize=(14, 4))
        lo = np.log10(max(held.abs_error.min(), floor))
        hi = np.log10(held.certificate.max())
        for ax, arr, title in [(axes[0], held.abs_error, r"$\log_{10}\|\varphi_\theta - p_{st}\|_\infty$"),
                               (axes[1], held.certificate, r"$\log_{10}$ certificate (T4)")]:
            im = ax.imshow(np.log10(np.maximum(arr, floor)).reshape(m, m).T, origin="lower", extent=extent,
                           aspect="auto", vmin=lo, vmax=hi)
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("$y_0$")
            ax.set_ylabel("$y_1$")
            fig.colorbar(im, ax=ax, fraction=0.046)
        j = m // 2  # the slice y₁ = middle of its range
        sl = slice(j, None, m)
        y0 = held.y[sl, 0]
        ax = axes[2]
        ax.semilogy(y0, np.maximum(held.abs_error[sl], floor), label=r"$\|\cdot\|_\infty$ error")
        ax.semilogy(y0, np.maximum(held.error_2[sl], floor), label=r"$\|\cdot\|_2$ error")
        ax.semilogy(y0, held.certificate[sl], "k-", label="certificate")
        ax.semilogy(y0, held.sharp_certificate[sl], "k:", label="sharp certificate")
        ax.set_title(f"slice $y_1$ = {held.y[j, 1]:.3g}", fontsize=9)
        ax.set_xlabel("$y_0$")
        ax.legend(fontsize=7)
    fig.suptitle(f"{fit.system.name}: error and its certificate ({fit.loss} loss)")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def plot_training(fit, path: Path, plt, dpi: int = 150) -> Path:
    """Training loss, held-out max error and max certificate against the step."""
    h = fit.history
    fig, ax = plt.subplots(figsize=(7, 4))
    marker = "o" if len(h["step"]) <= 30 else None  # a short run: show each recorded point
    ax.semilogy(h["step"], np.maximum(h["loss"], 1e-300), marker=marker, ms=3, label=f"{fit.loss} loss (training)")
    if h["max_abs_error"]:
        ax.semilogy(h["step"], h["max_abs_error"], marker=marker, ms=3,
                    label=r"held-out max $|\varphi_\theta - p_{st}|$")
        ax.semilogy(h["step"], h["max_certificate"], "k--", marker=marker, ms=3, label="held-out max certificate")
    ax.set_xlabel(f"{fit.config.get('optimizer', '')} step")
    ax.set_ylabel("loss and held-out error (log scale)")
    ax.legend(fontsize=8)
    ax.set_title(f"{fit.system.name}: training")
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


FORMATS = ("png", "pdf", "svg")


def write_figures(fit, held, extra, out: Path, *, fmt: str = "png", dpi: int = 150) -> list[Path]:
    """All figures for `fit` under `out` as `*.{fmt}` at `dpi`; returns their paths."""

    plt = figures()
    out.mkdir(parents=True, exist_ok=True)
    paths = [plot_training(fit, out / f"training.{fmt}", plt, dpi=dpi)]
    if fit.system.d <= 2:
        paths.append(plot_components(fit, held, extra, out / f"phi_components.{fmt}", plt, dpi=dpi))
        paths.append(plot_error(fit, held, extra, out / f"error_certificate.{fmt}", plt, dpi=dpi))
    return paths


# --- sparse (surrogate) fits ---------------------------------------------------------------

def plot_learning_curve(history: dict, path: Path, plt, *, title: str, dpi: int = 150) -> Path:
    """Residual and KL parts of the loss, and the monitor points' true max ℓ1 error and max certificate,
    against training time."""
    t = np.asarray(history["seconds"], dtype=float)
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.semilogy(t, np.maximum(history["loss_residual"], 1e-300), label="residual loss (training)")
    if any(v > 0 for v in history["loss_kl"]):
        ax.semilogy(t, np.maximum(history["loss_kl"], 1e-300), label="KL term on the anchors (training)")
    if history.get("max_error_l1"):
        ax.semilogy(t, history["max_error_l1"], "C3", label=r"held-out max $\|\varphi_\theta - p_{st}\|_1$ (true)")
        cert = np.asarray(history["max_certificate"], dtype=float)
        ax.semilogy(t, np.where(np.isfinite(cert), cert, np.nan), "k--", label="held-out max certificate")
    ax.set_xlabel("training time (s)")
    ax.set_ylabel("loss / ℓ1 error (log scale)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def plot_certificate_vs_error(error, certificate, path: Path, plt, *, title: str, tol: float | None = None,
                              dpi: int = 150) -> Path:
    """Scatter of the certificate against the true ℓ1 error (the diagonal: a tight bound)."""
    error, certificate = np.asarray(error, float), np.asarray(certificate, float)
    ok = np.isfinite(certificate)
    fig, ax = plt.subplots(figsize=(5.2, 5))
    ax.loglog(error[ok], certificate[ok], ".", ms=4, alpha=0.7, label=f"certified ({ok.sum()} points)")
    lo = min(error.min(), certificate[ok].min() if ok.any() else error.min()) / 2
    hi = max(error.max(), certificate[ok].max() if ok.any() else error.max()) * 2
    ax.loglog([lo, hi], [lo, hi], "k-", lw=0.8, label="certificate = error")
    if tol is not None:
        ax.axhline(tol, color="C3", ls=":", label=f"tol = {tol:g}")
    if (~ok).any():
        ax.plot([], [], " ", label=f"{(~ok).sum()} points no anchor certified")
    ax.set_xlabel(r"true $\|\varphi_\theta(y) - p_{st}(y)\|_1$ (exact sparse solve)")
    ax.set_ylabel("certificate (docs/theory.md §7.8)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def plot_error_slice(ys, error, certificate, certificate_max, axis: int, path: Path, plt, *, title: str,
                     dpi: int = 150) -> Path:
    """True error and both certificates along one input axis (the others held fixed)."""
    x = np.asarray(ys)[:, axis]
    cert = np.asarray(certificate, float)
    cmax = np.asarray(certificate_max, float)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.semilogy(x, error, "o-", ms=3, label=r"true $\|\varphi_\theta - p_{st}\|_1$")
    ax.semilogy(x, np.where(np.isfinite(cert), cert, np.nan), "k-", label=r"certificate $2\sum_j h_j|(Q^T\varphi_\theta)_j|$")
    ax.semilogy(x, np.where(np.isfinite(cmax), cmax, np.nan), "k:", label=r"$2\max E[\tau]\,\|Q^T\varphi_\theta\|_1$")
    ax.set_xlabel(f"input $y_{{{axis + 1}}}$ (the others at the box centre)")
    ax.set_ylabel("ℓ1 error")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path
