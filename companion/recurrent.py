"""Additive attention, the attention of RNN encoder-decoders (chapter 6).

Before the Transformer, attention joined a recurrent decoder to a recurrent encoder
(Bahdanau, Cho and Bengio, 2015). At each output step the decoder's state ``s`` scores every
encoder state ``h_j`` with a small feed-forward network, and the softmax of the scores
weights the encoder states into one context vector for that step::

    score(s, h_j) = v^T tanh(W_q s + W_k h_j)          one number per encoder position
    a = softmax(score(s, h_1), ..., score(s, h_t))     (t,)
    context = sum_j a_j h_j                            (d_key,)

The Transformer's scaled dot product (chapter 1) replaces the network by ``q . k / sqrt(d_k)``.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_positive_int, check_tensor

__all__ = ["AdditiveAttention"]


class AdditiveAttention(nn.Module):
    """``softmax(v^T tanh(W_q s + W_k h_j))`` over the encoder states ``h_j`` (chapter 6).

    Args:
        d_query: width of the decoder state ``s``.
        d_key: width of the encoder states ``h_j``.
        d_hidden: width of the scoring network's hidden layer.
    """

    def __init__(self, d_query: int, d_key: int, d_hidden: int) -> None:
        super().__init__()
        for name, value in (("d_query", d_query), ("d_key", d_key), ("d_hidden", d_hidden)):
            check_positive_int(name, value)
        self.W_q = nn.Linear(d_query, d_hidden, bias=False)
        self.W_k = nn.Linear(d_key, d_hidden)
        self.v = nn.Linear(d_hidden, 1, bias=False)

    def scores(self, query: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
        """``(batch, d_query)`` and ``(batch, t, d_key)`` -> ``(batch, t)`` unnormalised scores."""
        hidden = torch.tanh(self.W_q(query)[:, None, :] + self.W_k(keys))  # (batch, t, d_hidden)
        return self.v(hidden).squeeze(-1)  # (batch, t)

    def forward(self, query: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor | None = None):
        """Attend from one decoder state to every encoder state.

        Args:
            query: ``(batch, d_query)``, the decoder state.
            keys: ``(batch, t, d_key)``, the encoder states (also the values).
            mask: optional bool ``(batch, t)``, ``True`` = may attend (real tokens, not padding).

        Returns:
            ``(context, weights)``: context ``(batch, d_key)``; weights ``(batch, t)``, rows sum to 1.
        """
        check_tensor("query", query, ndim=2, shape_doc="(batch, d_query)")
        check_tensor("keys", keys, ndim=3, shape_doc="(batch, t, d_key)")
        scores = self.scores(query, keys)  # (batch, t)
        if mask is not None:
            if mask.dtype != torch.bool or mask.shape != scores.shape:
                raise ValueError(f"mask must be a bool tensor of shape (batch, t) = {tuple(scores.shape)}, "
                                 f"True where the encoder state is a real token; got {mask.dtype} {tuple(mask.shape)}")
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (batch, t)
        context = (weights.unsqueeze(1) @ keys).squeeze(1)  # (batch, 1, t) @ (batch, t, d_key) -> (batch, d_key)
        return context, weights
