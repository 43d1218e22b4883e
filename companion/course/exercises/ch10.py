"""Chapter 10 exercises: merging two blocks' softmax statistics, tiled attention's forward pass,
giving each query head its key-value head, a sliding-window mask for a decoder, and RMSNorm.

Checks compare with values computed by hand or by plain PyTorch (softmax over the whole row,
the formula written out, indexing head by head), never with the solutions. Their cases include
blocks with no entries (m = -inf), scores large enough to overflow exp, t_q != t_k, blocks that
do not divide t, one key-value head and as many as query heads, vectors whose mean is not 0, and
windows of 1 and longer than the text.
"""

from __future__ import annotations

import math

import torch
from ..measure import LargestTensor
from ._core import (Allows, Exercise, Mismatch, call, draws, expect_close, expect_equal, expect_gradients_reach)

# --- reference solutions (shown in the book) ------------------------------------


def merge_stats(m1, l1, m2, l2):
    """Two blocks' statistics (...,) each -> the statistics of both blocks together:
    m = max(m1, m2) and l = l1 exp(m1 - m) + l2 exp(m2 - m). A block with no entries
    has m = -inf and l = 0."""
    m = torch.maximum(m1, m2)
    safe = torch.where(torch.isinf(m) & (m < 0), torch.zeros_like(m), m)  # both empty: no shift
    l = l1 * torch.exp(m1 - safe) + l2 * torch.exp(m2 - safe)
    return m, l


def tiled_attention_forward(Q, K, V, block_size):
    """Q (..., t_q, d_k), K (..., t_k, d_k), V (..., t_k, d_v) -> (..., t_q, d_v):
    softmax(Q K^T / sqrt(d_k)) V, reading block_size keys at a time."""
    m = torch.full(Q.shape[:-1], -math.inf, dtype=Q.dtype)          # (..., t_q)
    l = torch.zeros(Q.shape[:-1], dtype=Q.dtype)                      # (..., t_q)
    a = torch.zeros(*Q.shape[:-1], V.shape[-1], dtype=Q.dtype)         # (..., t_q, d_v)
    for j in range(0, K.shape[-2], block_size):
        S = Q @ K[..., j:j + block_size, :].transpose(-2, -1) / math.sqrt(Q.shape[-1])
        m_new = torch.maximum(m, S.amax(dim=-1))
        rescale = torch.exp(m - m_new)                                 # 0 at the first block
        P = torch.exp(S - m_new[..., None])
        l = l * rescale + P.sum(dim=-1)
        a = a * rescale[..., None] + P @ V[..., j:j + block_size, :]
        m = m_new
    return a / l[..., None]


def expand_kv(x, num_heads):
    """x (batch, num_kv_heads, t, d) -> (batch, num_heads, t, d): query head i gets
    key-value head i // (num_heads // num_kv_heads)."""
    group = num_heads // x.shape[1]
    return x.repeat_interleave(group, dim=1)


def rms_norm(x, g, eps):
    """x (..., d), g (d,), eps a float -> (..., d): g * x / sqrt(mean(x^2) + eps)."""
    return g * x / torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)


def window_mask(t_q, t_k, window):
    """bool (t_q, t_k): query i, at position p = t_k - t_q + i, may attend to key j
    when p - window < j <= p."""
    p = torch.arange(t_q)[:, None] + (t_k - t_q)                      # (t_q, 1)
    j = torch.arange(t_k)[None, :]                                     # (1, t_k)
    return (j <= p) & (j > p - window)


# --- checks: merge_stats --------------------------------------------------------------

_MERGE_HINT = ("the new maximum is the larger of the two; each sum was taken against its own maximum, so "
               "multiply it by exp(its maximum - the new maximum) before adding them")


def _stats(x):
    """A block's statistics from its entries (..., n), by the definition: (-inf, 0) for no entries."""
    if x.shape[-1] == 0:
        return torch.full(x.shape[:-1], -math.inf, dtype=x.dtype), torch.zeros(x.shape[:-1], dtype=x.dtype)
    m = x.max(dim=-1).values
    return m, torch.exp(x - m[..., None]).sum(dim=-1)


def _merge(fn, a, b, case, hint=_MERGE_HINT):
    (m1, l1), (m2, l2) = _stats(a), _stats(b)
    got = call(fn, case, hint, m1=m1, l1=l1, m2=m2, l2=l2)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a tuple (m, l), got {type(got).__name__}. Hint: return m, l")
    m, l = _stats(torch.cat([a, b], dim=-1))  # the statistics of both blocks, from their entries
    expect_close(got[0], m, case + ": m", hint)
    expect_close(got[1], l, case + ": l", hint)
    return got


def _merge_by_hand(fn):
    _merge(fn, torch.tensor([1.0, 3.0]), torch.tensor([2.0, 5.0]),
           "blocks (1, 3) and (2, 5): m = 5, l = e^-4 + e^-2 + e^-3 + 1")


