"""Encoder/decoder layers and stacks against nn.TransformerEncoderLayer & co, with the same weights."""

import pytest
import torch
from torch import nn

from companion import (
    Decoder,
    DecoderLayer,
    Encoder,
    EncoderLayer,
    PositionwiseFeedForward,
    causal_mask,
    KVCache,
    copy_weights,
    padding_mask,
)
from reference import assert_close, assert_same_grads, backward_with, leaf

D_MODEL, HEADS, D_FF = 16, 4, 24
CONFIGS = [
    (dtype, norm_first, activation)
    for dtype in (torch.float64, torch.float32)
    for norm_first in (False, True)
    for activation in ("relu", "gelu")
]
IDS = [f"{str(d)[6:]}-{'pre' if n else 'post'}norm-{a}" for d, n, a in CONFIGS]


def torch_kwargs(norm_first, activation):
    return dict(dim_feedforward=D_FF, dropout=0.0, activation=activation, norm_first=norm_first, batch_first=True)


@pytest.mark.parametrize("dtype, norm_first, activation", CONFIGS, ids=IDS)
def test_encoder_layer_equals_pytorch(dtype, norm_first, activation):
    ours = EncoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, activation=activation, norm_first=norm_first).to(dtype)
    theirs = nn.TransformerEncoderLayer(D_MODEL, HEADS, **torch_kwargs(norm_first, activation)).to(dtype)
    copy_weights(theirs, ours)
    keep = padding_mask(torch.tensor([6, 4, 1]), max_len=6)  # (3, 1, 6), True = real token
    x = leaf((3, 6, D_MODEL), dtype)
    x2 = x.detach().clone().requires_grad_()

    out, w = ours(x, mask=keep, need_weights=True)
    ref = theirs(x2, src_key_padding_mask=~keep.squeeze(1))
    backward_with(out)
    backward_with(ref)
    assert w.shape == (3, HEADS, 6, 6)
    assert_close(out, ref, dtype, "output")
    assert_close(x.grad, x2.grad, dtype, "input grad")
    assert_same_grads(ours, theirs, dtype)


@pytest.mark.parametrize("dtype, norm_first, activation", CONFIGS, ids=IDS)
def test_decoder_layer_equals_pytorch(dtype, norm_first, activation):
    ours = DecoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, activation=activation, norm_first=norm_first).to(dtype)
    theirs = nn.TransformerDecoderLayer(D_MODEL, HEADS, **torch_kwargs(norm_first, activation)).to(dtype)
    copy_weights(theirs, ours)
    t_tgt, t_src = 5, 7
    src_keep = padding_mask(torch.tensor([7, 3]), max_len=t_src)  # (2, 1, 7)
    x, memory = leaf((2, t_tgt, D_MODEL), dtype), leaf((2, t_src, D_MODEL), dtype)
    x2, memory2 = (t.detach().clone().requires_grad_() for t in (x, memory))

    out, w = ours(x, memory, mask=causal_mask(t_tgt), memory_mask=src_keep, need_weights=True)
    ref = theirs(x2, memory2, tgt_mask=~causal_mask(t_tgt), memory_key_padding_mask=~src_keep.squeeze(1))
    backward_with(out)
    backward_with(ref)
    assert w["self"].shape == (2, HEADS, t_tgt, t_tgt) and w["cross"].shape == (2, HEADS, t_tgt, t_src)
    assert_close(out, ref, dtype, "output")
    assert_close(x.grad, x2.grad, dtype, "target grad")
    assert_close(memory.grad, memory2.grad, dtype, "memory grad")
    assert_same_grads(ours, theirs, dtype)


@pytest.mark.parametrize("dtype, norm_first, activation", CONFIGS, ids=IDS)
def test_encoder_stack_equals_pytorch(dtype, norm_first, activation):
    ours = Encoder(50, D_MODEL, HEADS, num_layers=3, d_ff=D_FF, dropout=0.0, activation=activation,
                   norm_first=norm_first).to(dtype)
    layer = nn.TransformerEncoderLayer(D_MODEL, HEADS, **torch_kwargs(norm_first, activation))
    final_norm = nn.LayerNorm(D_MODEL) if norm_first else None  # pre-norm stacks end with a LayerNorm
    theirs = nn.TransformerEncoder(layer, num_layers=3, norm=final_norm, enable_nested_tensor=False).to(dtype)
    copy_weights(ours, theirs)
    keep = padding_mask(torch.tensor([5, 2]), max_len=5)
    x = leaf((2, 5, D_MODEL), dtype)
    x2 = x.detach().clone().requires_grad_()

    out, weights = ours.encode(x, mask=keep, need_weights=True)
    ref = theirs(x2, src_key_padding_mask=~keep.squeeze(1))
    backward_with(out)
    backward_with(ref)
    assert len(weights) == 3
    assert_close(out, ref, dtype, "output")
    assert_close(x.grad, x2.grad, dtype, "input grad")
    assert_same_grads(ours, theirs, dtype)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_stack_equals_pytorch(norm_first):
    dtype = torch.float64
    ours = Decoder(40, D_MODEL, HEADS, num_layers=2, d_ff=D_FF, dropout=0.0, norm_first=norm_first).to(dtype)
    layer = nn.TransformerDecoderLayer(D_MODEL, HEADS, **torch_kwargs(norm_first, "relu"))
    theirs = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(D_MODEL) if norm_first else None).to(dtype)
    copy_weights(theirs, ours)
    x, memory = torch.randn(2, 4, D_MODEL, dtype=dtype), torch.randn(2, 6, D_MODEL, dtype=dtype)
    out, _ = ours.decode(x, memory, mask=causal_mask(4))
    assert_close(out, theirs(x, memory, tgt_mask=~causal_mask(4)), dtype, "output")


