"""For every exercise whose checks compute their own expected values, the reference solution and
those expected values agree on random inputs that the statement allows (issue #32).

A check's expected value is written independently of the reference (entry by entry, row by row,
with plain Python lists); where the two disagree on an allowed input, a learner cannot know which
one is right. Hypothesis draws the inputs: shapes, batch dimensions, masks with fully masked
rows, special ids that coincide, padding holding inf and NaN, ``max_len = 0``.
"""

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.course.exercises import ch02, ch04, ch05, ch06, ch08, ch09

SETTINGS = settings(max_examples=40, deadline=None)


def randn(seed, *shape):
    """Drawn on the CPU, then on the default device (a GPU under COURSE_TEST_DEVICE=cuda)."""
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64, device="cpu")
    return x.to(torch.get_default_device())


def close(a, b):
    torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-9)


seeds = st.integers(0, 2**31 - 1)
batch_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=2).map(tuple)


@SETTINGS
@given(seed=seeds, batch=batch_shapes, t_q=st.integers(1, 4), t_k=st.integers(1, 5), d_k=st.integers(1, 4),
       d_v=st.integers(1, 3), p=st.floats(0.0, 1.0))
def test_masked_attention(seed, batch, t_q, t_k, d_k, d_v, p):
    Q, K, V = randn(seed, *batch, t_q, d_k), randn(seed + 1, *batch, t_k, d_k), randn(seed + 2, *batch, t_k, d_v)
    mask = torch.rand(*batch, t_q, t_k, generator=torch.Generator().manual_seed(seed)) < p  # rows may be empty
    close(ch02.masked_attention(Q, K, V, mask), ch02._attention(Q, K, V, mask))


@SETTINGS
@given(seed=seeds, batch=st.integers(1, 3), t=st.integers(1, 4), num_heads=st.integers(1, 4), d_k=st.integers(1, 3))
def test_split_heads(seed, batch, t, num_heads, d_k):
    x = randn(seed, batch, t, num_heads * d_k)
    close(ch04.split_heads(x, num_heads), ch04._split_expected(x, num_heads))


@SETTINGS
@given(seed=seeds, batch=st.integers(1, 2), t_q=st.integers(1, 3), t_k=st.integers(1, 4), h=st.integers(1, 3),
       d_model=st.integers(1, 5), d_k=st.integers(1, 3), d_v=st.integers(1, 3))
def test_multi_head_attention(seed, batch, t_q, t_k, h, d_model, d_k, d_v):
    args = (randn(seed, batch, t_q, d_model), randn(seed + 1, batch, t_k, d_model), randn(seed + 2, h, d_model, d_k),
            randn(seed + 3, h, d_model, d_k), randn(seed + 4, h, d_model, d_v), randn(seed + 5, h * d_v, d_model))
    close(ch04.multi_head_attention(*args), ch04._mha_expected(*args))


@SETTINGS
@given(max_len=st.integers(1, 40), half=st.integers(1, 8))
def test_sinusoidal_table(max_len, half):
    close(ch05.sinusoidal_table(max_len, 2 * half).double(), ch05._table_expected(max_len, 2 * half).double())


@SETTINGS
@given(k=st.integers(-50, 50), half=st.integers(1, 6))
def test_shift_matrix(k, half):
    torch.testing.assert_close(ch05.shift_matrix(k, 2 * half), ch05._shift_expected(k, 2 * half))


@SETTINGS
@given(seed=seeds, batch=batch_shapes, t=st.integers(1, 6), half=st.integers(1, 4))
def test_rope(seed, batch, t, half):
    x = randn(seed, *batch, t, 2 * half)
    close(ch05.rope(x), ch05._rope_expected(x))


@SETTINGS
@given(seed=seeds, batch=st.integers(1, 3), t=st.integers(1, 5), d_s=st.integers(1, 3), d_h=st.integers(1, 3),
       d_a=st.integers(1, 3), masked=st.booleans())
def test_additive_attention(seed, batch, t, d_s, d_h, d_a, masked):
    s, H = randn(seed, batch, d_s), randn(seed + 1, batch, t, d_h)
    W_q, W_k, v = randn(seed + 2, d_a, d_s), randn(seed + 3, d_a, d_h), randn(seed + 4, d_a)
    mask = None
    if masked:  # the statement: every row has at least one real token
        mask = torch.rand(batch, t, generator=torch.Generator().manual_seed(seed)) < 0.6
        mask[:, 0] |= ~mask.any(dim=1)
    got = ch06.additive_attention(s, H, mask, W_q, W_k, v)
    expected = ch06._additive_expected(s, H, mask, W_q, W_k, v)
    for g, e in zip(got, expected):
        close(g, e)


@SETTINGS
@given(t_k=st.integers(1, 8), data=st.data())
def test_decoder_mask(t_k, data):
    t_q = data.draw(st.integers(1, t_k))
    assert torch.equal(ch06.decoder_mask(t_q, t_k), ch06._mask_expected(t_q, t_k))


@SETTINGS
@given(seed=seeds, batch=st.integers(1, 3), max_len=st.integers(0, 6), ids=st.lists(st.integers(0, 8), min_size=3,
                                                                                      max_size=3))
