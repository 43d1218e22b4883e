"""Properties that must hold for any input, searched with hypothesis."""

import torch
from hypothesis import assume, example, given
from hypothesis import strategies as st

from companion import (
    EncoderLayer,
    MultiHeadAttention,
    causal_mask,
    hardargmax,
    padding_mask,
    scaled_dot_product_attention,
    softargmax,
)

seeds = st.integers(0, 2**31 - 1)
lengths = st.integers(1, 8)


def randn(seed, *shape):
    return torch.randn(*shape, generator=torch.Generator(torch.get_default_device()).manual_seed(seed), dtype=torch.float64)


@given(seed=seeds, t_q=lengths, t_k=lengths, d_k=st.integers(1, 8))
def test_weight_rows_sum_to_one(seed, t_q, t_k, d_k):
    _, w = scaled_dot_product_attention(randn(seed, 2, t_q, d_k), randn(seed + 1, 2, t_k, d_k), randn(seed + 2, 2, t_k, 3))
    assert (w >= 0).all()
    torch.testing.assert_close(w.sum(-1), torch.ones(2, t_q, dtype=torch.float64))


@given(seed=seeds, t=st.integers(2, 8), heads=st.sampled_from([1, 2, 4]))
def test_self_attention_is_permutation_equivariant(seed, t, heads):
    """Without positions, shuffling the tokens shuffles the outputs the same way."""
    torch.manual_seed(seed)
    mha = MultiHeadAttention(8, heads).double()
    x = randn(seed, 2, t, 8)
    perm = torch.randperm(t, generator=torch.Generator(torch.get_default_device()).manual_seed(seed))
    out, w = mha(x, x, x, need_weights=True)
    out_p, w_p = mha(x[:, perm], x[:, perm], x[:, perm], need_weights=True)
    torch.testing.assert_close(out_p, out[:, perm])
    torch.testing.assert_close(w_p, w[:, :, perm][:, :, :, perm])


@given(seed=seeds, t=st.integers(2, 8), i=st.integers(0, 6), norm_first=st.booleans())
def test_causal_outputs_ignore_the_future(seed, t, i, norm_first):
    """Changing tokens after position i leaves outputs 0..i unchanged."""
    i = i % (t - 1)
    torch.manual_seed(seed)
    layer = EncoderLayer(8, 2, 16, dropout=0.0, norm_first=norm_first).double()
    x = randn(seed, 2, t, 8)
    y = x.clone()
    y[:, i + 1 :] = randn(seed + 1, 2, t - i - 1, 8)
    a, _ = layer(x, mask=causal_mask(t))
    b, _ = layer(y, mask=causal_mask(t))
    torch.testing.assert_close(a[:, : i + 1], b[:, : i + 1])
    assert not torch.allclose(a[:, i + 1 :], b[:, i + 1 :])


@given(seed=seeds, lens=st.lists(st.integers(1, 7), min_size=1, max_size=4))
def test_padded_keys_get_exactly_zero_weight_and_do_not_matter(seed, lens):
    t = 7
    torch.manual_seed(seed)
    mha = MultiHeadAttention(8, 2).double()
    keep = padding_mask(torch.tensor(lens), max_len=t)  # (batch, 1, t)
    x = randn(seed, len(lens), t, 8)
    out, w = mha(x, x, x, mask=keep, need_weights=True)
    assert (w.masked_select(~keep.unsqueeze(1)) == 0).all()
    # whatever sits in the padding, the outputs at real positions are the same
    y = torch.where(keep.transpose(1, 2), x, randn(seed + 1, len(lens), t, 8))
    out_y, _ = mha(y, y, y, mask=keep)
    real = keep.squeeze(1)
    torch.testing.assert_close(out_y[real], out[real])


@given(seed=seeds, n=st.integers(2, 20))
@example(seed=7132, n=4)  # a runner-up 6e-4 away: a beta capped at 40 / 1e-3 left 9e-12 on it
def test_hardargmax_is_the_large_beta_limit_of_softargmax(seed, n):
    scores = randn(seed, 3, n)
    gap = scores.sort(-1).values[..., -1] - scores.sort(-1).values[..., -2]  # distance to the runner-up
    assume(float(gap.min()) > 1e-9)  # an exact tie has no one-hot limit
    beta = float(40.0 / gap.min())  # exp(-40) ~ 4e-18 per rival, for every row
    torch.testing.assert_close(softargmax(scores, beta=beta), hardargmax(scores), atol=1e-12, rtol=0)