def _merge_second_smaller(fn):
    _merge(fn, torch.tensor([[4.0, 0.0]]), torch.tensor([[1.0, 2.0]]),
           "the first block holds the maximum (4): the second's sum is the one to rescale")


def _merge_random(fn):
    randn = draws(101)
    _merge(fn, randn(3, 5, 7) * 3, randn(3, 5, 4) * 3, "batch (3, 5), random blocks of 7 and 4 entries",
           _MERGE_HINT + "; work elementwise over every leading dimension")


def _merge_empty(fn):
    randn = draws(102)
    a = randn(4, 3)
    _merge(fn, a[:, :0], a, "the first block is empty (m1 = -inf, l1 = 0), as at the start of a row",
           "exp(-inf - m) is 0, so an empty block adds nothing; do not compute -inf - (-inf)")
    _merge(fn, a, a[:, :0], "the second block is empty (m2 = -inf, l2 = 0)",
           "exp(-inf - m) is 0, so an empty block adds nothing")
    _merge(fn, a[:, :0], a[:, :0], "both blocks empty: the result is m = -inf, l = 0 (still nothing seen)",
           "when both maxima are -inf, exp(m1 - m) is exp(-inf - (-inf)) = exp(nan): treat that case apart "
           "(shift by 0 instead of by -inf)")


def _merge_large(fn):
    _merge(fn, torch.tensor([1000.0, 998.0]), torch.tensor([-1000.0, 999.0]),
           "scores near 1000: exp(1000) overflows float32",
           "never exponentiate a maximum alone: only differences (m1 - m, m2 - m) are exponentiated, and "
           "they are <= 0")


def _merge_float64(fn):
    randn = draws(103)
    _merge(fn, randn(2, 6).double(), randn(2, 3).double(), "float64 blocks: the result stays float64",
           "build new tensors in the inputs' dtype (torch.zeros_like(m), not torch.zeros(...))")


# --- checks: tiled_attention_forward ----------------------------------------------------

_TILED_HINT = ("keep, for every query, the running maximum m, the running sum l and the unnormalised output a; "
               "at each block rescale l and a by exp(m - m_new), add this block's exp(S - m_new) (summed, and "
               "times V's block), and divide a by l once, after the last block")


def _attention_expected(Q, K, V):
    """The formula written out, in float64: softmax over the whole row of scores."""
    S = Q.double() @ K.double().transpose(-2, -1) / math.sqrt(Q.shape[-1])
    return (torch.softmax(S, dim=-1) @ V.double()).to(Q.dtype)


def _tiled(fn, Q, K, V, block_size, case, hint=_TILED_HINT, memory=True):
    with LargestTensor() as seen:
        got = call(fn, case, hint, Q=Q, K=K, V=V, block_size=block_size)
    expect_close(got, _attention_expected(Q, K, V), case, hint)
    lead = math.prod(Q.shape[:-2])
    allowed = lead * max(Q.shape[-2] * max(block_size, V.shape[-1]), K.shape[-2] * max(K.shape[-1], V.shape[-1]))
    if memory and seen.largest > allowed:
        raise Mismatch(f"{case}: a tensor of {seen.largest:,} elements was made; reading {block_size} keys at a "
                       f"time needs at most {allowed:,} (t_q x block_size scores per batch element, or the inputs' "
                       "size). Hint: compute the scores of one block of keys at a time, never Q @ K.T over all "
                       "keys")


def _tiled_one_block(fn):
    randn = draws(111)
    _tiled(fn, randn(5, 4), randn(5, 4), randn(5, 4), 8, "one block holds every key (t = 5, block_size = 8)",
           "with one block this is plain attention: softmax(Q K^T / sqrt(d_k)) V, scaled by sqrt(d_k) of Q's "
           "last dimension")


def _tiled_blocks(fn):
    randn = draws(112)
    _tiled(fn, randn(6, 8), randn(12, 8), randn(12, 8), 4, "12 keys in 3 blocks of 4, 6 queries")


def _tiled_ragged(fn):
    randn = draws(113)
    _tiled(fn, randn(7, 4), randn(10, 4), randn(10, 3), 4,
           "10 keys in blocks of 4 (the last block has 2), t_q = 7 != t_k = 10, d_v = 3 != d_k = 4",
           _TILED_HINT + "; slice K[..., j:j + block_size, :] (the last slice is shorter), and take d_k from "
                         "Q.shape[-1], d_v from V.shape[-1]")


def _tiled_batched(fn):
    randn = draws(114)
    _tiled(fn, randn(2, 3, 5, 4), randn(2, 3, 9, 4), randn(2, 3, 9, 4), 3,
           "two batch dimensions (2, 3) in front, 9 keys in blocks of 3",
           "index from the end: K[..., j:j + b, :], transpose(-2, -1), amax(dim=-1)")


