"""
# Enzyme kinetics and the quasi-steady state

The quasi-steady-state approximation and its O(ε) error.
Michaelis–Menten kinetics in the standard QSSA scaling (catalogue entry
`michaelis_menten`, docs/theory.md §6): the complex c is fast, the substrate s slow,

    ε dc/dt = s − (s + κ) c,    ds/dt = −s + (s + κ − λ) c,

with κ = 1, λ = 1/2, c(0) = 0, s(0) = 1.  The critical manifold is
c = φ(s) = s/(s + κ) and the reduced flow ds/dt = −λ s/(s + κ) has the closed form
s₀(t) = κ W((s(0)/κ) e^{(s(0) − λt)/κ}) (Lambert W).  The full solution approaches
it at rate O(ε): the fitted log–log slope of max_t |s(t) − s₀(t)| is 1.

    python examples/enzyme_kinetics.py [--smoke] [--out DIR]
"""
# %%
# Simulate for several ε
# ----------------------
import argparse
from pathlib import Path

import numpy as np

import sp_ode

parser = argparse.ArgumentParser(description="Michaelis-Menten: QSSA and its O(eps) error")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run (seconds)")
parser.add_argument("--out", default="out/examples/enzyme_kinetics", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)

Ps = [8, 16, 32, 64] if args.smoke else [8, 16, 32, 64, 128, 256, 512]
ts = np.linspace(0.0, 5.0, 101 if args.smoke else 401)
errors, runs = [], {}
for P in Ps:
    entry = sp_ode.get_system("michaelis_menten", P=P)
    traj = sp_ode.simulate(entry, entry.t_span, entry.x0, entry.y0, ts=ts, backend="scipy",
                           rtol=1e-10, atol=1e-12)
    s_red = entry.reduced_solution(ts)[:, 0]
    errors.append(np.max(np.abs(traj.y[:, 0] - s_red)))
    runs[P] = traj
    print(f"P = {P:4d} (ε = {1 / P:.4f}):  max |s − s₀| = {errors[-1]:.3e}   ({traj.stats['nfev']} f-evaluations)")
eps = 1.0 / np.array(Ps, dtype=float)
slope = np.polyfit(np.log(eps), np.log(errors), 1)[0]
print(f"fitted slope of max |s − s₀| against ε: {slope:.3f} (theory: 1)")

# %%
# The figure
# ----------
# Left: substrate and complex for the smallest P against the QSSA (s₀, φ(s₀)).
# Right: the error against ε on log–log axes with its fitted slope.
from matplotlib.ticker import NullFormatter

from sp_ode.core.reporting import figures

plt = figures()
fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(10, 4))
P0 = Ps[0]
traj = runs[P0]
s0 = entry.reduced_solution(ts)[:, 0]
ax_t.plot(ts, traj.y[:, 0], "C0-", label=f"substrate s (ε = 1/{P0})")
ax_t.plot(ts, traj.x[:, 0], "C1-", label=f"complex c (ε = 1/{P0})")
ax_t.plot(ts, s0, "C0--", label=r"QSSA $s_0(t)$")
ax_t.plot(ts, s0 / (s0 + 1.0), "C1--", label=r"$\varphi(s_0) = s_0/(s_0+\kappa)$")
ax_t.set_xlabel("time t")
ax_t.set_ylabel("concentration")
ax_t.legend(fontsize=8)
ax_e.loglog(eps, errors, "o", label=r"$\max_t |s(t) - s_0(t)|$")
ax_e.loglog(eps, np.exp(np.polyval(np.polyfit(np.log(eps), np.log(errors), 1), np.log(eps))), "k-", lw=1,
            label=f"fit: slope {slope:.2f}")
ax_e.xaxis.set_minor_formatter(NullFormatter())  # decade labels only: no overlapping minor labels
ax_e.set_xlabel(r"$\varepsilon = 1/P$")
ax_e.set_ylabel("max error in s")
ax_e.legend(fontsize=8)
fig.suptitle("Michaelis–Menten: the QSSA is O(ε) accurate")
fig.tight_layout()
fig.savefig(OUT / "enzyme_kinetics.png", dpi=120)
