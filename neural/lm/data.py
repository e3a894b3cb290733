"""Byte-level training data: text files and a two-timescale Markov source with an exact Bayes limit.

Tokens are bytes (V = 256), so nothing is downloaded and no tokenizer is needed.

**Text files.** [`load_text`][neural.lm.data.load_text] reads any file as bytes and splits it
deterministically: the first 90 % is training data, the last 10 % validation
(nanoGPT's split).  ASCII text such as tiny Shakespeare has one byte per
character, so nats/byte equal nats/char there.

**The two-timescale Markov source** ([`MarkovSource`][neural.lm.data.MarkovSource], the default) is a
fast–slow process in the sense of docs/theory.md: a slow regime r ∈ {0, …, K−1}
that may change only at block boundaries t = P, 2P, … (switching matrix S,
row-stochastic), and fast tokens x_t over a small alphabet of m bytes emitted
by a Markov chain whose generator Q_r depends on the regime.  Each Q_r is an
`sp_ode` generator; the per-token transition matrix is its uniformisation
T_r = I + Q_r/λ_r (`sp_ode.uniformize`), and the first token is drawn from
p_st(Q_r) (`sp_ode.stationary_distribution`), which is also stationary for
T_r.  The regime chain starts in the stationary distribution of S.

Because the regime is hidden but finite, the **Bayes-optimal next-token loss**
is computable exactly by forward filtering.  With α_t(r) = P(r_t = r | x_0..x_t):

* prior for position t+1: α_t S if t+1 is a block boundary, else α_t;
* predictive P(x_{t+1} | x_0..x_t) = Σ_r prior(r) · T_r[x_t, x_{t+1}];
* update α_{t+1}(r) ∝ prior(r) · T_r[x_t, x_{t+1}].

Its mean −log on held-out tokens is the lowest loss any predictor (with any
context length) can reach in expectation; a trained model's *excess loss* is its
validation loss minus this number on the same target positions.
"""
from __future__ import annotations

import functools
import hashlib
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from neural.lm.sources import check_regime_stack
from sp_ode.core.validation import check_positive_int
from sp_ode.markov.generator import require_irreducible

__all__ = [
    "VOCAB_SIZE",
    "ByteCorpus",
    "MarkovSource",
    "load_text",
    "markov_corpus",
    "load_corpus",
    "get_batch",
    "eval_starts",
]

VOCAB_SIZE = 256
"""V: byte-level tokens."""

DEFAULT_ALPHABET = b" etaoinshrdlucmf"
"""The built-in source emits these 16 bytes (readable when printed)."""


# --------------------------------------------------------------------------- corpus


@dataclass(frozen=True, eq=False)
class ByteCorpus:
    """A train/validation pair of byte streams.

    Attributes
    ----------
    name
        Where the bytes came from (a path or `"markov"`).
    train, val
        Torch.uint8 tensors, shapes (N_train,), (N_val,).
    bayes_losses
        For a source with a known law, float64 (N_val,): entry t is
        −log P(x_t | x_0..x_{t−1}) in nats under the Bayes-optimal predictor on
        the validation stream (entry 0 is −log P(x_0)); None for text.
    source
        The [`MarkovSource`][neural.lm.data.MarkovSource] that generated the data, or None.
    """

    name: str
    train: torch.Tensor
    val: torch.Tensor
    bayes_losses: np.ndarray | None = field(default=None, repr=False)
    source: MarkovSource | None = field(default=None, repr=False)

    @property
    def sha256(self) -> str:
        """SHA-256 of the train and validation bytes: what identifies the data, whatever its name.

        A resumed run must see the same bytes (`neural.lm.checkpoint.check_compatible`): a text file
        edited in place keeps its path and often its length, but not this digest.
        """
        cached = self.__dict__.get("_sha256")
        if cached is None:
            h = hashlib.sha256()
            for part in (self.train, self.val):
                h.update(len(part).to_bytes(8, "little"))
                h.update(part.numpy().tobytes())
            cached = h.hexdigest()
            object.__setattr__(self, "_sha256", cached)
        return cached

    def bayes_loss(self, starts: np.ndarray | None = None, seq_len: int | None = None) -> float | None:
        """Bayes-optimal mean loss (nats) on the validation targets a model is scored on.

        With `starts` (window starts s) and `seq_len` T, the targets are positions
        s+1 … s+T of every window — exactly those of `evaluate`-style scoring
        with inputs x[s : s+T] and targets x[s+1 : s+T+1].  Without them, all
        positions 1 … N_val−1.  None for corpora without a known law.
        """
        if self.bayes_losses is None:
            return None
        if starts is None:
            return float(self.bayes_losses[1:].mean())
        idx = np.asarray(starts)[:, None] + 1 + np.arange(seq_len)[None, :]
        return float(self.bayes_losses[idx].mean())


