"""Counting baselines for chapter 8: n-gram language models with add-k smoothing and with
interpolated Kneser-Ney smoothing, the strongest of the classic counting models.

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
import numbers
from collections.abc import Sequence

import numpy as np
import torch

from .._checks import check_positive_int

__all__ = ["NGramLM", "fit_ngram", "KneserNeyLM", "fit_kneser_ney"]


def _as_ids(name: str, ids, vocab_size: int) -> np.ndarray:
    if isinstance(ids, torch.Tensor):
        ids = ids.cpu().numpy()
    ids = np.asarray(ids)
    if ids.ndim == 1 and ids.size == 0 and ids.dtype == np.float64:  # np.asarray([]): no ids, no dtype
        ids = ids.astype(np.int64)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-D array or tensor of integer token ids, got shape {ids.shape} and "
                         f"dtype {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"{name} must hold ids in [0, vocab_size={vocab_size}), got min {ids.min()} and max "
                         f"{ids.max()}")
    return ids.astype(np.int64)


def _training_ids(ids, vocab_size: int) -> np.ndarray:
    """The ids to count: at least one token."""
    ids = _as_ids("ids", ids, vocab_size)
    if ids.size == 0:
        raise ValueError("ids holds no tokens: an n-gram model is fitted on a stream of at least one token")
    return ids


def _scored_ids(ids, vocab_size: int) -> np.ndarray:
    """The ids to score: at least two tokens (the first is context only, it has no prediction)."""
    ids = _as_ids("ids", ids, vocab_size)
    if ids.size < 2:
        raise ValueError(f"ids must hold at least 2 tokens to be scored (each token after the first is "
                         f"predicted), got {ids.size}")
    return ids


def _check_start_id(start_id, vocab_size: int) -> None:
    """``start_id`` must be an int token id in ``[0, vocab_size)``: never a float or a bool, silently cut."""
    if isinstance(start_id, bool) or not isinstance(start_id, (int, np.integer)):
        raise TypeError(f"start_id must be an int token id, got {type(start_id).__name__} {start_id!r}")
    if not 0 <= start_id < vocab_size:
        raise ValueError(f"start_id must be a token id in [0, {vocab_size}), got {start_id}")


def _ngram_keys(ids: np.ndarray, n: int, vocab_size: int, start_id: int) -> np.ndarray:
    """The key of the n-gram ending at every position of ``ids``: ``(len(ids),)``; the context
    before the first token is padded with ``start_id``."""
    padded = np.concatenate([np.full(n - 1, start_id, dtype=np.int64), ids])
    keys = np.zeros(len(ids), dtype=np.int64)
    for j in range(n):  # the oldest token first: key = (((id_0) V + id_1) V + ...) V + id_{n-1}
        keys = keys * vocab_size + padded[j: j + len(ids)]
    return keys


def _lookup(table_keys: np.ndarray, table_counts: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """The count of each of ``keys`` in a sorted table (0 where absent)."""
    where = np.searchsorted(table_keys, keys).clip(max=len(table_keys) - 1)
    return np.where(table_keys[where] == keys, table_counts[where], 0)


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
        if isinstance(k, bool) or not (isinstance(k, numbers.Real) and math.isfinite(k) and k > 0):
            raise ValueError(f"k must be a finite number > 0 (add-k smoothing), got {k!r}")
        if vocab_size ** n >= 2 ** 62:
            raise ValueError(f"vocab_size ** n = {vocab_size}^{n} does not fit the int64 keys; use a smaller n")
        _check_start_id(start_id, vocab_size)
        self.n, self.vocab_size, self.k, self.start_id = n, vocab_size, float(k), start_id
        self._keys = self._counts = self._context_keys = self._context_counts = None

    def _ngram_keys(self, ids: np.ndarray) -> np.ndarray:
        return _ngram_keys(ids, self.n, self.vocab_size, self.start_id)

    def fit(self, ids) -> NGramLM:
        """Count the n-grams and their contexts in the training stream ``ids`` ``(n_tokens,)``."""
        keys = self._ngram_keys(_training_ids(ids, self.vocab_size))
        self._keys, self._counts = np.unique(keys, return_counts=True)
        self._context_keys, self._context_counts = np.unique(keys // self.vocab_size, return_counts=True)
        return self

    def log2_probs(self, ids) -> np.ndarray:
        """``log2 p(ids[i] | the n - 1 ids before it)`` for every ``i >= 1``: ``(len(ids) - 1,)``."""
        if self._keys is None:
            raise ValueError("the model has no counts yet: call fit(train_ids) first")
        keys = self._ngram_keys(_as_ids("ids", ids, self.vocab_size))[1:]
        counts = _lookup(self._keys, self._counts, keys)
        context_counts = _lookup(self._context_keys, self._context_counts, keys // self.vocab_size)
        return np.log2(counts + self.k) - np.log2(context_counts + self.k * self.vocab_size)

    def bits_per_char(self, ids) -> float:
        """Mean ``-log2 p`` over ``ids[1:]``, the same tokens :func:`companion.evaluate_bits_per_char` scores."""
        return float(-self.log2_probs(_scored_ids(ids, self.vocab_size)).mean())

    def __repr__(self) -> str:
        return f"NGramLM(n={self.n}, vocab_size={self.vocab_size}, k={self.k})"


def fit_ngram(n: int, train_ids, valid_ids, vocab_size: int, ks: Sequence[float] = (1.0, 0.3, 0.1, 0.03, 0.01),
              start_id: int = 0) -> tuple[NGramLM, dict[float, float]]:
    """Count once, then pick the add-k constant with the lowest bits per char on ``valid_ids`` (chapter 8).

    Returns:
        ``(model, scores)``: the model with the best ``k`` and ``{k: validation bits per char}``.
    """
    if isinstance(ks, (int, float, str)) or not hasattr(ks, "__iter__"):
        raise TypeError(f"ks must be a sequence of add-k constants to try, e.g. ks=(1.0, 0.1) or ks=({ks!r},), "
                        f"got {ks!r}")
    ks = tuple(ks)
    if not ks:
        raise ValueError("ks is empty: give at least one add-k constant to try, e.g. ks=(1.0, 0.1)")
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, numbers.Real) or not (math.isfinite(k) and k > 0):
            raise ValueError(f"every k in ks must be a finite number > 0 (add-k smoothing), got {k!r} in {ks}")
    model = NGramLM(n, vocab_size, ks[0], start_id).fit(train_ids)
    scores = {}
    for k in ks:
        model.k = float(k)
        scores[k] = model.bits_per_char(valid_ids)
    model.k = float(min(scores, key=scores.get))
    return model, scores


class KneserNeyLM:
    """A character (or any token) n-gram model with interpolated Kneser-Ney smoothing (chapter 8).

    Add-k gives an unseen continuation the same tiny share whatever the context. Kneser-Ney
    instead takes a fixed *discount* ``D`` off every seen count and gives the freed mass to the
    next shorter context, recursively down to the uniform distribution::

        p_m(x | c) = (max(N_m(c x) - D_m(N_m(c x)), 0) + gamma_m(c) p_(m-1)(x | c')) / N_m(c .)

    where ``c'`` is ``c`` without its oldest token, ``N_m(c .) = sum_x N_m(c x)`` and
    ``gamma_m(c) = sum_x D_m(N_m(c x))`` is exactly the mass taken off, so every distribution
    sums to 1; a context never seen (``N_m(c .) = 0``) uses ``p_(m-1)`` alone, and
    ``p_0 = 1 / V``. At the highest order ``N_n`` is the count of the n-gram; at lower orders
    it is the *continuation count*, the number of different tokens seen before it: a character
    that follows many contexts (a space) is a better guess for a new context than one that is
    frequent after a single context (the ``k`` of ``ok``, say). This is the interpolated
    Kneser-Ney of Chen and Goodman (1999).

    Args:
        n: the order: each token is predicted from the ``n - 1`` before it.
        vocab_size: number of token ids ``V``.
        discount: ``None`` for *modified* Kneser-Ney, three discounts per order (for counts 1,
            2 and 3 or more) estimated from the counts of counts as Chen and Goodman do; or one
            number in ``(0, 1]`` used for every count and order.
        start_id: the id the context is padded with before the first token.
    """

    def __init__(self, n: int, vocab_size: int, discount: float | None = None, start_id: int = 0) -> None:
        check_positive_int("n", n)
        check_positive_int("vocab_size", vocab_size)
        if discount is not None and not (isinstance(discount, numbers.Real) and not isinstance(discount, bool)
                                         and 0 < discount <= 1):
            raise ValueError(f"discount must be None (modified Kneser-Ney) or a number in (0, 1], got {discount!r}")
        if vocab_size ** n >= 2 ** 62:
            raise ValueError(f"vocab_size ** n = {vocab_size}^{n} does not fit the int64 keys; use a smaller n")
        _check_start_id(start_id, vocab_size)
        discount = None if discount is None else float(discount)  # a NumPy scalar is a number too
        self.n, self.vocab_size, self.discount, self.start_id = n, vocab_size, discount, start_id
        self._orders = None  # per order m = 1..n: the tables below

    def _ngram_keys(self, ids: np.ndarray) -> np.ndarray:
        """The key of the n-gram ending at every position (the m-gram's key is this one mod V^m)."""
        return _ngram_keys(ids, self.n, self.vocab_size, self.start_id)

    def _discounts(self, counts: np.ndarray) -> np.ndarray:
        """``[0, D1, D2, D3+]`` for one order, from its counts (Chen and Goodman's estimates)."""
        if self.discount is not None:
            return np.array([0.0, self.discount, self.discount, self.discount])
        n_r = [int(np.sum(counts == r)) for r in (1, 2, 3, 4)]
        if min(n_r) == 0:  # too little data for the estimates: one discount, as the plain method
            return np.array([0.0, 0.75, 0.75, 0.75])
        y = n_r[0] / (n_r[0] + 2 * n_r[1])
        d = [r - (r + 1) * y * n_r[r] / n_r[r - 1] for r in (1, 2, 3)]
        # an estimate at or below 0 (odd counts of counts in little data) would leave a context no
        # mass for the shorter ones, and its unseen continuations probability 0: keep it above 0
        return np.array([0.0] + [float(np.clip(d_r, 0.05, r)) for r, d_r in zip((1, 2, 3), d)])

    def fit(self, ids) -> KneserNeyLM:
        """Count every order's n-grams (raw at the top, continuation counts below) in ``ids``."""
        keys = self._ngram_keys(_training_ids(ids, self.vocab_size))
        V = self.vocab_size
        grams, counts = np.unique(keys, return_counts=True)  # order n: raw counts
        orders = {}
        for m in range(self.n, 0, -1):
            if m < self.n:  # continuation counts: how many different tokens precede each m-gram
                grams, counts = np.unique(orders[m + 1]["grams"] % V ** m, return_counts=True)
            discounts = self._discounts(counts)
            contexts, first = np.unique(grams // V, return_index=True)  # grams are sorted: groups are runs
            level = np.minimum(counts, 3)  # 1, 2 or 3 (3 or more)
            orders[m] = {"grams": grams, "counts": counts, "discounts": discounts, "contexts": contexts,
                         "totals": np.add.reduceat(counts, first),  # N_m(c .)
                         "gammas": np.add.reduceat(discounts[level], first)}  # the mass taken off
        self._orders = orders
        return self

    def log2_probs(self, ids) -> np.ndarray:
        """``log2 p(ids[i] | the n - 1 ids before it)`` for every ``i >= 1``: ``(len(ids) - 1,)``."""
        if self._orders is None:
            raise ValueError("the model has no counts yet: call fit(train_ids) first")
        keys = self._ngram_keys(_as_ids("ids", ids, self.vocab_size))[1:]
        return np.log2(self._probs(keys))

    def _probs(self, keys: np.ndarray) -> np.ndarray:
        """``p(x | c)`` for n-gram keys ``(c, x)``, built up from the uniform distribution."""
        V = self.vocab_size
        p = np.full(len(keys), 1.0 / V)  # p_0
        for m in range(1, self.n + 1):
            t = self._orders[m]
            grams = keys % V ** m
            count = _lookup(t["grams"], t["counts"], grams)
            where = np.searchsorted(t["contexts"], grams // V).clip(max=len(t["contexts"]) - 1)
            seen = t["contexts"][where] == grams // V
            total = np.where(seen, t["totals"][where], 0)
            gamma = np.where(seen, t["gammas"][where], 0.0)
            discounted = np.maximum(count - t["discounts"][np.minimum(count, 3)], 0.0)
            p = np.where(total > 0, (discounted + gamma * p) / np.maximum(total, 1), p)
        return p

    def next_probs(self, context) -> np.ndarray:
        """The distribution of the next token after ``context`` (its last ``n - 1`` ids count): ``(V,)``."""
        ids = _as_ids("context", context, self.vocab_size)
        if self._orders is None:
            raise ValueError("the model has no counts yet: call fit(train_ids) first")
        padded = np.concatenate([np.full(self.n - 1, self.start_id, dtype=np.int64), ids])[-(self.n - 1):] \
            if self.n > 1 else np.zeros(0, dtype=np.int64)
        key = 0
        for token in padded:
            key = key * self.vocab_size + int(token)
        return self._probs(key * self.vocab_size + np.arange(self.vocab_size, dtype=np.int64))

    def bits_per_char(self, ids) -> float:
        """Mean ``-log2 p`` over ``ids[1:]``, the same tokens :func:`companion.evaluate_bits_per_char` scores."""
        return float(-self.log2_probs(_scored_ids(ids, self.vocab_size)).mean())

    def __repr__(self) -> str:
        kind = "modified" if self.discount is None else f"discount={self.discount}"
        return f"KneserNeyLM(n={self.n}, vocab_size={self.vocab_size}, {kind})"


def fit_kneser_ney(n: int, train_ids, valid_ids, vocab_size: int,
                   discounts: Sequence[float | None] = (None, 0.6, 0.75, 0.9, 1.0),
                   start_id: int = 0) -> tuple[KneserNeyLM, dict]:
    """Count once, then pick the discount (``None``: modified Kneser-Ney's estimates) with the
    lowest bits per char on ``valid_ids`` (chapter 8).

    Returns:
        ``(model, scores)``: the model with the best discount and ``{discount: validation bits per char}``.
    """
    if discounts is None or isinstance(discounts, (int, float, str)) or not hasattr(discounts, "__iter__"):
        raise TypeError(f"discounts must be a sequence of discounts to try, e.g. discounts=(None, 0.75) or "
                        f"discounts=({discounts!r},), got {discounts!r}")
    discounts = tuple(discounts)
    if not discounts:
        raise ValueError("discounts is empty: give at least one to try (None = modified Kneser-Ney's estimates)")
    model = KneserNeyLM(n, vocab_size, discounts[0], start_id).fit(train_ids)
    scores = {}
    for discount in discounts:
        if discount != model.discount:
            model = KneserNeyLM(n, vocab_size, discount, start_id).fit(train_ids)
        scores[discount] = model.bits_per_char(valid_ids)
    best = min(scores, key=scores.get)
    return (model if model.discount == best else KneserNeyLM(n, vocab_size, best, start_id).fit(train_ids)), scores
