"""Sliding-window attention kernels (neural.lm.attention): equal to the masked reference, leak-free, in the model.

Provenance of the expected values: the masked kernel is the definition (all T × T scores, the
band i − W < j ≤ i kept); the chunked kernel must equal it to 1e-6 in float32 on N(0, 1)
inputs, and every check is shown to fail on a kernel that reaches one key too far forward
(a leak) or one key too far back (a wider window).
"""
from __future__ import annotations

import warnings

import pytest
import torch

import neural.lm.attention as attention
from neural.lm.attention import (
    KERNELS,
    chunked_window_attention,
    masked_window_attention,
    window_attention,
    window_mask,
)
from neural.lm.config import ModelConfig
from neural.lm.model import FastSlowLM

TOL = 1e-6  # float32, inputs N(0, 1): the target of the kernel (a few ulps of O(1) outputs)


def qkv(T, *, B=2, H=3, D=8, seed=0, dtype=torch.float32, grad=False):
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, T, D, generator=g, dtype=dtype).requires_grad_(grad) for _ in range(3))


# --------------------------------------------------------------------------- checkers


def assert_equals_reference(kernel, T, W, seed=0):
    """Outputs and input gradients of `kernel` equal the masked reference to TOL (float32)."""
    q, k, v = qkv(T, seed=seed, grad=True)
    out = kernel(q, k, v, W)
    grads = torch.autograd.grad(out, (q, k, v), torch.ones_like(out))
    q2, k2, v2 = (x.detach().clone().requires_grad_(True) for x in (q, k, v))
    ref = masked_window_attention(q2, k2, v2, W)
    ref_grads = torch.autograd.grad(ref, (q2, k2, v2), torch.ones_like(ref))
    err = float((out - ref).detach().abs().max())
    assert err <= TOL, f"T={T}, W={W}: max |out − reference| = {err:.2e} > {TOL}"
    for name, a, b in zip("qkv", grads, ref_grads):
        gerr = float((a - b).abs().max())
        assert gerr <= 4 * TOL, f"T={T}, W={W}: max |d/d{name} − reference| = {gerr:.2e}"


