"""The two-gene CME of the surrogate benchmark (issue 27): n = N² fast states, up to 8 slow inputs.

Two genes: A is made at 30·y₁/(1 + y₇(B/40)²) (repressed by B), degraded at y₂ per molecule;
B is made at 2·y₆ + 40·y₃·A²/((25y₅)² + A²) (activated by A), degraded at y₄ per molecule;
and B removes A (A + B → B) at 0.002·y₈ per pair.  Every input is a multiplicative factor on a
rate constant, nominal 1.  On N = 100 (n = 10⁴) the means are E[A] ≈ 23, E[B] ≈ 20 at y = 1
and stay between ≈ 10 and 50 over the box [0.7, 1.3]⁸, so the reflecting projection's boundary
carries < 1e-9 of the mass there (checked by the benchmark at the box's corners).

``two_gene(d)`` frees the first d inputs of the order below and fixes the others at 1, so the
same family serves d = 1 … 8:

    1: y1 (A production)   2: y3 (B activation)   3: y4 (B degradation)   4: y2 (A degradation)
    5: y5 (activation threshold)   6: y7 (repression)   7: y6 (basal B)   8: y8 (A + B → B)

The slow ODEs (for the reduced flow, d ≤ 3) make the inputs dynamic: y1 and y3 are inducers
consumed by the proteins, y4 relaxes to a level set by A:

    y1' = 0.5·(1.1 − y1·E[B]/20),   y3' = 0.5·(1.1 − y3·E[A]/23),   y4' = 0.5·(0.9 + 0.1·E[A]/23 − y4).
"""
from __future__ import annotations

import re

import numpy as np

ORDER = ("y1", "y3", "y4", "y2", "y5", "y7", "y6", "y8")
RATES = ("0 => A, 30*y1/(1 + y7*(B/40)^2); A -> 0, y2; "
         "0 => B, 2*y6 + 40*y3*A^2/((25*y5)^2 + A^2); B -> 0, y4; A + B -> B, 0.002*y8")
ODES = {"y1": "0.5*(1.1 - y1*E[B]/20)", "y3": "0.5*(1.1 - y3*E[A]/23)", "y4": "0.5*(0.9 + 0.1*E[A]/23 - y4)"}
BOX = (0.7, 1.3)
# the exact check's per-point numbers a record keeps (fields of `neural.phi.result.PhiEvaluation`, norm "l1"),
# under the keys the records have always had
CHECK_FIELDS = ("y", "error_l1", "certificate", "certificate_max", "exact_bound", "solve_seconds", "holds")


def family(d: int, N: int):
    """The two-gene family as a `neural.phi.sparse.SparseFamily` y ↦ Q(y) on its box (what φ_θ is fitted to)."""
    from neural.phi.sparse import SparseFamily

    system, dom = two_gene(d, N)
    return SparseFamily.from_network(system, dom[:, 0], dom[:, 1])


def target_fit(folder, d: int):
    """The d-input target fit (N = 100, factored head, KL on anchors) of ``bench.phi.surrogate --only targets``, from its checkpoint in `folder`."""
    from pathlib import Path

    from neural.phi.result import PhiFit

    path = Path(folder) / f"ckpt_d{d}_n10000_factored_kl1.pt"
    if not path.is_file():
        raise SystemExit(f"{path}: no such checkpoint; `python -m bench.phi.surrogate --only targets --out {folder}` "
                         "trains and writes it")
    return PhiFit.load(path, family(d, 100))


def two_gene(d: int = 3, N: int = 100, *, eps: float = 1e-3, box=BOX):
    """(NetworkSystem, domain (d, 2)): the two-gene CME on {0…N−1}² with the first d inputs of ORDER free."""
    from sp_ode.networks.network import ReactionNetwork
    from sp_ode.systems.network import NetworkSystem

    if not 1 <= d <= len(ORDER):
        raise ValueError(f"`d` must be in 1…{len(ORDER)}; got {d}.")
    free = ORDER[:d]
    fixed = {v: 1.0 for v in ORDER[d:]}
    rates = RATES
    for v in fixed:  # fixed inputs are replaced by 1, so that they are not slow variables
        rates = re.sub(rf"\b{v}\b", "1", rates)
    net = ReactionNetwork(rates, slow=list(free), name=f"two_gene_d{d}")
    odes = {v: ODES.get(v, "0") for v in free}
    system = NetworkSystem(net, net.state_space({"A": N - 1, "B": N - 1}), odes, eps=eps, name=f"two_gene_d{d}")
    return system, np.array([box] * d, dtype=np.float64)
