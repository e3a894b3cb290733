"""
# FitzHugh–Nagumo: a fold and a jump

A slow branch, its fold, and the jump to the other branch.
A model of your own, with the two-argument shorthand `f(x, y)`:

    ε dx/dt = x − x³/3 − y,    dy/dt = x + a − b y,    a = 0.7, b = 0.8.

The critical manifold y = x − x³/3 has two attracting branches (|x| > 1) and a
repelling middle branch; they meet at the folds (x, y) = (±1, ±2/3), where
∂f/∂x = 1 − x² vanishes and normal hyperbolicity is lost (docs/theory.md §3.2).
`sp_ode.locate_loss_of_hyperbolicity` follows the right branch upward from y = 0
and finds the fold; a trajectory started on that branch climbs it, jumps at the
fold to the left branch and slides to the equilibrium.  On the branch it stays
within O(ε) of φ: the distance to the order-1 slow manifold φ + εh₁ is O(ε²).

    python examples/fitzhugh_nagumo.py [--smoke] [--out DIR]
"""
# %%
# The model and the fold
# ----------------------
import argparse
from pathlib import Path

import numpy as np

import sp_ode

parser = argparse.ArgumentParser(description="FitzHugh-Nagumo on a branch and at its fold")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run (seconds)")
parser.add_argument("--out", default="out/examples/fitzhugh_nagumo", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)

A, B = 0.7, 0.8


def f(x, y):
    return x - x**3 / 3 - y


def g(x, y):
    return x + A - B * y


eps = 0.02
system = sp_ode.FastSlowSystem(f, g, eps=eps, name="fitzhugh_nagumo")
checked = sp_ode.check_model(system, x0=[2.0], y0=[0.0])
system = checked.system
fold = sp_ode.locate_loss_of_hyperbolicity(system, 0.0, 1.0, x0=[2.0], num=21 if args.smoke else 101)
print(f"{fold.kind} at y = {fold.y[0]:.12f}, x = {fold.x[0]:.12f}  (closed form: y = 2/3, x = 1)")
print(f"error: |Δy| = {abs(fold.y[0] - 2 / 3):.1e}, |Δx| = {abs(fold.x[0] - 1):.1e}")

# %%
# A trajectory on the branch, and the slow manifold
# -------------------------------------------------
# Started at (x, y) = (2, 0) on the right branch; the distance to φ + εh₁ while on
# the branch (after the initial layer, t ≥ 10ε, and y ≤ 0.5, away from the fold) is
# compared for two values of ε.
ts = np.linspace(0.0, 6.0, 3001)
traj = sp_ode.simulate(system, (0.0, 6.0), [2.0], [0.0], ts=ts, backend="scipy", rtol=1e-10, atol=1e-12)
manifold = sp_ode.slow_manifold(system, order=1, x_guess=[2.0])
dist = {}
for e in (eps, eps / 2):
    tr = traj if e == eps else sp_ode.simulate(system.with_eps(e), (0.0, 6.0), [2.0], [0.0], ts=ts,
                                               backend="scipy", rtol=1e-10, atol=1e-12)
    on_branch = (tr.y[:, 0] <= 0.5) & (tr.x[:, 0] > 1.0) & (ts >= 10 * e)
    h = manifold(tr.y[on_branch], eps=e)
    dist[e] = float(np.max(np.abs(tr.x[on_branch] - h)))
    print(f"ε = {e:.3f}: max |x − (φ + εh₁)(y)| on the branch = {dist[e]:.3e}")
print(f"ratio for ε halved: {dist[eps] / dist[eps / 2]:.2f} (O(ε²): about 4)")

# %%
# The phase plane
# ---------------
# Attracting branches solid, the repelling one dashed, folds marked; the
# trajectory climbs the right branch, jumps at the fold and settles at the equilibrium.
from sp_ode.core.reporting import figures

plt = figures()
fig, ax = plt.subplots(figsize=(7, 5))
xs = np.linspace(-2.4, 2.4, 400)
ys = xs - xs**3 / 3
for part, style in [(xs <= -1, "k-"), ((xs >= -1) & (xs <= 1), "k--"), (xs >= 1, "k-")]:
    ax.plot(xs[part], ys[part], style, lw=1.2)
ax.plot([], [], "k-", label="attracting branches of $S_0$")
ax.plot([], [], "k--", label="repelling branch")
ax.plot([1, -1], [2 / 3, -2 / 3], "rx", ms=9, mew=2, label="folds (x = ±1)")
ax.plot(fold.x, fold.y, "o", mfc="none", mec="C3", ms=12, label="fold located")
ax.plot(traj.x[:, 0], traj.y[:, 0], "C0-", lw=1.5, label=f"trajectory, ε = {eps}")
ax.plot(traj.x[0, 0], traj.y[0, 0], "C0o")
ax.set_xlabel("fast variable x")
ax.set_ylabel("slow variable y")
ax.set_title("FitzHugh–Nagumo: slow branch, fold and jump")
ax.legend(fontsize=8, loc="lower right")
fig.tight_layout()
fig.savefig(OUT / "fitzhugh_nagumo.png", dpi=120)