def test_greedy(seed, batch, max_len, ids):
    """A random table model: the next token depends on the last one only; BOS, EOS and PAD may coincide."""
    bos_id, eos_id, pad_id = ids
    table = torch.randn(ch06._VOCAB, ch06._VOCAB, generator=torch.Generator().manual_seed(seed))

    def model(src, prefix):
        return table[prefix] + 0.0 * src.sum()  # (batch, i, vocab)

    src = torch.zeros(batch, 2, dtype=torch.long)
    got = ch06.greedy(model, src, bos_id, eos_id, pad_id, max_len)
    assert torch.equal(got, ch06._greedy_expected(model, src, bos_id, eos_id, pad_id, max_len))


@SETTINGS
@given(seed=seeds, batch=st.integers(1, 2), t=st.integers(1, 4), d_model=st.integers(1, 4), d_ff=st.integers(1, 5))
def test_conv_feed_forward(seed, batch, t, d_model, d_ff):
    args = (randn(seed, batch, t, d_model), randn(seed + 1, d_ff, d_model), randn(seed + 2, d_ff),
            randn(seed + 3, d_model, d_ff), randn(seed + 4, d_model))
    close(ch06.conv_feed_forward(*args), ch06._ffn_expected(*args))


@SETTINGS
@given(seed=seeds, batch=st.integers(1, 3), t=st.integers(2, 5), vocab=st.integers(2, 6))
def test_bits_per_char(seed, batch, t, vocab):
    logits = randn(seed, batch, t, vocab)
    ids = torch.randint(vocab, (batch, t), generator=torch.Generator().manual_seed(seed))
    close(ch08.bits_per_char(logits, ids), ch08._bits_expected(logits, ids))


@SETTINGS
@given(seed=seeds, batch=st.integers(1, 3), vocab=st.integers(1, 6), temperature=st.floats(0.05, 5.0),
       top_k=st.one_of(st.none(), st.integers(1, 6)), ties=st.booleans())
def test_temperature_probs(seed, batch, vocab, temperature, top_k, ties):
    top_k = None if top_k is None else min(top_k, vocab)  # the statement: 1 <= top_k <= vocab
    logits = randn(seed, batch, vocab)
    if ties:
        logits = logits.round()  # ties at the k-th logit are kept
    close(ch08.temperature_probs(logits, temperature, top_k), ch08._probs_expected(logits, temperature, top_k))


@SETTINGS
@given(seed=seeds, batch=st.integers(1, 3), t=st.integers(1, 5), d=st.integers(1, 4), infinite=st.booleans(),
       bool_mask=st.booleans())
def test_sentence_vectors(seed, batch, t, d, infinite, bool_mask):
    hidden = randn(seed, batch, t, d)
    mask = torch.rand(batch, t, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[:, 0] |= ~mask.any(dim=1)  # at least one real token per sentence
    if infinite:  # "padding may hold any values"
        hidden = hidden.masked_fill(~mask[..., None], float("inf"))
    mask = mask if bool_mask else mask.long()
    close(ch09.sentence_vectors(hidden, mask), ch09._vectors_expected(hidden, mask))


def test_the_property_tests_can_fail():
    """The old sentence_vectors reference (padding multiplied by the mask) disagrees with the checks'
    expected values as soon as the padding holds inf."""
    hidden, mask = randn(0, 1, 3, 2), torch.tensor([[1, 1, 0]])
    hidden[0, 2] = math.inf

    def multiplies(hidden, attention_mask):
        keep = attention_mask[..., None].to(hidden.dtype)
        mean = (hidden * keep).sum(dim=1) / keep.sum(dim=1)
        return mean / mean.norm(dim=-1, keepdim=True)

    with pytest.raises(AssertionError):
        close(multiplies(hidden, mask), ch09._vectors_expected(hidden, mask))


@SETTINGS
@given(seed=seeds, batch=batch_shapes, t_q=st.integers(1, 9), extra=st.integers(0, 6), block_size=st.integers(1, 5),
       d_k=st.integers(1, 4), d_v=st.integers(1, 3))
def test_causal_tiled_attention(seed, batch, t_q, extra, block_size, d_k, d_v):
    from companion.course.exercises import ch10

    t_k = t_q + extra  # the queries are the last t_q of t_k positions
    Q, K, V = randn(seed, *batch, t_q, d_k), randn(seed + 1, *batch, t_k, d_k), randn(seed + 2, *batch, t_k, d_v)
    close(ch10.causal_tiled_attention(Q, K, V, block_size), ch10._causal_expected(Q, K, V))


@SETTINGS
@given(seed=seeds, batch=batch_shapes, d=st.integers(1, 6), eps=st.floats(1e-6, 1.0))
def test_rms_norm_backward(seed, batch, d, eps):
    from companion.course.exercises import ch10

    x, g, dy = randn(seed, *batch, d), randn(seed + 1, d), randn(seed + 2, *batch, d)
    for got, expected in zip(ch10.rms_norm_backward(x, g, eps, dy), ch10._rms_expected(x, g, eps, dy)):
        close(got, expected)


@SETTINGS
@given(seed=seeds, batch=batch_shapes, t_q=st.integers(1, 4), t_k=st.integers(0, 7), split=st.integers(0, 7),
       d_v=st.integers(1, 3))
def test_merge_partials(seed, batch, t_q, t_k, split, d_v):
    from companion.course.exercises import ch10

    split = min(split, t_k)  # either set may be empty, or both
    S, V = randn(seed, *batch, t_q, t_k) * 3, randn(seed + 1, *batch, t_k, d_v)
    first, second = ch10._partial(S[..., :split], V[..., :split, :]), ch10._partial(S[..., split:], V[..., split:, :])
    for got, expected in zip(ch10.merge_partials(*first, *second), ch10._partial(S, V)):
        close(got, expected)
