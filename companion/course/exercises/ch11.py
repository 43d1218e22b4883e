"""Chapter 11 exercises: the repeated-tokens batch and its mask, a head's induction score, and its
previous-token score over padded sequences.

Checks compare with values computed by loops over positions in plain Python, never with the
solutions. Their cases use random causal weights, so that every other entry of a row is a
wrong answer's value: the earlier copy itself instead of the position after it, the key after
the query instead of before, the mean of each row's mean instead of the mean over all counted
pairs, a pair counted where one of its tokens is padding.
"""

from __future__ import annotations

import torch

from ._core import Exercise, Mismatch, call, draws, expect_close, expect_equal

# --- reference solutions (shown in the book) ------------------------------------


def double_up(first):
    """first int64 (batch, half) -> (ids int64 (batch, 2 half), copyable bool (batch, 2 half - 1))."""
    batch, half = first.shape
    ids = torch.cat([first, first], dim=1)                  # the half, then again
    p = torch.arange(2 * half - 1, device=first.device)     # prediction p: ids[p + 1]
    copyable = (p >= half).repeat(batch, 1)                 # its successor seen before
    return ids, copyable


def score_induction(weights, half):
    """weights (batch, heads, 2 half, 2 half) -> (heads,): the mean weight from each
    second-half query i to key i - half + 1."""
    i = torch.arange(half, 2 * half)                        # the second half's queries
    to_next = weights[:, :, i, i - half + 1]                # (batch, heads, half)
    return to_next.mean(dim=(0, 2))


def score_previous_token(weights, real):
    """weights (batch, heads, t, t), real bool (batch, t) -> (heads,): the mean of
    weights[b, h, i, i - 1] over the pairs where tokens i and i - 1 are both real."""
    to_previous = weights.diagonal(offset=-1, dim1=-2, dim2=-1)   # (batch, heads, t - 1)
    counted = (real[:, 1:] & real[:, :-1]).to(weights.dtype)      # (batch, t - 1)
    total = (to_previous * counted[:, None]).sum(dim=(0, 2))
    return total / counted.sum()


# --- helpers ----------------------------------------------------------------------


def _causal_weights(batch, heads, t, seed, dtype=torch.float64):
    """Random causal attention weights: each row a softmax of random scores over keys 0 .. i."""
    g = torch.Generator().manual_seed(seed)
    scores = 2 * torch.randn(batch, heads, t, t, generator=g, dtype=torch.float64)
    scores = scores.masked_fill(~torch.ones(t, t, dtype=torch.bool).tril(), float("-inf"))
    return torch.softmax(scores, dim=-1).to(dtype)


# --- checks: repeat_batch -----------------------------------------------------------


def _repeat(fn, first, case, hint):
    got = call(fn, case, hint, first=first)
    if not isinstance(got, tuple) or len(got) != 2:
        raise Mismatch(f"{case}: expected a tuple (ids, copyable), got {type(got).__name__}. Hint: return ids, copyable")
    batch, half = first.shape
    ids = torch.tensor([[int(v) for v in row] * 2 for row in first.tolist()], dtype=torch.int64).reshape(batch, 2 * half)
    copyable = torch.tensor([[p >= half for p in range(2 * half - 1)] for _ in range(batch)],
                            dtype=torch.bool).reshape(batch, 2 * half - 1)
    expect_equal(got[0], ids, case + ": ids", hint)
    expect_equal(got[1], copyable, case + ": copyable", _COPYABLE_HINT)


_COPYABLE_HINT = ("copyable depends on the position alone, the same in every row: prediction p (p = 0 .. "
                  "2 half - 2) is True from p = half on, whatever the tokens are (a token that happens to occur "
                  "earlier in the first half does not make a prediction copyable)")

_REPEAT_HINT = ("ids is first followed by first again along the sequence axis (dim 1); prediction p scores "
                "ids[p + 1] from ids[: p + 1], and it can copy from p = half on: the prediction at p = half - 1 "
                "(the repeat's first token) has nothing before it saying that the sequence starts over")


def _repeat_by_hand(fn):
    _repeat(fn, torch.tensor([[3, 1, 4]]), "first [[3, 1, 4]]: ids [[3, 1, 4, 3, 1, 4]], copyable "
            "[[False, False, False, True, True]]", _REPEAT_HINT)


