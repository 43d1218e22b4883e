"""Chapter 7 exercises: a collate function for batches, padding-aware mean pooling, and each
token's share of the decision.

Checks compare with values computed by hand or by plain PyTorch, never with the solutions.
"""

from __future__ import annotations

import torch

from ._core import Allows, Exercise, Mismatch, call, draws, expect_close, expect_equal, expect_gradient

# --- reference solutions (shown in the book) ------------------------------------


def masked_mean(x, keep):
    """x (batch, t, d), keep bool (batch, t) -> mean over real tokens (batch, d)."""
    real = torch.where(keep.unsqueeze(-1), x, 0)  # (batch, t, d): padding -> 0, NaN too
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)  # (batch, 1): real tokens per sequence
    return real.sum(dim=1) / n


def collate(sequences, max_len, pad_id=0):
    """Cut each id list to max_len, pad to the longest; return (tokens, keep)."""
    if len(sequences) == 0:
        raise ValueError("collate needs at least one sequence")
    if any(len(seq) == 0 for seq in sequences):  # mean pooling could not average it
        raise ValueError("an empty sequence cannot be classified; drop it or give it an <unk> id")
    cut = [list(seq[:max_len]) for seq in sequences]
    t = max(len(seq) for seq in cut)  # the longest cut sequence
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)  # (batch, t)
    keep = torch.zeros(len(cut), t, dtype=torch.bool)  # (batch, t)
    for i, seq in enumerate(cut):
        tokens[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        keep[i, : len(seq)] = True  # from the length, never from the ids
    return tokens, keep


def token_shares(x, keep, weight):
    """x (batch, t, d), keep bool (batch, t), weight (2, d) -> shares (batch, t)."""
    w = weight[1] - weight[0]  # (d,): the positive row minus the negative row
    n = keep.sum(dim=1, keepdim=True).to(x.dtype)  # (batch, 1): real tokens per review
    real = torch.where(keep.unsqueeze(-1), x, 0)  # (batch, t, d): padding -> 0, NaN too
    return (real @ w) / n  # (batch, t)


# --- checks -----------------------------------------------------------------------


def _mean(fn, x, keep, expected, case, hint):
    expect_close(call(fn, case, hint, x=x, keep=keep), expected, case, hint)


def _mean_by_hand(fn):
    x = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])  # the last position is padding
    _mean(fn, x, torch.tensor([[True, True, False]]), torch.tensor([[2.0, 3.0]]), "x = [[1, 2], [3, 4], [pad]]",
          "average over the real tokens only: sum(x * keep) / (number of real tokens)")


def _mean_ragged_batch(fn):
    x = torch.randn(3, 5, 4, generator=torch.Generator().manual_seed(7))
    lengths = [5, 2, 1]
    keep = torch.arange(5) < torch.tensor(lengths).unsqueeze(1)  # (3, 5)
    expected = torch.stack([x[i, :n].mean(dim=0) for i, n in enumerate(lengths)])
    _mean(fn, x, keep, expected, "a batch with 5, 2 and 1 real tokens",
          "each sequence divides by its own count of real tokens, summing over the time axis (dim=1)")


def _mean_ignores_padding_values(fn):
    x = torch.zeros(2, 4, 3)
    x[:, :2] = 1.0
    x[:, 2:] = 1e6  # huge values at padding must not leak in
    keep = torch.tensor([[True, True, False, False]] * 2)
    _mean(fn, x, keep, torch.ones(2, 3), "padding filled with 1e6", "mask the padding out before summing")


_INF, _NAN = float("inf"), float("nan")


def _mean_inf_nan_padding(fn):
    x = torch.tensor([[[1.0, 2.0, 3.0], [3.0, 4.0, 5.0], [_INF, -_INF, _NAN]],
                      [[2.0, 0.0, -2.0], [_NAN, _NAN, _NAN], [_INF, _INF, _INF]]])
    keep = torch.tensor([[True, True, False], [True, False, False]])
    _mean(fn, x, keep, torch.tensor([[2.0, 3.0, 4.0], [2.0, 0.0, -2.0]]), "padding positions of x hold inf and NaN",
          "whatever padding holds must not reach the mean: inf * 0 and NaN * 0 are NaN, so select with "
          "torch.where(keep[..., None], x, 0) (or masked_fill) rather than multiplying by the mask")


def _mean_mask_not_a_prefix(fn):
    x = torch.tensor([[[1.0], [2.0], [4.0], [8.0]]])
    keep = torch.tensor([[False, True, False, True]])
    _mean(fn, x, keep, torch.tensor([[5.0]]), "keep = [F, T, F, T] (real tokens not at the start)",
          "use the mask itself, position by position, not a length cut x[:, :n]")