def assert_leak_free(kernel, T, W, seed=0):
    """Changing key/value/query t moves no output before t (exactly: not even by rounding)."""
    q, k, v = qkv(T, seed=seed, dtype=torch.float64)
    base = kernel(q, k, v, W)
    for t in sorted({0, 1, T // 3, T // 2, T - 2, T - 1} - {-1}):
        q2, k2, v2 = (x.clone() for x in (q, k, v))
        for x in (q2, k2, v2):
            x[:, :, t] += 3.0
        moved = kernel(q2, k2, v2, W)
        assert torch.equal(moved[:, :, :t], base[:, :, :t]), f"T={T}, W={W}: a change at {t} moved an earlier output"
        # and it does move what lies inside its window (the check can see a change at all)
        if t + 1 < T and W > 1:
            assert not torch.equal(moved[:, :, t + 1], base[:, :, t + 1])


def _wrong_band(shift):
    """A chunked kernel whose band is moved `shift` keys forward (+1: a leak) or widened back (−1)."""
    def band(chunk, window, n_chunks, device):
        i = torch.arange(chunk, device=device)[:, None]
        j = torch.arange(2 * chunk, device=device)[None, :]
        if shift > 0:  # sees one key after itself
            m = (j > i + chunk - window) & (j <= i + chunk + shift)
        else:  # sees one key more in the past (window W + 1)
            m = (j > i + chunk - window + shift) & (j <= i + chunk)
        mask = m.expand(n_chunks, chunk, 2 * chunk).clone()
        mask[0, :, :chunk] = False
        return mask
    return band


# --------------------------------------------------------------------------- the kernels


@pytest.mark.parametrize("T, W", [(64, 16), (37, 16), (100, 7), (50, 1), (33, 32), (16, 16), (5, 9), (129, 64)])
def test_chunked_equals_masked_reference_with_gradients(T, W):
    assert_equals_reference(chunked_window_attention, T, W, seed=T + W)


@pytest.mark.parametrize("T, W", [(64, 16), (37, 5), (20, 1), (41, 40)])
@pytest.mark.parametrize("kernel", [chunked_window_attention, masked_window_attention])
def test_kernels_are_leak_free(kernel, T, W):
    assert_leak_free(kernel, T, W)


def test_a_kernel_that_reaches_one_key_forward_fails_both_checks(monkeypatch):
    monkeypatch.setattr(attention, "_band", _wrong_band(+1))
    with pytest.raises(AssertionError, match="moved an earlier output"):
        assert_leak_free(chunked_window_attention, 40, 8)
    with pytest.raises(AssertionError, match="reference"):
        assert_equals_reference(chunked_window_attention, 40, 8)


def test_a_kernel_one_key_too_wide_fails_the_equality_check(monkeypatch):
    monkeypatch.setattr(attention, "_band", _wrong_band(-1))
    assert_leak_free(chunked_window_attention, 40, 8)  # still causal: only equality can see it
    with pytest.raises(AssertionError, match="reference"):
        assert_equals_reference(chunked_window_attention, 40, 8)


def test_reference_is_the_band_mask():
    # the masked kernel is the definition: check it against explicit softmax over the band, in float64
    q, k, v = qkv(23, dtype=torch.float64)
    W = 5
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    scores = scores.masked_fill(~window_mask(23, W), float("-inf"))
    expected = torch.softmax(scores, dim=-1) @ v
    assert torch.allclose(masked_window_attention(q, k, v, W), expected, atol=1e-12, rtol=0)
    assert torch.allclose(chunked_window_attention(q, k, v, W), expected, atol=1e-12, rtol=0)


def test_window_none_or_wider_than_T_is_causal():
    q, k, v = qkv(12)
    causal = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    for kernel in ("chunked", "masked"):
        assert torch.equal(window_attention(q, k, v, None, kernel=kernel), causal)
        assert torch.equal(window_attention(q, k, v, 12, kernel=kernel), causal)


def test_flex_path_with_its_block_mask_equals_reference_and_refuses_cpu_backward(monkeypatch):
    # Everything of the flex path that is ours, without compiling (a cold inductor compile costs
    # ~14 s; the compiled kernel is checked by the slow test below): `_flex` is run with the eager
    # `flex_attention` in place of the compiled one, on the block mask and block size it chooses.
    # The eager kernel applies the element mask (`mask_mod`), so its output is compared to the
    # reference; the compiled kernel skips whole blocks, so the block mask is checked on its own:
    # a block is kept iff some (query, key) pair inside it lies in the band.
    flex_attention = pytest.importorskip("torch.nn.attention.flex_attention").flex_attention
    masks = []

    def eager_flex(q, k, v, *, block_mask):
        masks.append(block_mask)
        return flex_attention(q, k, v, block_mask=block_mask)

    monkeypatch.setattr(attention, "_compiled_flex", lambda: eager_flex)
    for i, (T, W) in enumerate(((64, 16), (100, 7), (130, 40))):
        q, k, v = qkv(T, B=1, H=2, D=16, seed=T)
        with torch.no_grad(), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
            out = window_attention(q, k, v, W, kernel="flex")
        assert len(masks) == i + 1  # the eager kernel ran, not a path around `_flex`
        err = float((out - masked_window_attention(q, k, v, W)).abs().max())
        assert err <= TOL, f"T={T}, W={W}: max |flex − reference| = {err:.2e}"
        block_mask = masks[-1]
        (bq, bk) = block_mask.BLOCK_SIZE
        assert bq == bk == max(32, 1 << (W - 1).bit_length())
        n = -(-T // bq)
        band = torch.zeros(n * bq, n * bq, dtype=torch.bool)
        band[:T, :T] = window_mask(T, W)
        expected = band.view(n, bq, n, bq).any(dim=3).any(dim=1)
        assert torch.equal(block_mask.to_dense()[0, 0].bool(), expected), f"T={T}, W={W}: block mask"
    qg = q.clone().requires_grad_(True)
    with pytest.raises(NotImplementedError, match="no backward pass on CPU"):
        window_attention(qg, k, v, W, kernel="flex")


# slow: a cold inductor compile (~14 s alone, ~27 s in the 2-worker suite) whatever the shapes; the default
# suite keeps the test above (the same `_flex` path with the eager kernel, its block mask, the CPU refusal)
@pytest.mark.slow
def test_flex_kernel_forward_equals_reference_and_refuses_cpu_backward():
    pytest.importorskip("torch.nn.attention.flex_attention")
    q, k, v = qkv(64, B=1, H=2, D=16)
    try:
        with torch.no_grad():
            out = window_attention(q, k, v, 16, kernel="flex")
    except (TypeError, ValueError, NotImplementedError):
        raise                     # our own refusals are failures here, never a reason to skip
    except Exception as exc:  # the compiled kernel needs a C++ toolchain; say which, do not pass silently
        pytest.skip(f"flex_attention could not compile on this machine: {type(exc).__name__}: {exc}")
    assert float((out - masked_window_attention(q, k, v, 16)).abs().max()) <= TOL
    qg = q.clone().requires_grad_(True)
    with pytest.raises(NotImplementedError, match="no backward pass on CPU"):
        window_attention(qg, k, v, 16, kernel="flex")


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(window=0), ValueError, "`window`"),
    (dict(window=2.0), ValueError, "`window`"),
    (dict(window=True), ValueError, "`window`"),
    (dict(window=4, kernel="banded"), ValueError, "`kernel` must be one of"),
    (dict(window=4, dropout_p=1.0), ValueError, "`dropout_p`"),
    (dict(window=4, kernel="flex", dropout_p=0.1), ValueError, "no attention dropout"),
])
def test_bad_arguments_are_named(kwargs, error, match):
    q, k, v = qkv(8)
    window = kwargs.pop("window")
    with pytest.raises(error, match=match):
        window_attention(q, k, v, window, **kwargs)


