"""Banded GTH (sp_ode.markov.solvers._banded_gth): GTH's componentwise accuracy on large sparse chains.

References are exact by construction: reversible chains built from a potential V have
p_st ∝ exp(−V) whatever their conditioning (detailed balance, docs/theory.md §6), and
birth–death chains have the product formula, evaluated in exact rational arithmetic.
"""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import sp_ode
from sp_ode.markov.reference import exact_birth_death, kmr_chain, reversible_grids
from sp_ode.markov.solvers._banded_gth import band_plan, banded_gth


@pytest.mark.parametrize("delta", [1e-12, 1e-15])
def test_two_grids_coupled_by_delta_are_exact_componentwise(delta):
    Q, exact = reversible_grids(30, delta)
    p, info = sp_ode.stationary_distribution(Q, method="banded", return_info=True)
    assert info["method"] == "banded" and info["bandwidth"] <= 31
    assert np.max(np.abs(p - exact) / exact) <= 1e-12
    half = Q.shape[0] // 2
    assert abs(p[:half].sum() - exact[:half].sum()) <= 1e-13


def test_default_sparse_path_escalates_to_banded_and_is_exact():
    # The Krylov/AMG solve of this nearly decoupled chain is not certified; the default path must
    # not return it, and must end on an answer that is componentwise exact.
    Q, exact = reversible_grids(30, 1e-15, seed=3)
    p, info = sp_ode.stationary_distribution(Q, return_info=True)
    assert info["method"] in ("banded", "sparse")
    assert np.max(np.abs(p - exact) / exact) <= 1e-8
    if info["method"] == "sparse":  # accepted only with a bound that covers the true error
        assert np.abs(p - exact).sum() <= info["bound"]


def test_kmr_valley_entries_below_1e200_are_exact_and_log_goes_below_the_float_range():
    up, down = kmr_chain(100, 1e-6)
    Q = sp_ode.birth_death(up, down, sparse=True)
    ref = exact_birth_death(up, down)
    p = sp_ode.stationary_distribution(Q, method="banded")
    for k in range(len(ref)):
        if ref[k] > Fraction(1, 10**290):
            assert abs(Fraction(p[k]) - ref[k]) <= Fraction(1, 10**13) * ref[k], k
    assert p[0] > 0  # 1.16e-208: representable, so it must not come back as 0
    # N = 400: entries ~1e-800 exist only as logarithms
    up, down = kmr_chain(400, 1e-6)
    logp = sp_ode.stationary_distribution(sp_ode.birth_death(up, down, sparse=True), method="banded", log=True)
    ref = exact_birth_death(up, down)
    for k in (0, 1, 50, 133, 399):
        num, den = ref[k].numerator, ref[k].denominator
        exact_log = (num.bit_length() - den.bit_length()) * np.log(2) + np.log(
            (num / 2**num.bit_length()) / (den / 2**den.bit_length()))
        assert abs(logp[k] - exact_log) <= 1e-12 * max(1.0, abs(exact_log)), k


def test_band_is_narrow_for_chains_and_grids():
    up, down = kmr_chain(50, 1e-3)
    assert band_plan(sp_ode.birth_death(up, down, sparse=True))[1] == 1
    Q, _ = reversible_grids(20, 1e-3)
    assert band_plan(Q)[1] <= 21


def test_unreliable_range_is_flagged_not_trusted():
    # Rates below 2^-960 can underflow in the elimination: the result must carry no promise.
    up, down = [1.0, 1e-300 * 1e-10, 1.0], [1.0, 1.0, 1.0]
    Q = sp_ode.birth_death(up, down, sparse=True)
    perm, b, _ = band_plan(Q)
    _, info = banded_gth(Q, perm, b)
    assert info["reliable"] is False
    # ... and a well-scaled chain is reliable
    Q = sp_ode.birth_death([1.0, 2.0, 3.0], [3.0, 2.0, 1.0], sparse=True)
    perm, b, _ = band_plan(Q)
    assert banded_gth(Q, perm, b)[1]["reliable"] is True


def test_a_wrong_reference_is_caught():
    # The check above is not vacuous: a perturbed reference fails it.
    Q, exact = reversible_grids(10, 1e-12)
    p = sp_ode.stationary_distribution(Q, method="banded")
    wrong = exact * (1 + 1e-9 * np.arange(exact.size) / exact.size)
    wrong /= wrong.sum()
    assert np.max(np.abs(p - wrong) / wrong) > 1e-12