def _mean_float64(fn):
    x = torch.tensor([[[0.1, -1 / 3], [0.2, 5.0], [7.0, 7.0]]], dtype=torch.float64)
    expected = torch.tensor([[(0.1 + 0.2) / 2, (-1 / 3 + 5.0) / 2]], dtype=torch.float64)
    hint = ("compute in x's dtype all the way (the mask .to(x.dtype), no .float() step), and divide by the "
            "exact count of real tokens (no + eps)")
    case = "float64 x = [[0.1, -1/3], [0.2, 5], [pad]]"
    expect_close(call(fn, case, hint, x=x, keep=torch.tensor([[True, True, False]])), expected, case, hint,
                 atol=1e-15, rtol=1e-14)  # float64's precision: an eps of 1e-8 in the count is off by 1e-8


def _mean_gradients(fn):
    case = "a batch that requires gradients (the classifier trains through the pooling)"
    hint = "stay in PyTorch operations: no torch.no_grad(), .detach(), .tolist() or torch.tensor(...) of results"
    x = torch.randn(2, 3, 2, generator=torch.Generator().manual_seed(3)).requires_grad_(True)
    keep = torch.tensor([[True, False, True], [True, True, True]])
    got = call(fn, case, hint, x=x, keep=keep)
    expect_close(got, torch.stack([x[0, [0, 2]].mean(0), x[1].mean(0)]).detach(), case, hint)
    expect_gradient(got, case, hint)
    got.sum().backward()
    expected = torch.tensor([[[0.5] * 2, [0.0] * 2, [0.5] * 2], [[1 / 3] * 2] * 3])  # d sum / dx: 1 / count, 0 at padding
    if x.grad is None or not bool((x.grad - expected).abs().max() < 1e-6):
        raise Mismatch(f"{case}: the gradient through your function is wrong (padding must get none, each real "
                       f"token 1 / count). Hint: {hint}")


_COLLATE_HINT = "pad to the longest (cut) sequence in the batch, tokens as torch.long, keep as torch.bool"
_ORDER_HINT = "one row per sequence, in the order given (row i is matched with label i): no sorting, no skipping"


def _collate(fn, sequences, max_len, pad_id, tokens, keep, case, hint):
    got = call(fn, case, hint, sequences=sequences, max_len=max_len, pad_id=pad_id)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a tuple (tokens, keep), got {type(got).__name__}. Hint: return tokens, keep")
    got_tokens, got_keep = got
    if (torch.is_tensor(got_tokens) and torch.is_tensor(got_keep) and got_tokens.dtype == torch.bool
            and got_keep.dtype != torch.bool):
        raise Mismatch(f"{case}: the first element is a bool mask and the second is not: you returned "
                       "(keep, tokens). Hint: return (tokens, keep), in that order")
    expect_equal(got_tokens, tokens, f"{case}: tokens", hint)
    expect_equal(got_keep, keep, f"{case}: keep", hint)


def _collate_by_hand(fn):
    _collate(fn, [[5, 6, 7], [8]], 10, 0, torch.tensor([[5, 6, 7], [8, 0, 0]]),
             torch.tensor([[True, True, True], [True, False, False]]), "collate([[5, 6, 7], [8]], max_len=10)",
             _COLLATE_HINT + "; here t = 3, the longest sequence, not max_len")


def _collate_truncates(fn):
    _collate(fn, [[1, 2, 3, 4, 5, 6], [7, 8]], 4, 0, torch.tensor([[1, 2, 3, 4], [7, 8, 0, 0]]),
             torch.tensor([[True] * 4, [True, True, False, False]]), "a sequence longer than max_len=4",
             "keep the first max_len ids of a long sequence; the mask follows the cut lengths")


def _collate_pad_id(fn):
    _collate(fn, [[3, 3], [4]], 5, 9, torch.tensor([[3, 3], [4, 9]]), torch.tensor([[True, True], [True, False]]),
             "pad_id=9", "fill with pad_id, whatever its value")


def _collate_real_token_equal_to_pad_id(fn):
    _collate(fn, [[0, 5], [7]], 5, 0, torch.tensor([[0, 5], [7, 0]]), torch.tensor([[True, True], [True, False]]),
             "a real token whose id equals pad_id=0",
             "a real token can have id pad_id: build keep from each sequence's length, not from tokens != pad_id")


def _collate_pad_id_inside_and_at_the_end(fn):
    _collate(fn, [[5, 0, 6], [7, 0]], 5, 0, torch.tensor([[5, 0, 6], [7, 0, 0]]),
             torch.tensor([[True, True, True], [True, True, False]]),
             "collate([[5, 0, 6], [7, 0]], pad_id=0): real tokens equal to pad_id in the middle and at the end",
             "a real token can have id pad_id anywhere in a sequence, even last: build keep from each "
             "sequence's length, never from the token ids")


