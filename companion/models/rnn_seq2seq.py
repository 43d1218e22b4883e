"""A GRU encoder-decoder, with or without additive attention (chapter 6).

The encoder GRU reads the source; its last state is the decoder's first state. Then, one
output token at a time::

    s_i = GRUCell(embed(y_{i-1}), s_{i-1})                       the decoder's new state
    without attention:  logits_i = out(s_i)                      the source reaches s_i only
                                                                 through the last encoder state
    with attention:     c_i, a_i = AdditiveAttention(s_i, h)     a context per step
                        logits_i = out([s_i; c_i])

Without attention the whole source must fit in one vector of width ``d_hidden``: the
bottleneck chapter 6 measures against the source's length.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .._checks import check_positive_int, check_tokens
from ..recurrent import AdditiveAttention

__all__ = ["GRUSeq2Seq"]


class GRUSeq2Seq(nn.Module):
    """A GRU encoder and a GRU decoder, optionally joined by additive attention (chapter 6).

    Called like :class:`companion.Transformer`: ``model(src, tgt, src_mask)`` with teacher
    forcing, so that :func:`companion.greedy_decode` and the training loop serve both.

    Args:
        vocab_size: token ids (source and target share them).
        d_embed: width of the token embeddings.
        d_hidden: width of the GRU states (and of the attention's scoring network).
        attention: join decoder and encoder by :class:`companion.AdditiveAttention` at every step.
    """

    def __init__(self, vocab_size: int, d_embed: int = 32, d_hidden: int = 128, attention: bool = True) -> None:
        super().__init__()
        for name, value in (("vocab_size", vocab_size), ("d_embed", d_embed), ("d_hidden", d_hidden)):
            check_positive_int(name, value)
        self.has_attention = bool(attention)
        self.embed_src = nn.Embedding(vocab_size, d_embed)
        self.embed_tgt = nn.Embedding(vocab_size, d_embed)
        self.encoder = nn.GRU(d_embed, d_hidden, batch_first=True)
        self.cell = nn.GRUCell(d_embed, d_hidden)
        self.attention = AdditiveAttention(d_hidden, d_hidden, d_hidden) if attention else None
        width = 2 * d_hidden if attention else d_hidden
        self.out = nn.Sequential(nn.Linear(width, d_hidden), nn.Tanh(), nn.Linear(d_hidden, vocab_size))

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None):
        """Run the encoder GRU over the real tokens of each source.

        Args:
            src: int64 ``(batch, t_src)``.
            src_mask: optional bool ``(batch, 1, t_src)``, ``True`` on real tokens (padding at the end).

        Returns:
            ``(states, last)``: states ``(batch, t_src, d_hidden)`` (zeros on padding), last
            ``(batch, d_hidden)``, the state after each source's last real token.
        """
        check_tokens("src", src)
        lengths = self._lengths(src, src_mask)  # (batch,)
        packed = pack_padded_sequence(self.embed_src(src), lengths.cpu(), batch_first=True, enforce_sorted=False)
        states, last = self.encoder(packed)  # last: (1, batch, d_hidden)
        states, _ = pad_packed_sequence(states, batch_first=True, total_length=src.size(1))
        return states, last[0]

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_mask: torch.Tensor | None = None,
                need_weights: bool = False):
        """Teacher-forced decoding of ``tgt`` given ``src``.

        Args:
            src: int64 ``(batch, t_src)``.
            tgt: int64 ``(batch, t_tgt)``, the decoder input (starting with BOS).
            src_mask: optional bool ``(batch, 1, t_src)``, ``True`` on real source tokens.
            need_weights: also return the attention weights.

        Returns:
            ``(logits, weights)``: logits ``(batch, t_tgt, vocab_size)``; weights
            ``(batch, t_tgt, t_src)`` (one row per output step), or ``None`` without attention
            or without ``need_weights``.
        """
        check_tokens("tgt", tgt)
        states, s = self.encode(src, src_mask)  # (batch, t_src, d_hidden), (batch, d_hidden)
        mask = None if src_mask is None else src_mask[:, 0, :]  # (batch, t_src)
        logits, weights = [], []
        for y in self.embed_tgt(tgt).unbind(dim=1):  # one output step at a time: (batch, d_embed)
            s = self.cell(y, s)  # (batch, d_hidden)
            if self.attention is None:
                logits.append(self.out(s))
                continue
            context, a = self.attention(s, states, mask)  # (batch, d_hidden), (batch, t_src)
            logits.append(self.out(torch.cat([s, context], dim=-1)))
            weights.append(a)
        logits = torch.stack(logits, dim=1)  # (batch, t_tgt, vocab_size)
        if need_weights and self.attention is not None:
            return logits, torch.stack(weights, dim=1)  # (batch, t_tgt, t_src)
        return logits, None

    @staticmethod
    def _lengths(src: torch.Tensor, src_mask: torch.Tensor | None) -> torch.Tensor:
        if src_mask is None:
            return torch.full((src.size(0),), src.size(1), dtype=torch.long)
        if src_mask.dtype != torch.bool or src_mask.shape != (src.size(0), 1, src.size(1)):
            raise ValueError(f"src_mask must be a bool tensor (batch, 1, t_src) = ({src.size(0)}, 1, {src.size(1)}), "
                             f"True on real tokens; got {src_mask.dtype} {tuple(src_mask.shape)}")
        lengths = src_mask[:, 0, :].sum(-1)  # (batch,)
        if (lengths == 0).any():
            raise ValueError("every source needs at least one real token (a row of src_mask is all False)")
        return lengths
