"""Chapter 8: the decoder-only Transformer, its key-value cache, sampling, and the n-gram baselines."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from torch import nn

from companion import (CharVocab, EncoderLayer, KVCache, MultiHeadAttention, NGramLM, TokenEmbedding, TransformerLM,
                       causal_mask, copy_weights, evaluate_bits_per_char, fit_ngram, generate, next_token_probs,
                       random_windows, reviews_to_text, sample_next_token, train_language_model)

VOCAB = 23


def small_model(**kwargs):
    torch.manual_seed(0)
    config = dict(d_model=32, num_heads=4, num_layers=2, max_len=40) | kwargs
    return TransformerLM(VOCAB, **config).eval()


# --- causality ---------------------------------------------------------------------------


@given(j=st.integers(0, 11), seed=st.integers(0, 1000))
def test_changing_position_j_never_changes_the_logits_before_j(j, seed):
    model = small_model()
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (2, 12), generator=g)
    changed = ids.clone()
    changed[:, j] = (ids[:, j] + 1 + torch.randint(0, VOCAB - 1, (2,), generator=g)) % VOCAB
    with torch.no_grad():
        a, _ = model(ids)
        b, _ = model(changed)
    assert torch.equal(a[:, :j], b[:, :j]), "a later token changed an earlier position's logits"
    assert (a[:, j:] - b[:, j:]).abs().amax(dim=-1).min() > 0, "the changed token must matter from j on"


def test_without_the_mask_the_future_would_leak():
    """The causality test can fail: the same model without its causal mask lets position 0 see position 5."""
    model = small_model()
    ids = torch.randint(0, VOCAB, (1, 6))
    changed = ids.clone()
    changed[0, 5] = (ids[0, 5] + 1) % VOCAB
    with torch.no_grad():
        x, y = model.embedding(ids), model.embedding(changed)
        for block in model.blocks:
            x, _ = block(x)  # no mask
            y, _ = block(y)
    assert not torch.allclose(x[:, 0], y[:, 0])


def test_the_model_equals_pytorch_layers_with_the_same_weights():
    model = small_model(d_ff=48)
    layers = nn.ModuleList(
        nn.TransformerEncoderLayer(32, 4, 48, dropout=0.0, norm_first=True, batch_first=True) for _ in range(2))
    for ours, theirs in zip(model.blocks, layers):
        copy_weights(ours, theirs)
    ids = torch.randint(0, VOCAB, (3, 10))
    with torch.no_grad():
        x = model.embedding.embedding(ids) * math.sqrt(32) + model.embedding.positional.embedding.weight[:10]
        for layer in layers:
            x = layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(10), is_causal=True)
        expected = model.head(model.norm(x))
        got, _ = model(ids)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=0)


# --- the key-value cache ------------------------------------------------------------------


def test_causal_mask_of_new_queries_is_the_last_rows_of_the_full_mask():
    for t_q, t_k in [(1, 1), (1, 7), (3, 5), (4, 4)]:
        assert torch.equal(causal_mask(t_q, t_k), causal_mask(t_k)[t_k - t_q:])
    with pytest.raises(ValueError, match="t_k >= t_q"):
        causal_mask(5, 3)


@pytest.mark.parametrize("need_weights", [False, True])
def test_attention_with_a_cache_equals_attention_over_the_whole_sequence(need_weights):
    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(2, 7, 16)
    full, w_full = mha(x, x, x, mask=causal_mask(7), need_weights=need_weights)
    cache, outs, ws = KVCache(), [], []
    for start, stop in [(0, 3), (3, 4), (4, 7)]:
        new = x[:, start:stop]
        out, w = mha(new, new, new, mask=causal_mask(stop - start, stop), need_weights=need_weights, cache=cache)
        outs.append(out)
        ws.append(w)
        assert len(cache) == stop
    torch.testing.assert_close(torch.cat(outs, dim=1), full, atol=1e-6, rtol=0)
    if need_weights:
        assert ws[1].shape == (2, 4, 1, 4)
        torch.testing.assert_close(ws[1][:, :, 0], w_full[:, :, 3, :4], atol=1e-6, rtol=0)


def test_the_cache_holds_keys_and_values_of_every_position():
    layer = EncoderLayer(16, 2, dropout=0.0, norm_first=True).eval()
    cache = KVCache()
    x = torch.randn(1, 5, 16)
    layer(x[:, :2], mask=causal_mask(2), cache=cache)
    layer(x[:, 2:3], cache=cache)
    assert cache.K.shape == cache.V.shape == (1, 2, 3, 8)
    assert not torch.allclose(cache.K, cache.V), "keys and values are different projections"


def test_cached_logits_equal_the_full_forward_pass():
    model = small_model()
    ids = torch.randint(0, VOCAB, (3, 20))
    with torch.no_grad():
        full, _ = model(ids)
        caches = model.new_caches()
        parts = [model(ids[:, a:b], caches)[0] for a, b in [(0, 12), (12, 13), (13, 20)]]
    torch.testing.assert_close(torch.cat(parts, dim=1), full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("temperature, top_k, top_p", [(0.0, None, None), (1.0, None, None), (0.7, 5, None),
                                                        (1.0, None, 0.8)])
def test_cached_generation_gives_the_same_tokens_as_uncached(temperature, top_k, top_p):
    model = small_model()
    prompt = torch.randint(0, VOCAB, (3, 4))
    runs = []
    for use_cache in (True, False):
        g = torch.Generator().manual_seed(7)
        runs.append(generate(model, prompt, 30, temperature=temperature, top_k=top_k, top_p=top_p,
                             generator=g, use_cache=use_cache))
    assert runs[0].shape == (3, 34) and runs[0].dtype == torch.long
    assert torch.equal(runs[0][:, :4], prompt)
    assert torch.equal(runs[0], runs[1])


def test_greedy_generation_takes_the_argmax_of_the_uncached_model_at_every_step():
    model = small_model()
    ids = generate(model, torch.randint(0, VOCAB, (2, 3)), 10, temperature=0)
    with torch.no_grad():
        logits, _ = model(ids[:, :-1])
    assert torch.equal(logits[:, 2:].argmax(-1), ids[:, 3:])
    # a nucleus too small for a second token is greedy decoding, whatever the generator draws
    nucleus = generate(model, ids[:, :3], 10, top_p=1e-6, generator=torch.Generator().manual_seed(1))
    assert torch.equal(nucleus, ids)


def test_a_cache_that_loses_values_is_caught():
    """The cache test can fail: a cache that appends keys but keeps only the newest value breaks equality."""

    class KeysOnly(KVCache):
        def update(self, K, V):
            K, _ = super().update(K, V)
            return K, V.expand(-1, -1, K.size(2), -1)

    mha = MultiHeadAttention(16, 4).eval()
    x = torch.randn(1, 4, 16)
    full, _ = mha(x, x, x, mask=causal_mask(4))
    cache = KeysOnly()
    mha(x[:, :3], x[:, :3], x[:, :3], mask=causal_mask(3), cache=cache)
    last, _ = mha(x[:, 3:], x[:, 3:], x[:, 3:], cache=cache)
    assert not torch.allclose(last, full[:, 3:], atol=1e-4)


def test_rotary_attention_with_a_cache_equals_the_full_pass():
    """The new positions are rotated by their own angles (after the cached ones), once."""
    torch.manual_seed(0)
    attention = MultiHeadAttention(16, 2, rotary=True).double()
    x = torch.randn(1, 6, 16, dtype=torch.float64)
    full, _ = attention(x, x, x, mask=causal_mask(6))
    cache = KVCache()
    first, _ = attention(x[:, :4], x[:, :4], x[:, :4], mask=causal_mask(4), cache=cache)
    rest = [attention(x[:, t:t + 1], x[:, t:t + 1], x[:, t:t + 1], cache=cache)[0] for t in (4, 5)]
    assert torch.allclose(torch.cat([first, *rest], dim=1), full, atol=1e-12, rtol=0)


def test_cache_misuse_gets_clear_errors():
    model = small_model()
    with pytest.raises(ValueError, match="caches must be a list of 2 KVCache"):
        model(torch.zeros(1, 3, dtype=torch.long), [KVCache()])
    with pytest.raises(ValueError, match="prompt must be"):
        generate(model, torch.zeros(5, dtype=torch.long), 3)
    cache = KVCache()
    cache.update(torch.randn(2, 4, 3, 8), torch.randn(2, 4, 3, 8))
    with pytest.raises(ValueError, match="do not continue the cached ones"):
        cache.update(torch.randn(1, 4, 1, 8), torch.randn(1, 4, 1, 8))
    with pytest.raises(ValueError, match="one value per key"):
        KVCache().update(torch.randn(1, 4, 2, 8), torch.randn(1, 4, 3, 8))
    with pytest.raises(TypeError, match="companion.KVCache"):
        x = torch.randn(1, 2, 16)
        MultiHeadAttention(16, 2)(x, x, x, cache=[])


def test_positions_continue_from_the_offset():
    embed = TokenEmbedding(VOCAB, 8, max_len=10, positional="learned")
    ids = torch.randint(0, VOCAB, (2, 7))
    torch.testing.assert_close(embed(ids[:, 4:], offset=4), embed(ids)[:, 4:])
    embed = TokenEmbedding(VOCAB, 8, max_len=10)
    torch.testing.assert_close(embed(ids[:, 4:], offset=4), embed(ids)[:, 4:])
    with pytest.raises(ValueError, match=r"positions 8 \.\. 10 go past max_len=10"):
        embed(ids[:, :3], offset=8)


# --- sampling ------------------------------------------------------------------------------


def test_temperature_divides_the_logits():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    for T in (0.5, 1.0, 3.0):
        torch.testing.assert_close(next_token_probs(logits, T), torch.softmax(logits / T, dim=-1))
    assert torch.equal(next_token_probs(logits, 0), torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
    hot = next_token_probs(logits, 1000.0)
    assert (hot - 0.25).abs().max() < 1e-3, "a high temperature is nearly uniform"


def test_top_k_keeps_the_k_highest_and_their_ties():
    logits = torch.tensor([[3.0, 1.0, 2.0, 1.0, 0.0]])
    p = next_token_probs(logits, 1.0, top_k=2)
    torch.testing.assert_close(p, torch.softmax(torch.tensor([[3.0, -math.inf, 2.0, -math.inf, -math.inf]]), -1))
    p = next_token_probs(logits, 1.0, top_k=3)  # the 3rd highest (1.0) is tied: both kept
    assert (p > 0).tolist() == [[True, True, True, True, False]]
    assert torch.equal(next_token_probs(logits, 1.0, top_k=9), next_token_probs(logits, 1.0))


def test_samples_follow_the_distribution():
    logits = torch.tensor([[1.0, 0.0, -1.0, 0.5]]).expand(20000, 4)
    g = torch.Generator().manual_seed(0)
    tokens = sample_next_token(logits, 0.8, generator=g)
    freq = torch.bincount(tokens, minlength=4).float() / 20000
    assert (freq - next_token_probs(logits[:1], 0.8)[0]).abs().max() < 0.015
    assert torch.equal(sample_next_token(logits[:3], 0), torch.zeros(3, dtype=torch.long))


def test_top_p_keeps_the_fewest_likeliest_tokens_that_reach_p():
    probs = torch.tensor([[0.5, 0.3, 0.15, 0.05]])
    logits = probs.log()
    # the likelier tokens' mass before each token: 0, 0.5, 0.8, 0.95; a token is kept while it is < p
    assert (next_token_probs(logits, 1.0, top_p=0.4) > 0).tolist() == [[True, False, False, False]]
    torch.testing.assert_close(next_token_probs(logits, 1.0, top_p=0.6), torch.tensor([[0.625, 0.375, 0.0, 0.0]]))
    torch.testing.assert_close(next_token_probs(logits, 1.0, top_p=0.9),
                               torch.tensor([[0.5, 0.3, 0.15, 0.0]]) / 0.95)
    torch.testing.assert_close(next_token_probs(logits, 1.0, top_p=1.0), probs)
    assert (next_token_probs(logits, 1.0, top_p=1e-9) > 0).tolist() == [[True, False, False, False]]


def test_top_p_is_per_row_follows_the_columns_and_keeps_ties():
    # a sure row keeps one token, an unsure row many: what top-k cannot do with one k
    logits = torch.tensor([[8.0, 0.0, 0.0, 0.0, 0.0], [0.1, 0.0, 0.0, 0.0, 0.0]])
    kept = (next_token_probs(logits, 1.0, top_p=0.9) > 0).sum(dim=-1)
    assert kept.tolist() == [1, 5]
    # the nucleus is found in sorted order but reported in the vocabulary's order
    probs = torch.tensor([[0.05, 0.15, 0.5, 0.3]])
    assert (next_token_probs(probs.log(), 1.0, top_p=0.6) > 0).tolist() == [[False, False, True, True]]
    # 0.4 alone is short of 0.5; the next token (0.3) is needed, and its tie comes with it
    p = next_token_probs(torch.tensor([[0.3, 0.4, 0.3]]).log(), 1.0, top_p=0.5)
    assert (p > 0).all()


def test_top_p_comes_after_the_temperature_and_top_k():
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0]])
    for T in (0.5, 2.0):
        tempered = torch.softmax(logits / T, dim=-1)[0]
        need = int((tempered.cumsum(0) - tempered < 0.8).sum())  # by hand, sorted already
        assert int((next_token_probs(logits, T, top_p=0.8) > 0).sum()) == need
    assert [int((next_token_probs(logits, T, top_p=0.8) > 0).sum()) for T in (0.5, 2.0)] == [1, 3]  # 0.865 alone; 0.455 + 0.276 < 0.8
    p = next_token_probs(logits, 2.0, top_k=2, top_p=0.99)  # top-k first: two tokens left
    assert (p > 0).tolist() == [[True, True, False, False]]
    assert torch.equal(next_token_probs(logits, 0, top_p=0.3), next_token_probs(logits, 0))


def test_top_p_samples_stay_in_the_nucleus():
    logits = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log().expand(20000, 4)
    g = torch.Generator().manual_seed(0)
    tokens = sample_next_token(logits, 1.0, top_p=0.6, generator=g)
    freq = torch.bincount(tokens, minlength=4).float() / 20000
    assert freq[2:].sum() == 0 and abs(freq[0] - 0.625) < 0.015


@pytest.mark.parametrize("top_p", [0, 0.0, -0.1, 1.5, float("nan"), True, "0.9"])
def test_a_bad_top_p_is_refused(top_p):
    with pytest.raises(ValueError, match="top_p must be a number with 0 < top_p <= 1"):
        next_token_probs(torch.zeros(1, 3), 1.0, top_p=top_p)


@pytest.mark.parametrize("temperature", [-1.0, float("nan"), float("inf")])
def test_a_bad_temperature_is_refused(temperature):
    with pytest.raises(ValueError, match="temperature must be a finite number >= 0"):
        next_token_probs(torch.zeros(1, 3), temperature)
    with pytest.raises(TypeError, match="temperature must be a number >= 0.*got str"):
        next_token_probs(torch.zeros(1, 3), "1")


# --- training and evaluation ----------------------------------------------------------


def test_random_windows_are_shifted_by_one():
    ids = torch.arange(50, dtype=torch.uint8)
    x, y = random_windows(ids, 8, 5, torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (5, 8) and x.dtype == torch.long
    assert torch.equal(y, x + 1)
    with pytest.raises(ValueError, match="longer than block_size=8"):
        random_windows(ids[:8], 8, 2)


def test_training_learns_a_repeating_text():
    ids = torch.tensor([0, 1, 2, 3, 4, 5, 6] * 200, dtype=torch.uint8)
    model = TransformerLM(7, d_model=32, num_heads=2, num_layers=1, max_len=16)
    history = train_language_model(model, ids, steps=150, batch_size=16, block_size=16, lr=3e-3, warmup=10)
    assert len(history["bits"]) == 150
    assert history["bits"][0] > 2.0 and history["bits"][-1] < 0.2
    # Every character after the first 1-2 of a window is certain, so the mean is far below the start.
    assert evaluate_bits_per_char(model, ids[:300], block_size=16) < 0.5


def test_training_can_score_held_out_text_along_the_way():
    ids = torch.tensor([0, 1, 2, 3, 4, 5, 6] * 200, dtype=torch.uint8)
    torch.manual_seed(0)
    model = TransformerLM(7, d_model=32, num_heads=2, num_layers=1, max_len=16)
    history = train_language_model(model, ids, steps=150, batch_size=16, block_size=16, lr=3e-3, warmup=10,
                                   eval_ids=ids[:300], eval_every=60)
    assert history["eval_steps"] == [60, 120, 150]
    assert history["eval_bits"][0] > history["eval_bits"][-1]
    assert history["eval_bits"][-1] == evaluate_bits_per_char(model, ids[:300], block_size=16, stride=8)
    with pytest.raises(ValueError, match="eval_ids and eval_every go together"):
        train_language_model(model, ids, steps=5, block_size=16, eval_ids=ids[:300])


def test_evaluation_scores_every_token_after_the_first_once():
    model = small_model(max_len=8)
    ids = torch.randint(0, VOCAB, (19,))
    got = evaluate_bits_per_char(model, ids, block_size=8, batch_size=2)
    bits = []
    with torch.no_grad():  # by hand: windows ids[0:8], ids[8:16], ids[16:18] predict ids[1:19]
        for start in range(0, 18, 8):
            x = ids[start: min(start + 8, 18)]
            logp = torch.log_softmax(model(x[None])[0][0], dim=-1)
            bits += [-logp[i, ids[start + i + 1]].item() / math.log(2) for i in range(len(x))]
    assert len(bits) == 18
    assert got == pytest.approx(sum(bits) / 18, abs=1e-5)


def test_overlapping_windows_give_every_token_context():
    model = small_model(max_len=8)
    ids = torch.randint(0, VOCAB, (19,))
    got = evaluate_bits_per_char(model, ids, block_size=8, stride=4, batch_size=3)
    bits = []
    with torch.no_grad():  # by hand: target i <= 8 from ids[0:i]; later ones from the window
        for i in range(1, 19):  # that starts at the first multiple of 4 with start + 8 >= i
            start = 0 if i <= 8 else 4 * math.ceil((i - 8) / 4)
            logp = torch.log_softmax(model(ids[None, start:i])[0][0, -1], dim=-1)
            bits.append(-logp[ids[i]].item() / math.log(2))
    assert got == pytest.approx(sum(bits) / 18, abs=1e-5)
    plain = evaluate_bits_per_char(model, ids, block_size=8)
    assert plain != pytest.approx(got, abs=1e-4), "the two ways of cutting the text must differ"
    with pytest.raises(ValueError, match="stride=9 must be at most block_size=8"):
        evaluate_bits_per_char(model, ids, block_size=8, stride=9)


# --- characters and n-grams ----------------------------------------------------------


def test_char_vocab_round_trip_and_unknowns():
    vocab = CharVocab.build("abca b!", min_count=1)
    assert vocab.chars[0] == "\ufffd" and len(vocab) == 6
    ids = vocab.encode("a b?c")
    assert ids.dtype == torch.uint8 and ids.tolist() == [3, 1, 4, 0, 5]
    assert vocab.decode(ids) == "a b\ufffdc"
    assert CharVocab.build("aab", min_count=2).chars == ["\ufffd", "a"]
    with pytest.raises(ValueError, match=r"ids must be in \[0, 6\)"):
        vocab.decode([6])


def test_reviews_become_one_line_each_without_html_breaks():
    assert reviews_to_text(["Good.<br /><br />Very  good", "Bad"]) == "Good. Very good\nBad"


def test_ngram_probabilities_by_hand():
    # stream "abab" over vocab {a: 0, b: 1, c: 2}, bigram, k = 1, start padded with c
    model = NGramLM(2, 3, k=1.0, start_id=2).fit([0, 1, 0, 1])
    # pairs: (c,a) (a,b) (b,a) (a,b); p(b | a) = (2 + 1) / (2 + 3), p(a | b) = (1 + 1) / (1 + 3)
    got = np.exp2(model.log2_probs([0, 1, 0]))
    np.testing.assert_allclose(got, [3 / 5, 2 / 4])
    unigram = NGramLM(1, 3, k=0.5).fit([0, 1, 0, 1])
    np.testing.assert_allclose(np.exp2(unigram.log2_probs([0, 2])), [0.5 / 5.5])


@given(n=st.integers(1, 4), seed=st.integers(0, 100))
def test_ngram_probabilities_sum_to_one_in_every_context(n, seed):
    rng = np.random.default_rng(seed)
    model = NGramLM(n, 4, k=0.3).fit(rng.integers(0, 4, 200))
    context = list(rng.integers(0, 4, n))  # at least the n - 1 tokens the model reads
    total = sum(2 ** model.log2_probs([*context, v])[-1] for v in range(4))
    assert total == pytest.approx(1.0)


def test_fit_ngram_picks_the_k_with_the_lowest_validation_bits():
    rng = np.random.default_rng(0)
    train, valid = rng.integers(0, 5, 2000), rng.integers(0, 5, 500)
    model, scores = fit_ngram(3, train, valid, 5, ks=(1.0, 0.1, 0.01))
    assert model.k == min(scores, key=scores.get)
    assert model.bits_per_char(valid) == pytest.approx(scores[model.k])


def test_ngram_errors():
    with pytest.raises(ValueError, match="call fit"):
        NGramLM(2, 3).log2_probs([0, 1])
    with pytest.raises(ValueError, match="k must be a finite number > 0"):
        NGramLM(2, 3, k=0)
    with pytest.raises(ValueError, match=r"ids in \[0, vocab_size=3\)"):
        NGramLM(2, 3).fit([0, 3])


def test_generation_checks_the_prompt_once_and_not_each_sampled_token(monkeypatch):
    import companion.embedding

    model = TransformerLM(11, d_model=16, num_heads=2, num_layers=1, max_len=32).eval()
    with pytest.raises(ValueError, match=r"token ids must be in \[0, vocab_size=11\), got min 0 and max 11"):
        generate(model, torch.tensor([[0, 11]]), 3)
    checked = []
    real = companion.embedding.check_id_range
    monkeypatch.setattr(companion.embedding, "check_id_range", lambda *a: checked.append(a) or real(*a))
    for use_cache in (True, False):
        checked.clear()
        generate(model, torch.tensor([[1, 2, 3]]), 6, use_cache=use_cache,
                 generator=torch.Generator().manual_seed(0))
        assert len(checked) == 1  # the prompt, once: no device read per generated token


def test_tiny_temperatures_give_the_argmax_in_half_precision_too():
    logits = torch.tensor([[1.0, 3.0, 2.0], [5.0, 5.0, -1.0]])
    for dtype in (torch.float16, torch.float32):
        for temperature in (1e-3, 1e-30, 1e-310):
            probs = next_token_probs(logits.to(dtype), temperature=temperature)
            assert bool(torch.isfinite(probs).all()), (dtype, temperature)
            assert probs[0].tolist() == [0.0, 1.0, 0.0]
            assert probs[1].tolist()[:2] in ([1.0, 0.0], [0.5, 0.5])  # the tie: one-hot or shared
        token = sample_next_token(logits.to(dtype), temperature=1e-3,
                                  generator=torch.Generator().manual_seed(0))
        assert token[0] == 1


@pytest.mark.parametrize("prompt_length", [3, 45])
def test_generation_past_max_len_crops_the_context_with_and_without_the_cache(prompt_length):
    """max_len = 40: 30 new tokens after a prompt of 3 (the window fills at step 37) or 45 (longer
    than the window from the start). Greedy, so the tokens must agree exactly; each must be the
    argmax of the model on the last 40 tokens before it."""
    model = small_model().eval()
    prompt = torch.randint(0, VOCAB, (2, prompt_length), generator=torch.Generator().manual_seed(0))
    cached = generate(model, prompt, 30, temperature=0)
    uncached = generate(model, prompt, 30, temperature=0, use_cache=False)
    assert cached.shape == (2, prompt_length + 30) and torch.equal(cached, uncached)
    for t in range(prompt_length, prompt_length + 30):
        window = cached[:, max(0, t - 40):t]
        assert torch.equal(model(window)[0][:, -1].argmax(-1), cached[:, t])


def test_a_temperature_whose_inverse_overflows_the_dtype_is_greedy():
    # 1 / 1e-39 = 1e39 is finite in Python but inf in float32: the distribution must still be one-hot
    from companion import next_token_probs, sample_next_token
    logits = torch.tensor([[1.0, 2.0, 0.5]])
    probs = next_token_probs(logits, temperature=1e-39)
    assert torch.equal(probs, torch.tensor([[0.0, 1.0, 0.0]])), probs
    assert sample_next_token(logits, temperature=1e-39).tolist() == [1]


def test_a_step_writes_its_positions_into_the_cache_without_copying_the_others():
    """#47: with max_len, the cache is one buffer: every step writes into it (no torch.cat of the
    whole cache), and what it returns equals the positions given, in order."""
    cache = KVCache(max_len=8)
    steps = [torch.randn(2, 4, 1 if i else 3, 5) for i in range(5)]
    pointers = set()
    with torch.no_grad():
        for step in steps:
            K, V = cache.update(step, 2 * step)
            pointers.add(K.untyped_storage().data_ptr())
    assert len(pointers) == 1, "the cache was copied to a new tensor at some step"
    assert torch.equal(K, torch.cat(steps, dim=2)) and torch.equal(V, 2 * K)
    assert len(cache) == 7 and cache.K.shape == (2, 4, 7, 5)


def test_a_cache_without_max_len_doubles_and_a_full_one_refuses_more():
    cache, reallocations, last = KVCache(), 0, None
    for _ in range(100):
        K, _ = cache.update(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4))
        pointer = K.untyped_storage().data_ptr()
        reallocations += pointer != last
        last = pointer
    assert len(cache) == 100 and reallocations <= 8, reallocations  # 1, 2, 4, ..., 128
    full = KVCache(max_len=3)
    full.update(torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4))
    with pytest.raises(ValueError, match=r"at most max_len=3 positions; it has 3 and was given 1 more"):
        full.update(torch.randn(1, 2, 1, 4), torch.randn(1, 2, 1, 4))
    with pytest.raises(ValueError, match="max_len must be a positive"):
        KVCache(max_len=0)


def test_a_cache_under_autograd_keeps_every_step_differentiable():
    """Keys that require gradients are concatenated, not written into a buffer that an earlier
    step saved for its backward pass: the gradients equal the full pass's."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2).double()
    x = torch.randn(1, 5, 16, dtype=torch.float64, requires_grad=True)
    full, _ = mha(x, x, x, mask=causal_mask(5))
    (grad_full,) = torch.autograd.grad(full.sum(), x)
    cache = KVCache(max_len=5)
    parts = [mha(x[:, :3], x[:, :3], x[:, :3], mask=causal_mask(3), cache=cache)[0]]
    parts += [mha(x[:, i:i + 1], x[:, i:i + 1], x[:, i:i + 1], cache=cache)[0] for i in (3, 4)]
    (grad_cached,) = torch.autograd.grad(torch.cat(parts, dim=1).sum(), x)
    assert torch.allclose(grad_cached, grad_full, atol=1e-12)
