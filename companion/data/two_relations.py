"""A synthetic task that needs two relations at once (chapter 4).

Each example is a sequence of ``t`` random symbols ``0 .. vocab_size - 1`` in which one
position ``m`` is *marked*. The target at every position ``i >= 1`` is::

    y_i = (x_m - x_{i-1}) mod vocab_size

so every position must read two tokens: its left neighbour (a relation by position) and the
marked token (a relation by content, wherever it is). The difference is not symmetric in the
two tokens, so a model must also know which token came from where.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._checks import check_positive_int

__all__ = ["IGNORE", "two_relations_batch"]

IGNORE = -100  # the target of position 0, which has no left neighbour (F.cross_entropy's ignore_index)


def two_relations_batch(
    n: int,
    t: int,
    vocab_size: int,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Draw ``n`` examples of the two-relations task (chapter 4).

    Args:
        n: number of examples.
        t: sequence length, at least 2.
        vocab_size: number of symbols, at least 2.
        generator: for reproducible draws.

    Returns:
        ``(tokens, marked, target)``: tokens int64 ``(n, t)``; marked bool ``(n, t)``, ``True``
        at the one marked position of each row; target int64 ``(n, t)``,
        ``(x_m - x_{i-1}) mod vocab_size``, and :data:`IGNORE` (-100) at position 0.
    """
    check_positive_int("n", n)
    check_positive_int("t", t)
    check_positive_int("vocab_size", vocab_size)
    if t < 2:
        raise ValueError(f"t must be at least 2 (position i >= 1 reads position i - 1), got t={t}")
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be at least 2, got vocab_size={vocab_size}")
    tokens = torch.randint(vocab_size, (n, t), generator=generator)  # (n, t)
    m = torch.randint(t, (n,), generator=generator)  # (n,): the marked position of each row
    marked = F.one_hot(m, t).bool()  # (n, t)
    x_m = tokens[torch.arange(n), m]  # (n,)
    target = torch.full_like(tokens, IGNORE)
    target[:, 1:] = (x_m[:, None] - tokens[:, :-1]) % vocab_size  # (n, t - 1)
    return tokens, marked, target
