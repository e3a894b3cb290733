"""neural.lm.data: text splits, batches, and the two-timescale Markov source with its exact Bayes filter."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import sp_ode
from neural.lm.data import MarkovSource, eval_starts, get_batch, load_text, markov_corpus


def tiny_source(block: int = 2) -> MarkovSource:
    """K = 2 regimes, m = 3 bytes: small enough to enumerate every regime path."""
    Q0 = np.array([[-1.0, 0.8, 0.2], [0.1, -0.5, 0.4], [2.0, 0.5, -2.5]])
    Q1 = np.array([[-0.3, 0.1, 0.2], [1.5, -2.0, 0.5], [0.2, 0.2, -0.4]])
    S = np.array([[0.7, 0.3], [0.4, 0.6]])
    return MarkovSource(alphabet=b"abc", generators=np.stack([Q0, Q1]), switch=S, block=block)


def brute_force_losses(source: MarkovSource, tokens: np.ndarray) -> np.ndarray:
    """−log P(x_t | x_<t) by summing the joint law over every regime path (exact, independent of the filter).

    P(x_0..x_t) = Σ_{paths r} P(r_0) Π_b S[r_{b−1}, r_b] · p_st(Q_{r_0})[x_0] Π_{u ≤ t} T_{r(u)}[x_{u−1}, x_u].
    """
    idx = [source.alphabet.index(bytes([b])) for b in tokens]
    n, P, K = len(idx), source.block, source.n_regimes
    n_blocks = -(-n // P)
    prefix = np.zeros(n)
    for path in itertools.product(range(K), repeat=n_blocks):
        weight = source.regime_initial[path[0]]
        for b in range(1, n_blocks):
            weight *= source.switch[path[b - 1], path[b]]
        prob = weight * source.initial[path[0], idx[0]]
        prefix[0] += prob
        for t in range(1, n):
            prob *= source.transitions[path[t // P], idx[t - 1], idx[t]]
            prefix[t] += prob
    log_prefix = np.log(prefix)
    return -np.concatenate([[log_prefix[0]], np.diff(log_prefix)])


def test_source_is_built_from_sp_ode_generators():
    src = tiny_source()
    # T_r = I + Q_r/λ_r with λ_r = max|Q_ii| (uniformisation), rows stochastic.
    np.testing.assert_allclose(src.transitions[0], np.eye(3) + src.generators[0] / 2.5, atol=1e-15)
    np.testing.assert_allclose(src.transitions.sum(axis=2), 1.0, atol=1e-15)
    # The first-token law is p_st(Q_r): stationary for T_r too.
    for r in range(2):
        np.testing.assert_allclose(src.initial[r] @ src.transitions[r], src.initial[r], atol=1e-14)
        np.testing.assert_allclose(src.initial[r], sp_ode.stationary_distribution(src.generators[r]), atol=0)
    # 2-state regime chain: π = (S10, S01)/(S01 + S10) (docs/theory.md §6 closed form).
    np.testing.assert_allclose(src.regime_initial, np.array([0.4, 0.3]) / 0.7, rtol=1e-14)


@pytest.mark.parametrize("block", [1, 2, 3])
def test_bayes_filter_equals_brute_force_enumeration(block):
    src = tiny_source(block)
    tokens, _ = src.sample(7, np.random.default_rng(block))
    exact = brute_force_losses(src, tokens)
    np.testing.assert_allclose(src.bayes_token_losses(tokens), exact, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(src._bayes_token_losses_reference(tokens), exact, rtol=1e-12, atol=1e-13)


def test_vectorised_filter_equals_reference_loop():
    src = MarkovSource.default(seed=3, block=5)
    tokens, _ = src.sample(3000, np.random.default_rng(0))
    fast = src.bayes_token_losses(tokens)
    ref = src._bayes_token_losses_reference(tokens)
    # Same arithmetic in log vs probability space: agreement to rounding, n·eps scale.
    np.testing.assert_allclose(fast, ref, rtol=0, atol=3000 * 1e-15)


def test_bayes_loss_between_oracle_and_fixed_predictor():
    """Oracle (regime known) ≤ Bayes (regime filtered) ≤ any fixed predictor (here the regime-averaged chain).

    Orderings hold in expectation; on 40k tokens the gaps measured here are > 0.1 nats while the
    standard errors are < 0.01, so the finite-sample check cannot flip by chance.
    """
    src = MarkovSource.default(seed=0)
    tokens, regimes = src.sample(40_000, np.random.default_rng(7))
    oracle = src.oracle_token_losses(tokens, regimes)[1:].mean()
    bayes = src.bayes_token_losses(tokens)[1:].mean()
    mixture = src.mixture_token_losses(tokens)[1:].mean()
    assert oracle < bayes < mixture
    assert mixture - bayes > 0.1
    # Also below the best *empirical* first-order predictor fitted on the test stream itself.
    idx = src._indices(tokens)
    counts = np.zeros((16, 16))
    np.add.at(counts, (idx[:-1], idx[1:]), 1)
    fitted = counts / counts.sum(axis=1, keepdims=True)
    assert bayes < -np.log(fitted[idx[:-1], idx[1:]]).mean()


def test_samples_follow_the_regime_chain():
    src = MarkovSource.default(seed=1, block=4, n_regimes=3)
    tokens, regimes = src.sample(20_000, np.random.default_rng(0))
    assert set(tokens.tolist()) <= set(src.alphabet)
    blocks = regimes.reshape(-1, 4)
    assert np.all(blocks == blocks[:, :1])  # regime changes only at block boundaries
    # Empirical stay-probability of the regime chain ≈ 0.9 (5000 boundaries: 4σ ≈ 0.017).
    stays = np.mean(blocks[1:, 0] == blocks[:-1, 0])
    assert abs(stays - 0.9) < 0.02
    # Empirical transitions in regime 0 ≈ T_0 (row counts in the hundreds: 4σ bound per row).
    idx = src._indices(tokens)
    mask = regimes[1:] == 0
    counts = np.zeros((16, 16))
    np.add.at(counts, (idx[:-1][mask], idx[1:][mask]), 1)
    rows = counts.sum(axis=1) > 300
    freq = counts[rows] / counts[rows].sum(axis=1, keepdims=True)
    sigma = np.sqrt(src.transitions[0][rows] * (1 - src.transitions[0][rows]) / counts[rows].sum(axis=1, keepdims=True))
    assert np.all(np.abs(freq - src.transitions[0][rows]) <= 4.5 * sigma + 1e-3)


def test_markov_corpus_is_deterministic_and_carries_bayes_losses():
    a = markov_corpus(seed=5, n_train=5000, n_val=3000, block=8)
    b = markov_corpus(seed=5, n_train=5000, n_val=3000, block=8)
    c = markov_corpus(seed=6, n_train=5000, n_val=3000, block=8)
    assert torch.equal(a.train, b.train) and torch.equal(a.val, b.val)
    assert not torch.equal(a.train, c.train)
    np.testing.assert_array_equal(a.bayes_losses, a.source.bayes_token_losses(a.val.numpy()))
    # bayes_loss over windows = mean of the per-token losses at the targets s+1 … s+T.
    starts = eval_starts(3000, 32, 10)
    expected = np.mean([a.bayes_losses[s + 1:s + 33] for s in starts])
    assert a.bayes_loss(starts, 32) == pytest.approx(expected, rel=1e-12)


def test_load_text_split(tmp_path):
    path = tmp_path / "t.txt"
    payload = bytes(range(256)) * 4  # 1024 bytes, not only ASCII
    path.write_bytes(payload)
    corpus = load_text(path)
    assert corpus.train.dtype == torch.uint8
    assert corpus.train.numel() == 921 and corpus.val.numel() == 103  # int(1024·0.9) = 921
    assert bytes(corpus.train.numpy()) + bytes(corpus.val.numpy()) == payload
    assert corpus.bayes_loss() is None


def test_tinyshakespeare_bytes_are_chars(tinyshakespeare):
    corpus = load_text(tinyshakespeare)
    n = corpus.train.numel() + corpus.val.numel()
    assert n == 1_115_394  # the size recorded in ../shared/data/README.md
    assert int(corpus.train.max()) < 128 and int(corpus.val.max()) < 128  # ASCII: one byte per character
    assert corpus.train.numel() == int(n * 0.9)


def test_get_batch_is_seeded_and_shifted():
    data = torch.arange(1000, dtype=torch.int64) % 256
    data = data.to(torch.uint8)
    x1, y1 = get_batch(data, 4, 16, torch.Generator().manual_seed(0))
    x2, y2 = get_batch(data, 4, 16, torch.Generator().manual_seed(0))
    x3, _ = get_batch(data, 4, 16, torch.Generator().manual_seed(1))
    assert x1.shape == (4, 16) and x1.dtype == torch.int64
    assert torch.equal(x1, x2) and torch.equal(y1, y2) and not torch.equal(x1, x3)
    assert torch.equal(x1[:, 1:], y1[:, :-1])


def test_eval_starts_cover_the_stream():
    starts = eval_starts(1000, 64, 8)
    assert starts[0] == 0 and starts[-1] == 1000 - 64 - 1 and len(starts) == 8
    assert np.array_equal(starts, eval_starts(1000, 64, 8))


@pytest.mark.parametrize("make, exc, match", [
    (lambda: load_text("/nonexistent/file.txt"), ValueError, "`data`"),
    (lambda: tiny_source()._indices(np.frombuffer(b"abz", dtype=np.uint8)), ValueError, "outside the source alphabet"),
    (lambda: MarkovSource(alphabet=b"ab", generators=np.zeros((1, 3, 3)), switch=np.ones((1, 1))), ValueError, "`generators`"),
    (lambda: MarkovSource(alphabet=b"ab", generators=np.array([[[-1.0, 1.0], [1.0, -1.0]]]), switch=np.array([[0.5]])), ValueError, "`switch`"),
    (lambda: MarkovSource(alphabet=b"aa", generators=np.array([[[-1.0, 1.0], [1.0, -1.0]]]), switch=np.ones((1, 1))), ValueError, "`alphabet`"),
    (lambda: MarkovSource(alphabet=b"ab", generators=np.array([[[-1.0, 1.0], [0.0, 0.0]]]), switch=np.ones((1, 1))), sp_ode.NotIrreducibleError, "irreducible"),
    (lambda: markov_corpus(n_train=0), ValueError, "`n_train`"),
    (lambda: MarkovSource.default(stay=1.5), ValueError, "`stay`"),
    (lambda: get_batch(torch.zeros(10, dtype=torch.uint8), 2, 16, torch.Generator()), ValueError, "`seq_len`"),
])
def test_bad_input(make, exc, match):
    with pytest.raises(exc, match=match):
        make()
