"""Token embeddings plus positions: what feeds the first layer (chapters 5 and 6)."""

from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import check_choice, check_id_range, check_positive_int, check_probability, check_tokens
from .positional import LearnedPositionalEmbedding, SinusoidalPositionalEncoding, _check_length

__all__ = ["TokenEmbedding"]


class TokenEmbedding(nn.Module):
    """``Dropout(Embedding(tokens) * sqrt(d_model) + PositionalEncoding)`` (chapter 5).

    The ``sqrt(d_model)`` factor is the paper's (section 3.4): it brings the embeddings to
    the scale of the positional encodings.

    Args:
        vocab_size: number of token ids.
        d_model: embedding width.
        max_len: longest sequence accepted.
        positional: ``"sinusoidal"`` (fixed), ``"learned"``, or ``"none"``: no positions
            added, for models whose attention rotates queries and keys by position
            instead (rotary, chapters 5 and 10).
        dropout: dropout on the sum.
        pad_id: optional id whose embedding is kept at zero (``nn.Embedding``'s ``padding_idx``).
    """

    def __init__(
        self,
        vocab_size: int,
        d_model: int,
        max_len: int = 512,
        positional: str = "sinusoidal",
        dropout: float = 0.0,
        pad_id: int | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        check_positive_int("max_len", max_len)
        check_choice("positional", positional, ("sinusoidal", "learned", "none"))
        check_probability("dropout", dropout)
        if pad_id is not None and not (0 <= pad_id < vocab_size):
            raise ValueError(f"pad_id must be a token id in [0, {vocab_size}), got {pad_id}")
        self.vocab_size, self.d_model, self.max_len = vocab_size, d_model, max_len
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=pad_id)
        nn.init.normal_(self.embedding.weight, std=1.0 / math.sqrt(d_model))
        if pad_id is not None:
            with torch.no_grad():
                self.embedding.weight[pad_id].zero_()
        if positional == "sinusoidal":
            self.positional = SinusoidalPositionalEncoding(d_model, max_len)
        elif positional == "learned":
            self.positional = LearnedPositionalEmbedding(max_len, d_model)
        else:
            self.positional = None
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens: torch.Tensor, offset: int = 0, *, check_range: bool = True) -> torch.Tensor:
        """int ``(batch, t)`` -> ``(batch, t, d_model)``; ``offset`` is the position of the
        first token (``0``, or the number of tokens already cached, chapter 8).

        ``check_range=False`` skips the check that every id is in ``[0, vocab_size)``, which
        reads the ids' minimum and maximum back from the device (on a GPU, a wait for it):
        for ids known to be in range, such as the tokens a model just sampled from its own
        vocabulary, one at a time (:func:`companion.models.generate`).
        """
        check_tokens("tokens", tokens)
        if check_range:
            check_id_range("tokens", tokens, self.vocab_size)
        x = self.embedding(tokens) * math.sqrt(self.d_model)  # (batch, t, d_model)
        if self.positional is None:  # positions enter the attention instead (rotary)
            _check_length(x, self.d_model, self.max_len, offset)  # the same limits as with positions
            return self.dropout(x)
        return self.dropout(self.positional(x, offset))
