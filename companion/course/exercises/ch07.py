"""Chapter 7 exercises: padding-aware mean pooling, and a collate function for batches.

Checks compare with values computed by hand or by plain PyTorch, never with the solutions.
"""

from __future__ import annotations

import torch

from ._core import Exercise, Mismatch, expect_close, expect_equal

# --- reference solutions (shown in the book) --------------------------------------------


def masked_mean(x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """x (batch, t, d), keep bool (batch, t) True at real tokens -> mean over real tokens (batch, d)."""
    weights = keep.unsqueeze(-1).to(x.dtype)  # (batch, t, 1): 1 at real tokens, 0 at padding
    return (x * weights).sum(dim=1) / weights.sum(dim=1)


def collate(sequences: list[list[int]], max_len: int, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """Keep the first max_len ids of each sequence, pad to the longest; return (tokens, keep)."""
    cut = [list(seq[:max_len]) for seq in sequences]
    t = max(len(seq) for seq in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)  # (batch, t)
    keep = torch.zeros(len(cut), t, dtype=torch.bool)  # (batch, t)
    for i, seq in enumerate(cut):
        tokens[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        keep[i, : len(seq)] = True
    return tokens, keep


# --- checks -----------------------------------------------------------------------------


def _mean_by_hand(fn):
    x = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])  # the last position is padding
    keep = torch.tensor([[True, True, False]])
    expect_close(fn(x, keep), torch.tensor([[2.0, 3.0]]), "x = [[1, 2], [3, 4], [pad]]",
                 "average over the real tokens only: sum(x * keep) / (number of real tokens)")


def _mean_ragged_batch(fn):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(3, 5, 4, generator=g)
    lengths = [5, 2, 1]
    keep = torch.arange(5) < torch.tensor(lengths).unsqueeze(1)  # (3, 5)
    expected = torch.stack([x[i, :n].mean(dim=0) for i, n in enumerate(lengths)])
    expect_close(fn(x, keep), expected, "a batch with 5, 2 and 1 real tokens",
                 "each sequence divides by its own count of real tokens, summing over the time axis (dim=1)")


def _mean_ignores_padding_values(fn):
    x = torch.zeros(2, 4, 3)
    x[:, :2] = 1.0
    x[:, 2:] = 1e6  # huge values at padding must not leak in
    keep = torch.tensor([[True, True, False, False]] * 2)
    expect_close(fn(x, keep), torch.ones(2, 3), "padding filled with 1e6", "mask the padding out before summing")


def _collate_by_hand(fn):
    tokens, keep = fn([[5, 6, 7], [8]], max_len=10, pad_id=0)
    expect_equal(tokens, torch.tensor([[5, 6, 7], [8, 0, 0]]), "collate([[5, 6, 7], [8]], max_len=10) tokens",
                 "pad to the longest sequence in the batch (not to max_len), as torch.long")
    expect_equal(keep, torch.tensor([[True, True, True], [True, False, False]]), "the same batch's keep mask",
                 "keep is a bool tensor (batch, t), True at real tokens")


def _collate_truncates(fn):
    tokens, keep = fn([[1, 2, 3, 4, 5, 6], [7, 8]], max_len=4, pad_id=0)
    expect_equal(tokens, torch.tensor([[1, 2, 3, 4], [7, 8, 0, 0]]), "a sequence longer than max_len=4",
                 "keep the first max_len ids of a long sequence")
    expect_equal(keep, torch.tensor([[True] * 4, [True, True, False, False]]), "its keep mask",
                 "the mask follows the truncated lengths")


def _collate_pad_id(fn):
    tokens, _ = fn([[3, 3], [4]], max_len=5, pad_id=9)
    expect_equal(tokens, torch.tensor([[3, 3], [4, 9]]), "pad_id=9", "fill with pad_id, whatever its value")


EXERCISES = (
    Exercise("ch07-masked-mean", "padding-aware mean pooling", "masked_mean",
             (_mean_by_hand, _mean_ragged_batch, _mean_ignores_padding_values), masked_mean),
    Exercise("ch07-collate", "truncate, pad and mask a batch", "collate",
             (_collate_by_hand, _collate_truncates, _collate_pad_id), collate),
)

__all__ = ["EXERCISES", "masked_mean", "collate", "Mismatch"]
