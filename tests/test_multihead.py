"""MultiHeadAttention against nn.MultiheadAttention, with the same weights."""

import pytest
import torch
from torch import nn

from companion import MultiHeadAttention, causal_mask, copy_weights, padding_mask
from reference import assert_close, assert_same_grads, backward_with, leaf

DTYPES = [torch.float64, torch.float32]


def pair(d_model=16, num_heads=4, dtype=torch.float64, **kw):
    ours = MultiHeadAttention(d_model, num_heads, **kw).to(dtype)
    theirs = nn.MultiheadAttention(d_model, num_heads, batch_first=True, **kw).to(dtype)
    copy_weights(ours, theirs)
    return ours, theirs


def run_both(ours, theirs, dtype, q_shape, kv_shapes=None, mask=None, key_padding=None, per_head=True):
    """Forward + backward through both; return (ours, theirs) outputs, weights and input grads."""
    q = leaf(q_shape, dtype)
    if kv_shapes is None:
        inputs = (q, q, q)
    else:
        inputs = (q, leaf(kv_shapes[0], dtype), leaf(kv_shapes[1], dtype))
    clones = tuple(t.detach().clone().requires_grad_() for t in dict.fromkeys(inputs))
    theirs_inputs = clones * 3 if kv_shapes is None else clones

    our_mask = mask
    if key_padding is not None:  # (batch, 1, t_k), True = may attend
        our_mask = key_padding if our_mask is None else our_mask & key_padding
    out, w = ours(*inputs, mask=our_mask, need_weights=True)
    backward_with(out)
    ref, ref_w = theirs(
        *theirs_inputs,
        attn_mask=None if mask is None else ~mask,  # PyTorch: True = *not* allowed
        key_padding_mask=None if key_padding is None else ~key_padding.squeeze(1),
        need_weights=True,
        average_attn_weights=not per_head,
    )
    backward_with(ref)
    if not per_head:
        w = w.mean(dim=1)  # PyTorch's default: the average over heads
    assert_close(out, ref, dtype, "output")
    assert_close(w, ref_w, dtype, "weights")
    for a, b in zip(dict.fromkeys(inputs), clones):
        assert_close(a.grad, b.grad, dtype, "input grad")
    assert_same_grads(ours, theirs, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("per_head", [True, False])
def test_self_attention(dtype, per_head):
    ours, theirs = pair(dtype=dtype)
    run_both(ours, theirs, dtype, (3, 7, 16), per_head=per_head)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_attention_with_kdim_vdim(dtype):
    ours, theirs = pair(d_model=12, num_heads=3, dtype=dtype, kdim=10, vdim=6)
    assert not ours.fused
    run_both(ours, theirs, dtype, (2, 4, 12), kv_shapes=((2, 9, 10), (2, 9, 6)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_cross_attention_same_width_uses_tall_w(dtype):
    ours, theirs = pair(dtype=dtype)
    assert ours.fused and ours.W_qkv.weight.shape == (48, 16)
    run_both(ours, theirs, dtype, (2, 4, 16), kv_shapes=((2, 6, 16), (2, 6, 16)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_key_padding_mask(dtype):
    ours, theirs = pair(dtype=dtype)
    keep = padding_mask(torch.tensor([7, 3, 5]), max_len=7)
    run_both(ours, theirs, dtype, (3, 7, 16), key_padding=keep)


@pytest.mark.parametrize("dtype", DTYPES)
def test_causal_and_padding_mask(dtype):
    ours, theirs = pair(dtype=dtype)
    keep = padding_mask(torch.tensor([6, 2]), max_len=6)
    run_both(ours, theirs, dtype, (2, 6, 16), mask=causal_mask(6), key_padding=keep)


@pytest.mark.parametrize("dtype", DTYPES)
def test_without_bias(dtype):
    ours, theirs = pair(dtype=dtype, bias=False)
    assert ours.W_qkv.bias is None
    run_both(ours, theirs, dtype, (2, 5, 16))


@pytest.mark.parametrize("dtype", DTYPES)
def test_fused_kernel_path_equals_explicit_path(dtype):
    """need_weights=False runs F.scaled_dot_product_attention; the result must not change."""
    mha = MultiHeadAttention(16, 4).to(dtype)
    x = leaf((2, 5, 16), dtype)
    mask = causal_mask(5) & padding_mask(torch.tensor([5, 3]), max_len=5)
    fused, none = mha(x, x, x, mask=mask)
    explicit, w = mha(x, x, x, mask=mask, need_weights=True)
    assert none is None and w.shape == (2, 4, 5, 5)
    assert_close(fused, explicit, dtype, "fused vs explicit")


def test_per_head_mask_shape():
    mha = MultiHeadAttention(8, 2).double()
    x = torch.randn(1, 3, 8, dtype=torch.float64)
    mask = torch.ones(1, 2, 3, 3, dtype=torch.bool)
    mask[0, 1] = causal_mask(3)  # head 1 causal, head 0 free
    _, w = mha(x, x, x, mask=mask, need_weights=True)
    future = ~causal_mask(3)  # strictly above the diagonal
    assert (w[0, 1][future] == 0).all() and (w[0, 0][future] > 0).all()


def test_split_and_merge_heads_are_inverse():
    mha = MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12)
    heads = mha.split_heads(x)
    assert heads.shape == (2, 3, 5, 4)
    # head h holds features h*d_k .. (h+1)*d_k - 1 of every position
    torch.testing.assert_close(heads[:, 1], x[:, :, 4:8])
    torch.testing.assert_close(mha.merge_heads(heads), x)


def test_dropout_only_in_training():
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 20, 8)
    mha.eval()
    a, _ = mha(x, x, x)
    b, _ = mha(x, x, x)
    torch.testing.assert_close(a, b)
    mha.train()
    _, w = mha(x, x, x, need_weights=True)
    assert (w == 0).any()


def test_copy_weights_back_from_pytorch():
    theirs = nn.MultiheadAttention(12, 3, batch_first=True, kdim=5, vdim=7).double()
    ours = copy_weights(theirs, MultiHeadAttention(12, 3, kdim=5, vdim=7).double())
    q, k, v = torch.randn(2, 4, 12).double(), torch.randn(2, 6, 5).double(), torch.randn(2, 6, 7).double()
    assert_close(ours(q, k, v)[0], theirs(q, k, v, need_weights=False)[0], torch.float64, "output")


@pytest.mark.parametrize("need_weights", [False, True])
def test_head_mask_zeroes_one_head_before_w_o(need_weights):
    """head_mask = 0 for head h equals zeroing that head's d_k columns of W_o's input (chapter 4's ablation)."""
    mha = MultiHeadAttention(12, 3).double()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    full, w_full = mha(x, x, x, need_weights=need_weights)
    ones, _ = mha(x, x, x, need_weights=need_weights, head_mask=torch.ones(3, dtype=torch.float64))
    torch.testing.assert_close(ones, full)
    seen = {}
    hook = mha.W_o.register_forward_pre_hook(lambda module, args: seen.update(concat=args[0]))
    mha(x, x, x)
    hook.remove()
    concat = seen["concat"].clone()  # (batch, t, d_model): the heads side by side
    concat[..., 4:8] = 0.0  # head 1 holds columns d_k .. 2 d_k - 1
    ablated, w = mha(x, x, x, need_weights=need_weights, head_mask=torch.tensor([1.0, 0.0, 1.0]).double())
    torch.testing.assert_close(ablated, mha.W_o(concat))
    assert not torch.allclose(ablated, full)
    if need_weights:
        torch.testing.assert_close(w, w_full)  # the weights are reported unchanged


def test_head_mask_errors():
    mha = MultiHeadAttention(12, 3)
    x = torch.randn(2, 5, 12)
    with pytest.raises(ValueError, match=r"head_mask must have shape \(num_heads,\) = \(3,\)"):
        mha(x, x, x, head_mask=torch.ones(4))
    with pytest.raises(ValueError, match="head_mask must be 1-D"):
        mha(x, x, x, head_mask=torch.ones(1, 3))
    with pytest.raises(TypeError, match="head_mask must be a floating-point tensor"):
        mha(x, x, x, head_mask=torch.tensor([1, 0, 1]))
    with pytest.raises(TypeError, match="same dtype"):
        mha(x, x, x, head_mask=torch.ones(3, dtype=torch.float64))


def test_wide_heads_are_full_width_heads_concatenated_then_projected():
    """wide=True: every head attends with d_k = d_model, written out head by head."""
    from companion import scaled_dot_product_attention

    torch.manual_seed(0)
    d, h, t = 8, 3, 5
    mha = MultiHeadAttention(d, h, wide=True).eval()
    assert mha.d_k == d and mha.W_qkv.weight.shape == (3 * h * d, d) and mha.W_o.weight.shape == (d, h * d)
    assert sum(p.numel() for p in mha.parameters()) == 4 * h * d * d + 3 * h * d + d
    x = torch.randn(2, t, d)
    W_q, W_k, W_v = mha.W_qkv.weight.split(h * d)  # (h d, d) each
    b_q, b_k, b_v = mha.W_qkv.bias.split(h * d)
    heads = []
    for i in range(h):
        rows = slice(i * d, (i + 1) * d)
        Q, K, V = (x @ W[rows].T + b[rows] for W, b in ((W_q, b_q), (W_k, b_k), (W_v, b_v)))  # (2, t, d)
        heads.append(scaled_dot_product_attention(Q, K, V)[0])  # scaled by sqrt(d): the head's own width
    expected = mha.W_o(torch.cat(heads, dim=-1))  # (2, t, h d) -> (2, t, d)
    torch.testing.assert_close(mha(x, x, x)[0], expected)
    torch.testing.assert_close(mha(x, x, x, need_weights=True)[0], expected)  # the explicit formula too


def test_one_wide_head_is_one_narrow_head():
    torch.manual_seed(0)
    wide, narrow = MultiHeadAttention(8, 1, wide=True), MultiHeadAttention(8, 1)
    narrow.load_state_dict(wide.state_dict())
    x = torch.randn(2, 4, 8)
    torch.testing.assert_close(wide(x, x, x)[0], narrow(x, x, x)[0])


def test_wide_heads_work_with_a_cache_rotary_and_cross_attention_and_refuse_copying():
    from companion import KVCache, copy_weights

    torch.manual_seed(0)
    mha = MultiHeadAttention(6, 4, wide=True, rotary=True).eval()  # 4 does not divide 6: fine when wide
    x = torch.randn(1, 5, 6)
    cache = KVCache()
    steps = [mha(x[:, i:i + 1], x[:, i:i + 1], x[:, i:i + 1], cache=cache)[0] for i in range(5)]
    from companion import causal_mask

    torch.testing.assert_close(torch.cat(steps, 1), mha(x, x, x, mask=causal_mask(5))[0])
    cross = MultiHeadAttention(6, 2, kdim=3, vdim=4, wide=True)
    assert cross(x, torch.randn(1, 7, 3), torch.randn(1, 7, 4))[0].shape == (1, 5, 6)
    with pytest.raises(ValueError, match="wide heads"):
        copy_weights(MultiHeadAttention(6, 2, wide=True), torch.nn.MultiheadAttention(6, 2, batch_first=True))
    with pytest.raises(TypeError, match="wide must be True or False"):
        MultiHeadAttention(6, 2, wide="yes")
