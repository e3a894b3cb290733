"""
# Your own model: a voltage-gated ion channel

The walkthrough of the README's "Your own model" section, end to end, on a model of
your own: a 4-state voltage-gated channel (closed C1, closed C2, open O, inactivated
I) whose gating is fast, driving a slow membrane voltage V,

    ε dx/dt = Q(V)ᵀx,    C_m dV/dt = I_app − g_ch x_O (V − E_ch) − g_L (V − E_L),

with the opening rate α(V) = a₀e^{V/25}, the closing rate β(V) = b₀e^{−V/25}, the
inactivation rate k_inact and the recovery rate k_rec·e^{−V/30} (I → C1).  The rate
constants are *parameters* (``Q(y, args)``), so they can be varied and swept like any
other.  The steps: the model and its checks at the door; ``sp_ode.verify`` (the manifold
identity φ = p_st and the O(ε) rates); p_st(V) on a grid with its error bound and a
plot; a numeric detailed-balance check; a sweep over the applied current and the
inactivation rate; and φ_θ(V) fitted by ``sp-ode fit-phi``.  Everything is float64
without asking: this script never enables JAX's float64 mode.

    python examples/ion_channel.py [--smoke] [--out DIR]
"""
# %%
# The model file
# --------------
# One small Python file holds the model, so the command line (``--system
# file.py:OBJECT``) and this script use the same object.  ``states=`` names the fast
# states: figure legends, tables and error messages use the names.
import argparse
import importlib.util
import textwrap
from pathlib import Path

import numpy as np

parser = argparse.ArgumentParser(description="a voltage-gated ion channel, end to end")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run")
parser.add_argument("--out", default="out/examples/ion_channel", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)

MODEL = textwrap.dedent('''
    import jax.numpy as jnp
    import numpy as np

    import sp_ode

    STATES = ["C1", "C2", "O", "I"]
    PARAMETERS = {"a0": 2.0, "b0": 2.0, "k_inact": 1.0, "k_rec": 0.05,      # rates, 1/ms
                  "I_app": 2.0, "g_ch": 1.0, "C_m": 0.02}                    # µA/cm², mS/cm², µF/cm²


    def Q(y, args):
        """Gating generator at voltage V = y[0] (mV); rows sum to zero."""
        V = y[0]
        a = args["a0"] * jnp.exp(V / 25.0)           # opening steps
        b = args["b0"] * jnp.exp(-V / 25.0)          # closing steps
        rec = args["k_rec"] * jnp.exp(-V / 30.0)     # recovery from inactivation
        R = jnp.array([[0.0, 2 * a, 0.0, 0.0],                # C1 -> C2
                       [b, 0.0, a, 0.0],                      # C2 -> C1, O
                       [0.0, 2 * b, 0.0, args["k_inact"]],    # O  -> C2, I
                       [rec, 0.0, 0.0, 0.0]])                 # I  -> C1
        return R - jnp.diag(R.sum(axis=1))


    def g(t, x, y, args):
        """Membrane voltage: applied current, channel current through O, leak."""
        V = y[0]
        current = args["I_app"] - args["g_ch"] * x[2] * (V - 50.0) - 0.1 * (V + 70.0)
        return jnp.array([current / args["C_m"]])


    system = sp_ode.MasterEquationSystem(Q, g, eps=0.01, args=PARAMETERS, states=STATES, slow_names=("V",),
                                         name="ion_channel")
    x0 = np.array([1.0, 0.0, 0.0, 0.0])      # all channels closed
    y0 = np.array([-70.0])                   # resting voltage, mV
''')
model_file = OUT / "ion_channel_model.py"
model_file.write_text(MODEL)
print(MODEL)

spec = importlib.util.spec_from_file_location("ion_channel_model", model_file)
model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(model)

# %%
# Checks at the door
# ------------------
# ``sp_ode.check_model`` traces Q and g once with the shapes of x0 and y0: a NumPy call
# or a wrong shape would be named here.  The same checks (and the same advice) come
# from every solve.
import sp_ode

found = sp_ode.check_model(model.system, model.x0, model.y0)
print(f"n = {found.n} states {model.system.states}, d = {found.d} slow variable (V)")

# %%
# Verify
# ------
# ``sp_ode.verify`` checks, where the trajectory goes, that the manifold is normally
# hyperbolic, that φ(V) = p_st(V) by independent methods, and that the full solution
# approaches φ at rate O(ε), the corrected manifold at O(ε²) (docs/theory.md §3).
from types import SimpleNamespace

case = SimpleNamespace(system=model.system, t_span=(0.0, 0.5), x0=model.x0, y0=model.y0)
smoke = dict(smoke=True, backend="scipy", num=5, Ps=(16, 32, 64, 128, 256)) if args.smoke else {}
report = sp_ode.verify(case, out=OUT / "verify", overwrite=True, **smoke)
print(report.format())

