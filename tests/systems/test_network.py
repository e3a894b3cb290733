"""sp_ode.systems.network: sparse reduced, corrected and full paths against independent answers."""
from __future__ import annotations

import numpy as np
import pytest

import sp_ode
from sp_ode.networks.models import get_network_model
from sp_ode.networks.network import NetworkError, ReactionNetwork
from sp_ode.systems.network import NetworkSystem
from tests.checkers import convergence_order


def _system(name, eps=1e-2, **kw):
    m = get_network_model(name, **kw)
    return m, NetworkSystem(m.network, m.space(), m.slow, eps=eps)


def _dense_h1(s, y):
    """h₁ from the dense group inverse (sp_ode.group_inverse, docs/theory.md §3.3), an independent method."""
    Q = s.Q(y).toarray()
    p = sp_ode.stationary_distribution(Q)
    Ash = sp_ode.group_inverse(Q)
    dQ = s.gen.dQ(y)[0].toarray()
    Dp = -Ash @ (dQ.T @ p)
    return p, Ash @ (Dp * s.g(p, y)[0])


@pytest.mark.parametrize("name, kw, solver", [("telegraph", {"N": 30}, "direct"), ("cascade", {"N": 12}, "direct"),
                                              ("cascade", {"N": 12}, "amg"), ("michaelis_menten", {"E_T": 4}, "direct")])
def test_sparse_h1_equals_dense_group_inverse(name, kw, solver):
    m, s = _system(name, **kw)
    y = m.y0 * 1.1
    ws = s.stationary_solver(solver=solver)
    p, info = ws.solve(s.Q(y), y)
    p_ref, h_ref = _dense_h1(s, y)
    np.testing.assert_allclose(p, p_ref, rtol=0, atol=1e-12)
    h = s.h1(y, p, ws)
    assert abs(h.sum()) <= 1e-12 * np.abs(h).max()                   # h₁ ∈ 1^⊥
    np.testing.assert_allclose(h, h_ref, rtol=0, atol=1e-9 * np.abs(h_ref).max())
    assert np.abs(-h - h_ref).max() > 0.5 * np.abs(h_ref).max()      # the sign matters (a wrong h₁ is caught)


def test_reduced_flow_is_the_rao_arkin_michaelis_menten_solution():
    m, s = _system("michaelis_menten", E_T=3)
    t = np.linspace(0, 3, 7)
    exact = m.closed_form["reduced y"](t, m.y0)
    for table in (False, True):
        path = s.simulate_reduced((0, 3), m.y0, t_eval=t, table=table)
        assert path.status == 0
        np.testing.assert_allclose(path.y[:, 0], exact, rtol=1e-8)
    wrong = get_network_model("michaelis_menten", E_T=3, k_cat=1.1)
    assert np.abs(wrong.closed_form["reduced y"](t, m.y0) - exact).max() > 1e-2


def test_corrected_path_is_second_order_and_reduced_first_order():
    m, s = _system("michaelis_menten", E_T=3)
    eps_list = [2e-2, 1e-2, 5e-3, 2.5e-3]
    t = np.linspace(0.5, 2.0, 4)
    table = s.manifold_table((0.1, 2.2), order=1)
    e0, e1 = [], []
    for eps in eps_list:
        se = NetworkSystem(s.network, s.space, s.slow_odes, eps=eps)
        full = se.simulate((0, 2), m.y0, rtol=1e-12, atol=1e-14, t_eval=t)
        assert full.status == 0 and full.stats["mass_drift"] < 1e-12
        for order, errs in ((0, e0), (1, e1)):
            red = se.simulate_reduced((0, 2), m.y0, order=order, t_eval=t, table=table, rtol=1e-12, atol=1e-14)
            errs.append(np.abs(red.y[:, 0] - full.y[:, 0]).max())
    assert convergence_order(eps_list, e0) == pytest.approx(1.0, abs=0.1)
    assert convergence_order(eps_list, e1) == pytest.approx(2.0, abs=0.15)


def test_full_jacobian_matches_finite_differences():
    m, s = _system("telegraph", N=8)
    rng = np.random.default_rng(0)
    x = rng.random(s.n)
    z = np.concatenate([x / x.sum(), [0.9]])
    J = s.full_jacobian()(0.0, z).toarray()
    f = s.full_rhs()
    h = 1e-6
    fd = np.stack([(f(0, z + h * e) - f(0, z - h * e)) / (2 * h) for e in np.eye(z.size)], axis=1)
    np.testing.assert_allclose(J, fd, rtol=1e-7, atol=1e-6)