def load_text(path: str | Path, *, val_fraction: float = 0.1) -> ByteCorpus:
    """Read a file as bytes; the last `val_fraction` of it is the validation split.

    Parameters
    ----------
    path
        A file of any content (bytes are tokens, V = 256).
    val_fraction
        In (0, 1); nanoGPT uses 0.1.

    Returns
    -------
    ByteCorpus with `bayes_losses=None`.

    Raises
    ------
    ValueError
        If the file does not exist, or is too short to give both splits 2 bytes.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"`data` must be an existing text file; got {str(path)!r} (not found).")
    if not (isinstance(val_fraction, float) and 0.0 < val_fraction < 1.0):
        raise ValueError(f"`val_fraction` must be a float in (0, 1); got {val_fraction!r}.")
    raw = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    n_train = int(len(raw) * (1.0 - val_fraction))
    if n_train < 2 or len(raw) - n_train < 2:
        raise ValueError(f"`data` file {str(path)!r} has {len(raw)} bytes; too short for a train/validation split.")
    data = torch.from_numpy(raw.copy())
    return ByteCorpus(name=str(path), train=data[:n_train], val=data[n_train:])


# --------------------------------------------------------------------------- Markov source


@dataclass(frozen=True, eq=False)
class MarkovSource:
    """A two-timescale Markov source: slow regime every P tokens, fast regime-dependent token chain.

    Attributes
    ----------
    alphabet : bytes
        The m distinct byte values emitted.
    generators : float64 (K, m, m); Q_r
        An irreducible generator per regime r.
    switch : float64 (K, K); S
        Row-stochastic regime switching matrix applied at block boundaries.
    block : P
        The regime may change only at t = P, 2P, ….

    Derived (computed once in `__post_init__`):
    transitions : (K, m, m)
        T_r = I + Q_r/λ_r (`sp_ode.uniformize`).
    initial : (K, m), p_st(Q_r)
        The first token's law given the regime.
    regime_initial : (K,)
        The stationary law of S (regime at t = 0).
    """

    alphabet: bytes
    generators: np.ndarray = field(repr=False)
    switch: np.ndarray = field(repr=False)
    block: int = 16
    transitions: np.ndarray = field(init=False, repr=False)
    initial: np.ndarray = field(init=False, repr=False)
    regime_initial: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        import sp_ode

        Qs = check_regime_stack(self.alphabet, self.generators, "generators")
        check_positive_int("block", self.block)
        S = np.asarray(self.switch, dtype=np.float64)
        K = Qs.shape[0]
        if S.shape != (K, K):
            raise ValueError(f"`switch` must have shape ({K}, {K}); got {S.shape}.")
        if np.any(S < 0) or not np.allclose(S.sum(axis=1), 1.0, rtol=0, atol=1e-12):
            raise ValueError("`switch` must be row-stochastic (entries >= 0, rows summing to 1).")
        transitions, initial = [], []
        for r in range(K):
            Q = sp_ode.check_generator(Qs[r], name=f"generators[{r}]")
            require_irreducible(Q, name=f"generators[{r}]")  # NotIrreducibleError naming the closed classes
            transitions.append(_uniformize(Q))
            initial.append(sp_ode.stationary_distribution(Q))
        # Stationary law of the regime chain: p_st of its generator S − I.
        regime_initial = sp_ode.stationary_distribution(S - np.eye(K))
        object.__setattr__(self, "generators", Qs)
        object.__setattr__(self, "switch", S)
        object.__setattr__(self, "transitions", np.stack(transitions))
        object.__setattr__(self, "initial", np.stack(initial))
        object.__setattr__(self, "regime_initial", regime_initial)

    # ----------------------------------------------------------------- construction

    @classmethod
    def default(cls, *, seed: int = 0, n_regimes: int = 4, alphabet: bytes = DEFAULT_ALPHABET,
                block: int = 16, stay: float = 0.9, successors: int = 2) -> MarkovSource:
        """The built-in source: random sparse-ish generators, one per regime.

        Each regime's Q_r gives every state `successors` strongly preferred next
        states (rates ~ 1 + Gamma(2)) and a small background rate 0.02 to all
        others, so each regime alone is fairly predictable while their mixture is
        not — the slow regime carries real information.  At each block boundary
        the regime stays with probability `stay`, else moves uniformly.

        Raises
        ------
        ValueError
            For n_regimes < 1, stay outside [0, 1], or successors outside [1, m−1].
        """
        check_positive_int("n_regimes", n_regimes)
        m = len(alphabet)
        if not (isinstance(successors, int) and 1 <= successors <= m - 1):
            raise ValueError(f"`successors` must be an integer in [1, {m - 1}]; got {successors!r}.")
        if not (0.0 <= float(stay) <= 1.0):
            raise ValueError(f"`stay` must be in [0, 1]; got {stay!r}.")
        rng = np.random.default_rng(seed)
        Qs = np.empty((n_regimes, m, m))
        for r in range(n_regimes):
            R = np.full((m, m), 0.02)
            for i in range(m):
                others = np.delete(np.arange(m), i)
                picks = rng.choice(others, size=successors, replace=False)
                R[i, picks] += 1.0 + rng.gamma(2.0, size=successors)
            np.fill_diagonal(R, 0.0)
            Qs[r] = R - np.diag(R.sum(axis=1))
        K = n_regimes
        S = np.full((K, K), (1.0 - stay) / (K - 1)) if K > 1 else np.ones((1, 1))
        if K > 1:
            np.fill_diagonal(S, stay)
        return cls(alphabet=bytes(alphabet), generators=Qs, switch=S, block=block)

    @property
    def n_regimes(self) -> int:
        return self.generators.shape[0]

    def to_dict(self) -> dict:
        """Primitive-typed description (for config.json)."""
        return {"alphabet": self.alphabet.decode("latin-1"), "n_regimes": self.n_regimes, "block": self.block,
                "generators": self.generators.tolist(), "switch": self.switch.tolist()}

    # ----------------------------------------------------------------- sampling

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Draw n tokens.

        Returns
        -------
        tokens : uint8 (n,)
            Byte values from `alphabet`.
        regimes : int64 (n,)
            The hidden regime r_t at each position.
        """
        n = check_positive_int("n", n)
        K, m, P = self.n_regimes, len(self.alphabet), self.block
        n_blocks = -(-n // P)
        regimes_b = np.empty(n_blocks, dtype=np.int64)
        regimes_b[0] = rng.choice(K, p=self.regime_initial)
        u = rng.random(n_blocks)
        cdf_S = np.cumsum(self.switch, axis=1)
        for b in range(1, n_blocks):
            regimes_b[b] = min(int(np.searchsorted(cdf_S[regimes_b[b - 1]], u[b], side="right")), K - 1)
        regimes = np.repeat(regimes_b, P)[:n]
        # Inverse-CDF draws for every position at once; only the chain walk is sequential.
        cdf = np.cumsum(self.transitions, axis=2)  # (K, m, m)
        cdf[:, :, -1] = 1.0
        u = rng.random(n)
        x = min(int(np.searchsorted(np.cumsum(self.initial[regimes[0]]), u[0], side="right")), m - 1)
        # Sequential walk in plain Python lists (one bisection per token; ~1 s per 10⁶ tokens).
        cdf_list, reg_list, u_list = cdf.tolist(), regimes.tolist(), u.tolist()
        out = [x]
        for t in range(1, n):
            x = bisect_right(cdf_list[reg_list[t]][x], u_list[t])
            if x >= m:
                x = m - 1
            out.append(x)
        idx = np.asarray(out, dtype=np.int64)
        table = np.frombuffer(self.alphabet, dtype=np.uint8)
        return table[idx], regimes

    # ----------------------------------------------------------------- Bayes filter

    def _indices(self, tokens) -> np.ndarray:
        tokens = np.asarray(tokens)
        if tokens.ndim != 1 or len(tokens) < 1:
            raise ValueError(f"`tokens` must be a non-empty 1-D array; got shape {tokens.shape}.")
        lookup = np.full(256, -1, dtype=np.int64)
        lookup[np.frombuffer(self.alphabet, dtype=np.uint8)] = np.arange(len(self.alphabet))
        idx = lookup[tokens.astype(np.int64)]
        if np.any(idx < 0):
            bad = sorted(set(tokens[idx < 0].tolist()))[:5]
            raise ValueError(f"`tokens` contains bytes outside the source alphabet, e.g. {bad}.")
        return idx

    def _log_emissions(self, idx: np.ndarray) -> np.ndarray:
        """L[t, r] = log P(x_t | x_{t−1}, r_t = r); L[0, r] = log p_st(Q_r)[x_0].  Shape (n, K)."""
        with np.errstate(divide="ignore"):
            logT = np.log(self.transitions)  # (K, m, m)
            L = np.empty((len(idx), self.n_regimes))
            L[0] = np.log(self.initial[:, idx[0]])
            L[1:] = logT[:, idx[:-1], idx[1:]].T
        return L

    def bayes_token_losses(self, tokens) -> np.ndarray:
        """Exact Bayes-optimal per-token losses by forward filtering over the hidden regime.

        Vectorised within blocks: while the regime cannot change, the joint
        log-likelihood of the block so far is a cumulative sum per regime, so
        log P(x_s..x_t | past) = logsumexp_r(log prior_b(r) + C[t, r]) with C the
        cumulative log emissions; only the block-to-block step (α ← α S) loops.
        `_bayes_token_losses_reference` is the per-token loop it must equal.

        Parameters
        ----------
        tokens : uint8 (n,)
            Bytes from `alphabet`, the stream starting at t = 0
            (aligned with the block boundaries).

        Returns
        -------
        float64 (n,): entry t is −log P(x_t | x_0..x_{t−1}) in nats.

        Raises
        ------
        ValueError
            If `tokens` is not 1-D or holds bytes outside the alphabet.
        """
        idx = self._indices(tokens)
        L = self._log_emissions(idx)
        n, P = len(idx), self.block
        out = np.empty(n)
        with np.errstate(divide="ignore"):
            log_prior = np.log(self.regime_initial)
            log_S = np.log(self.switch)
        for s in range(0, n, P):
            e = min(s + P, n)
            C = np.cumsum(L[s:e], axis=0) + log_prior  # (e−s, K): log P(r, x_s..x_t | past)
            log_marg = _logsumexp(C, axis=1)  # log P(x_s..x_t | x_<s)
            out[s] = -log_marg[0]
            out[s + 1:e] = -(log_marg[1:] - log_marg[:-1])
            log_alpha = C[-1] - log_marg[-1]  # posterior over the regime at the block's end
            log_prior = _logsumexp(log_alpha[:, None] + log_S, axis=0)
        return out

    def _bayes_token_losses_reference(self, tokens) -> np.ndarray:
        """Readable per-token forward filter (probability space, normalised each step)."""
        idx = self._indices(tokens)
        T, p0, S, P = self.transitions, self.initial, self.switch, self.block
        out = np.empty(len(idx))
        prior = self.regime_initial.copy()
        like = p0[:, idx[0]]
        for t in range(len(idx)):
            if t > 0:
                prior = alpha @ S if t % P == 0 else alpha  # noqa: F821 - alpha from the previous step
                like = T[:, idx[t - 1], idx[t]]
            joint = prior * like
            out[t] = -math.log(joint.sum())
            alpha = joint / joint.sum()  # noqa: F841 - read at the next step
        return out

    def oracle_token_losses(self, tokens, regimes) -> np.ndarray:
        """−log P(x_t | x_{t−1}, r_t) with the true regime known: a lower bound below the Bayes loss."""
        idx = self._indices(tokens)
        L = self._log_emissions(idx)
        return -L[np.arange(len(idx)), np.asarray(regimes)]

    def mixture_token_losses(self, tokens) -> np.ndarray:
        """Losses of a fixed first-order predictor, T̄ = Σ_r π(r) T_r (ignores the regime)."""
        idx = self._indices(tokens)
        pi = self.regime_initial
        Tbar = np.einsum("r,rij->ij", pi, self.transitions)
        out = np.empty(len(idx))
        out[0] = -math.log(pi @ self.initial[:, idx[0]])
        out[1:] = -np.log(Tbar[idx[:-1], idx[1:]])
        return out


def _logsumexp(a: np.ndarray, axis: int) -> np.ndarray:
    m = np.max(a, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.squeeze(m, axis=axis) + np.log(np.sum(np.exp(a - m), axis=axis))


def _uniformize(Q: np.ndarray) -> np.ndarray:
    """T = I + Q/λ with λ = max_i |Q_ii| (`sp_ode.uniformize`), a row-stochastic matrix."""
    import sp_ode

    result = sp_ode.uniformize(Q)
    T = result[0] if isinstance(result, tuple) else result
    return np.asarray(T, dtype=np.float64)


@functools.lru_cache(maxsize=8)
def _markov_corpus_cached(seed: int, n_train: int, n_val: int, block: int, n_regimes: int) -> ByteCorpus:
    source = MarkovSource.default(seed=seed, block=block, n_regimes=n_regimes)
    # Train and validation are independent draws (distinct streams of one seeded generator).
    rng_train, rng_val = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    train, _ = source.sample(n_train, rng_train)
    val, _ = source.sample(n_val, rng_val)
    return ByteCorpus(name="markov", train=torch.from_numpy(train.copy()), val=torch.from_numpy(val.copy()),
                      bayes_losses=source.bayes_token_losses(val), source=source)


def markov_corpus(*, seed: int = 0, n_train: int = 1 << 20, n_val: int = 1 << 16,
                  block: int = 16, n_regimes: int = 4) -> ByteCorpus:
    """The built-in two-timescale Markov corpus, with its exact Bayes losses on the validation stream.

    Deterministic in its arguments (cached per process).  Sampling 1M tokens takes ~1 s.

    Raises
    ------
    TypeError, ValueError
        For non-integer or non-positive sizes.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"`seed` must be an integer >= 0; got {seed!r}.")
    for name, value in (("n_train", n_train), ("n_val", n_val), ("block", block), ("n_regimes", n_regimes)):
        check_positive_int(name, value)
    return _markov_corpus_cached(int(seed), int(n_train), int(n_val), int(block), int(n_regimes))


def load_corpus(data: str | Path | None = None, *, seed: int = 0) -> ByteCorpus:
    """`data` None or `"markov"` → the built-in source; otherwise a text file path.

    `seed` picks the Markov source (its generators and streams); it is *not* the
    training seed, so runs with different training seeds see the same data.
    """
    if data is None or str(data) == "markov":
        return markov_corpus(seed=seed)
    return load_text(data)


# --------------------------------------------------------------------------- batches


def get_batch(data: torch.Tensor, batch_size: int, seq_len: int, generator: torch.Generator,
              device: str | torch.device = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of `data`: inputs x[s : s+T] and targets x[s+1 : s+T+1].

    The window starts s are drawn uniformly from [0, N − T − 1] by `generator`,
    so a seeded generator makes the batch stream deterministic (and its state is
    what a checkpoint saves).

    Returns
    -------
    x, y
        Int64 tensors (B, T) on `device`.
    """
    n = data.shape[0]
    if n < seq_len + 1:
        raise ValueError(f"the data split has {n} tokens; `seq_len` (T={seq_len}) needs at least T+1.")
    starts = torch.randint(n - seq_len, (batch_size,), generator=generator)
    return windows(data, starts, seq_len, device)


def windows(data: torch.Tensor, starts: torch.Tensor, seq_len: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    offsets = torch.arange(seq_len + 1)
    w = data[starts[:, None] + offsets[None, :]].long()  # (B, T+1)
    return w[:, :-1].to(device), w[:, 1:].to(device)


def eval_starts(n_tokens: int, seq_len: int, n_windows: int) -> np.ndarray:
    """Deterministic, evenly spaced window starts covering a validation stream of `n_tokens`.

    Used for every evaluation so that validation losses of different runs (and
    the Bayes loss) are measured on exactly the same targets.
    """
    last = n_tokens - seq_len - 1
    if last < 0:
        raise ValueError(f"the validation split has {n_tokens} tokens; `seq_len` (T={seq_len}) needs at least T+1.")
    n_windows = min(n_windows, last + 1)
    return np.unique(np.linspace(0, last, n_windows).round().astype(np.int64))


def tiling_starts(n_tokens: int, seq_len: int) -> np.ndarray:
    """Window starts 0, T, 2T, … whose targets tile the stream: positions 1 … k·T, each scored exactly once.

    The full-validation-set evaluation (every byte but the first and a tail shorter
    than T is a target once), as opposed to the sampled windows of `eval_starts`.
    """
    if n_tokens < seq_len + 1:
        raise ValueError(f"the validation split has {n_tokens} tokens; `seq_len` (T={seq_len}) needs at least T+1.")
    return np.arange(0, n_tokens - seq_len, seq_len, dtype=np.int64)
