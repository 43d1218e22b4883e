"""Counting frequent word pairs (bigrams) in the training data (chapter 7).

:func:`count_bigrams` builds the table of pair keys that :class:`companion.BigramEmbedding`
looks up. A bigram is stored as one integer key, ``previous * vocab_size + current``; the table
is sorted, so lookup is a binary search and nothing is hashed or shared between pairs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import torch

from .._checks import check_positive_int

__all__ = ["count_bigrams"]


def count_bigrams(sequences: Iterable[Sequence[int]], vocab_size: int, max_size: int, min_freq: int = 2,
                  ignore_ids: Sequence[int] = (0, 1)) -> torch.Tensor:
    """The keys of the ``max_size`` most frequent adjacent id pairs (chapter 7).

    Args:
        sequences: token id lists (the training split only).
        vocab_size: number of token ids; a pair ``(a, b)`` has the key ``a * vocab_size + b``.
        max_size: the most pairs kept.
        min_freq: pairs seen fewer times are dropped.
        ignore_ids: ids that never form a pair (by default ``<pad>`` and ``<unk>``).

    Returns:
        int64 keys ``(num_bigrams,)``, sorted ascending; ties in frequency are broken by key,
        so the result never depends on the order of ``sequences``.
    """
    check_positive_int("vocab_size", vocab_size)
    check_positive_int("max_size", max_size)
    check_positive_int("min_freq", min_freq)
    ignored = set(ignore_ids)
    counts: Counter[int] = Counter()
    for ids in sequences:
        if len(ids) and (min(ids) < 0 or max(ids) >= vocab_size):
            raise ValueError(f"token ids must be in [0, vocab_size={vocab_size}), got min {min(ids)} and max "
                             f"{max(ids)}; pass ids from the vocabulary and its size, len(vocab)")
        counts.update(a * vocab_size + b for a, b in zip(ids, ids[1:]) if a not in ignored and b not in ignored)
    ranked = sorted((key for key, n in counts.items() if n >= min_freq), key=lambda key: (-counts[key], key))
    return torch.tensor(sorted(ranked[:max_size]), dtype=torch.long)