@pytest.mark.parametrize("air", [True, False], ids=["air adjoint", "classical AMG fallback"])
def test_warm_and_cold_solves_agree_and_warm_takes_fewer_steps(air, monkeypatch):
    if not air:   # the AIR setup "breaks down": the classical hierarchy takes over
        import sp_ode.markov.solvers.warm_start as warm_start

        monkeypatch.setattr(warm_start, "air_adjoint_preconditioner", lambda Ak: None)  # where it is looked up
    m, s = _system("cascade", N=40)
    cold, warm = s.stationary_solver(solver="amg", warm=False), s.stationary_solver(solver="amg", warm=True)
    steps = {"cold": 0, "warm": 0}
    for k in range(5):
        y = np.array([0.2 + 0.01 * k])
        Q = s.Q(y)
        pc, ic = cold.solve(Q, y)
        pw, iw = warm.solve(Q, y)
        pd, _ = s.stationary(y)
        assert max(np.abs(pc - pd).max(), np.abs(pw - pd).max()) < 1e-10
        if k:
            steps["cold"] += ic["steps"]
            steps["warm"] += iw["steps"]
    assert steps["warm"] < steps["cold"]
    assert warm.rebuilds == 1 and cold.rebuilds == 5
    assert iw["preconditioner"] == ("air (adjoint cycle)" if air else "amg")


def test_bad_slow_odes_are_named():
    net = ReactionNetwork("0 -> M, k*y; M -> 0, 1", parameters={"k": 2.0}, slow=["y"])
    space = net.state_space({"M": 10})
    with pytest.raises(NetworkError, match="slow variable 'y' has no ODE"):
        NetworkSystem(net, space, {}, eps=0.1)
    with pytest.raises(NetworkError, match=r"uses species 'M' outside E\[…\]"):
        NetworkSystem(net, space, {"y": "1 - M*y"}, eps=0.1)
    with pytest.raises(NetworkError, match="unknown name 'q'"):
        NetworkSystem(net, space, {"y": "q - E[M]*y"}, eps=0.1)
    with pytest.raises(NetworkError, match="'z', which is not a slow variable"):
        NetworkSystem(net, space, {"y": "1 - E[M]", "z": "1"}, eps=0.1)


def test_a_reducible_chain_on_the_reduced_path_is_named_by_copy_numbers_and_y():
    """X → Y or X → Z (both absorbing): the reduced solve died with SuperLU's bare "Factor is exactly singular";
    now it names y and the closed classes by their copy numbers."""
    net = ReactionNetwork("X -> Y, k*y; X -> Z, 1; 0 -> M, 5; M -> 0, 1", parameters={"k": 1.0}, slow=["y"],
                          name="split")
    s = NetworkSystem(net, net.state_space({"M": 4}, initial={"X": 1}), {"y": "-y*E[Y]"}, eps=1e-2, name="split")
    with pytest.raises(sp_ode.NotIrreducibleError, match=r"'split': p_st\(y\) is not unique at y = 0\.5") as info:
        sp_ode.simulate_reduced(s, (0.0, 1.0), [0.5])
    message = str(info.value)
    assert "2 closed" in message and "{X=0, Y=1, Z=0, M=0}" in message and "{X=0, Y=0, Z=1, M=0}" in message
    assert len(info.value.closed_classes) == 2
    # negative control: with the way back Y -> X the chain is irreducible and the same solve runs
    back = ReactionNetwork("X -> Y, k*y; Y -> X, 1; 0 -> M, 5; M -> 0, 1", parameters={"k": 1.0}, slow=["y"])
    ok = NetworkSystem(back, back.state_space({"M": 4}, initial={"X": 1}), {"y": "-y*E[Y]"}, eps=1e-2)
    assert sp_ode.simulate_reduced(ok, (0.0, 1.0), [0.5]).status == 0


def _gene():
    return ReactionNetwork("0 -> GP, kp*y; GP -> 0, g", parameters={"kp": 1.0, "g": 1.0}, slow=["y"])


@pytest.mark.parametrize("ode, needle", [
    ("kpp - y", r"uses unknown name 'kpp'.*did you mean 'kp'\?"),          # a parameter, one letter extra
    ("1 - E[Gp]*y", r"E\[Gp\] uses unknown name 'Gp'.*did you mean 'GP'\?"),   # a species, by case
])
def test_a_misspelt_name_in_a_slow_ode_gets_a_suggestion(ode, needle):
    net = _gene()
    with pytest.raises(NetworkError, match=needle):
        NetworkSystem(net, net.state_space({"GP": 10}), {"y": ode}, eps=0.1)


def test_a_misspelt_parameter_of_with_parameters_gets_a_suggestion():
    net = _gene()
    s = NetworkSystem(net, net.state_space({"GP": 10}), {"y": "1 - y"}, eps=0.1)
    with pytest.raises(ValueError, match=r"\['kpp'\] are not parameters.*did you mean 'kp'\?"):
        s.with_parameters(kpp=2.0)
    assert s.with_parameters(kp=2.0).network.parameters["kp"] == 2.0
