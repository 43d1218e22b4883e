"""A translation-like task whose alignment is known: write a sequence backwards (chapter 6).

The source is a sequence of symbols; the target is the same symbols in reverse order. Output
position ``j`` of a length-``n`` source must read input position ``n - 1 - j``, so a model's
attention map can be checked against the right answer, an anti-diagonal. Length is a free
parameter: an encoder-decoder that squeezes the source into one vector has more to remember
the longer the source, which is what chapter 6 measures.

Token ids: ``PAD = 0``, ``BOS = 1`` (starts every decoder input), ``EOS = 2`` (ends every
target), symbols ``3 .. vocab_size - 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import check_positive_int

__all__ = ["PAD", "BOS", "EOS", "Pairs", "reversal_pairs", "reversal_splits"]

PAD, BOS, EOS = 0, 1, 2


@dataclass(frozen=True)
class Pairs:
    """Source/target pairs, padded into tensors (chapter 6).

    Attributes:
        src: int64 ``(n, t_src)``: the symbols, then ``PAD``.
        tgt: int64 ``(n, t_tgt)``: ``BOS``, the reversed symbols, ``EOS``, then ``PAD``
            (``t_tgt = t_src + 2``). The decoder reads ``tgt[:, :-1]`` and predicts ``tgt[:, 1:]``.
        lengths: int64 ``(n,)``: the number of symbols of each source.
    """

    src: torch.Tensor
    tgt: torch.Tensor
    lengths: torch.Tensor

    def __len__(self) -> int:
        return self.src.size(0)

    def __getitem__(self, index) -> "Pairs":
        """A subset (an index tensor, a slice or a bool mask), trimmed of all-``PAD`` columns."""
        lengths = self.lengths[index]
        t = int(lengths.max()) if len(lengths) else 0
        return Pairs(self.src[index][:, :t], self.tgt[index][:, : t + 2], lengths)


def reversal_pairs(
    n: int,
    min_len: int,
    max_len: int,
    vocab_size: int = 13,
    generator: torch.Generator | None = None,
) -> Pairs:
    """Draw ``n`` sources of ``min_len .. max_len`` symbols (uniform) and their reversals (chapter 6).

    Args:
        n: number of pairs.
        min_len, max_len: the shortest and longest source, both included.
        vocab_size: number of token ids, the 3 special ones included (so ``vocab_size - 3`` symbols).
        generator: for reproducible draws.

    Returns:
        a :class:`Pairs`.
    """
    for name, value in (("n", n), ("min_len", min_len), ("max_len", max_len), ("vocab_size", vocab_size)):
        check_positive_int(name, value)
    if min_len > max_len:
        raise ValueError(f"min_len must be <= max_len, got min_len={min_len}, max_len={max_len}")
    if vocab_size < 4:
        raise ValueError(f"vocab_size must be at least 4 (PAD, BOS, EOS and one symbol), got {vocab_size}")
    lengths = torch.randint(min_len, max_len + 1, (n,), generator=generator)  # (n,)
    symbols = torch.randint(3, vocab_size, (n, max_len), generator=generator)  # (n, max_len)
    position = torch.arange(max_len)  # (max_len,)
    real = position < lengths[:, None]  # (n, max_len): True on the symbols
    src = torch.where(real, symbols, PAD)
    # reversed: target position j holds source position length - 1 - j
    back = (lengths[:, None] - 1 - position).clamp(min=0)  # (n, max_len)
    reversed_src = torch.where(real, src.gather(1, back), PAD)
    tgt = torch.full((n, max_len + 2), PAD)
    tgt[:, 0] = BOS
    tgt[:, 1 : max_len + 1] = reversed_src
    tgt[torch.arange(n), lengths + 1] = EOS
    return Pairs(src, tgt, lengths)


def reversal_splits(
    train: int = 20000,
    valid: int = 1000,
    test: int = 1000,
    lengths: tuple[int, int] = (4, 16),
    longer: tuple[int, int] = (17, 24),
    vocab_size: int = 13,
    seed: int = 0,
) -> dict[str, Pairs]:
    """The fixed splits of chapter 6: train, valid and test share ``lengths``; ``longer`` is a
    test split whose sources are all longer than any in training (chapter 6).

    A source drawn for valid or test that also occurs in train is dropped, so the held-out
    splits measure generalisation, not memory (which is why they may be a few pairs short).

    Returns:
        ``{"train", "valid", "test", "longer"}`` -> :class:`Pairs`.
    """
    if longer[0] <= lengths[1]:
        raise ValueError(f"the longer split must start above the training lengths, got lengths={lengths}, "
                         f"longer={longer}")
    generator = torch.Generator().manual_seed(seed)
    splits = {"train": reversal_pairs(train, *lengths, vocab_size, generator)}
    seen = {tuple(row[: int(n)]) for row, n in zip(splits["train"].src.tolist(), splits["train"].lengths.tolist())}
    for name, size in (("valid", valid), ("test", test)):
        pairs = reversal_pairs(size, *lengths, vocab_size, generator)
        fresh = torch.tensor([tuple(row[: int(n)]) not in seen for row, n in zip(pairs.src.tolist(), pairs.lengths.tolist())])
        splits[name] = pairs[fresh]
    splits["longer"] = reversal_pairs(test, *longer, vocab_size, generator)
    return splits
