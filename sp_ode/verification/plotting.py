"""The figures of a verdict: the manifold against its independent reference, the convergence rates, network marginals.

Every figure is a matplotlib figure object written to a file (`sp_ode.core.reporting.figures`
switches no global backend; matplotlib is imported only when a figure is drawn), with labelled axes, a legend that says what lines and markers
are, and the verdict in the title (docs/theory.md §3.5, §7.3, §7.7).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from sp_ode.core.reporting import figures
from sp_ode.systems.system import MasterEquationSystem, slow_symbol

__all__ = ["plot_certificate", "plot_manifold", "plot_network_marginals", "plot_network_convergence"]


def plot_certificate(cert, path, *, title: str | None = None) -> Path:
    """Log–log distances against ε, fitted lines over the points used, left-out points hollow;
    the title carries the verdict.  Returns the path."""

    plt = figures()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6.4, 4.4))
    labels = {"manifold": r"$\|x-\varphi(y)\|_\infty$",
              "corrected": rf"$\|x-h_\varepsilon(y)\|_\infty$ (k={cert.order})",
              "slow": r"$\|y-y_{\mathrm{red}}\|_\infty$"
              if not getattr(cert, "slow_names", None) else
              f"‖{slow_symbol(cert.slow_names)} − {slow_symbol(cert.slow_names)}_red‖∞"}
    any_dropped = False
    for j, (q, marker) in enumerate(zip(cert.fits, "osd")):
        f, d = cert.fits[q], cert.distances[q]
        color = f"C{j}"
        ok = np.isfinite(d) & (d > 0)
        ax.loglog(cert.eps[f.used], d[f.used], marker, color=color, ms=5,
                  label=f"{labels[q]}: slope {f.slope:.3f} ± {f.stderr:.3f} (expected {f.expected:g}) "
                        f"{'ok' if f.passed else 'FAIL'}")
        out = ok & ~f.used
        if out.any():
            any_dropped = True
            ax.loglog(cert.eps[out], d[out], marker, color=color, ms=6, mfc="none")
        if f.used.sum() >= 2:
            c = np.polyfit(np.log(cert.eps[f.used]), np.log(d[f.used]), 1)
            e = cert.eps[f.used]
            ax.loglog(e, np.exp(np.polyval(c, np.log(e))), "-", color=color, lw=1)
    if any_dropped:
        ax.plot([], [], "o", color="0.4", mfc="none", label="left out of the fit (hollow)")
    ax.axhline(cert.floor, color="0.6", ls=":", lw=0.8, label="solver error floor")
    from matplotlib.ticker import NullFormatter

    ax.xaxis.set_minor_formatter(NullFormatter())   # minor labels collide on a short log axis
    ax.set_xlabel(r"$\varepsilon = 1/P$")
    ax.set_ylabel(r"max distance for $t \geq t_0$")
    verdict = "certificate passed" if cert.passed else "certificate FAILED"
    ax.set_title(title or f"{cert.system}: {verdict}", fontsize=10)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_manifold(case, region, ident, report: dict, path: Path) -> Path:
    """φ against its independent reference over y (line = reference, markers = computed φ), folds marked,
    the visited range shaded; below, the difference per point.  When verify stopped at a fold: the
    largest Re λ along the branch, with y* marked.  The title carries the verdict."""
    from matplotlib.lines import Line2D

    plt = figures()
    verdict = "verify passed" if report["passed"] else "verify FAILED"
    names = getattr(case.system, "slow_names", None)   # the user's names of y, else y (y₁, y₂, … for d > 1)
    first = names[0] if names else r"$y_1$" if case.system.d > 1 else "$y$"
    star = f"{names[0]}*" if names else "y*"
    folds = []
    if region.y_star is not None:
        folds.append(float(np.ravel(region.y_star)[0]))
    if ident is None:
        fig, ax = plt.subplots(figsize=(6.4, 4.0))
        ys, mr = np.asarray(region.ys)[:, 0], np.asarray(region.max_real)
        order = np.argsort(ys)
        ax.plot(ys[order], mr[order], "k.-", ms=3, lw=0.8, label=r"largest Re $\lambda$ of $D_x f$ on the branch")
        ax.axhline(0.0, color="0.5", lw=0.8)
        for y in folds:
            ax.axvline(y, color="r", ls="--", lw=1, label=f"{region.kind} at $y^*$ = {y:.4g}")
        ax.set_xlabel(f"{first} (slow variable)")
        ax.set_ylabel(r"max Re $\lambda$")
        what = (f"normal hyperbolicity lost at {star} = {folds[0]:.4g}"
                + (f", t ≈ {region.t_star:.3g}" if region.t_star is not None else "")) if folds \
            else "the branch through y0 is not attracting"
        ax.set_title(f"{case.name}: {verdict} — {what}", fontsize=9)
        ax.legend(fontsize=8)
    else:
        fig, axes = plt.subplots(2, 1, figsize=(6.4, 5.6), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
        ys_grid = ident.ys
        phi, ref, err_pp = ident.phi, ident.reference, ident.error_per_point
        slice_note = ""
        if ys_grid.shape[1] > 1:
            # d > 1: the slice of the grid through its centre along y₁ (other coordinates fixed), so each
            # line is one function of y₁; the difference panel still covers the whole grid
            centre = ys_grid[np.argmin(np.linalg.norm(ys_grid - ys_grid.mean(axis=0), axis=1)), 1:]
            cut = np.all(np.isclose(ys_grid[:, 1:], centre), axis=1)
            if cut.sum() >= 3:
                sub = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
                slice_note = ", slice " + ", ".join(
                    f"{names[j + 1] if names else 'y' + str(j + 2).translate(sub)} = {v:.3g}"
                    for j, v in enumerate(centre))
                order_ = np.argsort(ys_grid[cut, 0])
                phi, ref = phi[cut][order_], (ref[cut][order_] if ref is not None else None)
                s = ys_grid[cut, 0][order_]
            else:
                order_ = np.argsort(ys_grid[:, 0])
                phi, ref, s = phi[order_], (ref[order_] if ref is not None else None), ys_grid[order_, 0]
        else:
            s = ys_grid[:, 0]
        s_all = ys_grid[:, 0]
        ref_name = "attractor of the frozen fast flow"
        for i in range(phi.shape[1]):
            color = f"C{i % 10}"
            if ref is not None:
                axes[0].plot(s, ref[:, i], "-", color=color, lw=1)
            axes[0].plot(s, phi[:, i], "o", color=color, ms=3.5, mfc="none")
        handles = [Line2D([], [], color="k", lw=1, label=f"line: {ref_name}"
                          + (" (no linear solve)" if isinstance(case.system, MasterEquationSystem) else "")),
                   Line2D([], [], color="k", marker="o", ls="none", mfc="none", ms=4,
                          label="markers: φ by Newton" + (" (bordered system)" if isinstance(case.system, MasterEquationSystem)
                                                          else ""))]
        states = getattr(case.system, "states", None)   # the user's state names, else the indices
        if phi.shape[1] <= 12:                          # one legend entry per state (colour)
            handles += [Line2D([], [], color=f"C{i % 10}", lw=2,
                               label=str(states[i]) if states is not None else f"state {i}")
                        for i in range(phi.shape[1])]
        # outside the axes: inside, "best" still covered a curve whenever the states fill the panel
        axes[0].legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        axes[0].set_ylabel((f"x = φ({slow_symbol(names)})" if names else r"$x = \varphi(y)$")
                           + (" (one colour per state)" if phi.shape[1] > 1 else "") + slice_note, fontsize=9)
        lo, hi = float(region.lower[0]), float(region.upper[0])
        for ax in axes:
            if hi > lo:
                ax.axvspan(lo, hi, color="0.92", zorder=0)
            for y in folds:
                ax.axvline(y, color="r", ls="--", lw=1)
        fold_notes = [n for n in region.notes if n.startswith(("fold", "gap", "eigenvalue"))]
        for n in fold_notes:
            try:
                y = float(re.search(r" at \S+ = (\S+?),", n).group(1))   # "fold at w = -0.667, outside …"
            except (AttributeError, ValueError):
                continue
            for ax in axes:
                ax.axvline(y, color="r", ls=":", lw=1)
        err = np.maximum(err_pp, 1e-18)
        axes[1].semilogy(s_all, err, "k.", label=r"$\max_i |\varphi_i - \mathrm{ref}_i|$ (0 drawn at $10^{-18}$)")
        tol = report["identity_tolerance"]
        if tol is not None and np.isfinite(tol):
            axes[1].axhline(tol, color="r", ls="--", lw=0.8, label="tolerance")
        axes[1].set_ylim(1e-19, max(1.0, 10 * float(np.nanmax(err))))
        axes[1].legend(fontsize=7, loc="upper right")
        axes[1].set_xlabel(f"{first} (slow variable; grey: range the trajectories visit"
                           + ("; red: fold" if folds or fold_notes else "") + ")")
        axes[1].set_ylabel("difference")
        axes[0].set_title(f"{case.name}: {verdict} (identity {report['checks']['identity']}, normal hyperbolicity "
                          f"{report['checks']['hyperbolicity']}, certificate {report['checks']['certificate']})",
                          fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _verdict_title(verdict) -> str:
    return f"{verdict.name}: verify {'passed' if verdict.passed else 'FAILED'}"

def plot_network_marginals(verdict, path) -> Path:
    """Marginals of p_st(y(t)) per fast species at four times (lines), the full solve's x(t) (markers)."""
    from matplotlib.lines import Line2D


    plt = figures()
    # the species with the widest support first (a two-state gene last): at most four panels
    species = sorted((s for s in verdict.species if s in verdict.marginals),
                     key=lambda s: -verdict.marginals[s].shape[1])[:4]
    if not species:
        raise ValueError("no marginals to draw: the reduced path did not run.")
    fig, axes = plt.subplots(1, len(species), figsize=(3.4 * len(species) + 0.6, 4.2), squeeze=False)
    slow = (getattr(verdict, "slow_names", None) or ("y",))[0]
    for ax, s in zip(axes[0], species):
        P = verdict.marginals[s]
        X = verdict.full_marginals.get(s)
        k = np.arange(P.shape[1])
        for j, (t, y) in enumerate(zip(verdict.marginal_times, verdict.marginal_ys)):
            color = f"C{j}"
            ax.plot(k, P[j], "-", color=color, lw=1.2, label=f"t = {t:.3g} ({slow} = {y[0]:.3g})")
            if X is not None:
                ax.plot(k, X[j], "o", color=color, ms=3, mfc="none")
        levels = [v for v in getattr(verdict, "marginal_uncertified", []) if v is not None]
        if levels:   # a normwise answer: mark the band where its entries are not certified
            ax.axhspan(0.0, max(levels), color="0.85", zorder=0, label="not certified (normwise bound)")
        if len(k) <= 6:
            ax.set_xticks(k)
        ax.set_xlabel(f"copy number of {s}")
        ax.set_ylabel("probability")
        ax.set_title(f"marginal of {s}", fontsize=9)
    h, lab = axes[0][0].get_legend_handles_labels()
    h += [Line2D([], [], color="k", lw=1.2, label="line: p_st(y(t)) (solver)")]
    if verdict.full_marginals:
        h += [Line2D([], [], color="k", marker="o", ls="none", mfc="none", ms=4,
                     label=f"markers: full solve x(t), ε = {verdict.full_eps:.2g}")]
    fig.legend(handles=h, fontsize=7, loc="lower center", ncol=3, frameon=False)
    fig.suptitle(f"{_verdict_title(verdict)} — fast marginals along the reduced path", fontsize=9)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)

