"""
# Exact stationary distributions

A symbolic check of your own generator: p_st exactly, in LaTeX, and a claimed formula checked.
An enzyme cycle with symbolic rates, written as `i -> j : rate` lines (every
symbol is a positive rate constant; format in `sp_ode.symbolic.io`):

    E  -> ES : k1*s        (binding, substrate s held fixed)
    ES -> E  : km1         (unbinding)
    ES -> EP : k2          (catalysis)
    EP -> E  : k3          (product release)

`sp-ode symbolic FILE` computes p_st exactly by the Markov chain tree theorem
(docs/theory.md §3.1, T1) and certifies Qᵀp = 0; `--latex` prints it with the
common denominator once; `--claim` checks a formula of your own and, when it is
false, prints the leftover (Qᵀp_claimed)_j.  By hand, from the balance of EP and
ES: p ∝ (k3 (km1 + k2), k1 k3 s, k1 k2 s).

    python examples/symbolic_enzyme.py [--smoke] [--out DIR]
"""
# %%
# The generator file and the exact p_st
# -------------------------------------
import argparse
from pathlib import Path

parser = argparse.ArgumentParser(description="sp-ode symbolic on an enzyme cycle")
parser.add_argument("--smoke", action="store_true", help="the test suite's run (the same: it takes a second)")
parser.add_argument("--out", default="out/examples/symbolic_enzyme", help="output folder")
args, _ = parser.parse_known_args()
OUT = Path(args.out)
OUT.mkdir(parents=True, exist_ok=True)

(OUT / "enzyme.txt").write_text("""\
# enzyme cycle: E + S <-> ES -> EP -> E + P, substrate s fixed
states: E ES EP
E  -> ES : k1*s
ES -> E  : km1
ES -> EP : k2
EP -> E  : k3
""")
from sp_ode.cli import main

code = main(["symbolic", str(OUT / "enzyme.txt"), "--latex", "--reversibility", "--out", str(OUT / "p_st.tex")])
print("exit code", code)

# %%
# A claimed formula that is wrong
# -------------------------------
# The claim forgets k3 in p_ES; the leftover names exactly what is missing.
(OUT / "claim.txt").write_text("""\
E  : k3*(km1 + k2) / (k3*(km1 + k2) + k1*k3*s + k1*k2*s)
ES : k1*s          / (k3*(km1 + k2) + k1*k3*s + k1*k2*s)
EP : k1*k2*s       / (k3*(km1 + k2) + k1*k3*s + k1*k2*s)
""")
code = main(["symbolic", str(OUT / "enzyme.txt"), "--claim", str(OUT / "claim.txt"), "--out", str(OUT / "claim")])
print("exit code", code, "(1: the claim is false)")

# %%
# The same from Python, and p_st against the substrate
# ----------------------------------------------------
# `read_generator` gives the sympy matrix; `symbolic_stationary(...).lambdify` a NumPy
# function, evaluated here for k1 = 1, km1 = 2, k2 = 1, k3 = 0.5 over s.
import numpy as np
import sympy

import sp_ode

gen = sp_ode.read_generator(OUT / "enzyme.txt")
result = sp_ode.symbolic_stationary(gen.Q)
print(result.text(gen.states))
values = {"k1": 1, "km1": 2, "k2": 1, "k3": sympy.Rational(1, 2)}
Q_num = gen.Q.subs({gen.symbols[k]: v for k, v in values.items()})
p_of_s = sp_ode.symbolic_stationary(Q_num).lambdify(gen.symbols["s"])
s_grid = np.logspace(-2, 2, 50 if args.smoke else 200)
P = p_of_s(s_grid)
# the numeric solver agrees to rounding at every s (componentwise relative error):
Q_fn = sympy.lambdify(gen.symbols["s"], Q_num, "numpy")
ref = np.stack([sp_ode.stationary_distribution(np.asarray(Q_fn(s), float)) for s in s_grid])
print(f"max relative difference from GTH: {np.max(np.abs(P - ref) / ref):.1e}")

from sp_ode.core.reporting import figures

plt = figures()
fig, ax = plt.subplots(figsize=(6.5, 4.2))
for i, name in enumerate(gen.states):
    ax.semilogx(s_grid, P[:, i], label=f"$p_{{{name}}}(s)$ (exact)")
ax.semilogx(s_grid[::7], ref[::7, 0], "k.", label="GTH (numeric)")
ax.semilogx(s_grid[::7], ref[::7, 1:], "k.")
ax.set_xlabel("substrate concentration s")
ax.set_ylabel("stationary probability")
ax.set_title(r"enzyme cycle: $p_{st}(s)$, $k_1 = 1,\ k_{-1} = 2,\ k_2 = 1,\ k_3 = 1/2$")
ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(OUT / "p_st_of_s.png", dpi=120)
