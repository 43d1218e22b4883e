"""Chapter 10's blocks against PyTorch's own and against Llama's (transformers), given the same weights."""

from __future__ import annotations

import math
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from companion import (EncoderLayer, scaled_dot_product_attention, GroupedQueryAttention, KVCache, MultiHeadAttention, RMSNorm, SwiGLU,
                       causal_mask, elu_feature_map, linear_attention, linear_attention_weights, online_softmax,
                       repeat_kv, sliding_window_mask, swiglu_width, tiled_attention)
from companion.course.measure import LargestTensor, Operations, peak_memory
from companion.rotary import rotary_angles

DOUBLE = dict(dtype=torch.float64)


def randn(*shape, seed=0, requires_grad=False):
    """Drawn on the CPU, then on the default device (a GPU under COURSE_TEST_DEVICE=cuda)."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), device="cpu", **DOUBLE)
    return x.to(torch.get_default_device()).requires_grad_(requires_grad)


# ---------------------------------------------------------------- RMSNorm and SwiGLU

def test_rmsnorm_equals_torch():
    ours, theirs = RMSNorm(16, eps=1e-6).double(), nn.RMSNorm(16, eps=1e-6).double()
    with torch.no_grad():
        ours.weight.copy_(randn(16, seed=1))
        theirs.weight.copy_(ours.weight)
    x = randn(3, 5, 16)
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-12)


def test_rmsnorm_is_layernorm_without_mean_for_centred_vectors():
    x = randn(4, 16)
    x = x - x.mean(dim=-1, keepdim=True)
    layer = nn.LayerNorm(16, eps=1e-6, elementwise_affine=False).double()
    torch.testing.assert_close(RMSNorm(16, eps=1e-6).double()(x), layer(x), rtol=0, atol=1e-12)


def test_rmsnorm_explains_a_wrong_width():
    with pytest.raises(ValueError, match=r"last dimension d_model=16, got shape \(2, 8\)"):
        RMSNorm(16)(torch.randn(2, 8))


def test_swiglu_equals_llama_mlp():
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaMLP
    config = transformers.LlamaConfig(hidden_size=16, intermediate_size=40, hidden_act="silu", num_attention_heads=2,
                                      num_key_value_heads=2)
    theirs, ours = LlamaMLP(config).double(), SwiGLU(16, 40).double()
    with torch.no_grad():
        ours.linear1.weight.copy_(theirs.gate_proj.weight)
        ours.linear3.weight.copy_(theirs.up_proj.weight)
        ours.linear2.weight.copy_(theirs.down_proj.weight)
    x = randn(2, 5, 16)
    torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-12)


@pytest.mark.parametrize("d_model", [32, 64, 128, 96])
def test_swiglu_width_matches_the_two_matrix_block(d_model):
    two = sum(p.numel() for p in nn.Sequential(nn.Linear(d_model, 4 * d_model, bias=False),
                                                nn.Linear(4 * d_model, d_model, bias=False)).parameters())
    three = sum(p.numel() for p in SwiGLU(d_model, swiglu_width(4 * d_model)).parameters())
    assert two <= three < two + 3 * d_model  # within one hidden unit, never fewer
    assert swiglu_width(4 * d_model, multiple_of=16) % 16 == 0


# ---------------------------------------------------------------- grouped-query attention

def _gqa(num_heads=4, num_kv_heads=2, **kw):
    torch.manual_seed(0)
    return GroupedQueryAttention(32, num_heads, num_kv_heads, **kw).double().eval()


def test_repeat_kv_order_is_torchs():
    x = randn(2, 2, 5, 8)
    Q = randn(2, 6, 4, 8, seed=1)
    torch.testing.assert_close(F.scaled_dot_product_attention(Q, repeat_kv(x, 3), repeat_kv(x, 3)),
                               F.scaled_dot_product_attention(Q, x, x, enable_gqa=True), rtol=0, atol=1e-12)
    assert torch.equal(repeat_kv(x, 3)[:, 4], x[:, 1])  # query head 4 reads key-value head 4 // 3


@pytest.mark.parametrize("num_kv_heads", [1, 2, 4])
def test_gqa_equals_multihead_attention_with_shared_key_value_weights(num_kv_heads):
    gqa = _gqa(num_kv_heads=num_kv_heads)
    mha = MultiHeadAttention(32, 4).double().eval()
    d_k, group = 8, 4 // num_kv_heads
    W_q, W_k, W_v = gqa.W_qkv.weight.split(gqa.widths)
    b_q, b_k, b_v = gqa.W_qkv.bias.split(gqa.widths)

    def per_head(w):  # (num_kv_heads * d_k, ...) -> (num_heads * d_k, ...): each key-value head repeated
        return w.view(num_kv_heads, d_k, *w.shape[1:]).repeat_interleave(group, dim=0).flatten(0, 1)

    with torch.no_grad():
        mha.W_qkv.weight.copy_(torch.cat([W_q, per_head(W_k), per_head(W_v)]))
        mha.W_qkv.bias.copy_(torch.cat([b_q, per_head(b_k), per_head(b_v)]))
        mha.W_o.load_state_dict(gqa.W_o.state_dict())
    x, mask = randn(2, 6, 32), causal_mask(6)
    out, weights = gqa(x, x, x, mask=mask, need_weights=True)
    ref, ref_weights = mha(x, x, x, mask=mask, need_weights=True)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    torch.testing.assert_close(weights, ref_weights, rtol=0, atol=1e-12)
    torch.testing.assert_close(gqa(x, x, x, mask=mask)[0], ref, rtol=0, atol=1e-12)  # the fused kernel


def _cached_equals_full(attention, x, prompt):
    """``attention`` over ``x`` (batch, t, d) with a causal mask equals a prompt of ``prompt``
    positions followed by one position at a time through a cache; returns the cache."""
    t = x.size(1)
    full, _ = attention(x, x, x, mask=causal_mask(t))
    cache = KVCache()
    first, _ = attention(x[:, :prompt], x[:, :prompt], x[:, :prompt], mask=causal_mask(prompt), cache=cache)
    rest = [attention(x[:, i:i + 1], x[:, i:i + 1], x[:, i:i + 1], cache=cache)[0] for i in range(prompt, t)]
    torch.testing.assert_close(torch.cat([first, *rest], dim=1), full, rtol=0, atol=1e-12)
    return cache


def test_gqa_caches_only_its_key_value_heads_and_equals_recomputation():
    gqa = _gqa(num_kv_heads=1, rotary=True)
    cache = _cached_equals_full(gqa, randn(2, 7, 32), prompt=4)
    assert cache.K.shape == (2, 1, 7, 8)  # one key head, not four


def test_gqa_explains_bad_head_counts():
    with pytest.raises(ValueError, match=r"num_kv_heads=3 must divide num_heads=4"):
        GroupedQueryAttention(32, 4, 3)
    with pytest.raises(ValueError, match=r"num_kv_heads must be"):
        GroupedQueryAttention(32, 4, 0)


def test_torchs_grouped_query_kernel_copies_key_value_heads_only_with_dropout():
    """Chapter 10, section 10.4: the fused CPU kernel takes the shorter K and V as they are."""
    g = torch.Generator().manual_seed(0)  # the CPU's kernels, float32, as on the page
    Q = torch.randn(1, 8, 64, 16, generator=g, device="cpu", requires_grad=True)
    K, V = (torch.randn(1, 2, 64, 16, generator=g, device="cpu", requires_grad=True) for _ in range(2))
    copies = {}
    for dropout in (0.0, 0.1):
        with Operations() as ops:
            F.scaled_dot_product_attention(Q, K, V, is_causal=True, dropout_p=dropout,
                                           enable_gqa=True).sum().backward()
        copies[dropout] = [shapes for name, shapes in ops.calls if name == "clone"]
        assert ops.names() and all(isinstance(n, str) for n in ops.names())
    assert copies[0.0] == []  # one fused call forward, one backward: no key-value head repeated
    assert copies[0.1] == [[(1, 2, 4, 64, 16)]] * 2  # the formula written out: K and V repeated


# ---------------------------------------------------------------- sliding windows

@pytest.mark.parametrize("t_q,t_k,window", [(9, 9, 3), (1, 9, 4), (3, 11, 5), (6, 6, 1), (5, 5, 8)])
def test_sliding_window_mask_by_hand(t_q, t_k, window):
    mask = sliding_window_mask(t_q, t_k, window=window)
    for i in range(t_q):
        position = t_k - t_q + i
        for j in range(t_k):
            assert bool(mask[i, j]) == (position - window < j <= position)


def test_sliding_window_equals_flex_attention():
    flex = pytest.importorskip("torch.nn.attention.flex_attention")
    window, t_q, t_k = 4, 5, 12  # queries are the last 5 of 12 positions, as when decoding with a cache
    offset = t_k - t_q

    def in_window(b, h, q, k):
        return (k <= q + offset) & (q + offset - k < window)

    block_mask = flex.create_block_mask(in_window, None, None, t_q, t_k, device="cpu")
    Q, K, V = randn(1, 2, t_q, 8), randn(1, 2, t_k, 8, seed=1), randn(1, 2, t_k, 8, seed=2)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # flex_attention warns that it runs uncompiled
        theirs = flex.flex_attention(Q, K, V, block_mask=block_mask)
    ours = F.scaled_dot_product_attention(Q, K, V, attn_mask=sliding_window_mask(t_q, t_k, window=window))
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)


def test_a_window_as_long_as_the_text_is_the_causal_mask():
    assert torch.equal(sliding_window_mask(4, 7, window=7), causal_mask(4, 7))
    with pytest.raises(ValueError, match="window must be"):
        sliding_window_mask(4, window=0)


# ---------------------------------------------------------------- online softmax, tiled attention

@pytest.mark.parametrize("block_size", [1, 3, 8, 50])
def test_online_softmax_equals_softmax(block_size):
    x = randn(3, 4, 21) * 30
    x[0, 0, :15] = -math.inf  # whole blocks masked before the first finite score
    torch.testing.assert_close(online_softmax(x, block_size), x.softmax(dim=-1), rtol=0, atol=1e-12)


def test_online_softmax_refuses_an_all_masked_row():
    x = torch.zeros(2, 5)
    x[1] = -math.inf
    with pytest.raises(ValueError, match="a row of x is all -inf"):
        online_softmax(x, 2)


@pytest.mark.parametrize("t_q,t_k,block_size,causal", [
    (16, 16, 4, False), (37, 37, 16, True), (13, 50, 8, True), (20, 33, 7, False), (5, 5, 64, True)])
def test_tiled_attention_equals_torch_with_gradients(t_q, t_k, block_size, causal):
    Q, K, V = (randn(2, 3, t, 8, seed=s, requires_grad=True) for s, t in enumerate((t_q, t_k, t_k)))
    ours = tiled_attention(Q, K, V, block_size=block_size, causal=causal)
    theirs = F.scaled_dot_product_attention(Q, K, V, attn_mask=causal_mask(t_q, t_k) if causal else None)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-12)
    dO = randn(*ours.shape, seed=9)
    for a, b in zip(torch.autograd.grad(ours, (Q, K, V), dO), torch.autograd.grad(theirs, (Q, K, V), dO)):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-12)


def test_tiled_attention_passes_gradcheck():
    Q, K, V = (randn(1, 1, 6, 4, seed=s, requires_grad=True) for s in range(3))
    assert torch.autograd.gradcheck(lambda q, k, v: tiled_attention(q, k, v, block_size=4, causal=True), (Q, K, V))


def test_tiled_attention_never_holds_the_score_matrix():
    t, block = 256, 32
    Q, K, V = (randn(1, 1, t, 8, seed=s, requires_grad=True) for s in range(3))
    with LargestTensor() as forward:
        out = tiled_attention(Q, K, V, block_size=block, causal=True)
    with LargestTensor() as backward:
        out.sum().backward()
    assert forward.largest <= t * 8 and backward.largest <= t * 8  # O(t d): a tile is 32 x 32 = 1,024
    with LargestTensor() as explicit:
        scaled_dot_product_attention(Q, K, V, mask=causal_mask(t))[0].sum().backward()
    assert explicit.largest >= t * t  # the guard sees the formula written out store the scores
    with LargestTensor() as fused:
        F.scaled_dot_product_attention(Q, K, V, is_causal=True).sum().backward()
    assert fused.largest <= t * 8  # PyTorch's fused CPU kernel is tiled too


def test_tiled_attention_explains_misuse():
    Q = torch.randn(1, 2, 8, 4)
    with pytest.raises(ValueError, match="must agree"):
        tiled_attention(Q, torch.randn(1, 2, 8, 5), torch.randn(1, 2, 8, 4))
    with pytest.raises(ValueError, match="t_k >= t_q"):
        tiled_attention(Q, Q[:, :, :4], Q[:, :, :4], causal=True)
    with pytest.raises(ValueError, match="block_size must be"):
        tiled_attention(Q, Q, Q, block_size=0)


# ---------------------------------------------------------------- linear attention

@pytest.mark.parametrize("causal,chunk", [(False, 64), (True, 1), (True, 7), (True, 64)])
def test_linear_attention_equals_its_weights_written_out(causal, chunk):
    Q, K, V = randn(2, 3, 30, 8), randn(2, 3, 30, 8, seed=1), randn(2, 3, 30, 5, seed=2)
    weights = linear_attention_weights(Q, K, causal)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 3, 30, **DOUBLE), rtol=0, atol=1e-12)
    assert bool((weights >= 0).all())
    torch.testing.assert_close(linear_attention(Q, K, V, causal, chunk_size=chunk), weights @ V,
                               rtol=0, atol=1e-12)


def test_linear_attention_holds_no_t_by_t_matrix():
    t = 512
    Q, K, V = (randn(1, 1, t, 8, seed=s) for s in range(3))
    for causal in (False, True):
        with LargestTensor() as seen:
            linear_attention(Q, K, V, causal, chunk_size=32)
        assert seen.largest <= t * 8


def test_the_feature_map_is_elu_plus_one_and_positive():
    x = torch.linspace(-80, 50, 1301)
    assert bool((elu_feature_map(x) > 0).all())  # F.elu(x) + 1 rounds to 0 below about -17 in float32
    x64 = x.double()
    torch.testing.assert_close(elu_feature_map(x64), F.elu(x64) + 1, rtol=1e-12, atol=1e-15)
    grad = torch.autograd.grad(elu_feature_map(x.requires_grad_()).sum(), x)[0]
    assert bool(torch.isfinite(grad).all())


# ---------------------------------------------------------------- the modern block = Llama's

def test_modern_block_equals_llama_decoder_layer():
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding
    d_model, num_heads, num_kv_heads, d_ff, t = 32, 4, 2, 48, 9
    config = transformers.LlamaConfig(hidden_size=d_model, intermediate_size=d_ff, num_attention_heads=num_heads,
                                      num_key_value_heads=num_kv_heads, rms_norm_eps=1e-5,
                                      max_position_embeddings=64, attn_implementation="sdpa")
    theirs = LlamaDecoderLayer(config, 0).double().eval()
    ours = EncoderLayer(d_model, num_heads, d_ff, dropout=0.0, activation="swiglu", norm_first=True, bias=False,
                        rotary=True, norm="rms", num_kv_heads=num_kv_heads).double().eval()
    d_k = d_model // num_heads
    # the course rotates neighbouring pairs (2i, 2i + 1), Llama's code pairs i with i + d_k / 2
    # (chapter 5): the same rotation after reordering each head's rows of W_q and W_k
    order = torch.cat([torch.arange(0, d_k, 2), torch.arange(1, d_k, 2)])

    def ours_from_theirs(w, heads):  # rows (heads * d_k, d) in Llama's order -> the course's
        return w.view(heads, d_k, -1)[:, order.argsort()].flatten(0, 1)

    a = theirs.self_attn
    with torch.no_grad():
        ours.self_attn.W_qkv.weight.copy_(torch.cat([ours_from_theirs(a.q_proj.weight, num_heads),
                                                     ours_from_theirs(a.k_proj.weight, num_kv_heads),
                                                     a.v_proj.weight]))
        ours.self_attn.W_o.weight.copy_(a.o_proj.weight)
        ours.feed_forward.linear1.weight.copy_(theirs.mlp.gate_proj.weight)
        ours.feed_forward.linear3.weight.copy_(theirs.mlp.up_proj.weight)
        ours.feed_forward.linear2.weight.copy_(theirs.mlp.down_proj.weight)
        for norm in (theirs.input_layernorm, theirs.post_attention_layernorm):
            norm.weight.copy_(randn(d_model, seed=7))
        ours.norm1.weight.copy_(theirs.input_layernorm.weight)
        ours.norm2.weight.copy_(theirs.post_attention_layernorm.weight)
    # Llama's RMSNorm computes in float32 even for float64 input (its eager softmax too, so
    # the config picks sdpa); PyTorch's nn.RMSNorm (equal to ours, above) with its weights stands
    # in, so that the rest is compared to 1e-12
    theirs.float(), ours.float()  # first as they run: float32, Llama's own norms and table
    x32 = randn(2, t, d_model).float()
    mask32 = torch.zeros(t, t).masked_fill(~causal_mask(t), -math.inf)[None, None]
    out32 = theirs(x32, attention_mask=mask32, position_ids=torch.arange(t)[None],
                   position_embeddings=LlamaRotaryEmbedding(config)(x32, torch.arange(t)[None]))
    out32 = out32[0] if isinstance(out32, tuple) else out32
    torch.testing.assert_close(ours(x32, mask=causal_mask(t))[0], out32, rtol=1e-5, atol=1e-5)
    theirs.double(), ours.double()
    for name in ("input_layernorm", "post_attention_layernorm"):
        norm = nn.RMSNorm(d_model, eps=1e-5).double()
        norm.weight.data.copy_(getattr(theirs, name).weight)
        setattr(theirs, name, norm)
    x = randn(2, t, d_model)
    positions = torch.arange(t)[None]
    angles = rotary_angles(torch.arange(t), d_k)  # (t, d_k / 2), float64
    angles = torch.cat([angles, angles], dim=-1)  # Llama's layout: the same angle for i and i + d_k / 2
    cos_sin = angles.cos()[None], angles.sin()[None]  # Llama's own table is float32: equal to 1e-6 only
    torch.testing.assert_close(LlamaRotaryEmbedding(config)(x, positions), cos_sin, rtol=0, atol=1e-6)
    additive = torch.zeros(t, t, **DOUBLE).masked_fill(~causal_mask(t), -math.inf)[None, None]
    expected = theirs(x, attention_mask=additive, position_ids=positions, position_embeddings=cos_sin)
    expected = expected[0] if isinstance(expected, tuple) else expected
    torch.testing.assert_close(ours(x, mask=causal_mask(t))[0], expected, rtol=0, atol=1e-12)


def test_encoder_layer_explains_an_unknown_norm_or_activation():
    with pytest.raises(ValueError, match=r"norm must be one of 'layer', 'rms', got 'batch'"):
        EncoderLayer(32, 4, norm="batch")
    with pytest.raises(ValueError, match=r"activation must be one of 'relu', 'gelu', 'swiglu'"):
        EncoderLayer(32, 4, activation="swish")


@pytest.mark.parametrize("options,message", [
    (dict(norm="rms"), "uses RMSNorm, and PyTorch's layers use LayerNorm"),
    (dict(activation="swiglu"), "activation differs"),
    (dict(num_kv_heads=2), "2 key-value heads for 4 query heads"),
    (dict(attention="linear"), "is linear attention"),
])
def test_copy_weights_refuses_the_modern_pieces(options, message):
    from companion import copy_weights
    theirs = nn.TransformerEncoderLayer(32, 4, 128, batch_first=True)
    with pytest.raises(ValueError, match=message):
        copy_weights(EncoderLayer(32, 4, **options), theirs)


def test_causal_linear_attention_with_cached_keys():
    Q, K, V = randn(2, 3, 4, 8), randn(2, 3, 11, 8, seed=1), randn(2, 3, 11, 5, seed=2)
    weights = linear_attention_weights(Q, K, causal=True)  # the queries are the last 4 of 11 positions
    assert bool((weights[..., 0, 8:] == 0).all()) and bool((weights[..., 0, :8] > 0).all())
    torch.testing.assert_close(linear_attention(Q, K, V, causal=True, chunk_size=3), weights @ V, rtol=0, atol=1e-12)


def test_linear_attention_module_caches_and_refuses_other_masks():
    from companion import LinearAttention, TransformerLM, generate
    torch.manual_seed(0)
    attention = LinearAttention(32, 4, rotary=True).double().eval()
    x = randn(2, 6, 32)
    _cached_equals_full(attention, x, prompt=3)
    with pytest.raises(ValueError, match=r"LinearAttention is causal: it takes mask=causal_mask\(6, 6\)"):
        attention(x, x, x, mask=torch.ones(2, 1, 6, dtype=torch.bool))
    with pytest.raises(ValueError, match="LinearAttention is causal"):
        attention(x, x, x)  # no mask over six queries would be full attention
    with pytest.raises(ValueError, match="no attention weights"):
        attention(x, x, x, mask=causal_mask(6), need_weights=True)
    model = TransformerLM(20, d_model=32, num_heads=4, num_layers=2, max_len=16, positional="none", rotary=True,
                          attention="linear").eval()
    ids = torch.randint(0, 20, (2, 5), generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    cached = generate(model, ids, 8, generator=g)
    uncached = generate(model, ids, 8, generator=torch.Generator().manual_seed(1), use_cache=False)
    assert torch.equal(cached, uncached)


# --- peak_memory: the measure behind section 10.1's table ---------------------------------------

def test_peak_memory_counts_what_the_statement_allocates():
    mib = 2**20
    grown = peak_memory("x = bytearray(64 * 2**20)")  # 64 MiB, every page touched
    assert 64 * mib <= grown < 66 * mib, grown / mib


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the high-water mark is reset on Linux only")
def test_peak_memory_does_not_hide_a_small_peak_under_the_set_up_s():
    """The set-up's own peak (importing torch, a large warm-up freed again) is not a floor: with
    the mark since the process began, 16 MiB after a freed 256 MiB read as 0."""
    mib = 2**20
    grown = peak_memory("y = bytearray(16 * 2**20)", setup="x = bytearray(256 * 2**20)\ndel x")
    assert 16 * mib <= grown < 18 * mib, grown / mib


def test_peak_memory_says_what_went_wrong():
    with pytest.raises(ValueError, match="non-empty str"):
        peak_memory("   ")
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        peak_memory("1 / 0")