def plot_network_convergence(verdict, path) -> Path:
    """The error |y − y_path| against ε (log-log) for both paths, fitted lines, slopes ± SE in the legend."""

    plt = figures()
    fig, ax = plt.subplots(figsize=(5.6, 4.2))
    eps = np.asarray(verdict.eps_values)
    for j, key in enumerate(("reduced", "corrected")):
        fit, d = verdict.fits.get(key), np.asarray(verdict.errors.get(key, []))
        if fit is None or not len(d):
            continue
        color = f"C{j}"
        ok = np.isfinite(d) & (d > 0)
        ax.loglog(eps[fit.used], d[fit.used], "o", color=color)
        ax.loglog(eps[ok & ~fit.used], d[ok & ~fit.used], "o", color=color, mfc="none")
        if np.isfinite(fit.slope) and fit.used.any():
            e = eps[fit.used]
            c = np.exp(np.mean(np.log(d[fit.used]) - fit.slope * np.log(e)))
            ax.loglog(e, c * e ** fit.slope, "-", color=color, lw=1,
                      label=f"|y − y_{key}|: slope {fit.slope:.3f} ± {fit.stderr:.3f} "
                            f"(expected {fit.expected:g}) {'ok' if fit.passed else 'FAIL'}")
    ax.set_xlabel("ε")
    ax.set_ylabel("max over save times of |y(t) − y_path(t)|")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7, loc="lower right", title="open: left out of the fit", title_fontsize=7)
    else:
        ax.text(0.5, 0.5, "no slope fitted", transform=ax.transAxes, ha="center", fontsize=9)
    ax.set_title(_verdict_title(verdict), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return Path(path)
