"""Bigram embeddings: one learned vector per frequent pair of adjacent words (chapter 7).

A single attention layer *can* learn that "not" flips "good", but from 22,500 reviews it
learns it slowly. Bag-of-words models have long used the cheaper route of giving frequent
word pairs ("not good", "well worth") their own features. Here the pair's vector is added to
the second word's embedding, so every later part of the model (attention, pooling, the
per-token explanations) is unchanged: position ``i`` simply carries ``(w[i-1], w[i])`` too.

A bigram is stored as one integer key, ``previous * vocab_size + current``, in a sorted
table built from the training data; lookup is a binary search, so the table is part of the
model's state (saved and loaded with it) and nothing is hashed or shared between pairs.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_positive_int, check_probability, check_tokens

__all__ = ["BigramEmbedding"]


class BigramEmbedding(nn.Module):
    """``Dropout(Embedding(bigram ending at i) * sqrt(d_model))`` for every position ``i`` (chapter 7).

    Position ``i`` looks up the pair ``(tokens[i-1], tokens[i])`` in the table ``keys``; the
    first position and pairs not in the table get a zero vector. A table from
    :func:`companion.count_bigrams` holds no pair with ``<pad>`` or ``<unk>``, so those get zeros too.
    Scaled like :class:`companion.TokenEmbedding`, so that the two can be added.

    Args:
        keys: int64 ``(num_bigrams,)``, sorted and distinct, as :func:`companion.count_bigrams` returns.
        vocab_size: the token vocabulary's size the keys were built with.
        d_model: embedding width.
        dropout: dropout on the output.
    """

    def __init__(self, keys: torch.Tensor, vocab_size: int, d_model: int, dropout: float = 0.0) -> None:
        super().__init__()
        if not isinstance(keys, torch.Tensor) or keys.dim() != 1:
            raise TypeError(f"keys must be a 1-D tensor (num_bigrams,) as count_bigrams returns, got "
                            f"{type(keys).__name__}{'' if not isinstance(keys, torch.Tensor) else ' of shape ' + str(tuple(keys.shape))}")
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        check_probability("dropout", dropout)
        if keys.dtype != torch.long:
            raise TypeError(f"keys must be int64 (torch.long), got {keys.dtype}; use count_bigrams to build them")
        if len(keys) == 0:
            raise ValueError("keys is empty: no bigram was frequent enough; lower min_freq or leave bigrams out")
        if not bool((keys[1:] > keys[:-1]).all()):
            raise ValueError("keys must be sorted ascending and distinct, as count_bigrams returns them")
        if int(keys[0]) < 0 or int(keys[-1]) >= vocab_size * vocab_size:
            raise ValueError(f"keys must be in [0, vocab_size**2={vocab_size * vocab_size}); "
                             "were they built with a different vocab_size?")
        self.vocab_size, self.d_model = vocab_size, d_model
        self.register_buffer("keys", keys.clone())
        self.embedding = nn.Embedding(len(keys) + 1, d_model, padding_idx=0)  # row 0: no known bigram
        nn.init.normal_(self.embedding.weight, std=1.0 / math.sqrt(d_model))
        with torch.no_grad():
            self.embedding.weight[0].zero_()
        self.dropout = nn.Dropout(dropout)

    def lookup(self, tokens: torch.Tensor) -> torch.Tensor:
        """int ``(batch, t)`` -> int ``(batch, t)``: at each position, 1 + the table row of the pair ending there, or 0."""
        check_tokens("tokens", tokens)
        previous = F.pad(tokens[:, :-1], (1, 0))  # (batch, t): the token before each one (0 before the first)
        key = previous * self.vocab_size + tokens  # (batch, t)
        row = torch.searchsorted(self.keys, key).clamp(max=len(self.keys) - 1)  # (batch, t)
        known = self.keys[row] == key
        known[:, :1] = False  # the first token has no predecessor
        return torch.where(known, row + 1, 0)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """int ``(batch, t)`` -> ``(batch, t, d_model)``."""
        return self.dropout(self.embedding(self.lookup(tokens)) * math.sqrt(self.d_model))
