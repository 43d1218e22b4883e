"""Characters as tokens (chapter 8): the text of many reviews as one stream of character ids.

A character vocabulary is tiny (a few hundred symbols) and never meets an unknown word, so
a language model over characters needs no tokenizer. Rare characters (a stray emoji, a
Cyrillic letter) share one ``<unk>`` id, so the vocabulary stays small.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import numpy as np
import torch

from .._checks import check_positive_int

__all__ = ["CharVocab", "reviews_to_text", "random_windows"]

UNK = "\ufffd"  # the replacement character stands for every character outside the vocabulary


def reviews_to_text(texts: Iterable[str]) -> str:
    """Join reviews into one text, a review per line; IMDB's ``<br />`` tags become spaces (chapter 8).

    Case is kept: the model must learn capitals (sentence starts, names) too.
    """
    return "\n".join(" ".join(text.replace("<br />", " ").split()) for text in texts)


class CharVocab:
    """The characters of a training text, each with an id (chapter 8).

    Id 0 is ``<unk>`` (shown as ``\\ufffd``); the others are sorted by code point.

    Args:
        chars: the characters, one string each; ``<unk>`` is added in front.
    """

    def __init__(self, chars: Iterable[str]) -> None:
        chars = list(chars)
        for c in chars:
            if not isinstance(c, str) or len(c) != 1 or c == UNK:
                raise ValueError(f"every vocabulary entry must be a single character other than {UNK!r}, got {c!r}")
        if len(set(chars)) != len(chars):
            raise ValueError("the vocabulary lists a character twice")
        self.chars = [UNK, *sorted(chars)]
        self._codes = np.array([ord(c) for c in self.chars[1:]], dtype=np.int64)  # sorted, for searchsorted

    @classmethod
    def build(cls, text: str, min_count: int = 1) -> CharVocab:
        """The characters that occur at least ``min_count`` times in ``text``."""
        check_positive_int("min_count", min_count)
        counts = Counter(text)
        return cls(c for c, n in counts.items() if n >= min_count and c != UNK)

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> torch.Tensor:
        """``str`` of length ``n`` -> ``(n,)`` ids; ``uint8`` while the vocabulary has at most 256
        entries (a long text stays small), else ``int64``. Unknown characters get id 0."""
        if not isinstance(text, str):
            raise TypeError(f"encode takes a str, got {type(text).__name__}")
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.int64)  # code points
        where = np.searchsorted(self._codes, codes).clip(max=max(len(self._codes) - 1, 0))
        known = self._codes[where] == codes if len(self._codes) else np.zeros(len(codes), dtype=bool)
        ids = np.where(known, where + 1, 0)
        return torch.from_numpy(ids.astype(np.uint8 if len(self) <= 256 else np.int64))

    def decode(self, ids) -> str:
        """Ids (a tensor or a list) -> text; ``<unk>`` shows as ``\\ufffd``."""
        if isinstance(ids, torch.Tensor) and (ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool):
            raise TypeError(f"ids must be integer token ids, got a tensor of dtype {ids.dtype}; use ids.long() if "
                            "these really are ids")
        ids = ids.tolist() if isinstance(ids, torch.Tensor) else list(ids)
        if isinstance(ids, list) and ids and isinstance(ids[0], list):
            raise ValueError("decode takes one sequence of ids (n,); decode a batch row by row, "
                             "e.g. [vocab.decode(row) for row in ids]")
        wrong = [i for i in ids if isinstance(i, bool) or not isinstance(i, (int, np.integer))]
        if wrong:
            raise TypeError(f"ids must be integers, got {wrong[0]!r} ({type(wrong[0]).__name__})")
        bad = [i for i in ids if not 0 <= i < len(self)]
        if bad:
            raise ValueError(f"ids must be in [0, {len(self)}), got {bad[:5]}")
        return "".join(self.chars[i] for i in ids)

    def __repr__(self) -> str:
        return f"CharVocab({len(self)} characters)"


def random_windows(ids: torch.Tensor, block_size: int, batch_size: int,
                   generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """A training batch of random windows from one long token stream (chapter 8).

    Args:
        ids: ``(n,)`` integer token ids (any integer dtype; ``uint8`` keeps a long text small).
        block_size: window length ``t``.
        batch_size: number of windows.
        generator: random generator that picks the window starts.

    Returns:
        ``(x, y)``, both int64 ``(batch_size, block_size)``: ``y`` is ``x`` shifted by one
        position, the token that follows each input token.
    """
    check_positive_int("block_size", block_size)
    check_positive_int("batch_size", batch_size)
    if not isinstance(ids, torch.Tensor):
        raise TypeError(f"ids must be a 1-D torch.Tensor of token ids, got {type(ids).__name__}")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"ids must hold integer token ids, got dtype {ids.dtype}; use ids.long() if these "
                        "really are ids (a float id is not truncated here)")
    if ids.dim() != 1 or ids.size(0) <= block_size:
        raise ValueError(f"ids must be a 1-D stream longer than block_size={block_size}, got shape "
                         f"{tuple(ids.shape)}")
    device = None if generator is None else generator.device  # the generator's, not the default device
    starts = torch.randint(0, ids.size(0) - block_size, (batch_size,), generator=generator,
                           device=device).to(ids.device)
    offsets = torch.arange(block_size + 1, device=ids.device)
    windows = ids[starts[:, None] + offsets].long()  # (batch, block_size + 1)
    return windows[:, :-1], windows[:, 1:]