def _repeat_rows(fn):
    first = torch.randint(0, 50, (4, 6), generator=torch.Generator().manual_seed(111))
    _repeat(fn, first, "4 rows of 6 random tokens: each row repeats itself, not the batch",
            "concatenate along dim=1 (the sequence), not dim=0 (the batch): torch.cat([first, first], dim=1); each "
            "token once then again, not each token twice in a row (repeat_interleave)")


def _repeat_half_one(fn):
    _repeat(fn, torch.tensor([[7], [2]]), "half = 1, two rows: ids [[7, 7], [2, 2]], copyable [[False], [False]] "
            "(the only prediction is the repeat's first token)", _REPEAT_HINT)


def _repeat_long(fn):
    first = torch.randint(0, 5, (2, 9), generator=torch.Generator().manual_seed(112))
    _repeat(fn, first, "half = 9 with repeated tokens inside a half: the mask depends on positions only",
            "copyable marks positions (p >= half), whatever the tokens are; it has 2 half - 1 entries per row, one "
            "per next-token prediction, not 2 half")


def _repeat_empty_batch(fn):
    _repeat(fn, torch.zeros(0, 4, dtype=torch.int64), "an empty batch, first (0, 4): ids (0, 8), copyable (0, 7)",
            "build ids and copyable for the whole batch at once (cat along dim 1, a mask expanded to the batch), "
            "not row by row: a batch of no rows has nothing to stack")


def _repeat_transposed(fn):
    first = torch.randint(0, 9, (5, 3), generator=torch.Generator().manual_seed(113)).t()  # (3, 5), not contiguous
    _repeat(fn, first, "first (3, 5) made by a transpose (not contiguous in memory)",
            "index and concatenate by shape (first.shape), not by assuming a contiguous layout (view)")


# --- checks: induction_score --------------------------------------------------------


def _induction_expected(weights, half):
    w = weights.double()
    batch, heads = w.shape[:2]
    out = []
    for h in range(heads):
        total = sum(float(w[b, h, i, i - half + 1]) for b in range(batch) for i in range(half, 2 * half))
        out.append(total / (batch * half))
    return torch.tensor(out, dtype=torch.float64).to(weights.dtype)


_INDUCTION_HINT = ("query i of the second half (i = half .. 2 half - 1) holds the same token as position i - half; "
                   "the head should attend to the position AFTER that copy, i - half + 1, whose token comes next. "
                   "Average weights[b, h, i, i - half + 1] over the batch and those half queries, one score per head")


def _induction(fn, weights, half, case, hint=_INDUCTION_HINT):
    got = call(fn, case, hint, weights=weights, half=half)
    expect_close(got, _induction_expected(weights, half), case, hint)


def _induction_by_hand(fn):
    half = 2
    w = torch.zeros(1, 2, 4, 4)
    w[0, :, 0, 0] = 1.0
    w[0, :, 1, :2] = 0.5
    w[0, 0, 2, 1] = 1.0  # head 0 at query 2 (token = position 0's): the key after the copy, 1
    w[0, 0, 3, 2] = 1.0  # at query 3 (token = position 1's): key 2
    w[0, 1, 2, :3] = 1 / 3
    w[0, 1, 3, :4] = 1 / 4
    _induction(fn, w, half, "half = 2, head 0 a perfect induction head (score 1), head 1 uniform over the keys in "
               "view (score (1/3 + 1/4) / 2)")


def _induction_random(fn):
    _induction(fn, _causal_weights(3, 4, 10, 121, torch.float32), 5,
               "random causal float32 weights, batch 3, 4 heads, half = 5: one score per head, mean over the batch "
               "and the second half's queries")


def _induction_half_one(fn):
    _induction(fn, _causal_weights(2, 3, 2, 122), 1, "half = 1 (t = 2): the one second-half query, position 1, "
               "whose earlier copy is position 0: the key after it is position 1 itself")


def _induction_dtypes(fn):
    w = _causal_weights(2, 2, 8, 123)
    _induction(fn, w, 4, "float64 weights: the scores in float64",
               _INDUCTION_HINT + "; keep the weights' dtype")
    for dtype in (torch.float16, torch.bfloat16):
        _induction(fn, w.to(dtype), 4, f"{dtype} weights: the scores in {dtype}",
                   "keep the weights' dtype: index and average them as they are (no .float() or .double())")


# --- checks: previous_token_score ---------------------------------------------------