def _collate_keeps_the_order(fn):
    _collate(fn, [[1], [2, 3, 4], [1], [5, 6]], 3, 0, torch.tensor([[1, 0, 0], [2, 3, 4], [1, 0, 0], [5, 6, 0]]),
             torch.tensor([[True, False, False], [True] * 3, [True, False, False], [True, True, False]]),
             "collate([[1], [2, 3, 4], [1], [5, 6]], max_len=3): shortest first, a repeated sequence",
             _ORDER_HINT + "; t is the longest cut sequence, wherever it is")


def _collate_batch_of_one(fn):
    _collate(fn, [[4, 2]], 3, 1, torch.tensor([[4, 2]]), torch.tensor([[True, True]]), "a batch of one sequence",
             "the result is still (batch, t) = (1, 2): no squeeze")


_REFUSE_HINT = ("check the input first: raise ValueError when the batch is empty or any sequence in it is "
                "empty (an all-padding row would leave mean pooling nothing to average)")


def _collate_refuses(fn, sequences, case):
    """The statement: an empty batch, or an empty sequence in it, raises ValueError."""
    try:
        got = fn(sequences, 5, 0)
    except NotImplementedError:
        raise
    except ValueError:
        return
    except SystemExit:
        raise Mismatch(f"{case}: your function called exit(); raise ValueError instead") from None
    except Exception as error:
        raise Mismatch(f"{case}: expected a ValueError, your function raised {type(error).__name__}: "
                       f"{str(error).rstrip('.')}. Hint: {_REFUSE_HINT}") from None
    raise Mismatch(f"{case}: expected a ValueError, your function returned a {type(got).__name__}. "
                   f"Hint: {_REFUSE_HINT}")


def _collate_empty_sequence(fn):
    _collate_refuses(fn, [[], [3, 4]], "collate([[], [3, 4]], max_len=5): an empty sequence in the batch")


def _collate_empty_sequence_not_first(fn):
    _collate_refuses(fn, [[3, 4], []], "collate([[3, 4], []], max_len=5): an empty sequence after a full one")


def _collate_all_empty(fn):
    _collate_refuses(fn, [[], []], "collate([[], []], max_len=5): every sequence empty")


def _collate_empty_batch(fn):
    _collate_refuses(fn, [], "collate([], max_len=5): an empty batch, no sequences")


_SHARES_HINT = ("share_t = (weight[1] - weight[0]) . x_t / n, with n the review's number of real tokens, and "
                "0 at padding")


def _shares(fn, x, keep, weight, expected, case, hint):
    expect_close(call(fn, case, hint, x=x, keep=keep, weight=weight), expected, case, hint)


def _shares_by_hand(fn):
    x = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]]])  # the last position is padding
    weight = torch.tensor([[0.0, 2.0], [1.0, 1.0]])  # row 0 negative, row 1 positive: w = [1, -1]
    _shares(fn, x, torch.tensor([[True, True, False]]), weight, torch.tensor([[0.5, -0.5, 0.0]]),
            "x = [[1, 0], [0, 1], [pad]], weight = [[0, 2], [1, 1]]",
            _SHARES_HINT + "; row 1 of weight is the positive class, row 0 the negative")


def _shares_sum_to_the_gap(fn):
    randn = draws(71)
    x, weight, bias = randn(3, 6, 4), randn(2, 4), randn(2)
    keep = torch.arange(6) < torch.tensor([[6], [3], [1]])  # 6, 3 and 1 real tokens
    pooled = torch.stack([x[i, keep[i]].mean(dim=0) for i in range(3)])  # (3, 4): the model's mean pooling
    logits = pooled @ weight.T + bias  # (3, 2)
    case = "a batch with 6, 3 and 1 real tokens"
    got = call(fn, case, _SHARES_HINT, x=x, keep=keep, weight=weight)
    expected = torch.where(keep, x @ (weight[1] - weight[0]), 0) / keep.sum(dim=1, keepdim=True)
    expect_close(got, expected, case, _SHARES_HINT + "; each review divides by its own count of real tokens")
    gap = logits[:, 1] - logits[:, 0]
    expect_close(got.sum(dim=1) + (bias[1] - bias[0]), gap, case + ": shares + (b_1 - b_0) against the logit gap",
                 "the shares of one review add up to logit_1 - logit_0 - (b_1 - b_0)")


