"""Repeated random tokens: the task on which induction heads form (chapter 11).

A sequence of ``half`` random tokens, then the same ``half`` tokens again. The first half
cannot be predicted; from the second half's second token on, every token can be, by finding
where the current token occurred before and copying the token that followed it there.
"""

from __future__ import annotations

import torch

from .._checks import check_positive_int

__all__ = ["repeated_tokens", "repeat_batch"]


def repeat_batch(first: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The sequences ``first`` then ``first`` again, and which predictions can copy (chapter 11).

    Args:
        first: int64 ``(batch, half)``, ``half >= 1``: the first halves.

    Returns:
        ``(ids, copyable)``: ids int64 ``(batch, 2 half)``, ``first`` twice; copyable bool
        ``(batch, 2 half - 1)``, one entry per next-token prediction (position ``p`` predicts
        ``ids[:, p + 1]`` from ``ids[:, :p + 1]``), ``True`` where the target repeats a token
        whose successor in the first half is already in view: ``p >= half``. The prediction at
        ``p = half - 1`` is ``False``: nothing before it says that the sequence starts over.
    """
    if not isinstance(first, torch.Tensor) or first.dtype != torch.int64 or first.dim() != 2 or first.size(1) < 1:
        got = f"{first.dtype} tensor of shape {tuple(first.shape)}" if isinstance(first, torch.Tensor) else type(first).__name__
        raise ValueError(f"first must be an int64 tensor (batch, half) with half >= 1, got {got}")
    batch, half = first.shape
    ids = torch.cat([first, first], dim=1)  # (batch, 2 half)
    p = torch.arange(2 * half - 1, device=first.device)  # the predictions' positions
    copyable = (p >= half).expand(batch, -1)  # (batch, 2 half - 1)
    return ids, copyable


def repeated_tokens(batch_size: int, half: int, vocab_size: int,
                    generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """``batch_size`` sequences of ``half`` uniform random tokens in ``[0, vocab_size)``, each
    repeated once: :func:`repeat_batch` of a fresh draw (chapter 11). Returns ``(ids, copyable)``,
    int64 ``(batch_size, 2 half)`` and bool ``(batch_size, 2 half - 1)``."""
    for name, value in (("batch_size", batch_size), ("half", half), ("vocab_size", vocab_size)):
        check_positive_int(name, value)
    device = None if generator is None else generator.device  # the generator's, not the default device
    first = torch.randint(0, vocab_size, (batch_size, half), generator=generator, device=device)
    return repeat_batch(first)
