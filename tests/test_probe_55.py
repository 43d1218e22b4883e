"""Stop 55's fresh probe of the newer API: each test a mistake that once returned a wrong result
silently (or, for grouped-query attention, could not be used at all)."""

import pytest
import torch

from companion import (BertConfig, BertEncoder, DecoderLayer, Decoder, Encoder, GroupedQueryAttention, KVCache,
                       MemoryCache, Transformer, TransformerLM, causal_mask, evaluate_bits_per_char, generate,
                       greedy_decode)


def _seq2seq(seed=0, dropout=0.0):
    torch.manual_seed(seed)
    return Transformer(11, 13, d_model=16, num_heads=2, num_encoder_layers=2, num_decoder_layers=2,
                       dropout=dropout, max_len=8).eval()


def test_decode_step_refuses_one_memory_cache_shared_by_every_layer():
    m = _seq2seq()
    src, tgt = torch.randint(1, 11, (2, 5)), torch.randint(1, 13, (2, 4))
    memory = m.encoder(src)[0]
    with pytest.raises(ValueError, match=r"memory caches hold the same MemoryCache object more than once"):
        m.decode_step(tgt[:, :1], memory, ([KVCache() for _ in range(2)], [MemoryCache()] * 2))
    with pytest.raises(TypeError, match=r"pair \(self_caches, memory_caches\) that model.new_caches\(\)"):
        m.decode_step(tgt[:, :1], memory, None)
    with pytest.raises(ValueError, match=r"one KVCache per decoder layer \(2\)"):
        m.decode_step(tgt[:, :1], memory, ([KVCache()], [MemoryCache(), MemoryCache()]))


def test_a_memory_cache_refuses_another_layer_or_a_memory_changed_in_place():
    torch.manual_seed(0)
    a, b = DecoderLayer(16, 2, dropout=0.0).eval(), DecoderLayer(16, 2, dropout=0.0).eval()
    x, memory = torch.randn(2, 1, 16), torch.randn(2, 5, 16)
    cache = MemoryCache()
    a(x, memory, memory_cache=cache)
    with pytest.raises(ValueError, match="another layer \\(or another model\\) projected"):
        b(x, memory, memory_cache=cache)
    a(x, memory, memory_cache=cache)  # the same layer and memory: fine
    memory.add_(1.0)
    with pytest.raises(ValueError, match="changed in place after this MemoryCache projected it"):
        a(x, memory, memory_cache=cache)
    m, m2 = _seq2seq(0), _seq2seq(1)  # caches filled by one model, continued by another
    src, tgt = torch.randint(1, 11, (2, 5)), torch.randint(1, 13, (2, 4))
    caches = m.new_caches()
    m.decode_step(tgt[:, :1], m.encoder(src)[0], caches)
    with pytest.raises(ValueError, match="another layer \\(or another model\\)"):
        m2.decode_step(tgt[:, 1:2], m.encoder(src)[0], caches)


def test_two_dimensional_padding_masks_are_refused_by_the_stacks_too():
    torch.manual_seed(0)
    pad = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0]]).bool()  # (batch, t): batch == t, ambiguous
    enc, dec = Encoder(11, 16, 2, 1, dropout=0.0).eval(), Decoder(11, 16, 2, 1, dropout=0.0).eval()
    tokens = torch.randint(1, 11, (3, 3))
    with pytest.raises(ValueError, match="mask must have a batch axis"):
        enc(tokens, mask=pad)
    memory = enc(tokens, mask=pad[:, None])[0]
    with pytest.raises(ValueError, match="memory_mask must have a batch axis"):
        dec(tokens, memory, mask=causal_mask(3), memory_mask=pad)
    dec(tokens, memory, mask=causal_mask(3), memory_mask=pad[:, None])  # the padding mask: fine