def _shares_nan_padding(fn):
    x = torch.tensor([[[2.0], [float("nan")], [float("inf")]], [[1.0], [3.0], [-float("inf")]]])
    keep = torch.tensor([[True, False, False], [True, True, False]])
    _shares(fn, x, keep, torch.tensor([[0.0], [1.0]]), torch.tensor([[2.0, 0.0, 0.0], [0.5, 1.5, 0.0]]),
            "padding positions of x hold NaN and inf",
            "anything at padding, even NaN, must give a share of exactly 0: NaN * 0 is NaN, so select with "
            "torch.where(keep, ...) rather than multiplying by the mask")


def _shares_inf_padding_wide(fn):
    x = torch.tensor([[[1.0, 2.0, 3.0], [_INF, _INF, _INF], [_NAN, -_INF, 1.0]],
                      [[_INF, _INF, _INF], [0.5, 0.5, 0.5], [-_INF, -_INF, -_INF]]])
    keep = torch.tensor([[True, False, False], [False, True, False]])
    weight = torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.25, 0.75]])  # w = [0.5, 0.25, 0.75]
    _shares(fn, x, keep, weight, torch.tensor([[3.25, 0.0, 0.0], [0.0, 0.75, 0.0]]),
            "d = 3, padding vectors of inf, -inf and NaN",
            "anything at padding must give a share of exactly 0: select the padding away before the product "
            "(torch.where(keep[..., None], x, 0)); replacing inf by the largest float (nan_to_num) still "
            "overflows in the sum over d, and multiplying the product by the mask gives inf * 0 = NaN")


def _shares_mask_not_a_prefix(fn):
    x = torch.tensor([[[1.0], [2.0], [4.0], [8.0]]])
    keep = torch.tensor([[False, True, False, True]])
    _shares(fn, x, keep, torch.tensor([[0.0], [1.0]]), torch.tensor([[0.0, 1.0, 0.0, 4.0]]),
            "keep = [F, T, F, T] (real tokens not at the start)",
            "use the mask itself, position by position, not a length cut x[:, :n]")


def _shares_float64(fn):
    x = torch.tensor([[[0.1], [1 / 3], [9.0]]], dtype=torch.float64)
    weight = torch.tensor([[0.0], [1.0]], dtype=torch.float64)
    case, hint = "float64 x and weight", ("compute in x's dtype all the way: the count of real tokens "
                                          ".to(x.dtype), no .float() step, and no + eps in the count")
    expect_close(call(fn, case, hint, x=x, keep=torch.tensor([[True, True, False]]), weight=weight),
                 torch.tensor([[0.1 / 2, 1 / 6, 0.0]], dtype=torch.float64), case, hint, atol=1e-15,
                 rtol=1e-14)


def _shares_one_token_rows(fn):
    x = torch.tensor([[[1.0, 0.0]], [[0.0, 1.0]]])  # batch 2, t = 1
    weight = torch.tensor([[0.0, 2.0], [1.0, 1.0]])
    _shares(fn, x, torch.tensor([[True], [True]]), weight, torch.tensor([[1.0], [-1.0]]),
            "batch 2 of one token each: shape (2, 1), [[1], [-1]]",
            "keep the (batch, t) shape: squeeze() without a dimension also drops t = 1")


_KEEP = torch.tensor([[True] * 5, [True, False, True, False, False], [False] * 4 + [True]])  # (3, 5): 5, 2 and 1 real tokens, not all first

EXERCISES = (
    Exercise("ch07-collate", "truncate, pad and mask a batch", "collate",
             (_collate_by_hand, _collate_truncates, _collate_pad_id, _collate_real_token_equal_to_pad_id,
              _collate_pad_id_inside_and_at_the_end, _collate_keeps_the_order, _collate_batch_of_one,
              _collate_empty_sequence, _collate_empty_sequence_not_first, _collate_all_empty,
              _collate_empty_batch), collate),
    Exercise("ch07-masked-mean", "padding-aware mean pooling", "masked_mean",
             (_mean_by_hand, _mean_ragged_batch, _mean_ignores_padding_values, _mean_inf_nan_padding,
              _mean_mask_not_a_prefix, _mean_float64, _mean_gradients), masked_mean,
             allows=Allows(lambda randn: {"x": randn(3, 5, 4), "keep": _KEEP}, half=True)),
    Exercise("ch07-token-shares", "each token's share of the logit gap", "token_shares",
             (_shares_by_hand, _shares_sum_to_the_gap, _shares_nan_padding, _shares_inf_padding_wide,
              _shares_mask_not_a_prefix, _shares_float64, _shares_one_token_rows), token_shares,
             allows=Allows(lambda randn: {"x": randn(3, 5, 4), "keep": _KEEP, "weight": randn(2, 4)}, half=True)),
)

__all__ = ["EXERCISES", "masked_mean", "collate", "token_shares", "Mismatch"]
