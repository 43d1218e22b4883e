"""A synthetic task that only order can solve: which of two markers comes first (chapter 5).

Each example is a sequence of ``t`` symbols: the two markers ``A`` (symbol 0) and ``B``
(symbol 1) once each, at random distinct positions, and random filler symbols
``2 .. vocab_size - 1`` everywhere else. The label is 1 when ``A`` comes before ``B`` and 0
otherwise. Swapping the two markers flips the label and leaves the *set* of tokens as it
was, so a model that sees a bag of tokens (attention without positions) cannot beat chance.
"""

from __future__ import annotations

import torch

from .._checks import check_positive_int

__all__ = ["A", "B", "which_first_batch"]

A, B = 0, 1  # the two marker symbols


def which_first_batch(
    n: int,
    t: int,
    vocab_size: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw ``n`` examples of the which-comes-first task (chapter 5).

    Args:
        n: number of examples.
        t: sequence length, at least 2 (room for both markers).
        vocab_size: number of symbols, at least 3 (two markers and one filler).
        generator: for reproducible draws.

    Returns:
        ``(tokens, label)``: tokens int64 ``(n, t)`` with one :data:`A` and one :data:`B`
        per row; label int64 ``(n,)``, 1 where ``A`` comes first, 0 where ``B`` does.
    """
    check_positive_int("n", n)
    check_positive_int("t", t)
    check_positive_int("vocab_size", vocab_size)
    if t < 2:
        raise ValueError(f"t must be at least 2 (one position for each marker), got t={t}")
    if vocab_size < 3:
        raise ValueError(f"vocab_size must be at least 3 (markers 0 and 1 and one filler), got {vocab_size}")
    tokens = torch.randint(2, vocab_size, (n, t), generator=generator)  # (n, t): fillers
    order = torch.rand(n, t, generator=generator).argsort(dim=1)  # (n, t): a random permutation per row
    pos_a, pos_b = order[:, 0], order[:, 1]  # (n,) each: two distinct positions
    rows = torch.arange(n)
    tokens[rows, pos_a] = A
    tokens[rows, pos_b] = B
    label = (pos_a < pos_b).long()  # (n,)
    return tokens, label
