"""Regime-switching sources of controlled difficulty, with exact context-limited Bayes floors.

The mathematics is docs/theory.md §8.  A hidden regime r_t ∈ {0 … K−1} switches by a
row-stochastic matrix S, and tokens x_t over m bytes follow a regime-dependent Markov chain
T_r (row-stochastic, m × m):

    P(r_t, x_t | r_{t−1}, x_{t−1}) = S[r_{t−1}, r_t] · T_{r_t}[x_{t−1}, x_t]   at a switching time t,
                                   = 1[r_t = r_{t−1}] · T_{r_t}[x_{t−1}, x_t]   otherwise.

Switching times are every token (`mode="hazard"`: the pair (r, x) is a homogeneous Markov
chain) or the block boundaries t = P, 2P, … (`mode="block"`: the chain is periodic in the
phase t mod P).  The stream starts in the stationary law of the pair chain at phase 0, so
its law is shift-invariant (hazard) or invariant under shifts by multiples of P (block).

**Controlled difficulty** ([`RegimeSource.perturbed`][neural.lm.sources.RegimeSource.perturbed]): one base generator Q with
random off-diagonal rates; regime r multiplies every off-diagonal rate by exp(δ·Z_{r,ij}),
Z ~ N(0, 1), and its token chain is T_r = exp(τ Q_r).  δ = 0 makes the regimes identical
(nothing to learn from the past); large δ makes them identifiable from a few tokens.  In
between, the regime is identifiable from T tokens but not from W ≪ T, which is where a
slow path can help a W-windowed fast path.

**Exact floors by forward filtering.**  With context C the Bayes-optimal predictor of x_t
sees x_a … x_{t−1}, a = t − C.  Its prior at a is the stationary law of the pair chain at
the phase of a, conditioned on the observed x_a; it then filters forward,

    prior_t = α_{t−1} S (at a switching time) or α_{t−1};
    P(x_t | x_a..x_{t−1}) = Σ_r prior_t(r) T_r[x_{t−1}, x_t];   α_t ∝ prior_t · T_r[x_{t−1}, x_t].

The phase is given to the block-mode predictor (a lower bound for a model that must infer it).
On a model's validation windows (inputs x[s : s+T], targets s+1 … s+T) a predictor with
context C sees x_{max(s, t−C)} … x_{t−1}; averaged over the targets this gives
Bayes-∞ (C = full past) ≤ Bayes-T (C = T) ≤ Bayes-W (C = W), and Bayes-W − Bayes-T is the
most a slow path can add to a one-layer W-windowed fast path.  A stack of L windowed layers
sees L(W−1)+1 tokens (its receptive field), so its floor is Bayes at that context.

`RegimeSource._brute_force_losses` is the definition itself (sum over every regime path
and every unseen earlier token), used by the tests on small sources.
"""
from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field

import numpy as np

from sp_ode.core.validation import check_positive_int


def check_regime_stack(alphabet, stack, name: str) -> np.ndarray:
    """Validate an alphabet (bytes of >= 2 distinct values) and a (K, m, m) stack of per-regime
    matrices named `name` over it; return the stack as float64 (shared with neural.lm.data)."""
    if not isinstance(alphabet, (bytes, bytearray)) or len(set(alphabet)) != len(alphabet) or len(alphabet) < 2:
        raise ValueError(f"`alphabet` must be bytes of >= 2 distinct values; got {alphabet!r}.")
    arr = np.asarray(stack, dtype=np.float64)
    m = len(alphabet)
    if arr.ndim != 3 or arr.shape[1:] != (m, m):
        raise ValueError(f"`{name}` must have shape (K, {m}, {m}) for an alphabet of {m} bytes; got {arr.shape}.")
    return arr

__all__ = ["MODES", "RegimeSource", "receptive_field"]

MODES = ("hazard", "block")

_ALPHABET = b" etaoinshrdlucmf"


def receptive_field(window: int, n_layer: int) -> int:
    """Tokens seen by the last position of a stack of `n_layer` W-windowed causal attention layers: L(W−1)+1."""
    check_positive_int("window", window)
    check_positive_int("n_layer", n_layer)
    return n_layer * (window - 1) + 1


