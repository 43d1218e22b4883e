"""Rotary position embeddings (chapter 5): the relative property, the complex-number form, misuse."""

import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from companion import EncoderLayer, MultiHeadAttention, apply_rotary, copy_weights, rotary_angles


def randn(seed, *shape):
    """Drawn on the CPU, then on the default device (a GPU under COURSE_TEST_DEVICE=cuda)."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64, device="cpu")
    return x.to(torch.get_default_device())


def at(x, p):
    """``x`` ``(d_k,)`` rotated as if it sat at position ``p``."""
    return apply_rotary(x[None], torch.tensor([p]))[0]


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), p=st.integers(-50, 500), r=st.integers(-50, 500),
       shift=st.integers(-100, 1000), half=st.integers(1, 8))
def test_scores_depend_on_the_offset_only(seed, p, r, shift, half):
    """rotate(q, p) . rotate(k, r) == rotate(q, p + s) . rotate(k, r + s) == q . rotate(k, r - p)."""
    q, k = randn(seed, 2 * half), randn(seed + 1, 2 * half)
    score = at(q, p) @ at(k, r)
    torch.testing.assert_close(score, at(q, p + shift) @ at(k, r + shift))
    torch.testing.assert_close(score, q @ at(k, r - p))


def test_scores_do_change_with_the_offset():
    """The property above is not trivially true: a different offset gives a different score."""
    q, k = randn(0, 8), randn(1, 8)
    scores = torch.stack([at(q, 0) @ at(k, r) for r in range(6)])
    assert (scores[1:] - scores[:-1]).abs().min() > 1e-3


def test_equals_the_complex_number_formulation():
    x = randn(2, 3, 4, 7, 16)  # (batch, heads, t, d_k)
    positions = torch.arange(7)
    theta = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)  # (8,)
    z = torch.view_as_complex(x.reshape(3, 4, 7, 8, 2).contiguous())  # pairs as complex numbers
    rotated = z * torch.polar(torch.ones(7, 8, dtype=torch.float64), positions[:, None] * theta)
    expected = torch.view_as_real(rotated).flatten(-2)
    torch.testing.assert_close(apply_rotary(x), expected)


def test_by_hand():
    """d_k = 2: one pair, turned by p radians (theta_0 = 1)."""
    x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0]])  # (t=3, d_k=2)
    expected = torch.tensor([[1.0, 0.0], [math.cos(1), math.sin(1)], [-2 * math.sin(2), 2 * math.cos(2)]])
    torch.testing.assert_close(apply_rotary(x), expected)
    torch.testing.assert_close(rotary_angles(torch.arange(3), 4),
                               torch.tensor([[0.0, 0.0], [1.0, 0.01], [2.0, 0.02]], dtype=torch.float64))


def test_rotations_keep_lengths_position_zero_keeps_everything_and_inputs_stay():
    x = randn(4, 2, 9, 6).float()
    before = x.clone()
    y = apply_rotary(x)
    assert y.dtype == x.dtype and y.shape == x.shape
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[:, 0], x[:, 0])
    assert torch.equal(x, before)


@pytest.mark.parametrize("call, error, message", [
    (lambda: apply_rotary(torch.randn(2, 5, 7)), ValueError, "d_k must be even"),
    (lambda: apply_rotary(torch.randn(5, 4), torch.arange(4)), ValueError, r"positions must have shape \(t,\) = \(5,\)"),
    (lambda: apply_rotary(torch.arange(8).view(2, 4)), TypeError, "floating-point"),
    (lambda: apply_rotary(torch.randn(4)), ValueError, r"\(\.\.\., t, d_k\)"),
    (lambda: apply_rotary(torch.randn(3, 4), torch.ones(3, dtype=torch.bool)), TypeError, "integers"),
    (lambda: rotary_angles([0, 1], 4), TypeError, "torch.Tensor"),
    (lambda: MultiHeadAttention(12, 4, rotary=True), ValueError, "d_k=3"),
    (lambda: MultiHeadAttention(8, 2, rotary=1), TypeError, "rotary must be True or False"),
])
def test_misuse_is_explained(call, error, message):
    with pytest.raises(error, match=message):
        call()


@pytest.mark.parametrize("need_weights", [False, True])
def test_rotary_multi_head_attention_by_hand(need_weights):
    """Project, split, rotate queries and keys, attend, merge, W_o: written out with PyTorch."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2, rotary=True).double()
    x = randn(5, 3, 6, 16)
    Q, K, V = (t.view(3, 6, 2, 8).transpose(1, 2) for t in mha.W_qkv(x).chunk(3, dim=-1))
    heads = F.scaled_dot_product_attention(apply_rotary(Q), apply_rotary(K), V)
    expected = mha.W_o(heads.transpose(1, 2).reshape(3, 6, 16))
    out, weights = mha(x, x, x, need_weights=need_weights)
    torch.testing.assert_close(out, expected)
    plain = MultiHeadAttention(16, 2).double()
    plain.load_state_dict(mha.state_dict())
    assert not torch.allclose(plain(x, x, x)[0], out)  # the rotation does change the function
    if need_weights:
        torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 6, dtype=torch.float64))


def test_encoder_layer_passes_rotary_on_and_copy_weights_refuses_it():
    layer = EncoderLayer(16, 2, rotary=True)
    assert layer.self_attn.rotary and "rotary=True" in repr(layer)
    with pytest.raises(ValueError, match="rotary=True"):
        copy_weights(layer, torch.nn.TransformerEncoderLayer(16, 2, batch_first=True))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("offset,t", [(0, 1), (0, 7), (5, 1), (13, 4), (60, 9)])
def test_the_kept_table_equals_angles_computed_afresh(dtype, offset, t):
    x = randn(3, 2, 3, t, 8).to(dtype)
    fresh = apply_rotary(x, torch.arange(offset, offset + t))  # explicit positions: no table
    assert torch.equal(apply_rotary(x, offset=offset), fresh)


def test_the_table_is_kept_per_device_and_dtype_and_shared_by_calls():
    from companion.rotary import _cos_sin_table

    _cos_sin_table.cache_clear()
    x = randn(0, 1, 2, 5, 8)
    apply_rotary(x)
    apply_rotary(x, offset=2)  # 2 + 5 positions: the same table of 8
    assert _cos_sin_table.cache_info().misses == 1 and _cos_sin_table.cache_info().hits == 1
    apply_rotary(x.float())  # another dtype: another table
    assert _cos_sin_table.cache_info().misses == 2


def test_a_table_made_under_inference_mode_serves_training():
    from companion.rotary import _cos_sin_table

    _cos_sin_table.cache_clear()
    x = randn(1, 1, 2, 6, 8)
    with torch.inference_mode():
        apply_rotary(x)
    w = x.clone().requires_grad_()
    apply_rotary(w).sum().backward()  # would raise if the kept table were an inference tensor
    assert w.grad is not None


@pytest.mark.parametrize("offset", [-1, 1.5, True])
def test_a_bad_offset_is_refused(offset):
    with pytest.raises(ValueError, match=r"offset must be an int >= 0 \(the position of the first row\)"):
        apply_rotary(randn(0, 3, 4), offset=offset)


def test_an_odd_width_is_refused_with_the_table_too():
    with pytest.raises(ValueError, match="d_k must be even"):
        apply_rotary(randn(0, 3, 5))