def _tiled_large(fn):
    randn = draws(115)
    Q, K = randn(4, 4) * 30, randn(12, 4) * 30
    _tiled(fn, Q, K, randn(12, 4), 4, "scores in the hundreds: exp overflows float32 unless shifted",
           "subtract the running maximum inside exp, and rescale the earlier sums by exp(m - m_new) <= 1")


def _tiled_single_key_blocks(fn):
    randn = draws(116)
    _tiled(fn, randn(3, 2), randn(5, 2), randn(5, 2), 1, "block_size = 1: one key at a time")


def _tiled_float64_gradients(fn):
    randn = draws(117)
    Q, K, V = (randn(4, 3).double().requires_grad_() for _ in range(3))
    case = "float64 inputs that require gradients"
    got = call(fn, case, _TILED_HINT, Q=Q, K=K, V=V, block_size=2)
    expect_close(got, _attention_expected(Q.detach(), K.detach(), V.detach()), case,
                 "keep the inputs' dtype: build m, l and a with dtype=Q.dtype")
    expect_gradients_reach([got], dict(Q=Q, K=K, V=V), case,
                           "no .detach(), torch.no_grad() or in-place writes into a tensor built beforehand")


# --- checks: expand_kv ------------------------------------------------------------------

_EXPAND_HINT = ("repeat each key-value head num_heads // num_kv_heads times IN PLACE (heads 0, 0, 1, 1, not "
                "0, 1, 0, 1): x.repeat_interleave(group, dim=1)")