def test_encoder_layer_equals_pytorch_fast_path_in_inference():
    """In eval mode without grad PyTorch runs its fused C++ encoder; we still agree."""
    ours = EncoderLayer(D_MODEL, HEADS, D_FF).eval()
    theirs = copy_weights(ours, nn.TransformerEncoderLayer(D_MODEL, HEADS, D_FF, batch_first=True).eval())
    x = torch.randn(2, 5, D_MODEL)
    with torch.no_grad():
        assert_close(ours(x)[0], theirs(x), torch.float32, "output")


def test_weights_come_from_the_same_forward_path():
    """need_weights changes what is returned, never the output."""
    layer = EncoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0).double()
    x = torch.randn(2, 5, D_MODEL, dtype=torch.float64)
    a, none = layer(x)
    b, w = layer(x, need_weights=True)
    assert none is None
    assert_close(a, b, torch.float64, "output with and without weights")
    torch.testing.assert_close(w.sum(-1), torch.ones(2, HEADS, 5, dtype=torch.float64))


@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_feed_forward_is_a_kernel_size_1_convolution(activation):
    ff = PositionwiseFeedForward(D_MODEL, D_FF, activation=activation).double()
    conv1 = nn.Conv1d(D_MODEL, D_FF, kernel_size=1).double()
    conv2 = nn.Conv1d(D_FF, D_MODEL, kernel_size=1).double()
    with torch.no_grad():
        for conv, linear in ((conv1, ff.linear1), (conv2, ff.linear2)):
            conv.weight.copy_(linear.weight.unsqueeze(-1))  # (out, in) -> (out, in, kernel=1)
            conv.bias.copy_(linear.bias)
    act = {"relu": torch.relu, "gelu": nn.functional.gelu}[activation]
    x = torch.randn(3, 7, D_MODEL, dtype=torch.float64)  # (batch, seq, d_model)
    as_conv = conv2(act(conv1(x.transpose(1, 2)))).transpose(1, 2)  # Conv1d wants (batch, channels, seq)
    assert_close(ff(x), as_conv, torch.float64, "conv1d")


def test_norm_placement_changes_the_function():
    """post-norm and pre-norm are different functions with the same weights."""
    post = EncoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, norm_first=False)
    pre = EncoderLayer(D_MODEL, HEADS, D_FF, dropout=0.0, norm_first=True)
    pre.load_state_dict(post.state_dict())
    x = torch.randn(2, 5, D_MODEL)
    assert not torch.allclose(post(x)[0], pre(x)[0], atol=1e-3)
    # post-norm output is normalised per position; pre-norm output is not
    torch.testing.assert_close(post(x)[0].mean(-1), torch.zeros(2, 5), atol=1e-5, rtol=0)


# --- named sublayers, the decoder's cache and rotary, the stacks' keyword construction -----------


def test_sublayers_have_pytorchs_names():
    """norm1/norm2(/norm3) and dropout1.. in the order the sublayers run, as in nn.Transformer*Layer."""
    encoder = EncoderLayer(D_MODEL, HEADS, D_FF)
    decoder = DecoderLayer(D_MODEL, HEADS, D_FF)
    assert {n.split(".")[0] for n, _ in encoder.named_modules() if n} >= {"norm1", "norm2", "dropout1", "dropout2"}
    assert {n.split(".")[0] for n, _ in decoder.named_modules() if n} >= {"norm1", "norm2", "norm3", "dropout3"}
    theirs = nn.TransformerDecoderLayer(D_MODEL, HEADS, D_FF, batch_first=True)
    ours_norms = {k for k in decoder.state_dict() if k.startswith("norm")}
    assert ours_norms == {k for k in theirs.state_dict() if k.startswith("norm")}


@pytest.mark.parametrize("rotary", [False, True])
def test_decoder_with_a_cache_equals_recomputing_the_prefix(rotary):
    """Greedy decoding feeds one position per step: with the cache, each step equals the full pass."""
    torch.manual_seed(0)
    decoder = Decoder(11, D_MODEL, HEADS, 2, d_ff=D_FF, dropout=0.0, norm_first=True, rotary=rotary).double().eval()
    memory = torch.randn(2, 5, D_MODEL, dtype=torch.float64)
    keep = padding_mask(torch.tensor([5, 3]), max_len=5)  # (2, 1, 5)
    tgt = torch.randint(0, 11, (2, 7))
    full, _ = decoder(tgt, memory, mask=causal_mask(7), memory_mask=keep)  # (2, 7, d_model)
    caches = [KVCache() for _ in decoder.layers]
    steps = []
    for t in range(7):
        x = decoder.embed(tgt[:, t:t + 1], offset=t)  # (2, 1, d_model): only the new position
        out, _ = decoder.decode(x, memory, memory_mask=keep, caches=caches)
        steps.append(out)
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-12, rtol=0)
    assert all(len(cache) == 7 for cache in caches)


