"""
# Slow manifolds up to order 3

Slow manifolds of order 0 to 3, and the rates ε, ε², ε³, ε⁴ at which their errors fall.
For ε dx/dt = f(x, y), dy/dt = g(x, y) with an attracting critical manifold
x = φ(y), the slow manifold is h_ε = φ + εh₁ + ε²h₂ + … (docs/theory.md §3.3, T3);
`sp_ode.slow_manifold(system, order=k)` solves the invariance equation
ε Dh_ε · g(h_ε, y) = f(h_ε, y) order by order with JAX derivatives.  Truncated at
order k it is O(ε^{k+1}) from the true slow manifold, so after the initial layer
a trajectory stays within C ε^{k+1} of the order-k manifold.

The system is the catalogue's `toy`: ε dx/dt = −x + y², dy/dt = −x, with φ = y²
and h₁ = 2y³ in closed form.  For k = 0 … 3 the fitted slopes of
max_{t ≥ t₀} |x(t) − h_ε^{(k)}(y(t))| against ε are k + 1.

    python examples/slow_manifold_orders.py [--smoke] [--out DIR]
"""
# %%
# The manifolds
# -------------
import argparse
from pathlib import Path

import numpy as np

import sp_ode

parser = argparse.ArgumentParser(description="slow manifolds of order 0..3 and their rates")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run (seconds)")
parser.add_argument("--out", default="out/examples/slow_manifold_orders", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)

entry = sp_ode.get_system("toy")
orders = [0, 1, 2, 3]
manifolds = {k: sp_ode.slow_manifold(entry.system, order=k) for k in orders}
y_probe = np.array([[0.8]])
h1 = float((manifolds[1](y_probe, eps=1.0) - manifolds[0](y_probe, eps=1.0))[0, 0])  # h = φ + ε h₁ at ε = 1
print(f"h₁(0.8) from the invariance equation: {h1:.15f}; closed form 2·0.8³ = {2 * 0.8**3:.15f}")

# %%
# Distances along trajectories for several ε
# ------------------------------------------
# One solve per ε (scipy Radau, rtol 1e-12); each order's distance is read off the
# same trajectory on one window after the initial layer of every ε, t ≥ t₀ = 30 max ε
# (where e^{−t/ε} < 1e-13).
eps_list = [0.2, 0.1, 0.05] if args.smoke else [0.2, 0.1, 0.05, 0.025, 0.0125]
T = 9.0
ts = np.linspace(0.0, T, 801)
dist = {k: [] for k in orders}
for eps in eps_list:
    system = entry.system.with_eps(eps)
    traj = sp_ode.simulate(system, (0.0, T), [0.0], [1.0], ts=ts, backend="scipy", rtol=1e-12, atol=1e-14)
    after = ts >= 30 * max(eps_list)
    for k in orders:
        h = manifolds[k](traj.y[after], eps=eps)
        dist[k].append(float(np.max(np.abs(traj.x[after] - h))))
eps_arr = np.array(eps_list)
slopes = {k: float(np.polyfit(np.log(eps_arr), np.log(dist[k]), 1)[0]) for k in orders}
for k in orders:
    cells = "  ".join(f"{d:.2e}" for d in dist[k])
    print(f"order {k}: distances {cells}   fitted slope {slopes[k]:.2f} (theory {k + 1})")

# %%
# The rates
# ---------
from matplotlib.ticker import NullFormatter

from sp_ode.core.reporting import figures

plt = figures()
fig, ax = plt.subplots(figsize=(6.5, 4.5))
for k in orders:
    line, = ax.loglog(eps_arr, dist[k], "o-", label=rf"order {k}: slope {slopes[k]:.2f} (theory {k + 1})")
ax.xaxis.set_minor_formatter(NullFormatter())
ax.set_xlabel(r"$\varepsilon$")
ax.set_ylabel(r"$\max_{t \geq t_0} |x(t) - h_\varepsilon^{(k)}(y(t))|$")
ax.set_title(r"toy system: distance to the order-$k$ slow manifold is $O(\varepsilon^{k+1})$")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(OUT / "slow_manifold_orders.png", dpi=120)
