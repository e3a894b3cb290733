"""
# A learned surrogate with its certificate

A reaction network whose rates depend on two slow inputs y = (y₁, y₂): gene A is made at
rate 6·y₁ and gene B at 1 + 2·y₂·A/(3 + A) (activated by A), both degraded at rate 1.  Its
stationary law p_st(y) lives on the N × N grid of counts.  `neural.fit_phi` trains φ_θ(y) from
the sparse generator Q(y) alone (the matrix-free residual on a Sobol design; a KL term on a few
anchor solves is optional and off here), and `certified_predict` evaluates it at new inputs with a
certified bound on ‖φ_θ(y) − p_st(y)‖₁ at each (docs/theory.md §7.8), falling back to the exact
sparse solve where the bound misses `tol`.  Then φ_θ drives the reduced flow of a NetworkSystem
with both inputs dynamic: `sp_ode.simulate_reduced(system, phi=fit.model)`.

    python examples/phi_surrogate.py [--smoke] [--out DIR]
"""
# %%
# The network and the fit
# -----------------------
import argparse
from pathlib import Path

import numpy as np

import neural
import sp_ode
from neural.phi.surrogate import design_points

parser = argparse.ArgumentParser(description="phi_theta as a certified surrogate of a two-gene network")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run (seconds)")
parser.add_argument("--out", default="out/examples/phi_surrogate", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)
N = 10 if args.smoke else 30

net = sp_ode.ReactionNetwork("0 => A, 6*y1; A -> 0, 1; 0 => B, 1 + 2*y2*A/(3 + A); B -> 0, 1",
                             slow=["y1", "y2"], name="two_gene_small")
system = sp_ode.NetworkSystem(net, net.state_space({"A": N - 1, "B": N - 1}),
                              {"y1": "0.5*(1.2 - y1*E[B]/6)", "y2": "0.5*(1 - y2*E[A]/6)"}, eps=1e-3)
fit = neural.fit_phi(system, loss="residual", domain=[(0.7, 1.3), (0.7, 1.3)], head="factored",
                     width=16 if args.smoke else 32, steps=20 if args.smoke else 400,
                     n_train=32 if args.smoke else 256, n_anchors=4 if args.smoke else 16, n_monitor=4)
print(f"n = {system.n} states, d = 2 inputs: trained {fit.config['steps_done']} L-BFGS steps in "
      f"{fit.train_seconds:.1f} s from Q(y) alone")

# %%
# Certified predictions at new inputs
# -----------------------------------
ys = design_points(fit.system.lower, fit.system.upper, 16 if args.smoke else 256, seed=7)
pred = fit.certified_predict(ys, tol=1e-2)
check = fit.evaluate(ys[:8])                  # exact sparse solves (a PhiEvaluation, norm "l1"), only to show the certificate holds
print(f"certified_predict at {len(ys)} inputs: max certificate {pred.surrogate_certificate.max():.2e}, "
      f"{pred.fell_back.sum()} fell back to the exact solve; on 8 of them the true error is "
      f"{check.error_l1.max():.2e} ≤ certificate {check.certificate.max():.2e}: {bool(check.holds.all())}")

from sp_ode.core.reporting import figures  # noqa: E402

plt = figures()
fig, axes = plt.subplots(1, 2, figsize=(11, 4.3))
ok = np.isfinite(check.certificate)
axes[0].loglog(check.error_l1[ok], check.certificate[ok], "o")
lim = [min(check.error_l1.min(), 1e-6), max(check.certificate[ok].max(initial=1e-6), 1e-1)]
axes[0].loglog(lim, lim, "k-", lw=0.8)
axes[0].set_xlabel(r"true $\|\varphi_\theta - p_{st}\|_1$")
axes[0].set_ylabel("certificate")
axes[0].set_title("the certificate bounds the error", fontsize=10)
h = fit.history
axes[1].semilogy(h["seconds"], h["loss_residual"], label="residual loss")
axes[1].semilogy(h["seconds"], h["max_error_l1"], label="held-out max ℓ1 error (true)")
axes[1].set_xlabel("training time (s)")
axes[1].legend(fontsize=8)
axes[1].set_title("learning curve", fontsize=10)
fig.tight_layout()
fig.savefig(OUT / "phi_surrogate.png", dpi=110)

# %%
# The reduced flow on φ_θ against the one on exact sparse solves
# --------------------------------------------------------------
ts = np.linspace(0.0, 4.0, 9)
fast = sp_ode.simulate_reduced(system, (0.0, 4.0), [0.8, 1.2], phi=fit.model, ts=ts)
exact = system.simulate_reduced((0.0, 4.0), [0.8, 1.2], t_eval=ts, rtol=1e-8, atol=1e-10)
print(f"reduced flow: max |y_φθ − y_exact| = {np.abs(fast.y - exact.y).max():.2e} over t ∈ [0, 4] "
      f"({fast.stats['seconds']:.2f} s without a solve, {exact.stats['seconds']:.2f} s with "
      f"{exact.stats['solves']} sparse solves)")