def _expand(fn, x, num_heads, case, hint=_EXPAND_HINT):
    got = call(fn, case, hint, x=x, num_heads=num_heads)
    group = num_heads // x.shape[1]
    expected = torch.stack([x[:, i // group] for i in range(num_heads)], dim=1)  # head by head
    expect_equal(got, expected, case, hint)


def _expand_by_hand(fn):
    x = torch.arange(2.0).view(1, 2, 1, 1)  # key-value heads 0 and 1
    _expand(fn, x, 4, "2 key-value heads (values 0 and 1) for 4 query heads: expected heads 0, 0, 1, 1")


def _expand_random(fn):
    randn = draws(121)
    _expand(fn, randn(2, 2, 5, 3), 6, "batch 2, 2 key-value heads for 6 query heads, t = 5, d = 3")


def _expand_mqa(fn):
    randn = draws(122)
    _expand(fn, randn(3, 1, 4, 2), 4, "one key-value head for 4 query heads (multi-query attention)")


def _expand_same(fn):
    randn = draws(123)
    _expand(fn, randn(1, 3, 2, 4), 3, "as many key-value heads as query heads: nothing to repeat, batch 1",
            "with num_heads == num_kv_heads every head is its own: group = 1")


def _expand_float64(fn):
    randn = draws(124)
    _expand(fn, randn(2, 2, 3, 3).double(), 4, "float64 keys: the result stays float64",
            "no .float(): repeat the tensor as it is")


# --- checks: rms_norm -------------------------------------------------------------------

_RMS_HINT = ("divide each vector (the last axis) by the square root of the MEAN of its squares plus eps, "
             "without subtracting its mean, then multiply by g")


def _rms_expected(x, g, eps):
    """Vector by vector, in float64."""
    x64 = x.double()
    rms = torch.sqrt((x64 * x64).sum(dim=-1, keepdim=True) / x.shape[-1] + eps)
    return (g.double() * x64 / rms).to(x.dtype)


def _rms(fn, x, g, eps, case, hint=_RMS_HINT):
    got = call(fn, case, hint, x=x, g=g, eps=eps)
    expect_close(got, _rms_expected(x, g, eps), case, hint)
    return got


def _rms_by_hand(fn):
    _rms(fn, torch.tensor([[3.0, -4.0]]), torch.ones(2), 0.0,
         "x = (3, -4), g = 1, eps = 0: (3, -4) / sqrt(12.5) = (0.8485, -1.1314)")


def _rms_not_centred(fn):
    _rms(fn, torch.tensor([[1.0, 2.0, 3.0, 6.0]]), torch.ones(4), 1e-6,
         "x = (1, 2, 3, 6), mean 3: RMSNorm keeps the mean (LayerNorm would subtract it)",
         "RMSNorm subtracts nothing: mean(x^2), not the variance (x - mean)^2")


def _rms_gain_and_eps(fn):
    randn = draws(131)
    _rms(fn, randn(3, 5, 6), randn(6), 0.5, "batch (3, 5), d = 6, a random gain g and eps = 0.5 (not small)",
         "eps goes INSIDE the square root, added to the mean of squares; g multiplies feature by feature")


def _rms_tiny(fn):
    _rms(fn, torch.full((2, 4), 1e-4), torch.ones(4), 1e-6, "tiny vectors (1e-4): eps matters",
         "eps goes inside the square root: sqrt(mean(x^2) + eps), not sqrt(mean(x^2)) + eps")


def _rms_half(fn):
    randn = draws(132)
    x, g = randn(4, 8).half(), randn(8).half()
    _rms(fn, x, g, 1e-5, "float16 input: the result stays float16",
         "keep the input's dtype: no .float() at the end, and constants in x's dtype")


def _rms_gradients(fn):
    randn = draws(133)
    x, g = randn(3, 4).double().requires_grad_(), randn(4).double().requires_grad_()
    case = "float64 x and g that require gradients (g is trained)"
    got = _rms(fn, x, g, 1e-6, case)
    expect_gradients_reach([got], dict(x=x, g=g), case, "no .detach() and no in-place writes")


# --- checks: window_mask ----------------------------------------------------------------

_WINDOW_HINT = ("query i sits at position p = t_k - t_q + i (the queries are the LAST t_q positions); it sees "
                "keys j with p - window < j <= p: itself and the window - 1 before it")


def _window_expected(t_q, t_k, window):
    mask = torch.zeros(t_q, t_k, dtype=torch.bool)
    for i in range(t_q):
        p = t_k - t_q + i
        for j in range(t_k):
            mask[i, j] = p - window < j <= p
    return mask


def _window(fn, t_q, t_k, window, case, hint=_WINDOW_HINT):
    got = call(fn, case, hint, t_q=t_q, t_k=t_k, window=window)
    expect_equal(got, _window_expected(t_q, t_k, window), case, hint)


def _window_square(fn):
    _window(fn, 5, 5, 2, "t_q = t_k = 5, window 2: each position and the one before it")


def _window_cached(fn):
    _window(fn, 2, 6, 3, "2 new queries after 4 cached keys (t_q = 2, t_k = 6), window 3",
            _WINDOW_HINT + "; with a cache, query 0 is at position 4, not 0")


def _window_one_query(fn):
    _window(fn, 1, 9, 4, "one query (decoding a token) over 9 keys, window 4: keys 5 to 8")


def _window_one(fn):
    _window(fn, 4, 4, 1, "window 1: each position sees only itself")


def _window_long(fn):
    _window(fn, 3, 5, 10, "a window longer than the text: the causal mask",
            "a window past the start sees every earlier key: nothing before position 0")


EXERCISES = (
    Exercise("ch10-merge", "merging two blocks' softmax statistics", "merge_stats",
             (_merge_by_hand, _merge_second_smaller, _merge_random, _merge_empty, _merge_large, _merge_float64),
             merge_stats, forbidden=("online_softmax", "logsumexp", "logaddexp"),
             allows=Allows(lambda randn: dict(m1=randn(5), l1=randn(5).abs() + 1, m2=randn(5), l2=randn(5).abs() + 1),
                           batched=("m1", "l1", "m2", "l2"), half=True, large={"m1": 100.0, "m2": 100.0})),
    Exercise("ch10-tiled", "tiled attention's forward pass", "tiled_attention_forward",
             (_tiled_one_block, _tiled_blocks, _tiled_ragged, _tiled_batched, _tiled_large, _tiled_single_key_blocks,
              _tiled_float64_gradients),
             tiled_attention_forward, forbidden=("tiled_attention", "TiledAttention", "scaled_dot_product_attention",
                                                 "softmax", "log_softmax", "MultiheadAttention", "flex_attention"),
             allows=Allows(lambda randn: dict(Q=randn(4, 3), K=randn(6, 3), V=randn(6, 2), block_size=4),
                           batched=("Q", "K", "V"), half=True, large={"Q": 40.0})),
    Exercise("ch10-expand-kv", "a key-value head for each query head", "expand_kv",
             (_expand_by_hand, _expand_random, _expand_mqa, _expand_same, _expand_float64),
             expand_kv, forbidden=("repeat_kv",)),
    Exercise("ch10-window", "a sliding-window mask with a cache", "window_mask",
             (_window_square, _window_cached, _window_one_query, _window_one, _window_long),
             window_mask, forbidden=("sliding_window_mask", "causal_mask")),
    Exercise("ch10-rmsnorm", "RMSNorm", "rms_norm",
             (_rms_by_hand, _rms_not_centred, _rms_gain_and_eps, _rms_tiny, _rms_half, _rms_gradients),
             rms_norm, forbidden=("RMSNorm", "rms_norm"),
             allows=Allows(lambda randn: dict(x=randn(5, 6), g=randn(6), eps=1e-5), batched=("x",), half=True)),
)

__all__ = ["EXERCISES", "merge_stats", "tiled_attention_forward", "expand_kv", "rms_norm", "window_mask", "Mismatch"]
