"""Stop 56: the unclear errors left from stop 55's probe in the decoding entry points. Each
mistake once failed deep inside, with a message about something else (an IndexError, a missing
attribute, a position limit reached only after max_len steps of work)."""

import pytest
import torch

from companion import Transformer, beam_search, generate, greedy_decode


def _seq2seq():
    torch.manual_seed(0)
    return Transformer(11, 13, d_model=16, num_heads=2, num_encoder_layers=1, num_decoder_layers=1,
                       dropout=0.0, max_len=8).eval()


def test_decode_step_names_a_one_dimensional_target():
    m = _seq2seq()
    memory = m.encoder(torch.randint(1, 11, (2, 5)))[0]
    with pytest.raises(ValueError, match=r"tgt must be 2-D \(batch, seq\), got 1-D shape \(1,\)"):
        m.decode_step(torch.tensor([1]), memory, m.new_caches())


def test_generate_refuses_an_encoder_decoder_and_points_to_the_decoders():
    with pytest.raises(TypeError, match=r"decoder-only language model .*, got Transformer; .*greedy_decode"):
        generate(_seq2seq(), torch.randint(1, 11, (2, 5)), 3)


@pytest.mark.parametrize("use_cache", [True, False])
def test_decoding_past_the_decoders_positions_is_refused_before_any_step(use_cache):
    m, src = _seq2seq(), torch.randint(1, 11, (2, 5))
    assert greedy_decode(m, src, 1, 12, 8, use_cache=use_cache).shape[1] <= 9  # 8 positions: fine
    calls = []
    m.register_forward_pre_hook(lambda *_: calls.append(1))
    with pytest.raises(ValueError, match=r"max_len=9 tokens need 9 decoder positions, .* holds 8"):
        greedy_decode(m, src, 1, 12, 9, use_cache=use_cache)
    with pytest.raises(ValueError, match=r"max_len=9 tokens need 9 decoder positions"):
        beam_search(m, src, 1, 12, 9)
    assert calls == []  # refused at the front door, before any decoding step


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_online_softmax_sums_half_precision_rows_in_float32(dtype):
    # a running sum kept in bfloat16 drifted by up to 13 % over 16,384 entries (float16: 5 %)
    from companion import online_softmax
    x = torch.randn(4, 16384, generator=torch.Generator().manual_seed(0)).to(dtype)
    ours, theirs = online_softmax(x, 64), torch.softmax(x, dim=-1)
    assert ours.dtype == dtype
    torch.testing.assert_close(ours.float(), theirs.float(), rtol=0.01, atol=0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_tiled_attention_in_half_precision_is_as_close_as_pytorchs_kernel(dtype):
    import torch.nn.functional as F

    from companion import tiled_attention
    g = torch.Generator().manual_seed(0)
    Q, K, V = (torch.randn(1, 1, n, 8, generator=g).to(dtype) for n in (4, 16384, 16384))
    exact = F.scaled_dot_product_attention(Q.double(), K.double(), V.double())
    ours = tiled_attention(Q, K, V, block_size=64)
    theirs = F.scaled_dot_product_attention(Q, K, V)
    assert ours.dtype == dtype
    assert (ours.double() - exact).abs().max() <= 2 * (theirs.double() - exact).abs().max() + 1e-6
