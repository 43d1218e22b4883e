"""softargmax, hardargmax and scaled dot-product attention against PyTorch's fused kernel."""

import math

import pytest
import torch
import torch.nn.functional as F

from companion import causal_mask, hardargmax, padding_mask, scaled_dot_product_attention, softargmax
from reference import TOL, assert_close, backward_with, leaf

DTYPES = [torch.float64, torch.float32]


def test_softargmax_small_example_by_hand():
    scores = torch.tensor([1.0, 2.0, 3.0])
    e = [math.exp(1), math.exp(2), math.exp(3)]
    expected = torch.tensor([v / sum(e) for v in e])
    torch.testing.assert_close(softargmax(scores), expected)
    # beta scales the scores: beta = 2 on [1, 2, 3] is beta = 1 on [2, 4, 6]
    torch.testing.assert_close(softargmax(scores, beta=2.0), softargmax(2 * scores))


def test_hardargmax_is_one_hot_of_argmax_first_on_ties():
    scores = torch.tensor([[0.1, 0.7, 0.2], [5.0, 5.0, 1.0]])
    assert hardargmax(scores).tolist() == [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]
    assert hardargmax(scores, dim=0).tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]


def test_softargmax_approaches_hardargmax_as_beta_grows():
    scores = torch.randn(4, 10, dtype=torch.float64)
    gaps = [(softargmax(scores, beta=b) - hardargmax(scores)).abs().max().item() for b in (1, 10, 100, 1000)]
    assert gaps == sorted(gaps, reverse=True) and gaps[-1] < 1e-6


def test_small_example_by_hand():
    # two keys; the query matches the first exactly, scale 1/sqrt(2)
    Q = torch.tensor([[1.0, 0.0]])
    K = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    V = torch.tensor([[10.0], [20.0]])
    out, w = scaled_dot_product_attention(Q, K, V)
    a = math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1)
    torch.testing.assert_close(w, torch.tensor([[a, 1 - a]]))
    torch.testing.assert_close(out, torch.tensor([[10 * a + 20 * (1 - a)]]))


MASKS = {
    "none": lambda b, tq, tk: None,
    "bool": lambda b, tq, tk: torch.rand(b, tq, tk) > 0.3,
    "causal": lambda b, tq, tk: causal_mask(tq),
    "padding": lambda b, tq, tk: padding_mask(torch.randint(1, tk + 1, (b,)), max_len=tk),
}


SHAPES = [(5, 5, 8, 8), (3, 7, 8, 8), (6, 4, 8, 5), (1, 9, 16, 3)]  # t_q, t_k, d_k, d_v
CASES = [(m, s) for m in MASKS for s in SHAPES if m != "causal" or s[0] == s[1]]  # causal masks are square


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask_kind, shape", CASES)
def test_equals_pytorch_fused_kernel(dtype, mask_kind, shape):
    t_q, t_k, d_k, d_v = shape
    batch = 3
    q, k, v = leaf((batch, t_q, d_k), dtype), leaf((batch, t_k, d_k), dtype), leaf((batch, t_k, d_v), dtype)
    mask = MASKS[mask_kind](batch, t_q, t_k)
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    backward_with(out)
    ours = [out.detach(), q.grad, k.grad, v.grad]
    q2, k2, v2 = (t.detach().clone().requires_grad_() for t in (q, k, v))
    ref = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=mask)
    backward_with(ref)
    for name, a, b in zip(["output", "dQ", "dK", "dV"], ours, [ref.detach(), q2.grad, k2.grad, v2.grad]):
        assert_close(a, b, dtype, name)
    # the weights are softmax(Q K^T / sqrt(d_k)) restricted to the allowed keys
    assert w.shape == (batch, t_q, t_k)
    if mask is not None:
        assert (w.detach()[~mask.expand_as(w)] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.float16, torch.bfloat16])
