"""
# Verifying your own master equation

Your own master equation through `sp-ode verify`, from a model file.
A 4-state master equation of your own, written the way sp_ode wants it
(README "Your own model"): `Q(y)` with `jax.numpy`, y of shape (d,), rows summing
to zero; the slow variable is driven by the fast distribution x through
`g(x, y)` (the two-argument shorthand is accepted and wrapped).

The model: a ring 0 → 1 → 2 → 3 → 0 whose forward rates grow with y and
whose backward rates shrink with it, and a slow variable relaxing towards the
occupation difference of states 0 and 2,

    ε dx/dt = Q(y)ᵀx,    dy/dt = 4 (x₀ − x₂) − y.

`sp-ode verify` then checks the manifold identity φ(y) = p_st(y)
(docs/theory.md §3.1, T1) and fits the O(ε), O(ε²) and O(ε) rates of the
convergence certificate (§3.5).  The model is written to a file and named as
`--system file.py:OBJECT`, exactly as you would from the shell.

    python examples/own_master_equation.py [--smoke] [--out DIR]
"""
# %%
# The model file
# --------------
# Everything the command line needs is in one small Python file: the system and
# a catalogue-like entry with its time span and initial state.
import argparse
import json
import textwrap
from pathlib import Path

parser = argparse.ArgumentParser(description="your own 4-state master equation through sp-ode verify")
parser.add_argument("--smoke", action="store_true", help="the test suite's tiny run (seconds)")
parser.add_argument("--out", default="out/examples/own_master_equation", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)

MODEL = textwrap.dedent('''
    from types import SimpleNamespace

    import jax.numpy as jnp
    import numpy as np

    import sp_ode


    def Q(y):
        """4-state ring: forward e^{y/2}, backward e^{-y/2}, plus a chord 0 -> 2 at rate 0.3."""
        a, b = jnp.exp(0.5 * y[0]), jnp.exp(-0.5 * y[0])
        R = jnp.array([[0.0, a, 0.3, b],
                       [b, 0.0, a, 0.0],
                       [0.0, b, 0.0, a],
                       [a, 0.0, b, 0.0]])
        return R - jnp.diag(R.sum(axis=1))


    def g(x, y):
        return jnp.array([4.0 * (x[0] - x[2]) - y[0]])


    system = sp_ode.MasterEquationSystem(Q, g, P=64, name="ring4")
    entry = SimpleNamespace(system=system, t_span=(0.0, 3.0), x0=np.array([1.0, 0.0, 0.0, 0.0]),
                            y0=np.array([0.2]))
''')
model_file = OUT / "my_model.py"
model_file.write_text(MODEL)
print(MODEL)

# %%
# Checks at the door
# ------------------
# `sp_ode.check_model` traces f, g and Q once with the shapes of x0, y0: a NumPy
# call or a wrong shape would be named here, before any solve.
import importlib.util

import sp_ode

spec = importlib.util.spec_from_file_location("my_model", model_file)
my_model = importlib.util.module_from_spec(spec)
spec.loader.exec_module(my_model)
found = sp_ode.check_model(my_model.system, my_model.entry.x0, my_model.entry.y0)
print(f"m = n = {found.m} states, d = {found.d} slow variable")

# %%
# Verify
# ------
# The same command as `sp-ode verify --system my_model.py:entry`.  The smoke run
# uses scipy's Radau (no compilation) and four values of P.
from sp_ode.cli import main

verify_out = OUT / "verify"
argv = ["verify", "--system", f"{model_file}:entry", "--out", str(verify_out)]
if args.smoke:
    argv += ["--smoke", "--backend", "scipy", "--num", "5", "--Ps", "16", "32", "64", "128"]
else:
    argv += ["--Ps", "16", "32", "64", "128", "256", "512", "1024"]
code = main(argv)
report = json.loads((verify_out / "report.json").read_text())
print(f"exit code {code}; identity max |φ − p_st| = {report['identity_max_error']:.2e}")
print("fitted slopes:", {k: round(report[k], 3) for k in ("slope_manifold", "slope_corrected", "slope_slow")})

# %%
# The figures `verify` wrote
# --------------------------
# `verify` writes its figures as PNG files beside its report; the gallery shows those files
# as they are, at the size they were drawn.
pngs = sorted(verify_out.glob("*.png"))
print("figures:", ", ".join(p.name for p in pngs))
