"""
# A learned manifold: one slow variable

φ_θ on your own Q(y) with one slow variable: fit, certify, save, reuse.
A 3-state generator of your own, Q(y) with y of shape (1,) (README "Your own
model"): a cycle 0 → 1 → 2 → 0 at rates e^{y}, 1, e^{−y} and the reverse steps at
rate ½.  `neural.fit_phi` fits an MLP φ_θ(y) onto the simplex to p_st(y)
(docs/theory.md §3.4); every point gets the T4 certificate computed from Q(y)
alone, ‖φ_θ(y) − p_st(y)‖₂ ≤ ‖A^#‖₂ ‖Q(y)ᵀφ_θ(y)‖₂.  The fitted network is saved
(safetensors weights + JSON config), loaded back, rebuilt as a pure JAX function
and used as `phi=` of `sp_ode.simulate_reduced` — the reduced flow on φ_θ.

    python examples/phi_theta_1d.py [--smoke] [--out DIR]
"""
# %%
# Your Q(y) and the fit
# ---------------------
import argparse
from pathlib import Path

import numpy as np

parser = argparse.ArgumentParser(description="phi_theta on your own 1-D Q(y)")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run (seconds)")
parser.add_argument("--out", default="out/examples/phi_theta_1d", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)


def Q(y):
    """y has shape (1,); plain NumPy is fine for fit_phi (it never traces Q)."""
    a, c = np.exp(y[0]), np.exp(-y[0])
    R = np.array([[0.0, a, 0.5], [0.5, 0.0, 1.0], [c, 0.5, 0.0]])
    return R - np.diag(R.sum(axis=1))


import neural

fit = neural.fit_phi(Q, domain=[(-2.0, 2.0)], loss="kl", width=16 if args.smoke else 32,
                     steps=40 if args.smoke else 400, n_train=64 if args.smoke else None)
ev = fit.evaluate()
summary = ev.summary()
print(f"{fit.status}: max |φ_θ − p_st| = {summary['max_abs_error']:.2e}, "
      f"max certificate = {summary['max_certificate']:.2e}, holds everywhere: {summary['certificate_holds']}")

# %%
# Save, load, rebuild in JAX
# --------------------------
import jax

from sp_ode.core.precision import float64

folder = neural.save_phi(fit.model, OUT / "phi", metadata={"system": "my 3-state cycle"})
phi_theta = neural.load_phi(folder)
phi_jax = phi_theta.jax_fn()
ys = np.linspace(-2.0, 2.0, 9)
with float64():  # sp_ode's scoped float64 (the global JAX flag is left alone)
    gap = np.max(np.abs(np.asarray(jax.vmap(phi_jax)(ys[:, None])) - phi_theta.predict(ys)))
print(f"saved to {folder}/; JAX rebuild against torch: max difference {gap:.1e}")

# %%
# The reduced flow on φ_θ
# -----------------------
# ε dx/dt = Q(y)ᵀx, dy/dt = 1 − 3 x₂ (written with jax.numpy for the solver);
# the reduced flow dy/dt = g(φ(y), y) on φ_θ against the one on the exact p_st(y).
import jax.numpy as jnp

import sp_ode


def Q_jax(y):
    a, c = jnp.exp(y[0]), jnp.exp(-y[0])
    R = jnp.array([[0.0, a, 0.5], [0.5, 0.0, 1.0], [c, 0.5, 0.0]])
    return R - jnp.diag(R.sum(axis=1))


system = sp_ode.MasterEquationSystem(Q_jax, lambda x, y: jnp.array([1.0 - 3.0 * x[2]]), P=100)
ts = np.linspace(0.0, 3.0, 61)
exact = sp_ode.simulate_reduced(system, (0.0, 3.0), [-1.5], ts=ts, backend="scipy")
approx = sp_ode.simulate_reduced(system, (0.0, 3.0), [-1.5], phi=phi_jax, ts=ts, backend="scipy")
print(f"reduced flow on φ_θ vs on p_st: max |Δy| = {np.max(np.abs(approx.y - exact.y)):.2e}")

# %%
# The figures: φ_θ against p_st, and the error under its certificate
# ------------------------------------------------------------------
from sp_ode.core.reporting import figures

plt = figures()
fig, (ax_p, ax_e) = plt.subplots(1, 2, figsize=(11, 4))
y = ev.y[:, 0]
every = max(len(y) // 25, 1)  # about 25 markers: the line is p_st, a marker is φ_θ
for i in range(3):
    line, = ax_p.plot(y, ev.p_st[:, i], lw=2, label=f"$p_{{st,{i}}}(y)$")
    ax_p.plot(y[::every], ev.phi[::every, i], "o", mfc="none", color=line.get_color())
ax_p.plot([], [], "ko", mfc="none", label=r"$\varphi_\theta(y)$")
ax_p.set_xlabel("slow variable y")
ax_p.set_ylabel("probability")
ax_p.legend(fontsize=8)
ax_e.semilogy(y, np.maximum(ev.error_2, 1e-17), label=r"$\|\varphi_\theta - p_{st}\|_2$")
ax_e.semilogy(y, ev.certificate, "k-", label=r"certificate $\|A^\#\|_2\|Q^T\varphi_\theta\|_2$")
ax_e.set_xlabel("slow variable y")
ax_e.set_ylabel("error (log scale)")
ax_e.legend(fontsize=8)
fig.suptitle(f"φ_θ on your own Q(y): {fit.loss} loss, {fit.config.get('steps')} steps")
fig.tight_layout()
fig.savefig(OUT / "phi_theta_1d.png", dpi=120)
