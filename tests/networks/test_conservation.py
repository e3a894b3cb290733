"""sp_ode.networks.conservation: the nonnegative conservation laws as extreme rays, found whatever a basis's signs.

Provenance: Michaelis–Menten's laws (enzyme E + C, substrate S + C + P) and Schlögl's are written by hand from
the reactions; random small stoichiometries are checked against the definition of an extreme ray (the active
constraints have rank S − 1) and against brute force (every nonnegative integer law with entries ≤ 3 is a
nonnegative combination of the rays, by an LP feasibility problem).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import linprog

from sp_ode.networks import conservation as cons
from sp_ode.networks.network import ReactionNetwork

pytestmark = pytest.mark.filterwarnings("ignore::sp_ode.networks.network.NetworkWarning")   # one-reaction species

MM = np.array([[-1, -1, 1, 0], [1, 1, -1, 0], [0, 1, -1, 1]])     # A + B <-> C -> B + D (GillesPy2's names)


def test_michaelis_menten_basis_has_mixed_signs_and_the_rays_do_not():
    basis = cons.conservation_basis(MM)
    assert np.any(basis < 0)                           # what elimination returns (the report)
    assert cons.extreme_rays(MM).tolist() == [[0, 1, 1, 0], [1, 0, 1, 1]]
    assert cons.conservation_laws(MM).tolist() == [[0, 1, 1, 0], [1, 0, 1, 1]]
    assert cons.conservation_caps(cons.extreme_rays(MM), np.array([301, 120, 0, 0])).tolist() == [301, 120, 120, 301]


def test_a_law_with_no_nonnegative_form_is_kept_in_the_basis():
    # 0 -> A + B conserves A − B only: no ray, and the basis keeps the mixed law (the class is still fixed)
    stoich = np.array([[1, 1, 0], [0, 0, 1], [0, 0, -1]])
    assert cons.extreme_rays(stoich).shape == (0, 3)
    laws = cons.conservation_laws(stoich)
    assert laws.shape == (1, 3) and abs(laws[0]).tolist() == [1, 1, 0] and laws[0, 0] == -laws[0, 1]
    assert cons.conservation_caps(cons.extreme_rays(stoich), np.array([1, 0, 0])).tolist() == [-1, -1, -1]


def test_too_many_rays_are_refused_rather_than_enumerated():
    assert cons.extreme_rays(MM, max_rays=1) is None
    assert cons.extreme_rays(MM, max_rays=4).shape == (2, 4)


def _is_extreme(stoich, r):
    active = np.vstack([stoich, np.eye(len(r))[r == 0]])
    return np.linalg.matrix_rank(active) == len(r) - 1


@pytest.mark.parametrize("seed", range(12))
def test_rays_are_the_extreme_rays_and_generate_every_nonnegative_law(seed):
    rng = np.random.default_rng(seed)
    S = int(rng.integers(3, 6))
    stoich = rng.integers(-1, 2, size=(int(rng.integers(1, S)), S))
    rays = cons.extreme_rays(stoich)
    for r in rays:
        assert np.all(stoich @ r == 0) and np.all(r >= 0) and np.gcd.reduce(r) == 1 and _is_extreme(stoich, r)
    assert len({tuple(r) for r in rays}) == len(rays)
    for c in itertools.product(range(4), repeat=S):
        c = np.array(c)
        if not c.any() or np.any(stoich @ c):
            continue
        assert len(rays), f"{c} is a nonnegative law but no ray was found"
        feasible = linprog(np.zeros(len(rays)), A_eq=rays.T.astype(float), b_eq=c.astype(float),
                           bounds=[(0, None)] * len(rays), method="highs")
        assert feasible.status == 0, f"{c} is not a nonnegative combination of the rays {rays.tolist()}"
    # the basis spans the same law space as elimination's
    basis = cons.conservation_laws(stoich)
    assert np.linalg.matrix_rank(np.vstack([basis, cons.conservation_basis(stoich)])) == basis.shape[0]


def test_state_space_caps_every_species_of_a_mixed_sign_class():
    net = ReactionNetwork("A + B -> C, 1; C -> A + B, 1; C -> B + D, 1")
    space = net.state_space(initial={"A": 5, "B": 2})
    assert space.bounds.tolist() == [5, 2, 2, 5]
    ref = [x for x in itertools.product(range(6), range(3), range(3), range(6))
           if x[1] + x[2] == 2 and x[0] + x[2] + x[3] == 5]
    assert space.states.tolist() == [list(x) for x in ref]          # the class, lexicographic


def test_bounds_looser_than_a_conservation_cap_are_lowered_to_it():
    net = ReactionNetwork("A + B -> C, 1; C -> A + B, 1; C -> B + D, 1")
    loose = net.state_space({"A": 50, "B": 50, "C": 50, "D": 50}, initial={"A": 5, "B": 2})
    tight = net.state_space(initial={"A": 5, "B": 2})
    assert loose.bounds.tolist() == tight.bounds.tolist() == [5, 2, 2, 5]
    np.testing.assert_array_equal(loose.states, tight.states)
    assert net.state_space({"D": 3}, initial={"A": 5, "B": 2}).bounds.tolist() == [5, 2, 2, 3]   # tighter kept