def test_decoder_rotary_changes_only_the_self_attention():
    torch.manual_seed(0)
    plain, rotary = DecoderLayer(D_MODEL, HEADS, D_FF), DecoderLayer(D_MODEL, HEADS, D_FF, rotary=True)
    assert rotary.self_attn.rotary and not rotary.cross_attn.rotary and not plain.self_attn.rotary
    with pytest.raises(ValueError, match="rotary"):
        copy_weights(rotary, nn.TransformerDecoderLayer(D_MODEL, HEADS, D_FF, batch_first=True))


def test_stacks_pass_every_setting_to_their_layers_by_name():
    stack = Encoder(11, D_MODEL, HEADS, 2, d_ff=D_FF, dropout=0.2, activation="gelu", norm_first=True,
                    layer_norm_eps=1e-6, bias=False, rotary=True)
    for layer in stack.layers:
        assert layer.feed_forward.linear1.out_features == D_FF and layer.feed_forward.activation == "gelu"
        assert layer.norm_first and layer.norm1.eps == 1e-6 and layer.dropout1.p == 0.2
        assert layer.self_attn.rotary and layer.norm1.bias is None and layer.self_attn.W_o.bias is None
    assert stack.norm.eps == 1e-6 and stack.norm.bias is None  # the final LayerNorm follows bias too
    decoder = Decoder(11, D_MODEL, HEADS, 1, d_ff=D_FF, bias=False)
    assert decoder.layers[0].cross_attn.W_o.bias is None and decoder.layers[0].norm3.bias is None


def test_the_layer_loop_checks_its_caches():
    stack = Encoder(11, D_MODEL, HEADS, 2, d_ff=D_FF)
    with pytest.raises(ValueError, match=r"caches must hold one cache per layer \(2\), got 1"):
        stack.encode(torch.randn(1, 3, D_MODEL), caches=[KVCache()])


def test_every_stack_in_the_package_is_one_layer_stack():
    """One way to build a stack: each model's layers are a LayerStack, built and run the same way."""
    from companion import LayerStack, Transformer, TransformerLM, WhichFirst
    from companion.models.bert import BertConfig, BertEncoder

    transformer = Transformer(11, 12, D_MODEL, HEADS, 2, 1, d_ff=D_FF)
    stacks = {
        "Encoder": transformer.encoder.layers,
        "Decoder": transformer.decoder.layers,
        "TransformerLM": TransformerLM(11, D_MODEL, HEADS, 2, max_len=8).blocks,
        "WhichFirst": WhichFirst(11, "rotary", d_model=D_MODEL, num_heads=HEADS).layers,
        "BertEncoder": BertEncoder(BertConfig(11, D_MODEL, 2, HEADS, D_FF, 8, 2, 1e-12, "gelu")).layers,
    }
    for model, stack in stacks.items():
        assert type(stack) is LayerStack, f"{model} builds its own {type(stack).__name__} of layers"
        assert len(stack) >= 1 and all(type(layer) in (EncoderLayer, DecoderLayer) for layer in stack)


def test_a_layer_stack_takes_its_layers_options_by_name_only():
    from companion import LayerStack

    stack = LayerStack(EncoderLayer, 3, D_MODEL, HEADS, d_ff=D_FF, norm_first=True, bias=False)
    assert len(stack) == 3 and all(layer.norm_first and layer.norm1.bias is None for layer in stack)
    assert list(stack.state_dict())[0].startswith("0.")  # a ModuleList: checkpoints keep their names
    with pytest.raises(TypeError, match="positional"):
        LayerStack(EncoderLayer, 2, D_MODEL, HEADS, D_FF)  # d_ff by position could shift silently
    with pytest.raises(TypeError, match="d_fff"):
        LayerStack(EncoderLayer, 2, D_MODEL, HEADS, d_fff=D_FF)
    with pytest.raises(ValueError, match="num_layers"):
        LayerStack(EncoderLayer, -1, D_MODEL, HEADS)
    x = torch.randn(2, 5, D_MODEL, dtype=torch.float64)
    norm = nn.LayerNorm(D_MODEL, dtype=torch.float64)
    empty, _ = LayerStack(EncoderLayer, 0, D_MODEL, HEADS)(x, norm=norm)
    assert torch.equal(empty, norm(x))  # no layers: only the final norm
    stack = stack.double().eval()
    y, weights = stack(x, norm=norm, need_weights=True)
    expected = x
    for layer in stack:
        expected, _ = layer(expected)
    assert torch.allclose(y, norm(expected), atol=1e-12, rtol=0) and len(weights) == 3