def test_transformer_refuses_a_square_source_mask_and_an_empty_source():
    m = _seq2seq()
    src, tgt = torch.randint(1, 11, (2, 5)), torch.randint(1, 13, (2, 5))
    square = torch.ones(2, 5, 5, dtype=torch.bool).tril()  # would be read row by row in cross-attention
    with pytest.raises(ValueError, match=r"src_mask.*\(batch, 1, t_src\), source padding"):
        m(src, tgt, src_mask=square)
    with pytest.raises(ValueError, match="src and tgt need at least one token each"):
        m(torch.zeros(2, 0, dtype=torch.long), tgt)
    with pytest.raises(ValueError, match="same number of sequences"):
        m(src, tgt[:1])


def test_decoding_and_scoring_restore_the_training_mode_after_an_error():
    lm = TransformerLM(11, d_model=16, num_heads=2, num_layers=1, max_len=16, dropout=0.1).train()
    with pytest.raises(ValueError):
        generate(lm, torch.full((1, 3), 20), 3)  # ids beyond the vocabulary
    assert lm.training
    with pytest.raises(ValueError):
        evaluate_bits_per_char(lm, torch.full((10,), 20), 8)
    assert lm.training
    m = _seq2seq(dropout=0.1).train()
    with pytest.raises(ValueError):
        greedy_decode(m, torch.randint(1, 11, (2, 5)), 1, 12, 50)  # runs past max_len
    assert m.training


def test_bert_refuses_a_string_for_output_hidden_states():
    bert = BertEncoder(BertConfig(50, 16, 1, 2, 32, 16, 2, 1e-12, "gelu")).eval()
    with pytest.raises(TypeError, match="output_hidden_states must be True or False"):
        bert(torch.ones(1, 4, dtype=torch.long), output_hidden_states="False")


def test_grouped_query_attention_attends_to_its_own_projected_memory():
    torch.manual_seed(0)
    gqa = GroupedQueryAttention(16, 4, 2).eval()
    x, memory = torch.randn(2, 3, 16), torch.randn(2, 5, 16)
    K, V = gqa.project_memory(memory)  # (2, 2, 5, 4): two key-value heads
    torch.testing.assert_close(gqa.attend(x, K, V)[0], gqa(x, memory, memory)[0])


def test_unclear_messages_of_the_fourth_probe_now_name_the_argument():
    import numpy as np
    from companion import MultiHeadAttention, linear_attention
    from companion.models.ngram_lm import KneserNeyLM, NGramLM, fit_ngram
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2)
    K, V = mha.project_memory(torch.randn(2, 5, 16))
    with pytest.raises(ValueError, match="query must have last dimension d_model=16"):
        mha.attend(torch.randn(2, 3, 8), K, V)
    with pytest.raises(TypeError, match="query has dtype torch.float64 but the module's weights are torch.float32"):
        mha.attend(torch.randn(2, 3, 16).double(), K, V)
    layer = DecoderLayer(16, 2, dropout=0.0)
    with pytest.raises(TypeError, match="memory_cache must be a companion.MemoryCache"):
        layer(torch.randn(2, 1, 16), torch.randn(2, 5, 16), memory_cache=KVCache())
    Q = torch.randn(1, 2, 3, 4)
    with pytest.raises(ValueError, match=r"K holds no keys \(t_k = 0"):
        linear_attention(Q, Q[..., :0, :], Q[..., :0, :])
    with pytest.raises(TypeError, match="a TransformerLM continues a prompt: use companion.generate"):
        greedy_decode(TransformerLM(11, d_model=16, num_heads=2, num_layers=1, max_len=8),
                      torch.randint(1, 11, (2, 5)), 1, 2, 3)
    with pytest.raises(ValueError, match=r"for one \(t_q, t_k\) mask shared by the batch, add a batch axis"):
        _seq2seq()(torch.randint(1, 11, (2, 4)), torch.randint(1, 13, (2, 4)), tgt_mask=causal_mask(4))
    # NumPy scalars are numbers: accepted, stored as floats
    ids = torch.tensor([1, 2, 3, 1, 2, 4, 1, 2])
    assert NGramLM(2, 6, k=np.float32(0.5)).k == 0.5
    assert KneserNeyLM(2, 6, discount=np.float32(0.75)).discount == 0.75
    fit_ngram(2, ids, ids, 6, ks=np.array([1.0, 0.1], dtype=np.float32))