def test_bad_tensors_are_named():
    q, k, v = qkv(8)
    with pytest.raises(TypeError, match="`k` must be a floating-point"):
        window_attention(q, k.long(), v, 4)
    with pytest.raises(ValueError, match=r"`q` must have shape \(B, H, T, D\)"):
        window_attention(q[0], k[0], v[0], 4)
    with pytest.raises(ValueError, match="one shape"):
        window_attention(q, k[:, :, :4], v, 4)


# --------------------------------------------------------------------------- in the model


def _model(arm, window, kernel, *, T=48, P=8, seed=3):
    cfg = ModelConfig(seq_len=T, pool=P, n_layer=2, n_head=2, d_model=16, arm=arm, window=window)
    return FastSlowLM(cfg, seed=seed, window_kernel=kernel)


@pytest.mark.parametrize("arm", ["dense", "coupled"])
@pytest.mark.parametrize("length", [48, 29])
def test_model_logits_and_gradients_match_between_kernels(arm, length):
    idx = torch.randint(0, 256, (3, length), generator=torch.Generator().manual_seed(1))
    out = {}
    for kernel in ("chunked", "masked"):
        model = _model(arm, 8, kernel)
        if arm == "coupled":
            model.set_gates(0.7)  # the slow path contributes, so it is compared too
        logits, loss = model(idx, idx)
        loss.backward()
        out[kernel] = (logits, {n: p.grad for n, p in model.named_parameters()})
    assert float((out["chunked"][0] - out["masked"][0]).abs().max()) <= 10 * TOL
    for name, g in out["chunked"][1].items():
        assert float((g - out["masked"][1][name]).abs().max()) <= 10 * TOL, name