def test_fully_masked_row_gives_zeros_not_nan(dtype):
    q, k, v = (torch.randn(2, 4, 8, dtype=dtype, requires_grad=True) for _ in range(3))
    mask = torch.ones(2, 4, 4, dtype=torch.bool)
    mask[1, 2] = False  # query 2 of sequence 1 may attend to nothing
    out, w = scaled_dot_product_attention(q, k, v, mask=mask)
    (out.float().sum()).backward()
    assert (w[1, 2] == 0).all() and (out[1, 2] == 0).all()
    for t in (out, w, q.grad, k.grad, v.grad):
        assert torch.isfinite(t).all()
    # the other rows still sum to one
    torch.testing.assert_close(w[0].float().sum(-1), torch.ones(4), atol=1e-2, rtol=0)


def test_explicit_scale():
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 6)
    out, _ = scaled_dot_product_attention(q, k, v, scale=0.3)
    torch.testing.assert_close(out, F.scaled_dot_product_attention(q, k, v, scale=0.3), atol=TOL[torch.float32], rtol=0)


def test_dropout_zeroes_weights_and_rescales_the_rest():
    q, k, v = torch.randn(1, 50, 4), torch.randn(1, 50, 4), torch.randn(1, 50, 6)
    _, w = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    _, w0 = scaled_dot_product_attention(q, k, v)
    dropped = w == 0
    assert 0.3 < dropped.float().mean() < 0.7
    torch.testing.assert_close(w[~dropped], 2 * w0[~dropped])


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_softargmax_is_stable_in_half_precision_with_a_huge_beta(dtype):
    scores = torch.tensor([100.0, 101.0], dtype=dtype)
    for beta in (1.0, 1000.0, 1e30):
        got = softargmax(scores, beta=beta)
        assert got.dtype == dtype and bool(torch.isfinite(got).all()), (beta, got)
        expected = torch.softmax(beta * (scores.double() - 101.0), -1).to(dtype)
        torch.testing.assert_close(got, expected)
    assert torch.equal(softargmax(scores, beta=1000.0), hardargmax(scores))  # a hard maximum, as chapter 1 says


def test_softargmax_gradient_is_softmaxs():
    scores = torch.randn(4, 6, dtype=torch.float64, requires_grad=True)
    weights = torch.randn(4, 6, dtype=torch.float64)
    ours = torch.autograd.grad((softargmax(scores, beta=3.0) * weights).sum(), scores)[0]
    theirs = torch.autograd.grad((torch.softmax(3.0 * scores, -1) * weights).sum(), scores)[0]
    torch.testing.assert_close(ours, theirs)


def test_softargmax_keeps_masked_entries_at_zero():
    scores = torch.tensor([[1.0, float("-inf"), 3.0]])
    assert softargmax(scores, beta=1e6)[0, 1] == 0 and softargmax(scores)[0, 1] == 0


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_a_beta_beyond_the_dtypes_range_is_the_hard_limit(dtype):
    # beta = 1e39 is a finite Python float but inf in float32; inf * 0 at the maximum was NaN
    beta = 1e39 if dtype != torch.float64 else 1e308
    scores = torch.tensor([[1.0, 2.0], [3.0, 3.0 - 1e-2]], dtype=dtype)
    got = softargmax(scores, beta=beta)
    assert torch.equal(got, torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=dtype)), got
    tied = softargmax(torch.tensor([2.0, 2.0, 1.0], dtype=dtype), beta=beta)
    assert torch.equal(tied, torch.tensor([0.5, 0.5, 0.0], dtype=dtype)), tied  # ties share the limit


def test_softargmax_half_precision_with_a_beta_beyond_its_range_is_accurate():
    scores = torch.tensor([[0.0, 2e-5], [0.0, 1e-5]], dtype=torch.float16)
    for beta in (1e5, 3e5):  # beyond float16's 65504: capping beta there gave 0.21 / 0.79
        expected = torch.softmax(beta * scores.double(), dim=-1)
        got = softargmax(scores, beta=beta)
        assert got.dtype == torch.float16
        torch.testing.assert_close(got.double(), expected, atol=2e-3, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_softargmax_keeps_a_masked_score_at_zero_when_beta_underflows(dtype):
    scores = torch.tensor([[0.0, float("-inf"), 1.0]], dtype=dtype)
    got = softargmax(scores, beta=1e-46)  # 0 in every one of these dtypes: 0 * -inf was NaN
    torch.testing.assert_close(got, torch.tensor([[0.5, 0.0, 0.5]], dtype=dtype))
