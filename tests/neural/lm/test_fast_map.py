"""neural.lm.fast_map: the frozen-slow-state fast map of a layer, iterated; closed forms where they exist."""
from __future__ import annotations

import pytest
import torch

from neural.lm.config import ModelConfig
from neural.lm.fast_map import frozen_fast_map, iterate_fast_map
from neural.lm.model import FastSlowLM


def _model(arm="coupled", gate=0.5, seed=0):
    cfg = ModelConfig(seq_len=32, pool=4, n_layer=2, n_head=2, d_model=16, arm=arm, window=8)
    m = FastSlowLM(cfg, seed=seed).double()
    if arm != "dense":
        m.set_gates(gate)
    with torch.no_grad():  # larger random weights than the GPT-2 init, so every path matters
        for name, p in m.named_parameters():
            if p.dim() >= 2 or name.endswith("null"):
                p.normal_(0.0, 0.3, generator=torch.Generator().manual_seed(seed + p.numel()))
    return m.eval()


IDX = torch.randint(0, 256, (2, 32), generator=torch.Generator().manual_seed(3))


def _silence_fast_path(model):
    # attention and MLP write nothing into the residual stream: Φ_y(x) = x + c(y)
    with torch.no_grad():
        for b in model.blocks:
            for lin in (b.attn.c_proj, b.mlp.c_proj):
                lin.weight.zero_()
                lin.bias.zero_()


def test_frozen_map_at_the_input_is_the_layer_and_then_stays_frozen():
    model = _model()
    block = model.blocks[0]
    h = model.embed(IDX)
    phi, c = frozen_fast_map(block, h, 8)
    assert torch.equal(phi(h), block(h, 8))
    # a second step: the frozen map keeps c(y), the layer applied twice recomputes y from its input
    assert not torch.allclose(phi(phi(h)), block(block(h, 8), 8))
    assert c.shape == (2, 8, 16)


@torch.no_grad()
def test_a_constant_increment_drifts_and_its_direction_is_the_feedback():
    model = _model()
    _silence_fast_path(model)
    (r0, r1) = iterate_fast_map(model, IDX, n_iter=50)
    h = model.embed(IDX)
    block = model.blocks[0]
    _, c = frozen_fast_map(block, h, 8)
    from neural.lm.pooling import add_to_blocks

    cc = add_to_blocks(torch.zeros_like(h), c, 4)
    rms = float(cc.pow(2).sum(-1).mean().sqrt())
    # x_n = h + n·c exactly: every raw step is c, no fixed point, the norm grows by ≈ ‖c‖ per step
    assert r0.raw_step_first == pytest.approx(rms, rel=1e-12) and r0.raw_step_last == pytest.approx(rms, rel=1e-12)
    assert not r0.converged and r0.drift_rate == pytest.approx(rms, rel=0.05)
    # the limit of LN₁(x_n) is LN₁(c); the layer's output is LN₁(h + c): D in closed form
    ln = block.ln_1
    a_star = ln(h + 50 * cc)
    expected = float((ln(h + cc) - a_star).pow(2).sum(-1).mean().sqrt() / a_star.pow(2).sum(-1).mean().sqrt())
    assert r0.distance == pytest.approx(expected, rel=1e-9)
    exact = ln(cc)
    # here the last increment is c itself, so limit_error is exactly ‖LN₁(h + N·c) − LN₁(c)‖ / ‖LN₁(h + N·c)‖
    err = float((a_star - exact).pow(2).sum(-1).mean().sqrt() / a_star.pow(2).sum(-1).mean().sqrt())
    assert r0.limit_error == pytest.approx(err, rel=1e-9)
    # and it falls like 1/N: four times the iterations, a quarter of the error
    longer = iterate_fast_map(model, IDX, n_iter=200)[0]
    assert longer.limit_error / r0.limit_error == pytest.approx(0.25, rel=0.15)
    assert r0.normalised_step_decay == pytest.approx(2.0, abs=0.3)  # step ∝ n⁻²: algebraic, no gap
    assert r0.distance_no_feedback == 0.0  # c = 0 and a silent fast path: x_n = h, at its fixed point


def test_no_increment_is_a_fixed_point_at_once():
    model = _model(gate=0.0)
    _silence_fast_path(model)
    for r in iterate_fast_map(model, IDX, n_iter=10):
        assert r.converged and r.direction_converged
        assert r.raw_step_first == 0.0 and r.distance == 0.0 and r.feedback_norm == 0.0


def test_a_map_that_follows_x_would_be_caught():
    # the measurement freezes y: recomputing the feedback from x_n gives another trajectory
    model = _model()
    h = model.embed(IDX)
    block = model.blocks[0]
    phi, _ = frozen_fast_map(block, h, 8)
    x_frozen, x_free = h, h
    for _ in range(3):
        x_frozen, x_free = phi(x_frozen), block(x_free, 8)
    assert float((x_frozen - x_free).abs().max()) > 1e-3


def test_trained_like_model_reports_per_layer():
    results = iterate_fast_map(_model(), IDX, n_iter=20)
    assert [r.layer for r in results] == [0, 1]
    for r in results:
        assert r.state_norm_last > r.state_norm_first and r.distance > 0 and r.feedback_norm > 0
        assert set(r.to_dict()) >= {"distance", "distance_pooled", "distance_no_feedback", "converged"}


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(n_iter=3), ValueError, "`n_iter`"), (dict(n_iter=5.0), ValueError, "`n_iter`"),
    (dict(tol=0), ValueError, "`tol`"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        iterate_fast_map(_model(), IDX, **kwargs)


def test_bad_tokens():
    with pytest.raises(TypeError, match="`idx` must be an integer"):
        iterate_fast_map(_model(), IDX.double())
    with pytest.raises(ValueError, match=r"`idx` must have shape \(B, T'\)"):
        iterate_fast_map(_model(), torch.zeros(1, 33, dtype=torch.long))


def test_bad_model():
    with pytest.raises(TypeError, match="`model` must be a neural.FastSlowLM"):
        iterate_fast_map(torch.nn.Linear(2, 2), IDX)
