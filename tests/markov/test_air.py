"""The AIR cycles of the sparse stationary solver (sp_ode/markov/_air.py, docs/theory.md §7.1).

Provenance of the expected values: the adjoint identity ⟨v, Bu⟩ = ⟨Bᵀv, u⟩ (exact for a linear
map; rounding only), pyamg's own V-cycle for the forward map, and dense GTH (an independent
solver, with its componentwise bound) for the stationary distributions.
"""
import copy

import numpy as np
import pyamg
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

import sp_ode
import sp_ode.markov._air as air_mod
from sp_ode.markov._air import AIR_OPTIONS, AirCycles
from sp_ode.markov.solvers._sparse import PRECONDITIONERS, locate_mass, pinned_system, quiet_stdout, sparse_stationary
from sp_ode.markov.solvers.preconditioners import air_adjoint_preconditioner
from sp_ode.networks.models import cascade


def _hitting_matrix(N: int):
    m = cascade(N)
    Q = m.network.generator(m.space(), m.y0)
    A = (-Q.T).tocsr()
    k = int(np.argmax(locate_mass(A)))
    Ak, _, _ = pinned_system(A, k)
    return Q, Ak.T.tocsr()


@pytest.fixture(scope="module", params=["transposed view", "finest transpose given"])
def cycles_and_ml(request):
    _, G = _hitting_matrix(24)
    with quiet_stdout():
        ml = pyamg.air_solver(G, **AIR_OPTIONS)
    finest = G.T.tocsr() if request.param == "finest transpose given" else None
    return AirCycles(ml, finest_transpose=finest), ml, G


def test_forward_cycle_is_pyamgs_v_cycle(cycles_and_ml):
    cycles, ml, G = cycles_and_ml
    b = np.random.default_rng(0).standard_normal(G.shape[0])
    ours = cycles.forward @ b
    with quiet_stdout():
        theirs = ml.aspreconditioner(cycle="V") @ b
    assert np.max(np.abs(ours - theirs)) <= 1e-12 * np.max(np.abs(theirs))


def test_adjoint_cycle_is_the_exact_adjoint(cycles_and_ml):
    cycles, _, G = cycles_and_ml
    rng = np.random.default_rng(1)
    for _ in range(3):
        u, v = rng.standard_normal(G.shape[0]), rng.standard_normal(G.shape[0])
        lhs, rhs = v @ (cycles.forward @ u), (cycles.adjoint @ v) @ u
        assert abs(lhs - rhs) <= 1e-12 * np.linalg.norm(u) * np.linalg.norm(v) * 10


def test_adjoint_check_catches_a_wrong_adjoint(cycles_and_ml):
    """Negative control: running the smoothing steps forwards instead of backwards breaks the identity."""
    cycles, _, G = cycles_and_ml

    wrong = copy.copy(cycles)
    wrong._levels = [(*lv[:-1], lv[-1][::-1]) for lv in cycles._levels]   # steps in the forward order
    rng = np.random.default_rng(2)
    u, v = rng.standard_normal(G.shape[0]), rng.standard_normal(G.shape[0])
    lhs, rhs = v @ (cycles.forward @ u), wrong._adjoint(v, 0) @ u
    assert abs(lhs - rhs) > 1e-6 * abs(lhs)


def test_air_path_matches_gth_within_the_bound():
    Q, _ = _hitting_matrix(30)
    p, info = sparse_stationary(Q)
    assert info["preconditioner"] == PRECONDITIONERS["air"] and info["air_probe"]["kept"]
    ref, rinfo = sp_ode.stationary_distribution(Q.toarray(), method="gth", return_info=True)
    assert np.abs(p - ref).sum() <= info["bound"] + rinfo["bound"]
    assert info["bound"] <= 1e-9 and p.min() >= 0.0


def test_probe_abandons_air_and_classical_amg_answers(monkeypatch):
    """A probe that predicts too many steps hands both solves to Ruge–Stüben; the answer is unchanged."""
    Q, _ = _hitting_matrix(30)
    monkeypatch.setattr(air_mod, "PROBE_MAX_STEPS", 1)
    monkeypatch.setattr(air_mod, "PROBE_MIN_STEPS", 2)
    p, info = sparse_stationary(Q)
    assert info["preconditioner"] == PRECONDITIONERS["rs"]
    assert not info["air_probe"]["kept"] and "too slow" in info["air_probe"]["reason"]
    ref = sp_ode.stationary_distribution(Q.toarray(), method="gth")
    assert np.abs(p - ref).sum() <= info["bound"] + 1e-12


def test_classical_amg_takes_over_when_the_adjoint_cycle_fails(monkeypatch):
    """If AIR passes the probe but its adjoint cycle cannot solve A_k, Ruge–Stüben continues from its iterate."""
    Q, _ = _hitting_matrix(30)

    original = AirCycles.__init__

    def useless_adjoint(self, ml, **kwargs):
        original(self, ml, **kwargs)
        n = ml.levels[0].A.shape[0]
        self.adjoint = spla.LinearOperator((n, n), matvec=lambda c: np.array(np.ravel(c)), dtype=np.float64)  # no preconditioning

    monkeypatch.setattr(AirCycles, "__init__", useless_adjoint)
    p, info = sparse_stationary(Q, maxiter=60)
    assert info["preconditioner"] == PRECONDITIONERS["rs_after_air"] and info["converged"]
    ref = sp_ode.stationary_distribution(Q.toarray(), method="gth")
    assert np.abs(p - ref).sum() <= info["bound"] + 1e-12


def test_public_preconditioner_names_bad_input_and_preconditions():
    with pytest.raises(TypeError, match="`Ak`"):
        air_adjoint_preconditioner(np.eye(3))
    with pytest.raises(ValueError, match="square"):
        air_adjoint_preconditioner(sp.csr_array(np.ones((2, 3))))
    _, G = _hitting_matrix(20)
    Ak = G.T.tocsr()
    M = air_adjoint_preconditioner(Ak)
    b = np.ones(Ak.shape[0])
    steps = []
    x, status = spla.gmres(Ak, b, rtol=1e-12, atol=0.0, restart=40, maxiter=40, M=M,
                           callback=steps.append, callback_type="legacy")
    assert status == 0 and np.linalg.norm(Ak @ x - b) <= 1e-11 * np.linalg.norm(b) and len(steps) < 40
