"""Counting baselines for chapter 8: n-gram language models with add-k smoothing.

An n-gram model predicts a token from the ``n - 1`` tokens before it, by counting how often
each continuation followed that context in the training text::

    p(x | c) = (count(c, x) + k) / (count(c) + k V)        V = vocabulary size

``k > 0`` ("add-k" smoothing) gives unseen continuations a little probability; without it one
unseen character in the held-out text would cost infinitely many bits. ``n = 1`` is the
unigram model: character frequencies, no context at all.

Counting is vectorised with NumPy: the ``n`` ids ending at each position are packed into one
integer key ``sum_j id_j V^(n-1-j)``, and ``np.unique`` counts the keys.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from .._checks import check_positive_int

__all__ = ["NGramLM", "fit_ngram"]


def _as_ids(name: str, ids, vocab_size: int) -> np.ndarray:
    if isinstance(ids, torch.Tensor):
        ids = ids.cpu().numpy()
    ids = np.asarray(ids)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-D array or tensor of integer token ids, got shape {ids.shape} and "
                         f"dtype {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"{name} must hold ids in [0, vocab_size={vocab_size}), got min {ids.min()} and max "
                         f"{ids.max()}")
    return ids.astype(np.int64)


class NGramLM:
    """A character (or any token) n-gram model with add-k smoothing (chapter 8).

    Args:
        n: the order: each token is predicted from the ``n - 1`` before it (``1`` = unigram).
        vocab_size: number of token ids ``V``.
        k: the add-k constant, ``> 0``.
        start_id: the id the context is padded with before the first token (a separator such
            as the newline between reviews).
    """

    def __init__(self, n: int, vocab_size: int, k: float = 1.0, start_id: int = 0) -> None:
        check_positive_int("n", n)
        check_positive_int("vocab_size", vocab_size)
        if not (isinstance(k, (int, float)) and math.isfinite(k) and k > 0):
            raise ValueError(f"k must be a finite number > 0 (add-k smoothing), got {k!r}")
        if vocab_size ** n >= 2 ** 62:
            raise ValueError(f"vocab_size ** n = {vocab_size}^{n} does not fit the int64 keys; use a smaller n")
        if not 0 <= start_id < vocab_size:
            raise ValueError(f"start_id must be a token id in [0, {vocab_size}), got {start_id}")
        self.n, self.vocab_size, self.k, self.start_id = n, vocab_size, float(k), start_id
        self._keys = self._counts = self._context_keys = self._context_counts = None

    def _ngram_keys(self, ids: np.ndarray) -> np.ndarray:
        """The key of the n-gram ending at every position of ``ids``: ``(len(ids),)``."""
        padded = np.concatenate([np.full(self.n - 1, self.start_id, dtype=np.int64), ids])
        keys = np.zeros(len(ids), dtype=np.int64)
        for j in range(self.n):  # the oldest token first: key = (((id_0) V + id_1) V + ...) V + id_{n-1}
            keys = keys * self.vocab_size + padded[j: j + len(ids)]
        return keys

    def fit(self, ids) -> NGramLM:
        """Count the n-grams and their contexts in the training stream ``ids`` ``(n_tokens,)``."""
        keys = self._ngram_keys(_as_ids("ids", ids, self.vocab_size))
        self._keys, self._counts = np.unique(keys, return_counts=True)
        self._context_keys, self._context_counts = np.unique(keys // self.vocab_size, return_counts=True)
        return self

    @staticmethod
    def _lookup(table_keys: np.ndarray, table_counts: np.ndarray, keys: np.ndarray) -> np.ndarray:
        where = np.searchsorted(table_keys, keys).clip(max=len(table_keys) - 1)
        return np.where(table_keys[where] == keys, table_counts[where], 0)

    def log2_probs(self, ids) -> np.ndarray:
        """``log2 p(ids[i] | the n - 1 ids before it)`` for every ``i >= 1``: ``(len(ids) - 1,)``."""
        if self._keys is None:
            raise ValueError("the model has no counts yet: call fit(train_ids) first")
        keys = self._ngram_keys(_as_ids("ids", ids, self.vocab_size))[1:]
        counts = self._lookup(self._keys, self._counts, keys)
        context_counts = self._lookup(self._context_keys, self._context_counts, keys // self.vocab_size)
        return np.log2(counts + self.k) - np.log2(context_counts + self.k * self.vocab_size)

    def bits_per_char(self, ids) -> float:
        """Mean ``-log2 p`` over ``ids[1:]``, the same tokens :func:`companion.evaluate_bits_per_char` scores."""
        return float(-self.log2_probs(ids).mean())

    def __repr__(self) -> str:
        return f"NGramLM(n={self.n}, vocab_size={self.vocab_size}, k={self.k})"


def fit_ngram(n: int, train_ids, valid_ids, vocab_size: int, ks: Sequence[float] = (1.0, 0.3, 0.1, 0.03, 0.01),
              start_id: int = 0) -> tuple[NGramLM, dict[float, float]]:
    """Count once, then pick the add-k constant with the lowest bits per char on ``valid_ids`` (chapter 8).

    Returns:
        ``(model, scores)``: the model with the best ``k`` and ``{k: validation bits per char}``.
    """
    model = NGramLM(n, vocab_size, ks[0], start_id).fit(train_ids)
    scores = {}
    for k in ks:
        model.k = float(k)
        scores[k] = model.bits_per_char(valid_ids)
    model.k = float(min(scores, key=scores.get))
    return model, scores
