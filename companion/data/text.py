"""From review text to padded batches of token ids (chapter 7)."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Sequence

import torch

from .._checks import check_choice, check_positive_int
from ..masks import padding_mask

__all__ = ["tokenize", "Vocab", "pad_batch"]

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[!?]")


def tokenize(text: str) -> list[str]:
    """Lower-case words (with their apostrophes: ``don't``) and the marks ``!`` and ``?`` (chapter 7).

    IMDB's ``<br />`` line breaks are dropped; other punctuation is too.
    """
    return _TOKEN.findall(text.lower().replace("<br />", " "))


class Vocab:
    """Token <-> id, with ``<pad>`` = 0 and ``<unk>`` = 1 (chapter 7).

    Build it from the training split only (:meth:`build`), so nothing about the test
    reviews leaks into the model.
    """

    PAD, UNK = "<pad>", "<unk>"
    pad_id, unk_id = 0, 1

    def __init__(self, tokens: Sequence[str]) -> None:
        if list(tokens[:2]) != [self.PAD, self.UNK]:
            raise ValueError(f"a Vocab starts with {self.PAD!r} and {self.UNK!r}, got {list(tokens[:2])}")
        self.tokens = list(tokens)
        self.index = {token: i for i, token in enumerate(self.tokens)}
        if len(self.index) != len(self.tokens):
            raise ValueError("a Vocab's tokens must be distinct")

    @classmethod
    def build(cls, token_lists: Iterable[Sequence[str]], max_size: int | None = None, min_freq: int = 1) -> Vocab:
        """The ``max_size - 2`` most frequent tokens seen at least ``min_freq`` times, plus pad and unk.

        Ties in frequency are broken alphabetically, so the result never depends on order.
        """
        counts = Counter(token for tokens in token_lists for token in tokens)
        ranked = sorted((t for t, c in counts.items() if c >= min_freq), key=lambda t: (-counts[t], t))
        if max_size is not None:
            check_positive_int("max_size", max_size)
            if max_size < 3:
                raise ValueError(f"max_size must leave room for <pad>, <unk> and one word, got {max_size}")
            ranked = ranked[: max_size - 2]
        return cls([cls.PAD, cls.UNK, *ranked])

    def __len__(self) -> int:
        return len(self.tokens)

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Tokens -> ids; unknown tokens become ``unk_id``."""
        return [self.index.get(token, self.unk_id) for token in tokens]

    def decode(self, ids: Iterable[int]) -> list[str]:
        """Ids -> tokens."""
        return [self.tokens[i] for i in ids]

    def to_json(self) -> str:
        return json.dumps(self.tokens)

    @classmethod
    def from_json(cls, text: str) -> Vocab:
        return cls(json.loads(text))


def pad_batch(sequences: Sequence[Sequence[int]], max_len: int, pad_id: int = 0,
              truncate: str = "head") -> tuple[torch.Tensor, torch.Tensor]:
    """Cut each sequence to ``max_len`` ids and pad the batch to its longest (chapter 7).

    Args:
        sequences: ``batch`` lists of token ids.
        max_len: the most ids kept per sequence.
        pad_id: the id used for padding.
        truncate: which part of a long sequence to keep: ``"head"`` (the start),
            ``"tail"`` (the end, as Keras' ``pad_sequences`` keeps by default) or
            ``"head_tail"`` (the first ``max_len - max_len // 2`` ids and the last
            ``max_len // 2``: reviews often conclude at the end).

    Returns:
        ``(tokens, keep)``: int64 ``(batch, t)`` with ``t = min(max_len, longest)``, and the
        bool padding mask ``(batch, 1, t)``, ``True`` at real tokens (may attend).
    """
    check_positive_int("max_len", max_len)
    check_choice("truncate", truncate, ("head", "tail", "head_tail"))
    if len(sequences) == 0:
        raise ValueError("pad_batch needs at least one sequence")
    cut = []
    for seq in sequences:
        seq = list(seq)
        if len(seq) == 0:
            raise ValueError("an empty sequence cannot be classified; drop it or give it an <unk> id")
        if len(seq) > max_len:
            head = {"head": max_len, "tail": 0, "head_tail": max_len - max_len // 2}[truncate]
            seq = seq[:head] + (seq[len(seq) - (max_len - head):] if max_len - head else [])
        cut.append(seq)
    t = max(len(seq) for seq in cut)
    tokens = torch.full((len(cut), t), pad_id, dtype=torch.long)
    for row, seq in enumerate(cut):
        tokens[row, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    keep = padding_mask(torch.tensor([len(seq) for seq in cut]), max_len=t)  # (batch, 1, t)
    return tokens, keep
