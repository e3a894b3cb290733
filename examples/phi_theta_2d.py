"""
# A learned manifold: two slow variables

φ_θ on your own Q(y) with two slow variables, and the map of its error.
A 4-state ring of your own whose rates depend on two slow variables y = (y₀, y₁):
forward rates e^{y₀}, backward rates e^{y₁}, and a chord 0 → 2 at rate 1 + y₀².
Q(y) receives y of shape (2,).  `neural.fit_phi` fits φ_θ(y) on the box
[−1, 1]², and the T4 certificate (docs/theory.md §3.4), computed from Q(y) alone,
bounds the error at every point of the held-out grid; the maps show both on a
log scale.

    python examples/phi_theta_2d.py [--smoke] [--out DIR]
"""
# %%
# Fit
# ---
import argparse
from pathlib import Path

import numpy as np

import neural

parser = argparse.ArgumentParser(description="phi_theta on your own 2-D Q(y): the error map")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run (seconds)")
parser.add_argument("--out", default="out/examples/phi_theta_2d", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)


def Q(y):
    """y has shape (2,)."""
    a, b, c = np.exp(y[0]), np.exp(y[1]), 1.0 + y[0] ** 2
    R = np.array([[0.0, a, c, b], [b, 0.0, a, 0.0], [0.0, b, 0.0, a], [a, 0.0, b, 0.0]])
    return R - np.diag(R.sum(axis=1))


fit = neural.fit_phi(Q, domain=[(-1.0, 1.0), (-1.0, 1.0)], loss="residual", width=16 if args.smoke else 32,
                     steps=30 if args.smoke else 400, n_train=96 if args.smoke else None)
m = 15 if args.smoke else 41
g0, g1 = np.meshgrid(np.linspace(-1, 1, m), np.linspace(-1, 1, m), indexing="ij")
grid = np.stack([g0.ravel(), g1.ravel()], axis=1)
ev = fit.evaluate(grid)
s = ev.summary()
print(f"residual loss (never sees p_st): max |φ_θ − p_st| = {s['max_abs_error']:.2e}, "
      f"max certificate = {s['max_certificate']:.2e}, holds at all {s['n_points']} points: {s['certificate_holds']}")

# %%
# The error map and its certificate
# ---------------------------------
from sp_ode.core.reporting import figures

plt = figures()
fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
floor = 1e-17
lo = np.log10(max(ev.error_2.min(), floor))
hi = np.log10(ev.certificate.max())
for ax, values, title in [(axes[0], ev.error_2, r"$\log_{10}\|\varphi_\theta(y) - p_{st}(y)\|_2$"),
                          (axes[1], ev.certificate, r"$\log_{10}$ certificate $\|A^\#\|_2\|Q^T\varphi_\theta\|_2$")]:
    im = ax.imshow(np.log10(np.maximum(values, floor)).reshape(m, m).T, origin="lower",
                   extent=[-1, 1, -1, 1], vmin=lo, vmax=hi, aspect="auto")
    ax.set_xlabel("$y_0$")
    ax.set_ylabel("$y_1$")
    ax.set_title(title, fontsize=10)
    fig.colorbar(im, ax=ax, fraction=0.046)
fig.suptitle("φ_θ with two slow variables: error and its certificate (same colour scale)")
fig.tight_layout()
fig.savefig(OUT / "phi_theta_2d.png", dpi=120)
