"""Tests of neural.lm.model / neural.lm.pooling: docs/theory.md §4 exactly, leak-free, ablation arms.

Provenance of the expected values:
* "gate 0 ⇒ dense": exact algebra (h + 0·x = h), so the logits are compared bit for bit;
* leak-freedom: exact causality (changing later tokens changes nothing at earlier
  positions, bit for bit; the Jacobian entries are exactly zero), checked with every
  gate forced open on random weights; two deliberately leaky variants fail the same
  checkers, so the checkers can fail;
* the slow feedback is compared with a per-token loop written from the formulas of
  docs/theory.md §4 (an independent reference implementation, float64);
* the gate gradient is compared with a central finite difference (float64).
"""
from __future__ import annotations

import contextlib
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings, strategies as st
from torch.nn.attention import SDPBackend, sdpa_kernel

import neural
from neural.lm import model as model_mod
from neural.lm.config import ModelConfig
from neural.lm.model import FastSlowLM, SlowPath, window_mask
from neural.lm.pooling import add_to_blocks, block_mean_pool, lag_one_block

# jacrev over SDPA's CPU backward uses functorch's slow fallback: correct, only slower
pytestmark = pytest.mark.filterwarnings("ignore:There is a performance drop:UserWarning")

V = 32  # a small vocabulary keeps the Jacobians cheap


def make(arm="coupled", *, T=24, P=4, window=None, seed=0, d=16, n_layer=2, dtype=torch.float64, **kw):
    cfg = ModelConfig(vocab_size=V, seq_len=T, pool=P, n_layer=n_layer, n_head=2, d_model=d,
                      arm=arm, window=window, **kw)
    return FastSlowLM(cfg, seed=seed).to(dtype).eval()


@torch.no_grad()
def randomize_(model, seed=0, std=0.3):
    """Random weights of O(1) effect (init weights are small), gates open and non-uniform."""
    gen = torch.Generator().manual_seed(seed)
    for p in model.parameters():
        p.copy_(torch.randn(p.shape, generator=gen, dtype=p.dtype) * std)
    for g in model.gate_parameters():
        g.copy_(1.0 + torch.rand(g.shape, generator=gen, dtype=g.dtype))  # g ∈ [1, 2): open
    return model


# ---------------------------------------------------------------- checkers
def assert_no_future_dependence(model, idx, t):
    """Changing every token after position t leaves logits[:, :t+1] bit-for-bit unchanged."""
    gen = torch.Generator().manual_seed(t)
    other = idx.clone()
    other[:, t + 1:] = (idx[:, t + 1:] + torch.randint(1, V, idx[:, t + 1:].shape, generator=gen)) % V
    with torch.no_grad():
        a, b = model(idx), model(other)
    delta = (a[:, : t + 1] - b[:, : t + 1]).abs().max().item()
    assert delta == 0.0, f"logits at positions ≤ {t} changed by {delta:.3e} when later tokens changed"
    # and the later positions do see the change (the check is not vacuous)
    assert not torch.equal(a[:, t + 1:], b[:, t + 1:])


def assert_zero_future_jacobian(model, x, *, full=False):
    """∂ logits_t / ∂ x_s = 0 exactly for every s > t (x: input embeddings, (1, T', d)).

    ``full=True`` differentiates all T'·V logits.  Otherwise each position's logits are
    contracted with a random vector w_t first (T' instead of T'·V backward passes):
    a non-zero row block ∂logits_t/∂x_s gives a non-zero w_tᵀ ∂logits_t/∂x_s with
    probability 1, so exact zeros there are the same evidence, V times cheaper.
    """
    if full:
        jac = torch.func.jacrev(model.forward_from_embeddings)(x)  # (1, T', V, 1, T', d)
        per_pair = jac[0, :, :, 0].abs().amax(dim=(1, 3))  # (T', T'): max |∂logit_t/∂x_s|
    else:
        w = torch.randn(x.shape[1], V, dtype=x.dtype, generator=torch.Generator().manual_seed(1))

        def projected(e):  # (1, T', d) -> (T',): w_t · logits_t
            return (model.forward_from_embeddings(e)[0] * w).sum(-1)

        jac = torch.func.jacrev(projected)(x)  # (T', 1, T', d)
        per_pair = jac[:, 0].abs().amax(dim=-1)  # (T', T')
    future = torch.triu(per_pair, diagonal=1)
    assert future.max().item() == 0.0, f"future Jacobian entries up to {future.max().item():.3e}"
    assert torch.all(torch.diagonal(per_pair) > 0)  # each position depends on its own input


