"""neural.lm.sources: regime-switching sources and their exact context-limited Bayes floors (docs/theory.md §8).

Provenance of every expected number: brute-force enumeration of the source's law
(`RegimeSource._brute_force_losses`: every regime path and every unseen earlier token summed
out), the definition of stationarity (μ M = μ), and the chain rule.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from neural.lm.data import MarkovSource, eval_starts
from neural.lm.sources import RegimeSource, receptive_field

# Filters normalise at every step: agreement with enumeration to a few ulps per token.
TOL = 64 * np.finfo(float).eps


def _small(mode: str, seed: int = 1) -> RegimeSource:
    # K = 2, m = 3; block P = 2 so that contexts start at both phases
    return RegimeSource.perturbed(1.0, n_regimes=2, n_symbols=3, switch_prob=0.3, mode=mode, block=2, seed=seed)


@pytest.mark.parametrize("mode", ["hazard", "block"])
@pytest.mark.parametrize("context", [None, 1, 2, 3, 4])
def test_filter_equals_brute_force(mode, context):
    src = _small(mode)
    tokens, _ = src.sample(7, np.random.default_rng(3))
    fast = src.bayes_token_losses(tokens, context)
    slow = src._brute_force_losses(tokens, context)
    np.testing.assert_allclose(fast, slow, rtol=0, atol=TOL)


@pytest.mark.parametrize("mode", ["hazard", "block"])
def test_wrong_filters_fail_the_same_check(mode):
    """The brute-force check has teeth: a filter with a wrong prior or without switching is caught."""
    src = _small(mode)
    tokens, _ = src.sample(7, np.random.default_rng(3))
    idx = src.indices(tokens)
    C = 3
    brute = src._brute_force_losses(tokens, C)[C + 1:]
    starts = np.arange(1, len(idx) - C)
    right = src._lanes(idx, starts, C, last_only=True)
    np.testing.assert_allclose(right, brute, rtol=0, atol=TOL)
    # wrong 1: prior = regime marginal, not conditioned on the first token seen
    marginal = src.phase_laws[src._phase(starts)].sum(axis=2)
    wrong_prior = src._lanes(idx, starts, C, last_only=True, prior=marginal / marginal.sum(axis=1, keepdims=True))
    assert np.abs(wrong_prior - brute).max() > 1e3 * TOL
    # wrong 2: the regime never switches (S = I)
    frozen = RegimeSource(alphabet=src.alphabet, transitions=src.transitions, switch=src.switch, mode=mode,
                          block=src.block)
    object.__setattr__(frozen, "switch", np.eye(2))  # S = I is reducible, so it cannot be passed in
    no_switch = frozen._lanes(idx, starts, C, last_only=True, prior=src._prior(idx, starts))
    assert np.abs(no_switch - brute).max() > 1e3 * TOL


@pytest.mark.parametrize("mode", ["hazard", "block"])
def test_phase_laws_are_stationary(mode):
    """μ_φ is carried to μ_{φ+1} by one step of the pair chain, and μ_{P−1} back to μ_0 across a boundary."""
    src = _small(mode)
    K, m = src.n_regimes, src.n_symbols
    T, S = src.transitions, src.switch
    laws = src.phase_laws
    for phi in range(len(laws)):
        nxt = (phi + 1) % len(laws)
        switching = mode == "hazard" or nxt == 0
        step = np.zeros((K, m))
        for r in range(K):
            for x in range(m):
                for r2 in range(K):
                    w = S[r, r2] if switching else float(r == r2)
                    step[r2] += laws[phi][r, x] * w * T[r2, x]
        np.testing.assert_allclose(step, laws[nxt], rtol=0, atol=16 * np.finfo(float).eps)
        assert math.isclose(laws[phi].sum(), 1.0, rel_tol=0, abs_tol=1e-15)


def test_chain_rule_full_past():
    """Σ_t loss_t = −log P(x_0 … x_{n−1}), the enumerated joint probability of the whole stream."""
    src = _small("block")
    tokens, _ = src.sample(6, np.random.default_rng(5))
    losses = src.bayes_token_losses(tokens)
    brute = src._brute_force_losses(tokens)
    assert math.isclose(losses.sum(), brute.sum(), rel_tol=0, abs_tol=8 * TOL)


def test_window_floor_matches_per_target_definition():
    """window_floor averages −log P(x_t | x_{max(s, t−C)} … x_{t−1}) over the targets s+1 … s+T."""
    src = _small("hazard")
    tokens, _ = src.sample(12, np.random.default_rng(7))
    starts, T = np.array([0, 2, 3]), 6
    for C in (None, 2, 6):
        expected = []
        for s in starts:
            for t in range(s + 1, s + T + 1):
                if C is None:
                    expected.append(src._brute_force_losses(tokens[: t + 1])[t])
                else:
                    a = max(s, t - C)
                    # the source is stationary, so the context x_a … x_t may be scored as a stream from 0
                    # (hazard mode has a single phase)
                    expected.append(src._brute_force_losses(tokens[a: t + 1])[t - a])
        assert math.isclose(src.window_floor(tokens, starts, T, C), float(np.mean(expected)),
                            rel_tol=0, abs_tol=TOL)


def test_floors_are_ordered_on_a_long_stream():
    """Bayes-∞ ≤ Bayes-T ≤ Bayes-W in expectation (more context never hurts); holds with margin on 2¹⁴ tokens."""
    src = RegimeSource.perturbed(0.9, n_regimes=4, n_symbols=4, switch_prob=1 / 64, seed=0)
    tokens, _ = src.sample(1 << 14, np.random.default_rng(0))
    starts = eval_starts(len(tokens), 64, 64)
    inf, full, w = (src.window_floor(tokens, starts, 64, c) for c in (None, 64, 8))
    assert inf < full < w


def test_sampled_marginals_match_the_stationary_law():
    """Empirical token frequencies of a long sample agree with Σ_r μ(r, x) within 5 binomial SEs."""
    src = RegimeSource.perturbed(0.5, n_regimes=3, n_symbols=4, switch_prob=0.05, seed=2)
    tokens, regimes = src.sample(1 << 15, np.random.default_rng(1))
    idx = src.indices(tokens)
    p = src.phase_laws[0].sum(axis=0)
    freq = np.bincount(idx, minlength=4) / len(idx)
    # tokens are correlated; 5 SE of an i.i.d. binomial, widened by 10 for the correlation time
    assert np.all(np.abs(freq - p) < 50 * np.sqrt(p * (1 - p) / len(idx)))
    # and the regime sampled at t = 0 ... n−1 switches about switch_prob of the time
    rate = np.mean(regimes[1:] != regimes[:-1])
    assert abs(rate - 0.05) < 5 * math.sqrt(0.05 * 0.95 / len(idx)) * 10


def test_from_markov_keeps_the_builtin_law():
    ms = MarkovSource.default(seed=0, block=4, n_regimes=3)
    src = RegimeSource.from_markov(ms)
    assert src.mode == "block" and src.block == 4
    np.testing.assert_array_equal(src.transitions, ms.transitions)
    # after a few blocks the full-past filters of the two classes agree (their initial laws differ)
    tokens, _ = ms.sample(4000, np.random.default_rng(0))
    np.testing.assert_allclose(src.bayes_token_losses(tokens)[2000:], ms.bayes_token_losses(tokens)[2000:],
                               rtol=0, atol=1e-9)


def test_delta_zero_makes_regimes_identical():
    """δ = 0: every regime has the base chain, so the past beyond one token is worthless (Bayes-1 = Bayes-∞)."""
    src = RegimeSource.perturbed(0.0, n_regimes=3, n_symbols=4, seed=0)
    tokens, _ = src.sample(500, np.random.default_rng(0))
    np.testing.assert_allclose(src.bayes_token_losses(tokens, 1), src.bayes_token_losses(tokens), rtol=0, atol=1e-12)


def test_receptive_field():
    assert receptive_field(16, 1) == 16 and receptive_field(16, 2) == 31 and receptive_field(1, 5) == 1


@pytest.mark.parametrize("kwargs, match", [
    (dict(delta=-1.0), "delta"), (dict(delta=1.0, tau=0.0), "tau"), (dict(delta=1.0, n_regimes=1), "n_regimes"),
    (dict(delta=1.0, n_symbols=17), "n_symbols"), (dict(delta=1.0, switch_prob=1.5), "switch_prob"),
    (dict(delta=1.0, mode="sometimes"), "mode"),
])
def test_bad_arguments_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RegimeSource.perturbed(**kwargs)


def test_bad_streams_are_refused():
    src = _small("hazard")
    with pytest.raises(ValueError, match="alphabet"):
        src.bayes_token_losses(np.array([255, 255], dtype=np.uint8))
    tokens, _ = src.sample(10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="starts"):
        src.window_floor(tokens, np.array([5]), 6)
    with pytest.raises(ValueError, match="row-stochastic"):
        RegimeSource(alphabet=b"ab", transitions=np.ones((1, 2, 2)), switch=np.ones((1, 1)))
