"""A Transformer-encoder sequence classifier (chapter 7, IMDB sentiment)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._checks import check_choice, check_positive_int, check_tokens, describe
from ..masks import padding_mask
from ..pooling import masked_mean
from ..bigram_embedding import BigramEmbedding
from ..transformer import Encoder

__all__ = ["TransformerClassifier", "POOLINGS"]

POOLINGS = ("max", "mean", "cls")


class TransformerClassifier(nn.Module):
    """Embeddings + positions (+ optional bigram embeddings), encoder layers, pooling over time, a linear head (chapter 7).

    Pooling turns ``(batch, t, d_model)`` into one vector per sequence:

    * ``"max"``: the element-wise maximum over the real (non-padding) tokens;
    * ``"mean"``: the average over the real tokens;
    * ``"cls"``: a learned ``[CLS]`` token is prepended to every sequence (it gets the id
      ``vocab_size``, one past the vocabulary) and its final representation is used.

    Padding is masked out of attention and out of pooling: the positions the caller's ``keep``
    mask marks ``False`` (from :func:`companion.pad_batch`), or else the tokens equal to ``pad_id``.

    Args:
        vocab_size: number of token ids.
        num_classes: number of output classes.
        d_model, num_heads, num_layers, d_ff, dropout, activation, norm_first, positional:
            as for :class:`companion.Encoder`.
        max_len: longest input sequence (the ``[CLS]`` token does not count).
        pooling: ``"max"``, ``"mean"`` or ``"cls"``.
        pad_id: the padding id, or ``None`` if inputs are never padded.
        bigram_keys: optional table of frequent word pairs (:func:`companion.count_bigrams`);
            with it, each position's embedding also gets the vector of the pair that ends
            there (:class:`companion.BigramEmbedding`). ``None``: words only.
    """

    def __init__(self, vocab_size: int, num_classes: int, d_model: int = 32, num_heads: int = 2,
                 num_layers: int = 1, d_ff: int | None = None, dropout: float = 0.1, activation: str = "relu",
                 norm_first: bool = False, max_len: int = 512, positional: str = "sinusoidal",
                 pooling: str = "max", pad_id: int | None = 0, bigram_keys: torch.Tensor | None = None) -> None:
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("num_classes", num_classes)
        check_positive_int("max_len", max_len)
        check_choice("pooling", pooling, POOLINGS)
        self.vocab_size, self.pooling, self.pad_id, self.max_len = vocab_size, pooling, pad_id, max_len
        extra = 1 if pooling == "cls" else 0  # the [CLS] id and position
        self.encoder = Encoder(vocab_size + extra, d_model, num_heads, num_layers, d_ff=d_ff, dropout=dropout,
                               activation=activation, norm_first=norm_first, max_len=max_len + extra,
                               positional=positional, pad_id=pad_id)
        self.bigrams = None if bigram_keys is None else BigramEmbedding(bigram_keys, vocab_size, d_model, dropout)
        self.head = nn.Linear(d_model, num_classes)

    def forward(self, tokens: torch.Tensor, keep: torch.Tensor | None = None, need_weights: bool = False):
        """Classify each sequence: :meth:`encode`, then :meth:`pool`, then the linear head.

        Args:
            tokens: int ``(batch, t)``, padded; ``t <= max_len``.
            keep: bool ``(batch, 1, t)`` or ``(batch, t)``, ``True`` at real tokens: the mask
                :func:`companion.pad_batch` returns with the tokens. ``None``: every position
                whose id is ``pad_id`` is padding (then no real token may have that id).
            need_weights: also return each layer's attention weights.

        Returns:
            ``(logits, weights)``: logits ``(batch, num_classes)``; weights ``None`` or a
            list of ``(batch, num_heads, t', t')`` per layer, where ``t' = t + 1`` with
            ``"cls"`` pooling (index 0 is ``[CLS]``) and ``t`` otherwise.
        """
        x, keep, weights = self.encode(tokens, keep, need_weights=need_weights)
        return self.head(self.pool(x, keep)), weights

    def encode(self, tokens: torch.Tensor, keep: torch.Tensor | None = None, need_weights: bool = False):
        """The per-token representations that pooling summarises (what :meth:`forward` runs first).

        Args:
            tokens, keep, need_weights: as for :meth:`forward`.

        Returns:
            ``(x, keep, weights)``: x ``(batch, t', d_model)``; keep, the bool padding mask
            ``(batch, 1, t')`` (``None`` when no mask was given and there is no ``pad_id``);
            weights as in :meth:`forward`.
        """
        x, keep = self.embed(tokens, keep)  # (batch, t', d_model), (batch, 1, t') or None
        x, weights = self.encoder.encode(x, mask=keep, need_weights=need_weights)  # (batch, t', d_model)
        return x, keep, weights

    def embed(self, tokens: torch.Tensor, keep: torch.Tensor | None = None):
        """What the encoder layers read: token embeddings + positions (+ the pair ending at each word).

        Args:
            tokens, keep: as for :meth:`forward`.

        Returns:
            ``(x, keep)``: x ``(batch, t', d_model)``; keep as :meth:`encode` returns it.
        """
        check_tokens("tokens", tokens, pad_hint=" padded with pad_id")
        if tokens.size(1) > self.max_len:
            raise ValueError(
                f"sequence length {tokens.size(1)} is longer than max_len={self.max_len}; "
                f"truncate the reviews or build the classifier with max_len >= {tokens.size(1)}"
            )
        keep = self._given_mask(tokens, keep)  # (batch, 1, t) or None
        words = tokens  # (batch, t), without [CLS]
        if self.pooling == "cls":  # id vocab_size is [CLS]'s: the embedding's own range would allow it
            cls = torch.full((tokens.size(0), 1), self.vocab_size, dtype=tokens.dtype, device=tokens.device)
            tokens = torch.cat([cls, tokens], dim=1)  # (batch, 1 + t)
            if keep is not None:  # [CLS] is real: (batch, 1, t) -> (batch, 1, 1 + t)
                keep = F.pad(keep, (1, 0), value=True)
        if keep is None and self.pad_id is not None:
            keep = padding_mask(tokens=tokens, pad_id=self.pad_id)  # (batch, 1, t')
        self._check_ids(words, keep)
        x = self.encoder.embed(tokens, check_range=False)  # (batch, t', d_model): checked above
        if self.bigrams is not None:
            pairs = self.bigrams(words)  # (batch, t, d_model): the pair ending at each word
            x = x + (F.pad(pairs, (0, 0, 1, 0)) if self.pooling == "cls" else pairs)  # [CLS] ends no pair
        return x, keep

    @staticmethod
    def _given_mask(tokens: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor | None:
        """The caller's mask as bool ``(batch, 1, t)``, after checking it fits ``tokens``."""
        if keep is None:
            return None
        if not isinstance(keep, torch.Tensor) or keep.dtype != torch.bool:
            raise TypeError(f"keep must be a bool tensor (batch, 1, t) or (batch, t), True at real tokens, "
                            f"as pad_batch returns it; got {describe(keep)}")
        if keep.dim() == 2:
            keep = keep[:, None, :]  # (batch, t) -> (batch, 1, t)
        if keep.dim() != 3 or keep.size(1) != 1 or keep.shape[::2] != tokens.shape:
            raise ValueError(f"keep must be (batch, 1, t) or (batch, t) for tokens {tuple(tokens.shape)}, "
                             f"got {tuple(keep.shape)}")
        return keep.to(tokens.device)

    def _check_ids(self, words: torch.Tensor, keep: torch.Tensor | None) -> None:
        """Every id in ``[0, vocab_size)`` and no sequence all padding: one read from the device."""
        if words.numel() == 0:
            return
        facts = [*torch.aminmax(words)]
        if keep is not None:
            facts.append((~keep.any(dim=-1)).sum())  # sequences with no real token
        low, high, *empty = torch.stack(facts).tolist()
        if low < 0 or high >= self.vocab_size:
            raise ValueError(f"token ids must be in [0, vocab_size={self.vocab_size}), got min {low} and max "
                             f"{high}; map unknown words to an <unk> id")
        if empty and empty[0]:
            raise ValueError("a sequence in the batch is entirely padding; every sequence needs at least one "
                             "real token")

    def pool(self, x: torch.Tensor, keep: torch.Tensor | None) -> torch.Tensor:
        """``(batch, t, d_model)`` and bool ``keep`` ``(batch, 1, t)`` -> ``(batch, d_model)``."""
        if self.pooling == "cls":
            return x[:, 0]
        if keep is None:
            return x.max(dim=1).values if self.pooling == "max" else x.mean(dim=1)
        if self.pooling == "max":
            return x.masked_fill(~keep.transpose(1, 2), torch.finfo(x.dtype).min).max(dim=1).values
        return masked_mean(x, keep[:, 0])  # keep (batch, 1, t) -> (batch, t): the real words' mean
