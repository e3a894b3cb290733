"""sp_ode.networks.cme.tensor_train: the CME's p_st in quantised TT form, certified (docs/theory.md §7.16).

References, none computed by the TT route: the product of Poissons with the linear steady state's means
(Jahnke & Huisinga 2007) for a monomolecular network with immigration; the sparse generator assembled
from enumerated transitions (`ReactionNetwork.generator`); exact hitting times by a sparse LU solve.
"""
import math

import numpy as np
import pytest
import scipy.sparse.linalg as spla
from scipy.stats import poisson

from sp_ode.networks.cme.stationary import cme_stationary
from sp_ode.networks.cme.tensor_train import NotSeparableError, SeparableGenerator, qtt_box, tt_stationary
from sp_ode.networks.network import NegativeCountError, NetworkError, ReactionNetwork

K = 4.0
# 0 → A (k), A → B (1), A → 0 (0.5), B → 0 (0.8), B → C (0.4), C → 0 (1): E[A] = k/1.5, E[B] = E[A]/1.2, E[C] = 0.4·E[B]
MEANS = {"A": K / 1.5, "B": K / 1.5 / 1.2, "C": 0.4 * K / 1.5 / 1.2}


@pytest.fixture(scope="module")
def net():
    return ReactionNetwork("0 -> A, k; A -> B, 1; A -> 0, 0.5; B -> 0, 0.8; B -> C, 0.4; C -> 0, 1",
                           parameters={"k": K}, name="monomolecular")


@pytest.fixture(scope="module")
def solved(net):
    return cme_stationary(net, tol=1e-8, method="tt")


def test_product_of_poissons_marginals_and_the_certified_bound(solved):
    res = solved
    assert res.status == "certified" and res.bound <= 1e-8 and res.space is None
    la = res.info["linear_algebra"]
    assert la["method"] == "tt" and la["route"]["reason"] == "method='tt' was asked for"
    assert res.bound == pytest.approx(la["l1_bound"] + res.info["truncation"]["bound"], rel=1e-12)
    box = res.info["expansions"][-1]["bounds"]
    assert all(((b + 1) & b) == 0 for b in box.values())                       # sides 2^L − 1
    for s, mu in MEANS.items():
        m = res.marginal(s)
        ref = poisson.pmf(np.arange(m.size), mu)
        l1 = np.abs(m - ref).sum() + poisson.sf(m.size - 1, mu)                # the closed form's mass beyond J too
        assert np.abs(m - ref).max() <= 1e-8
        assert l1 <= res.bound + res.p.negative_mass                            # the certificate contains the truth
        assert res.p.mean(s) == pytest.approx(mu, abs=1e-8)
    full = res.p.full()
    assert np.allclose(full.sum(axis=(1, 2)), res.marginal("A"), atol=1e-15)   # the cores' contraction = the sum


def test_tt_and_sparse_routes_agree_on_the_same_box(net):
    tt_res = cme_stationary(net, tol=1e-8, method="tt", bounds={"A": 15, "B": 15, "C": 7})
    sp_res = cme_stationary(net, tol=1e-8, method="sparse", bounds={"A": 15, "B": 15, "C": 7})
    p_tt = np.maximum(tt_res.p.full().ravel(), 0.0)
    diff = np.abs(p_tt - sp_res.p).sum()
    assert diff <= tt_res.info["linear_algebra"]["l1_bound"] + sp_res.info["linear_algebra"]["l1_bound"]
    # the certified H of the TT route against the exact max_i E_i[τ_k] at its k, by a sparse LU solve
    k = int(np.ravel_multi_index(tuple(tt_res.info["linear_algebra"]["mode"]), (16, 16, 8)))
    Q = net.generator(sp_res.space).tocsc()
    keep = np.delete(np.arange(Q.shape[0]), k)
    H_exact = spla.spsolve(-Q[keep][:, keep], np.ones(Q.shape[0] - 1)).max()
    # (the solve stops once its one-sided check gives H ≤ 2 max ĥ: an upper bound within a small factor)
    assert H_exact <= tt_res.info["truncation"]["hitting_time"] <= 3.0 * H_exact


def test_the_kronecker_operator_equals_the_enumerated_generator(net):
    gen = SeparableGenerator(net, [7, 7, 3])
    space = net.state_space({"A": 7, "B": 7, "C": 3})
    Q = net.generator(space).toarray()
    Qtt = gen.tt_operator().full().numpy().reshape(gen.n, gen.n)
    assert np.abs(Qtt - Q).max() <= 1e-13 * np.abs(Q).max()
    QTtt = gen.tt_operator(transpose=True).full().numpy().reshape(gen.n, gen.n)
    assert np.abs(QTtt - Q.T).max() <= 1e-13 * np.abs(Q).max()
    # the grid's residual bound against the sparse product, and its negative control (a wrong q)
    q = np.random.default_rng(0).random(gen.n)
    exact = np.abs(Q.T @ q).sum()
    bound = gen.residual_l1_bound(q.reshape(gen.shape))
    assert exact <= bound <= exact * (1 + 1e-12) + 1e-12