def _previous_expected(weights, real):
    w = weights.double()
    batch, heads, t, _ = w.shape
    pairs = [(b, i) for b in range(batch) for i in range(1, t) if bool(real[b, i]) and bool(real[b, i - 1])]
    out = [sum(float(w[b, h, i, i - 1]) for b, i in pairs) / len(pairs) for h in range(heads)]
    return torch.tensor(out, dtype=torch.float64).to(weights.dtype)


_PREVIOUS_HINT = ("count query i (i >= 1) only where token i AND token i - 1 are real; average weights[b, h, i, i - 1] "
                  "over all the counted (b, i) pairs together, one score per head: the entries on the diagonal just "
                  "below the main one")


def _previous(fn, weights, real, case, hint=_PREVIOUS_HINT):
    got = call(fn, case, hint, weights=weights, real=real)
    expect_close(got, _previous_expected(weights, real), case, hint)


def _previous_by_hand(fn):
    w = torch.zeros(1, 1, 3, 3)
    w[0, 0, 0, 0] = 1.0
    w[0, 0, 1, :2] = torch.tensor([0.8, 0.2])
    w[0, 0, 2, :3] = torch.tensor([0.1, 0.3, 0.6])
    _previous(fn, w, torch.ones(1, 3, dtype=torch.bool),
              "one sequence of 3 real tokens: weights 0.8 (query 1 to key 0) and 0.3 (query 2 to key 1): score 0.55")


def _previous_no_padding(fn):
    _previous(fn, _causal_weights(3, 2, 7, 131, torch.float32), torch.ones(3, 7, dtype=torch.bool),
              "random causal float32 weights, batch 3, 2 heads, t = 7, no padding")


def _previous_right_padding(fn):
    w = _causal_weights(3, 2, 8, 132, torch.float32)
    real = torch.tensor([[True] * 8, [True] * 3 + [False] * 5, [True] * 6 + [False] * 2])
    _previous(fn, w, real, "right padding, rows of 8, 3 and 6 real tokens: 7 + 2 + 5 = 14 counted pairs; a row's "
              "pairs weigh by their number (the mean over all pairs, not the mean of each row's mean)")


def _previous_left_padding(fn):
    w = _causal_weights(2, 3, 6, 133, torch.float32)
    real = torch.tensor([[False, False, True, True, True, True], [False, True, True, True, True, True]])
    _previous(fn, w, real, "left padding: a query whose previous token is padding does not count")


def _previous_middle_padding(fn):
    w = _causal_weights(2, 2, 6, 136, torch.float32)
    real = torch.tensor([[True, False, True, True, False, True], [True, True, True, False, True, True]])
    _previous(fn, w, real, "padding in the middle of rows: [T, F, T, T, F, T] and [T, T, T, F, T, T] (3 + 3 "
              "counted pairs): the real tokens do not form one block")


def _previous_lone_token(fn):
    w = _causal_weights(3, 2, 5, 134, torch.float32)
    real = torch.tensor([[True, False, False, False, False], [True] * 5, [True, True, False, False, False]])
    _previous(fn, w, real, "a row with a single real token (no pair), beside rows with 4 pairs and 1")


def _previous_dtypes(fn):
    w = _causal_weights(2, 2, 6, 135)
    real = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    _previous(fn, w, real, "float64 weights: the scores in float64", _PREVIOUS_HINT + "; keep the weights' dtype")
    for dtype in (torch.float16, torch.bfloat16):
        _previous(fn, w.to(dtype), real, f"{dtype} weights: the scores in {dtype}",
                  "keep the weights' dtype: make the 0/1 counts with .to(weights.dtype), not .float()")


EXERCISES = (
    Exercise("ch11-repeat", "the repeated-tokens batch and its copyable mask", "double_up",
             (_repeat_by_hand, _repeat_rows, _repeat_half_one, _repeat_long, _repeat_empty_batch,
              _repeat_transposed),
             double_up, forbidden=("repeated_tokens", "repeat_batch")),
    Exercise("ch11-induction-score", "a head's induction score", "score_induction",
             (_induction_by_hand, _induction_random, _induction_half_one, _induction_dtypes),
             score_induction, forbidden=("induction_score",)),
    Exercise("ch11-previous-token", "a head's previous-token score over padded sequences", "score_previous_token",
             (_previous_by_hand, _previous_no_padding, _previous_right_padding, _previous_left_padding,
              _previous_middle_padding, _previous_lone_token, _previous_dtypes),
             score_previous_token, forbidden=("previous_token_score",)),
)

__all__ = ["EXERCISES", "double_up", "score_induction", "score_previous_token", "Mismatch"]