# ----------------------------------------------------------- gate 0 = dense
@pytest.mark.parametrize("window", [None, 5])
def test_zero_gates_reproduce_dense_exactly(window):
    dense = make("dense", window=window, seed=7)
    idx = torch.randint(0, V, (3, 24), generator=torch.Generator().manual_seed(1))
    want = dense(idx)
    for arm in ("coupled", "frozen"):
        m = make(arm, window=window, seed=7)
        assert m.gate_magnitudes() == [0.0, 0.0]  # gates start closed
        assert torch.equal(m(idx), want), arm
        with m.forced_gates(0.5):  # an open gate does change the logits ...
            assert not torch.equal(m(idx), want)
        assert torch.equal(m(idx), want)  # ... and forced_gates restores the zero gates


def test_every_arm_leaves_the_global_rng_in_the_same_state():
    draws = []
    for arm in ("dense", "coupled", "frozen"):
        torch.manual_seed(11)
        FastSlowLM(ModelConfig(vocab_size=V, seq_len=24, pool=4, n_layer=2, n_head=2, d_model=16, arm=arm))
        draws.append(torch.rand(4))
    assert all(torch.equal(d, draws[0]) for d in draws)


def test_zero_gates_match_dense_in_training_mode_with_dropout():
    # The slow path draws no random numbers, so the dropout masks coincide.
    dense = make("dense", seed=2, dropout=0.2).train()
    coupled = make("coupled", seed=2, dropout=0.2).train()
    idx = torch.randint(0, V, (2, 24), generator=torch.Generator().manual_seed(0))
    torch.manual_seed(5)
    want = dense(idx)
    torch.manual_seed(5)
    assert torch.equal(coupled(idx), want)


