"""Decoding an encoder-decoder: greedy with caches equals greedy without; beam search."""

import math

import pytest
import torch

from companion import (DecoderLayer, KVCache, MemoryCache, MultiHeadAttention, Transformer, beam_search,
                       causal_mask, greedy_decode)


def small_transformer(seed=0, norm_first=False):
    torch.manual_seed(seed)
    return Transformer(11, 13, d_model=16, num_heads=4, num_encoder_layers=2, num_decoder_layers=2, d_ff=32,
                       dropout=0.0, norm_first=norm_first, max_len=40, src_pad_id=0, tgt_pad_id=0).eval()


def source():
    src = torch.tensor([[3, 4, 5, 6, 7], [8, 2, 9, 0, 0], [5, 5, 0, 0, 0]])
    return src, (src != 0)[:, None, :]  # (3, 5), (3, 1, 5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decode_step_equals_the_full_forward_pass_position_by_position(norm_first):
    model = small_transformer(norm_first=norm_first)
    src, mask = source()
    tgt = torch.tensor([[1, 4, 6, 2, 7, 3], [1, 9, 9, 12, 5, 5], [1, 3, 0, 0, 0, 0]])
    full = model(src, tgt, src_mask=mask)[0]  # (3, 6, 13)
    memory = model.encoder(src, mask=mask)[0]
    caches = model.new_caches()
    steps = [model.decode_step(tgt[:, :2], memory, caches, src_mask=mask)]  # two positions at once, then one
    steps += [model.decode_step(tgt[:, i:i + 1], memory, caches, src_mask=mask) for i in range(2, 6)]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    assert [len(c) for c in caches[0]] == [6, 6] and [len(c) for c in caches[1]] == [5, 5]  # memory: t_src


def test_a_step_with_another_memory_is_refused_not_answered_from_the_old_one():
    model = small_transformer()
    src, mask = source()
    memory = model.encoder(src, mask=mask)[0]
    caches = model.new_caches()
    model.decode_step(torch.ones(3, 1, dtype=torch.long), memory, caches, src_mask=mask)
    same = model.decode_step(torch.full((3, 1), 4), memory.clone(), caches, src_mask=mask)  # equal values: fine
    assert same.shape == (3, 1, 13)
    other = model.encoder(src.flip(1), mask=mask.flip(-1))[0]
    with pytest.raises(ValueError, match=r"MemoryCache holds the keys and values of another memory.*new_caches"):
        model.decode_step(torch.full((3, 1), 5), other, caches, src_mask=mask.flip(-1))


def test_cached_greedy_decoding_gives_the_same_tokens():
    for seed in range(3):
        model = small_transformer(seed)
        src, mask = source()
        steps, decode_step = [], model.decode_step
        model.decode_step = lambda tgt, *args, **kwargs: steps.append(tgt.shape) or decode_step(tgt, *args, **kwargs)
        cached = greedy_decode(model, src, bos_id=1, eos_id=2, max_len=12, src_mask=mask)
        assert steps and all(shape == (3, 1) for shape in steps)  # one new position per step
        plain = greedy_decode(model, src, bos_id=1, eos_id=2, max_len=12, src_mask=mask, use_cache=False)
        assert len(steps) == cached.shape[1] - 1  # the uncached run did not use it
        assert torch.equal(cached, plain)


def test_a_memory_cache_projects_the_memory_once():
    torch.manual_seed(0)
    layer = DecoderLayer(8, 2, d_ff=16, dropout=0.0).eval()
    memory, x = torch.randn(2, 5, 8), torch.randn(2, 3, 8)
    cache, self_cache = MemoryCache(), KVCache()
    projected, project = [], layer.cross_attn.project_memory
    layer.cross_attn.project_memory = lambda m: projected.append(1) or project(m)  # counts projections
    first = layer(x[:, :1], memory, cache=self_cache, memory_cache=cache)[0]
    later = layer(x[:, 1:], memory, mask=causal_mask(2, 3), cache=self_cache, memory_cache=cache)[0]
    assert projected == [1] and len(cache) == 5 and cache.memory is memory  # the first step only
    del layer.cross_attn.project_memory
    expected = layer(x, memory, mask=causal_mask(3))[0]
    torch.testing.assert_close(torch.cat([first, later], dim=1), expected)
    assert not isinstance(cache, KVCache) and repr(cache) == "MemoryCache(K (2, 2, 5, 4), V (2, 2, 5, 4))"


def test_attend_refuses_keys_of_another_batch_and_rotary_modules():
    mha = MultiHeadAttention(8, 2)
    K, V = mha.project_memory(torch.randn(2, 5, 8))
    assert K.shape == V.shape == (2, 2, 5, 4)
    with pytest.raises(ValueError, match=r"K and V must be \(batch, heads, t_k, d_k\).*same batch"):
        mha.attend(torch.randn(3, 1, 8), K, V)
    with pytest.raises(ValueError, match="rotary positions belong to self-attention"):
        MultiHeadAttention(8, 2, rotary=True).attend(torch.randn(2, 1, 8), K, V)