def test_hitting_time_bound_contains_the_exact_one_and_refuses_a_bad_candidate(net):
    gen = SeparableGenerator(net, [7, 7, 3])
    space = net.state_space({"A": 7, "B": 7, "C": 3})
    Q = net.generator(space).tocsc()
    k = (3, 2, 1)
    kk = int(np.ravel_multi_index(k, gen.shape))
    keep = np.delete(np.arange(gen.n), kk)
    h = spla.spsolve(-Q[keep][:, keep], np.ones(gen.n - 1))
    H_exact = float(h.max())
    candidate = np.insert(h * (1 + 1e-6), kk, 0.0).reshape(gen.shape)
    H = gen.hitting_time_bound(k, candidate)
    assert H_exact <= H <= H_exact * (1 + 1e-5)
    assert gen.hitting_time_bound(k, candidate + 7.0) <= H * (1 + 1e-12)       # a constant shift changes nothing
    # one-sided: Gĥ = 0.3·𝟙 or 3·𝟙 still certifies (ĥ ≥ m·h with m = min Gĥ) and still contains the truth;
    # a candidate with Gĥ < 0 somewhere (one entry far from k set to 0) is refused: the check decides
    for scale in (0.3, 3.0):
        assert H_exact <= gen.hitting_time_bound(k, scale * candidate) <= H_exact * (1 + 1e-5)
    broken = candidate.copy()
    broken[7, 7, 3] = 0.0
    assert math.isinf(gen.hitting_time_bound(k, broken))


def test_a_wrong_solution_gets_a_bound_that_still_contains_it(net):
    # Negative control: perturb the certified TT answer by 1e-4 in ℓ1; its grid certificate must grow past that
    gen = SeparableGenerator(net, qtt_box([15, 15, 15]))
    dist, info = tt_stationary(gen)
    q = np.maximum(dist.full(), 0.0)
    q[0, 0, 0] += 1e-4
    res = gen.residual_l1_bound(q)
    total = q.sum()
    bound = abs(total - 1.0) + 2.0 * info["hitting_time"] * res / total
    assert bound >= 1e-4 > 100 * info["bound"]


def test_refusals_name_the_reaction_or_the_reason():
    hill = ReactionNetwork("0 -> A, 5/(1 + A + B); A -> 0, 1; 0 -> B, 2; B -> 0, 1")
    with pytest.raises(NotSeparableError, match="R1"):
        cme_stationary(hill, tol=1e-6, method="tt", bounds={"A": 15, "B": 15})
    conserved = ReactionNetwork("A -> B, 1; B -> A, 2")
    with pytest.raises(NetworkError, match="conserves"):
        cme_stationary(conserved, tol=1e-6, method="tt", initial={"A": 5}, bounds={"A": 5, "B": 5})
    with pytest.raises(NegativeCountError, match="R2"):
        SeparableGenerator(ReactionNetwork("0 -> A, 1; A => 0, 2"), [7])
    with pytest.raises(ValueError, match="2\\^L"):
        tt_stationary(SeparableGenerator(ReactionNetwork("0 -> A, 1; A -> 0, 1"), [6]))


def test_the_default_takes_the_tt_route_only_when_the_sparse_solve_would_not_fit(net, monkeypatch):
    import sp_ode.networks.cme.stationary as stationary

    small = cme_stationary(net, tol=1e-6, bounds={"A": 15, "B": 15, "C": 7})
    assert small.info["linear_algebra"]["method"] != "tt" and small.space is not None
    monkeypatch.setattr(stationary, "available_memory", lambda: (10**6, "a test's budget"))
    res = cme_stationary(net, tol=1e-6, bounds={"A": 15, "B": 15, "C": 7})
    la = res.info["linear_algebra"]
    assert la["method"] == "tt" and "memory budget" in la["route"]["reason"]
    assert np.abs(res.marginal("A") - small.marginal("A")).sum() <= la["l1_bound"] + small.info["linear_algebra"][
        "l1_bound"] + res.p.negative_mass
    # a network the TT route cannot take stays on the sparse route (which then meets the same budget)
    hill = ReactionNetwork("0 -> A, 5/(1 + A + B); A -> 0, 1; 0 -> B, 2; B -> 0, 1")
    assert stationary._route(hill, {"A": 15, "B": 15}, None, np.zeros(0)) is None


def test_ranks_capped_by_memory_are_reported_and_the_bound_still_holds(net, monkeypatch):
    import sp_ode.networks.cme.tensor_train as T

    monkeypatch.setattr(T, "rank_cap", lambda modes, operator_rank: 8)
    gen = SeparableGenerator(net, [15, 15, 7])
    dist, info = tt_stationary(gen)
    assert info["rank_cap"] == 8 and info["rank_cap_reached"]
    assert max(info["hitting_time_ranks"]) <= 8
    # the capped ĥ fails the entrywise check (no bound), or what is certified still contains the answer
    exact = cme_stationary(net, tol=1e-8, method="sparse", bounds={"A": 15, "B": 15, "C": 7})
    err = np.abs(np.maximum(dist.full().ravel(), 0) - exact.p).sum()
    assert math.isinf(info["bound"]) or err <= info["bound"] + exact.info["linear_algebra"]["l1_bound"]