# ----------------------------------------------------------- leak-freedom
@st.composite
def leak_cases(draw):
    P = draw(st.integers(1, 6))
    T = P * draw(st.integers(2 if P == 1 else 1, 5))  # config rule: P divides T
    length = draw(st.integers(2, T))  # T' ≤ T, any residue mod P
    k = draw(st.integers(0, (length - 1) // P))
    # block boundaries t = kP − 1 (last token of a block) and kP (first of the next) are
    # drawn on purpose, besides any position; t ≤ T' − 2 so some later token exists
    t = draw(st.one_of(st.just(k * P - 1), st.just(k * P), st.integers(0, length - 2)))
    t = min(max(t, 0), length - 2)
    window = draw(st.one_of(st.none(), st.integers(1, T)))
    seed = draw(st.integers(0, 2**16))
    return T, P, length, t, window, seed


@settings(max_examples=30)
@given(leak_cases())
def test_changing_later_tokens_leaves_earlier_logits_unchanged(case):
    T, P, length, t, window, seed = case
    model = randomize_(make("coupled", T=T, P=P, window=window, seed=seed, d=8, n_layer=2), seed=seed)
    idx = torch.randint(0, V, (2, length), generator=torch.Generator().manual_seed(seed))
    assert_no_future_dependence(model, idx, t)


@pytest.mark.parametrize("P, length, window, full", [
    (4, 12, None, True), (3, 11, 4, True),
    (4, 24, None, False), (3, 17, None, False), (4, 22, 5, False), (1, 9, None, False),
])
def test_jacobian_wrt_later_embeddings_is_zero(P, length, window, full):
    model = randomize_(make("coupled", T=24, P=P, window=window, d=8), seed=P)
    x = torch.randn(1, length, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    # The full T'·V-row Jacobian runs on SDPA's math kernel (plain bmm's, which vmap
    # batches; the CPU flash kernel's backward has no batching rule and is 10× slower
    # under jacrev); the projected ones run on the default kernel used in training.
    backend = sdpa_kernel(SDPBackend.MATH) if full else contextlib.nullcontext()
    with backend:
        assert_zero_future_jacobian(model, x, full=full)


def _no_lag_forward(self, a):
    """LEAKY on purpose: block b receives z_b (no lag), so tokens see later tokens of their block."""
    n_out = -(-a.shape[1] // self.pool)
    pad = n_out * self.pool - a.shape[1]
    a = F.pad(a, (0, 0, 0, pad))  # (B, n_out·P, d)
    s = block_mean_pool(a, self.pool, n_out)
    z = model_mod._attend(self.qkv(s), self.n_head, mask=None, dropout_p=0.0)
    return self.gate * self.proj(z)


def _non_causal_slow_forward(self, a):
    """LEAKY on purpose: the lag is kept but the slow attention sees every block."""
    n_out = -(-a.shape[1] // self.pool)
    s = block_mean_pool(a, self.pool)  # every complete block
    everything = torch.ones(s.shape[1], s.shape[1], dtype=torch.bool)
    z = model_mod._attend(self.qkv(s), self.n_head, mask=everything, dropout_p=0.0)
    return self.gate * self.proj(lag_one_block(z, self.null, n_out))


@pytest.mark.parametrize("leaky", [_no_lag_forward, _non_causal_slow_forward])
def test_leaky_variants_fail_the_same_checkers(monkeypatch, leaky):
    model = randomize_(make("coupled", T=24, P=4, d=8), seed=3)
    idx = torch.randint(0, V, (2, 24), generator=torch.Generator().manual_seed(0))
    x = torch.randn(1, 24, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert_no_future_dependence(model, idx, 5)  # the real model passes ...
    monkeypatch.setattr(SlowPath, "forward", leaky)
    with pytest.raises(AssertionError, match="changed by"):  # ... the leaky one fails
        assert_no_future_dependence(model, idx, 5)
    with pytest.raises(AssertionError, match="future Jacobian"):
        assert_zero_future_jacobian(model, x)
    with model.forced_gates(0.0):  # and at gate 0 the leak is invisible, as DESIGN warns
        assert_no_future_dependence(model, idx, 5)


def test_prefix_of_any_length_gives_the_same_logits():
    # T' not a multiple of P needs no padding: a prefix's logits equal the first T' rows.
    model = randomize_(make("coupled", T=24, P=4, d=8), seed=1)
    idx = torch.randint(0, V, (2, 24), generator=torch.Generator().manual_seed(0))
    full = model(idx)
    for length in (1, 3, 4, 5, 13, 23):
        # different shapes change only the summation blocking: float64 rounding
        torch.testing.assert_close(model(idx[:, :length]), full[:, :length], rtol=0, atol=1e-12)


# ---------------------------------------------- reference implementation
def reference_feedback(slow: SlowPath, a: torch.Tensor) -> torch.Tensor:
    """Per-token loop over docs/theory.md §4: s_k = mean of LN(h) over block k; z = causal
    softmax attention over blocks; token t gets g ⊙ W_o z_{⌊t/P⌋−1}, block 0 the null."""
    B, T, d = a.shape
    P, H = slow.pool, slow.n_head
    hd = d // H
    Wqkv, bqkv = slow.qkv.weight, slow.qkv.bias
    out = torch.zeros(B, T, d, dtype=a.dtype)
    for bi in range(B):
        n_full = T // P
        s = [a[bi, k * P:(k + 1) * P].sum(0) / P for k in range(n_full)]
        z = []
        for k in range(n_full):
            q_all = Wqkv @ s[k] + bqkv
            zk = torch.zeros(d, dtype=a.dtype)
            for h in range(H):
                q = q_all[h * hd:(h + 1) * hd]
                keys = [(Wqkv @ s[j] + bqkv)[d + h * hd:d + (h + 1) * hd] for j in range(k + 1)]
                vals = [(Wqkv @ s[j] + bqkv)[2 * d + h * hd:2 * d + (h + 1) * hd] for j in range(k + 1)]
                w = torch.softmax(torch.stack([q @ kk / math.sqrt(hd) for kk in keys]), 0)
                zk[h * hd:(h + 1) * hd] = sum(wj * vj for wj, vj in zip(w, vals))
            z.append(zk)
        for t in range(T):
            b = t // P
            zin = slow.null if b == 0 else z[b - 1]
            out[bi, t] = slow.gate * (slow.proj.weight @ zin + slow.proj.bias)
    return out


@pytest.mark.parametrize("P, length", [(4, 24), (3, 14), (5, 4), (1, 6)])
def test_slow_feedback_matches_per_token_reference(P, length):
    model = randomize_(make("coupled", T=24 if 24 % P == 0 else 30, P=P, d=8), seed=P)
    slow = model.blocks[0].slow
    a = torch.randn(2, length, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(P))
    h = torch.zeros_like(a)
    got = add_to_blocks(h, slow(a), P)  # optimised: pool, attend, lag, broadcast
    torch.testing.assert_close(got, reference_feedback(slow, a), rtol=1e-12, atol=1e-14)


def test_pooling_helpers_shapes_and_values():
    u = torch.arange(2 * 7 * 3, dtype=torch.float64).reshape(2, 7, 3)
    s = block_mean_pool(u, 3)  # blocks {0,1,2}, {3,4,5}; token 6 is a partial block
    assert s.shape == (2, 2, 3)
    torch.testing.assert_close(s[0, 1], u[0, 3:6].mean(0), rtol=0, atol=0)
    null = torch.tensor([9.0, 9.0, 9.0], dtype=torch.float64)
    lagged = lag_one_block(s, null, 3)
    assert torch.equal(lagged[:, 0], null.expand(2, 3)) and torch.equal(lagged[:, 1:], s)
    m = window_mask(5, 2)
    assert m.tolist() == [[i - 2 < j <= i for j in range(5)] for i in range(5)]


# -------------------------------------------------------- gates and arms
def test_zero_gate_gets_nonzero_gradient_equal_to_finite_difference():
    model = make("coupled", seed=4)  # at init: gates 0, W_o ≠ 0
    idx = torch.randint(0, V, (2, 24), generator=torch.Generator().manual_seed(0))
    _, loss = model(idx, idx.roll(-1, 1))
    loss.backward()
    grads = [g.grad.clone() for g in model.gate_parameters()]
    assert all(gr.abs().max() > 0 for gr in grads)
    # central difference of the loss along the first coordinate of layer-0's gate
    gate, delta = model.gate_parameters()[0], 1e-6
    with torch.no_grad():
        gate[0] = delta
        up = model(idx, idx.roll(-1, 1))[1].item()
        gate[0] = -delta
        down = model(idx, idx.roll(-1, 1))[1].item()
        gate[0] = 0.0
    fd = (up - down) / (2 * delta)
    assert abs(fd - grads[0][0].item()) <= 1e-6 * max(1.0, abs(fd)), (fd, grads[0][0].item())


def test_frozen_arm_updates_gate_but_not_slow_weights():
    model = make("frozen", seed=1).train()
    slow_before = [p.detach().clone() for p in model.slow_parameters()]
    fast_before = model.wte.weight.detach().clone()
    assert slow_before and all(not p.requires_grad for p in model.slow_parameters())
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    idx = torch.randint(0, V, (2, 24), generator=torch.Generator().manual_seed(0))
    _, loss = model(idx, idx.roll(-1, 1))
    loss.backward()
    opt.step()
    assert all(torch.equal(p, q) for p, q in zip(model.slow_parameters(), slow_before))
    assert all(m > 0 for m in model.gate_magnitudes())  # the gates moved off zero
    assert not torch.equal(model.wte.weight, fast_before)
    assert model.num_params(trainable_only=True) == model.num_params() - sum(p.numel() for p in slow_before)


def test_coupled_arm_trains_slow_weights_and_dense_has_none():
    coupled = make("coupled", seed=1)
    assert coupled.slow_parameters() and all(p.requires_grad for p in coupled.slow_parameters())
    dense = make("dense", seed=1)
    assert dense.slow_parameters() == [] and dense.gate_parameters() == [] and dense.gate_magnitudes() == []
    assert not any("slow" in n or "gate" in n for n, _ in dense.named_parameters())
    gate_names = [n for n, _ in coupled.named_parameters() if "gate" in n]
    assert gate_names == ["blocks.0.slow.gate", "blocks.1.slow.gate"]
    # fast-path parameters (same names) are identical across arms built with one seed
    cp = dict(coupled.named_parameters())
    assert all(torch.equal(p, cp[n]) for n, p in dense.named_parameters())
    with pytest.raises(ValueError, match="dense"):
        dense.set_gates(1.0)


def test_loss_is_mean_cross_entropy_in_nats():
    model = make("coupled", seed=0)
    idx = torch.randint(0, V, (2, 24), generator=torch.Generator().manual_seed(0))
    tgt = idx.roll(-1, 1)
    tgt[0, :5] = -1  # ignored positions
    logits, loss = model(idx, tgt)
    logp = torch.log_softmax(logits, -1)
    keep = tgt >= 0
    want = -logp[keep].gather(-1, tgt[keep][:, None]).mean()
    torch.testing.assert_close(loss, want, rtol=1e-12, atol=0)
    # an untrained model is close to uniform: loss ≈ log V
    assert abs(loss.item() - math.log(V)) < 0.1


def test_presets_and_lazy_exports():
    for name, preset in neural.PRESETS.items():
        m = FastSlowLM(preset(), seed=0)
        assert m.num_params() > 0, name
    assert neural.FastSlowLM is FastSlowLM and neural.ModelConfig is ModelConfig
    assert neural.block_mean_pool is block_mean_pool and neural.lag_one_block is lag_one_block
    assert neural.add_to_blocks is add_to_blocks and neural.tiny().arm in neural.ARMS


def test_import_neural_does_not_import_torch():
    code = "import sys, neural; neural.ModelConfig(); assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[3])


# ------------------------------------------------------------- bad input
@pytest.mark.parametrize("field, value, match", [
    ("pool", 0, "`pool`"), ("seq_len", -4, "`seq_len`"), ("n_layer", 0, "`n_layer`"),
    ("d_model", 30, "`d_model`"), ("arm", "sparse", "`arm`"), ("window", 0, "`window`"),
    ("dropout", 1.0, "`dropout`"),
])
def test_bad_config_values_raise_naming_the_field(field, value, match):
    with pytest.raises(ValueError, match=match):
        ModelConfig(**{"seq_len": 24, "pool": 4, "n_head": 4, "d_model": 32, field: value})


@pytest.mark.parametrize("field, value", [("vocab_size", 2.5), ("n_layer", "4"), ("pool", True), ("window", 2.0)])
def test_wrong_kind_of_config_value_is_a_type_error(field, value):
    with pytest.raises(TypeError, match=f"`{field}`"):
        ModelConfig(**{"seq_len": 24, "pool": 4, "n_head": 4, "d_model": 32, field: value})


def test_set_overrides_are_checked():
    with pytest.raises(ValueError, match="`--set n_layer` must be a int; got 'four'"):
        ModelConfig().with_overrides(["n_layer=four"])
    with pytest.raises(ValueError, match="key=value"):
        ModelConfig().with_overrides(["depth=4"])
    assert ModelConfig().with_overrides(["window=none", "dropout=0.1"]).dropout == 0.1


def test_seq_len_not_divisible_by_pool_is_rejected():
    with pytest.raises(ValueError, match="divisible by `pool`"):
        ModelConfig(seq_len=30, pool=4)


def test_bad_forward_inputs_raise_typed_errors():
    model = make("coupled")
    with pytest.raises(TypeError, match="`config`"):
        FastSlowLM({"seq_len": 24})
    with pytest.raises(TypeError, match="`idx`.*integer"):
        model(torch.zeros(1, 8))
    with pytest.raises(TypeError, match="`idx`"):
        model([[1, 2]])
    with pytest.raises(ValueError, match="`idx`.*seq_len"):
        model(torch.zeros(1, 25, dtype=torch.long))
    with pytest.raises(ValueError, match="`idx`.*shape"):
        model(torch.zeros(8, dtype=torch.long))
    with pytest.raises(ValueError, match=r"`idx` entries must lie in \[0, 32\)"):
        model(torch.full((1, 8), V, dtype=torch.long))
    with pytest.raises(TypeError, match="`x`"):
        model.forward_from_embeddings(torch.zeros(1, 8, 16, dtype=torch.long))
    with pytest.raises(ValueError, match="`x` must have shape"):
        model.forward_from_embeddings(torch.zeros(1, 8, 15, dtype=torch.float64))
    with pytest.raises(ValueError, match="`targets` must have the shape"):
        model(torch.zeros(1, 8, dtype=torch.long), torch.zeros(1, 7, dtype=torch.long))