def test_width_one_beam_search_is_greedy():
    model = small_transformer(1)
    src, mask = source()
    beam, _ = beam_search(model, src, bos_id=1, eos_id=2, max_len=9, width=1, src_mask=mask)
    assert torch.equal(beam, greedy_decode(model, src, bos_id=1, eos_id=2, max_len=9, src_mask=mask))


class Table(torch.nn.Module):
    """A decoder whose next-token probabilities depend on the last token only (vocabulary 0..4).

    After BOS (1): token 3 with 0.6, token 4 with 0.4. After 3: EOS (2) 0.3, 3 0.35, 4 0.35.
    After 4: EOS 0.9. Greedy takes 3 (0.6) and then has at best 0.35: 3 3 ... ; the most
    probable output is 4 EOS (0.4 * 0.9 = 0.36), which a beam of 2 finds.
    """

    probs = {1: [0, 0, 0, 0.6, 0.4], 3: [0, 0, 0.3, 0.35, 0.35], 4: [0.05, 0, 0.9, 0.05, 0], 0: [1, 0, 0, 0, 0],
             2: [1, 0, 0, 0, 0]}

    def forward(self, src, tgt, src_mask=None):
        rows = [[self.probs[int(t)] for t in seq] for seq in tgt]
        return torch.tensor(rows).clamp_min(1e-12).log(), None  # (batch, t, 5) log-probabilities as logits


def test_beam_search_finds_what_greedy_misses():
    model, src = Table(), torch.ones(1, 1, dtype=torch.long)
    greedy = greedy_decode(model, src, bos_id=1, eos_id=2, max_len=3)
    assert greedy.tolist() == [[1, 3, 3, 3]]  # never reaches EOS within 3 tokens: 0.6 * 0.35 * 0.35
    tokens, log_p = beam_search(model, src, bos_id=1, eos_id=2, max_len=3, width=2)
    assert tokens.tolist() == [[1, 4, 2, 0]] and math.isclose(log_p.item(), math.log(0.36), rel_tol=1e-5)


def test_the_beam_score_is_the_log_probability_of_its_tokens():
    model = small_transformer(2)
    src, mask = source()
    tokens, log_p = beam_search(model, src, bos_id=1, eos_id=2, max_len=6, width=3, src_mask=mask)
    log_probs = torch.log_softmax(model(src, tokens[:, :-1], src_mask=mask)[0], dim=-1)
    picked = log_probs.gather(-1, tokens[:, 1:, None])[..., 0]  # (batch, n)
    after_eos = (tokens[:, 1:] == 2).cumsum(dim=1) - (tokens[:, 1:] == 2).long() > 0  # padding after EOS
    torch.testing.assert_close(picked.masked_fill(after_eos, 0).sum(dim=1), log_p, atol=1e-4, rtol=1e-4)


def test_beam_search_rejects_a_bad_width():
    with pytest.raises(ValueError, match="width must be a positive int"):
        beam_search(small_transformer(), source()[0], 1, 2, 5, width=0)


def test_a_two_dimensional_source_mask_is_refused_everywhere_it_could_be_misread():
    model = small_transformer()
    src = torch.tensor([[3, 4, 5], [6, 7, 0], [8, 0, 0]])  # batch 3 = t_src 3: a (batch, t_src) mask broadcasts
    flat = src != 0  # (batch, t_src), read as (t_q, t_k) rows by broadcasting
    tgt = torch.ones(3, 3, dtype=torch.long)
    right = model(src, tgt, src_mask=flat[:, None, :])[0]
    with pytest.raises(ValueError, match=r"src_mask must have a batch axis.*src_mask\[:, None, :\]"):
        model(src, tgt, src_mask=flat)
    with pytest.raises(ValueError, match=r"tgt_mask must have a batch axis"):
        model(src, tgt, src_mask=flat[:, None, :], tgt_mask=tgt != 0)
    memory = model.encoder(src, mask=flat[:, None, :])[0]
    with pytest.raises(ValueError, match=r"src_mask must have a batch axis"):
        model.decode_step(tgt[:, :1], memory, model.new_caches(), src_mask=flat)
    for decode in (lambda m: greedy_decode(model, src, 1, 2, max_len=3, src_mask=m),
                   lambda m: beam_search(model, src, 1, 2, max_len=3, src_mask=m)):
        with pytest.raises(ValueError, match=r"src_mask must have a batch axis"):
            decode(flat)
        decode(flat[:, None, :])  # the padding mask as padding_mask returns it
    assert right.shape == (3, 3, 13)