# %%
# p_st(V) on a grid, with its error bound
# ---------------------------------------
# ``critical_manifold`` takes a flat grid of voltages (d = 1: N points, answer (N, 4));
# ``stationary_distribution`` gives the same p_st with a componentwise error bound.
from sp_ode.core.reporting import figures

V = np.linspace(-90.0, 40.0, 27 if args.smoke else 131)
phi = sp_ode.critical_manifold(model.system, V)
bounds = []
for k, v in enumerate(V):
    p, info = sp_ode.stationary_distribution(model.system.Q([v]), return_info=True)
    assert np.all(np.abs(p - phi[k]) <= 1e-12), "Newton's φ and GTH's p_st disagree"
    bounds.append(info["componentwise_bound"])
print(f"p_st(V) on {len(V)} voltages; entrywise relative error bound ≤ {max(bounds):.1e}")
print(f"{'V (mV)':>8} " + " ".join(f"{s:>10}" for s in model.system.states))
for k in range(0, len(V), max(1, len(V) // 6)):
    print(f"{V[k]:8.1f} " + " ".join(f"{phi[k, i]:10.3e}" for i in range(4)))

plt = figures()
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for i, state in enumerate(model.system.states):
    ax.semilogy(V, phi[:, i], label=state)
ax.set_xlabel("membrane voltage V (mV)")
ax.set_ylabel("stationary occupancy $p_{st}(V)$")
ax.set_title("gating equilibrium of the ion channel: $\\varphi(V) = p_{st}(V)$")
ax.legend(title="state")
fig.tight_layout()
fig.savefig(OUT / "p_st.png", dpi=120)

# %%
# Detailed balance
# ----------------
# The cycle C1 → C2 → O → I → C1 has no way back from I to O: the chain is not
# reversible, and the numeric check says which rate has no reverse (state names).
balance = sp_ode.check_detailed_balance(model.system.Q([-40.0]), states=model.system.states)
print(balance.message)

# %%
# A sweep over the applied current and the inactivation rate
# ----------------------------------------------------------
# The rate constant ``k_inact`` lives inside Q(y, args), yet is swept like any parameter;
# each point is solved by the cheapest corrected reduced path that meets ``tol``, checked
# against full solves on a validated subset (``x0="manifold"``: no initial layer).
I_values = np.linspace(0.0, 6.0, 3 if args.smoke else 9)
k_values = np.array([0.5, 2.0]) if args.smoke else np.array([0.25, 0.5, 1.0, 2.0])
grid_I, grid_k = (a.ravel() for a in np.meshgrid(I_values, k_values, indexing="ij"))
ts = np.linspace(0.0, 0.5, 6)
result = sp_ode.sweep(model.system, {"I_app": grid_I, "k_inact": grid_k}, (0.0, 0.5), "manifold", model.y0,
                      ts=ts, tol=1e-4, validate_fraction=0.34 if args.smoke else 0.1, max_order=1,
                      out=OUT / ("sweep-smoke" if args.smoke else "sweep"), progress_bar=False)
V_end = result.y[:, -1, 0].reshape(len(I_values), len(k_values))
print(f"{'I_app':>6} " + " ".join(f"V(k_inact={k:g})" for k in k_values))
for i, I in enumerate(I_values):
    print(f"{I:6.2f} " + " ".join(f"{v:15.4f}" for v in V_end[i]))
print(f"paths taken: {np.unique(result.path, return_counts=True)}; worst true/estimated error on the validated "
      f"points: {np.nanmax(result.ratio):.2g}")

fig2, ax2 = plt.subplots(figsize=(6.0, 3.6))
for j, k in enumerate(k_values):
    ax2.plot(I_values, V_end[:, j], marker="o", label=f"$k_{{inact}}$ = {k:g} /ms")
ax2.set_xlabel("applied current $I_{app}$ (µA/cm²)")
ax2.set_ylabel("V at t = 0.5 ms (mV)")
ax2.set_title("sweep: voltage reached, by current and inactivation rate")
ax2.legend()
fig2.tight_layout()
fig2.savefig(OUT / "sweep.png", dpi=120)

# %%
# φ_θ(V) by ``sp-ode fit-phi``
# ----------------------------
# An MLP onto the simplex fitted to p_st(V), with a certificate ‖φ_θ − p_st‖ ≤ ‖A^#‖‖Qᵀφ_θ‖
# that needs no p_st (docs/theory.md §3.4).  The command names the model file; a second
# run into the same folder is refused unless ``--overwrite``.
import json

from sp_ode.cli import main

fit_out = OUT / "fit-phi"
argv = ["fit-phi", "--system", f"{model_file}:system", "--domain", "-90", "40", "--out", str(fit_out),
        "--overwrite"] + (["--smoke"] if args.smoke else ["--steps", "300"])
code = main(argv)
fit = json.loads((fit_out / "report.json").read_text())
print(f"fit-phi exit code {code}: max |φ_θ − p_st| = {fit['max_abs_error']:.2e}, certificate "
      f"{fit['max_certificate']:.2e}, holds: {fit['certificate_holds']}")