@dataclass(frozen=True, eq=False)
class RegimeSource:
    """A hidden-regime Markov source (docs/theory.md §8).

    Attributes
    ----------
    alphabet : bytes
        The m distinct byte values emitted.
    transitions : float64 (K, m, m)
        T_r, row-stochastic.
    switch : float64 (K, K)
        S, row-stochastic, applied at every switching time.
    mode
        "hazard" (the regime may switch at every token) or "block" (at t = P, 2P, …).
    block : P
        The block length of `mode="block"` (ignored by "hazard").

    Derived in `__post_init__`:
    phase_laws : float64 (P', K, m)
        The stationary law μ_φ(r, x) of the pair chain at
        phase φ (P' = P for "block", 1 for "hazard").
    """

    alphabet: bytes
    transitions: np.ndarray = field(repr=False)
    switch: np.ndarray = field(repr=False)
    mode: str = "hazard"
    block: int = 16
    phase_laws: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        import sp_ode

        T = check_regime_stack(self.alphabet, self.transitions, "transitions")
        if self.mode not in MODES:
            raise ValueError(f"`mode` must be one of {MODES}; got {self.mode!r}.")
        check_positive_int("block", self.block)
        m = len(self.alphabet)
        K = T.shape[0]
        S = np.asarray(self.switch, dtype=np.float64)
        if S.shape != (K, K):
            raise ValueError(f"`switch` must have shape ({K}, {K}); got {S.shape}.")
        for name, M in (("transitions", T), ("switch", S)):
            if np.any(M < 0) or not np.allclose(M.sum(axis=-1), 1.0, rtol=0, atol=1e-12):
                raise ValueError(f"`{name}` must be row-stochastic (entries >= 0, rows summing to 1).")
        # One-step matrices of the pair chain on states (r, x), index r·m + x.
        stay = _pair_step(np.eye(K), T)  # no switch: block-diagonal diag(T_r)
        move = _pair_step(S, T)  # S[r, r'] T_{r'}[x, x']
        if self.mode == "hazard":
            laws = sp_ode.stationary_distribution(move - np.eye(K * m))[None]
        else:
            # μ_0 = μ_0 · A^{P−1} B (A within a block, B at a boundary); μ_φ = μ_0 A^φ.
            period = np.linalg.matrix_power(stay, self.block - 1) @ move
            mu = sp_ode.stationary_distribution(period - np.eye(K * m))
            laws = [mu]
            for _ in range(self.block - 1):
                laws.append(laws[-1] @ stay)
            laws = np.stack(laws)
        laws = np.clip(laws, 0.0, None)
        laws = laws / laws.sum(axis=1, keepdims=True)
        object.__setattr__(self, "transitions", T)
        object.__setattr__(self, "switch", S)
        object.__setattr__(self, "phase_laws", laws.reshape(-1, K, m))

    # ----------------------------------------------------------------- construction

    @classmethod
    def perturbed(cls, delta: float, *, n_regimes: int = 4, n_symbols: int = 8, switch_prob: float = 1 / 1024,
                  mode: str = "hazard", block: int = 16, tau: float = 1.0, sparsity: float = 2.0,
                  seed: int = 0) -> RegimeSource:
        """K regimes perturbing one base generator by exp(δ·N(0,1)) per off-diagonal rate.

        Parameters
        ----------
        delta : δ ≥ 0
            The log-scale spread of the regimes' rates around the base rates.
        n_regimes
            K.
        n_symbols : m ≤ 16
            Bytes taken from `" etaoinshrdlucmf"`.
        switch_prob
            Probability that the regime moves (uniformly to another) at each
            switching time; mean run length 1/switch_prob switching times.
        mode, block
            See the class.
        tau
            Token time step, T_r = exp(τ Q_r).
        sparsity
            Base rates are exp(sparsity · N(0,1)) so that each state has a few
            preferred successors (a predictable token chain when sparsity is large).
        seed
            The random rates.

        Raises
        ------
        ValueError
            For δ < 0, τ ≤ 0, switch_prob outside [0, 1], K < 2 or m outside [2, 16].
        """
        from scipy.linalg import expm

        check_positive_int("n_regimes", n_regimes)
        check_positive_int("n_symbols", n_symbols)
        if n_regimes < 2:
            raise ValueError(f"`n_regimes` must be >= 2; got {n_regimes}.")
        if not 2 <= n_symbols <= len(_ALPHABET):
            raise ValueError(f"`n_symbols` must be in [2, {len(_ALPHABET)}]; got {n_symbols}.")
        if not (math.isfinite(delta) and delta >= 0):
            raise ValueError(f"`delta` must be a finite number >= 0; got {delta!r}.")
        if not (math.isfinite(tau) and tau > 0):
            raise ValueError(f"`tau` must be a finite number > 0; got {tau!r}.")
        if not 0.0 <= switch_prob <= 1.0:
            raise ValueError(f"`switch_prob` must be in [0, 1]; got {switch_prob!r}.")
        rng = np.random.default_rng(seed)
        m, K = n_symbols, n_regimes
        base = np.exp(sparsity * rng.standard_normal((m, m)))
        Z = rng.standard_normal((K, m, m))  # drawn for every δ: the same directions, scaled
        T = np.empty((K, m, m))
        for r in range(K):
            R = base * np.exp(delta * Z[r])
            np.fill_diagonal(R, 0.0)
            T[r] = expm(tau * (R - np.diag(R.sum(axis=1))))
        T = np.clip(T, 0.0, None)
        T /= T.sum(axis=2, keepdims=True)
        S = np.full((K, K), switch_prob / (K - 1))
        np.fill_diagonal(S, 1.0 - switch_prob)
        return cls(alphabet=_ALPHABET[:m], transitions=T, switch=S, mode=mode, block=block)

    @classmethod
    def from_markov(cls, source) -> RegimeSource:
        """The block-switching law of a [`neural.lm.data.MarkovSource`][neural.lm.data.MarkovSource] (its T_r, S and P).

        Sampled by this class the stream starts in the periodic-stationary law, where
        MarkovSource starts from π_S(r)·p_st(Q_r); the two laws agree after mixing.
        """
        return cls(alphabet=bytes(source.alphabet), transitions=source.transitions, switch=source.switch,
                   mode="block", block=source.block)

    @property
    def n_regimes(self) -> int:
        return self.transitions.shape[0]

    @property
    def n_symbols(self) -> int:
        return self.transitions.shape[1]

    def _switches(self, t: np.ndarray) -> np.ndarray:
        """True where the regime may switch on entering position t (t ≥ 1)."""
        if self.mode == "hazard":
            return np.ones(np.shape(t), dtype=bool)
        return np.asarray(t) % self.block == 0

    def _phase(self, t: np.ndarray) -> np.ndarray:
        return np.zeros(np.shape(t), dtype=np.int64) if self.mode == "hazard" else np.asarray(t) % self.block

    def to_dict(self) -> dict:
        """Primitive-typed description (for JSON records)."""
        return {"alphabet": self.alphabet.decode("latin-1"), "mode": self.mode, "block": self.block,
                "n_regimes": self.n_regimes, "transitions": self.transitions.tolist(), "switch": self.switch.tolist()}

    # ----------------------------------------------------------------- sampling

    def sample(self, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Draw n tokens from the stationary law (phase 0 at t = 0).

        Returns
        -------
        tokens : uint8 (n,)
            Bytes from `alphabet`.
        regimes : int64 (n,)
            The hidden regime r_t.
        """
        n = check_positive_int("n", n)
        K, m = self.n_regimes, self.n_symbols
        first = rng.choice(K * m, p=self.phase_laws[0].ravel())
        r, x = divmod(int(first), m)
        cdf_S = np.cumsum(self.switch, axis=1).tolist()
        cdf_T = np.cumsum(self.transitions, axis=2)
        cdf_T[:, :, -1] = 1.0
        cdf_T = cdf_T.tolist()
        u_r, u_x = rng.random(n).tolist(), rng.random(n).tolist()
        hazard, P = self.mode == "hazard", self.block
        regimes, tokens = [r], [x]
        # Sequential walk in plain lists (one bisection per draw; ~1–2 s per 10⁶ tokens).
        for t in range(1, n):
            if hazard or t % P == 0:
                r = min(bisect_right(cdf_S[r], u_r[t]), K - 1)
            x = min(bisect_right(cdf_T[r][x], u_x[t]), m - 1)
            regimes.append(r)
            tokens.append(x)
        table = np.frombuffer(self.alphabet, dtype=np.uint8)
        return table[np.asarray(tokens, dtype=np.int64)], np.asarray(regimes, dtype=np.int64)

    def indices(self, tokens) -> np.ndarray:
        """Symbol indices 0 … m−1 of a byte stream; ValueError for bytes outside the alphabet."""
        tokens = np.asarray(tokens)
        if tokens.ndim != 1 or len(tokens) < 1:
            raise ValueError(f"`tokens` must be a non-empty 1-D array; got shape {tokens.shape}.")
        lookup = np.full(256, -1, dtype=np.int64)
        lookup[np.frombuffer(self.alphabet, dtype=np.uint8)] = np.arange(self.n_symbols)
        idx = lookup[tokens.astype(np.int64)]
        if np.any(idx < 0):
            raise ValueError(f"`tokens` contains bytes outside the source alphabet, e.g. {sorted(set(tokens[idx < 0].tolist()))[:5]}.")
        return idx

    # ----------------------------------------------------------------- filters

    def _prior(self, idx: np.ndarray, starts: np.ndarray) -> np.ndarray:
        """α at a context start a: μ_{phase(a)}(r | x_a), shape (L, K)."""
        joint = self.phase_laws[self._phase(starts)][np.arange(len(starts)), :, idx[starts]]  # (L, K)
        return joint / joint.sum(axis=1, keepdims=True)

    def _lanes(self, idx: np.ndarray, starts: np.ndarray, steps: int, *, last_only: bool = False,
               prior: np.ndarray | None = None) -> np.ndarray:
        """Filter every lane j from its start a_j for `steps` tokens, vectorised over lanes.

        Returns losses (L, steps): entry [j, i] = −log P(x_{a_j+1+i} | x_{a_j} … x_{a_j+i});
        with `last_only` only column steps−1, shape (L,).  `prior` replaces the
        stationary conditional prior (the tests use it to build a deliberately wrong filter).
        """
        starts = np.asarray(starts, dtype=np.int64)
        alpha = self._prior(idx, starts) if prior is None else prior
        out = np.empty(len(starts)) if last_only else np.empty((len(starts), steps))
        T, S = self.transitions, self.switch
        for i in range(steps):
            t = starts + 1 + i
            step_prior = alpha @ S
            if self.mode == "block":
                step_prior = np.where(self._switches(t)[:, None], step_prior, alpha)
            joint = step_prior * T[:, idx[t - 1], idx[t]].T  # (L, K)
            z = joint.sum(axis=1)
            loss = -np.log(z)
            if last_only:
                out[:] = loss
            else:
                out[:, i] = loss
            alpha = joint / z[:, None]
        return out

    def bayes_token_losses(self, tokens, context: int | None = None) -> np.ndarray:
        """Exact Bayes-optimal per-token losses with the full past or the last C tokens.

        Parameters
        ----------
        tokens : uint8 (n,)
            A stream of this source starting at t = 0 (phase 0).
        context
            None for the full past x_0 … x_{t−1}; else C ≥ 1, the predictor of x_t
            sees x_{max(0, t−C)} … x_{t−1}.

        Returns
        -------
        float64 (n,): entry t is −log P(x_t | context) in nats; entry 0 is −log μ_0(x_0).

        Raises
        ------
        ValueError
            For a bad stream or context.
        """
        idx = self.indices(tokens)
        n = len(idx)
        if context is not None:
            check_positive_int("context", context)
        out = np.empty(n)
        out[0] = -math.log(self.phase_laws[0][:, idx[0]].sum())
        if n > 1:
            head = n - 1 if context is None else min(context, n - 1)
            out[1:head + 1] = self._lanes(idx, np.array([0]), head)[0]
            if context is not None and n - 1 > context:
                out[context + 1:] = self._lanes(idx, np.arange(1, n - context), context, last_only=True)
        return out

    def window_floor(self, tokens, starts, seq_len: int, context: int | None = None) -> float:
        """Mean Bayes loss on a model's validation targets s+1 … s+T for each window start s.

        The predictor of target t = s+1+i sees x_{max(s, t−C)} … x_{t−1} (C = `context`;
        C ≥ T gives Bayes-T, the model's own context), or the full stream past when
        `context` is None (Bayes-∞).  Block-mode predictors know the phase of s.

        Raises
        ------
        ValueError
            For windows that run past the stream, or bad sizes.
        """
        idx = self.indices(tokens)
        check_positive_int("seq_len", seq_len)
        starts = np.asarray(starts, dtype=np.int64)
        if starts.ndim != 1 or len(starts) == 0 or starts.min() < 0 or starts.max() + seq_len >= len(idx):
            raise ValueError(f"`starts` must be window starts s with 0 <= s and s + T < {len(idx)}; got {starts!r}.")
        targets = starts[:, None] + 1 + np.arange(seq_len)[None, :]  # (n_windows, T)
        if context is None:
            return float(self.bayes_token_losses(tokens)[targets].mean())
        check_positive_int("context", context)
        head = min(context, seq_len)
        total = self._lanes(idx, starts, head).sum()  # offsets i < C: context i+1 from s
        if seq_len > context:  # offsets i ≥ C: the sliding context t−C … t−1
            total += self._lanes(idx, targets[:, context:].ravel() - context, context, last_only=True).sum()
        return float(total / targets.size)

    # ----------------------------------------------------------------- reference

    def _brute_force_losses(self, tokens, context: int | None = None) -> np.ndarray:
        """The definition, by enumeration (tests only; cost K^n · m^n).

        P(x_a … x_t) = Σ over every regime path r_0 … r_t and every unseen token x_0 … x_{a−1}
        of the stream law from the phase-0 stationary start; the loss is
        −log P(x_a … x_t) / P(x_a … x_{t−1}), a = max(0, t − C).  No filter, no phase laws
        beyond μ_0.
        """
        import itertools

        idx = self.indices(tokens)
        n, K, m = len(idx), self.n_regimes, self.n_symbols
        mu0, T, S = self.phase_laws[0], self.transitions, self.switch

        def marginal(a: int, t: int) -> float:  # P(x_a … x_t), earlier tokens summed out
            total = 0.0
            for hidden in itertools.product(range(m), repeat=a):
                xs = list(hidden) + list(idx[a:t + 1])
                for path in itertools.product(range(K), repeat=t + 1):
                    p = mu0[path[0], xs[0]]
                    for u in range(1, t + 1):
                        if self._switches(np.array(u)):
                            p *= S[path[u - 1], path[u]]
                        elif path[u] != path[u - 1]:
                            p = 0.0
                            break
                        p *= T[path[u], xs[u - 1], xs[u]]
                    total += p
            return total

        out = np.empty(n)
        out[0] = -math.log(marginal(0, 0))
        for t in range(1, n):
            a = 0 if context is None else max(0, t - context)
            out[t] = -math.log(marginal(a, t) / marginal(a, t - 1))
        return out


def _pair_step(S: np.ndarray, T: np.ndarray) -> np.ndarray:
    """Pair-chain matrix M[(r, x), (r', x')] = S[r, r'] · T_{r'}[x, x'], shape (K·m, K·m)."""
    K, m = T.shape[0], T.shape[1]
    # (K, 1, K, 1) * (1, m, K, m) -> (K, m, K, m): rows (r, x), columns (r', x')
    M = S[:, None, :, None] * np.transpose(T, (1, 0, 2))[None]
    return M.reshape(K * m, K * m)
