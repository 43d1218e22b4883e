"""An attention-only Transformer: the model in which induction heads are found (chapter 11).

Token embeddings (plus learned positions, or none), then ``num_layers`` causal
:class:`companion.MultiHeadAttention` layers, each adding its output to the residual stream,
then a linear unembedding. No feed-forward network and no LayerNorm: the residual stream
is the embedding plus a sum of heads' outputs, so what a head reads is what earlier heads
wrote (Elhage et al., 2021, study such models)::

    x_0 = embed(ids)                        (batch, t, d_model)
    x_l = x_{l-1} + Attention_l(x_{l-1})    for l = 1 .. num_layers, causal
    logits = x_L W_U^T                      (batch, t, vocab)
"""

from __future__ import annotations

import torch
from torch import nn

from .._checks import check_positive_int, check_tokens
from ..embedding import TokenEmbedding
from ..masks import causal_mask
from ..multihead import MultiHeadAttention

__all__ = ["AttentionOnlyLM"]


class AttentionOnlyLM(nn.Module):
    """``num_layers`` causal attention layers over a token embedding, no MLPs, no norms (chapter 11).

    Args:
        vocab_size: number of token ids.
        d_model: width of the residual stream.
        num_heads: heads per layer; ``d_k = d_model // num_heads``.
        num_layers: attention layers.
        max_len: longest sequence accepted.
        positional: ``"learned"`` positions added to the tokens, or ``"none"``.

    Parameters: ``embedding`` (a :class:`companion.TokenEmbedding`), ``layers`` (a
    ``ModuleList`` of :class:`companion.MultiHeadAttention`) and ``unembed``
    (``Linear(d_model, vocab_size)``, no bias).
    """

    def __init__(self, vocab_size: int, d_model: int = 64, num_heads: int = 4, num_layers: int = 2,
                 max_len: int = 64, positional: str = "learned") -> None:
        super().__init__()
        check_positive_int("num_layers", num_layers)
        self.embedding = TokenEmbedding(vocab_size, d_model, max_len, positional=positional)
        self.layers = nn.ModuleList(MultiHeadAttention(d_model, num_heads, dropout=0.0)
                                    for _ in range(num_layers))
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)
        self.num_heads = num_heads

    def forward(self, ids: torch.Tensor, need_weights: bool = False,
                head_masks: list[torch.Tensor | None] | None = None
                ) -> tuple[torch.Tensor, list[torch.Tensor] | None]:
        """Next-token logits at every position.

        Args:
            ids: int64 ``(batch, t)``.
            need_weights: also return each layer's attention weights.
            head_masks: ``None``, or one entry per layer: ``None`` or a ``(num_heads,)`` float
                tensor multiplying each head's output (``0`` switches a head off, chapter 4).

        Returns:
            ``(logits, weights)``: logits ``(batch, t, vocab)``; weights ``None`` or a list of
            ``num_layers`` tensors ``(batch, num_heads, t, t)``.
        """
        check_tokens("ids", ids)
        if ids.dim() != 2:
            raise ValueError(f"ids must be (batch, t), got shape {tuple(ids.shape)}")
        if head_masks is not None and len(head_masks) != len(self.layers):
            raise ValueError(f"head_masks must hold one entry per layer ({len(self.layers)}), got {len(head_masks)}")
        x = self.embedding(ids)  # (batch, t, d_model): the residual stream
        mask = causal_mask(ids.size(1), device=ids.device)  # (t, t)
        all_weights = []
        for i, attention in enumerate(self.layers):
            head_mask = None if head_masks is None else head_masks[i]
            out, weights = attention(x, x, x, mask=mask, need_weights=need_weights, head_mask=head_mask)
            x = x + out  # each layer adds what its heads write
            all_weights.append(weights)
        return self.unembed(x), (all_weights if need_weights else None)