def test_model_with_chunked_kernel_is_leak_free_with_gates_open():
    model = _model("coupled", 8, "chunked").double()
    model.set_gates(0.9)
    idx = torch.randint(0, 256, (2, 48), generator=torch.Generator().manual_seed(2))
    base = model(idx)
    for t in (5, 8, 17, 40, 47):
        changed = idx.clone()
        changed[:, t] = (changed[:, t] + 101) % 256
        assert torch.equal(model(changed)[:, :t], base[:, :t]), t
    # a prefix gives the same logits as the first positions of the full input
    assert torch.allclose(model(idx[:, :21]), base[:, :21], atol=1e-12, rtol=0)


def test_model_with_a_leaking_kernel_fails_the_model_leak_check(monkeypatch):
    monkeypatch.setattr(attention, "_band", _wrong_band(+1))
    model = _model("dense", 8, "chunked").double()
    idx = torch.randint(0, 256, (2, 48), generator=torch.Generator().manual_seed(2))
    base = model(idx)
    changed = idx.clone()
    changed[:, 20] = (changed[:, 20] + 101) % 256
    assert not torch.equal(model(changed)[:, :20], base[:, :20])


def test_model_kernel_is_checked_and_switchable():
    with pytest.raises(ValueError, match="`window_kernel` must be one of"):
        _model("dense", 8, "banded")
    model = _model("dense", 8, "chunked")
    assert model.window_kernel == "chunked" and set(KERNELS) == {"auto", "chunked", "masked", "flex"}
    assert FastSlowLM(ModelConfig(seq_len=48, pool=8, n_layer=1, n_head=2, d_model=16, window=8)).window_kernel == "auto"
    idx = torch.randint(0, 256, (1, 48), generator=torch.Generator().manual_seed(0))
    a = model(idx)
    model.window_kernel = "masked"
    assert float((model(idx) - a).abs().max()) <= 10 * TOL


def test_auto_uses_chunks_from_T_equal_8W_and_the_mask_below(monkeypatch):
    assert attention.AUTO_CHUNKED_MIN_T_OVER_W == 8
    q, k, v = qkv(64)
    ref = {T: masked_window_attention(q[:, :, :T], k[:, :, :T], v[:, :, :T], 8) for T in (63, 64)}
    monkeypatch.setattr(attention, "_band", _wrong_band(+1))  # only the chunked path is broken now
    assert torch.equal(window_attention(q[:, :, :63], k[:, :, :63], v[:, :, :63], 8), ref[63])  # T < 8W: masked
    assert not torch.allclose(window_attention(q, k, v, 8), ref[64])  # T = 8W: chunked (the broken one)


@pytest.mark.parametrize("T, W", [(64, 8), (40, 8), (200, 16)])
def test_auto_equals_reference(T, W):
    assert_equals_reference(lambda q, k, v, W: window_attention(q, k, v, W, kernel="auto"), T, W)


def test_chunked_dropout_drops_only_inside_the_window():
    # with dropout the output is a re-weighted average of values inside the window: a value outside
    # it (here: every value before the window of the last query) can never reach that query
    q, k, v = qkv(64, dtype=torch.float64)
    W = 8
    v2 = v.clone()
    v2[:, :, : 64 - W] += 100.0  # everything the last query must not see
    for seed in range(3):
        torch.manual_seed(seed)
        a = chunked_window_attention(q, k, v, W, dropout_p=0.5)
        torch.manual_seed(seed)
        b = chunked_window_attention(q, k, v2, W, dropout_p=0.5)
        assert torch.equal(a[:, :, -1], b[:, :, -1])
    torch.manual_seed(0)
    assert not torch.equal(chunked_window_attention(q, k, v, W, dropout_p=0.5), chunked_window_attention(q, k, v, W))
