"""Encoder and decoder layers (chapter 6).

Each sublayer (attention or feed-forward) is wrapped in a residual connection and a
LayerNorm. Where the LayerNorm goes is a real choice, and this module makes it explicit:

* ``norm_first=False`` (default, "post-norm", the paper's Figure 1 and PyTorch's default)::

      x = LayerNorm(x + Dropout(Sublayer(x)))

* ``norm_first=True`` ("pre-norm", what The Annotated Transformer's code and most modern
  models do; it trains more stably when deep, and the stack then needs one final
  LayerNorm, which :class:`companion.Encoder` adds)::

      x = x + Dropout(Sublayer(LayerNorm(x)))

Both equal PyTorch's ``nn.TransformerEncoderLayer`` / ``nn.TransformerDecoderLayer`` with
the same ``norm_first``, ``batch_first=True`` and the same weights.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_positive_int, check_tensor
from .feedforward import PositionwiseFeedForward
from .kv_cache import KVCache
from .multihead import MultiHeadAttention

__all__ = ["EncoderLayer", "DecoderLayer"]


class _Layer(nn.Module):
    """What encoder and decoder layers share: sizes, feed-forward block, residual wiring."""

    def __init__(self, d_model, d_ff, dropout, activation, norm_first, layer_norm_eps, bias, num_norms):
        super().__init__()
        check_positive_int("d_model", d_model)
        d_ff = 4 * d_model if d_ff is None else d_ff
        self.d_model, self.norm_first = d_model, norm_first
        self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout, activation, bias)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias) for _ in range(num_norms))
        self.dropouts = nn.ModuleList(nn.Dropout(dropout) for _ in range(num_norms))

    def _sublayer(self, i: int, x: torch.Tensor, sublayer) -> tuple[torch.Tensor, object]:
        """Apply sublayer ``i`` with its residual connection and LayerNorm.

        ``sublayer`` maps ``(batch, t, d_model)`` to ``(output, extra)``; ``extra`` (the
        attention weights, or ``None``) is passed through.
        """
        norm, dropout = self.norms[i], self.dropouts[i]
        if self.norm_first:
            out, extra = sublayer(norm(x))
            return x + dropout(out), extra
        out, extra = sublayer(x)
        return norm(x + dropout(out)), extra

    def _feed_forward(self, x: torch.Tensor) -> tuple[torch.Tensor, None]:
        return self.feed_forward(x), None

    def _check_x(self, name: str, x) -> None:
        check_tensor(name, x, ndim=3, shape_doc="(batch, seq, d_model)")
        if x.size(-1) != self.d_model:
            raise ValueError(f"{name} must have last dimension d_model={self.d_model}, got shape {tuple(x.shape)}")


class EncoderLayer(_Layer):
    """Self-attention then feed-forward, each with residual + LayerNorm (chapter 6).

    Args:
        d_model: width of the token representations.
        num_heads: attention heads; must divide ``d_model``.
        d_ff: hidden width of the feed-forward block; default ``4 * d_model``.
        dropout: dropout on attention weights, in the feed-forward block and on each
            sublayer's output.
        activation: ``"relu"`` or ``"gelu"``.
        norm_first: ``False`` for post-norm (the paper), ``True`` for pre-norm.
        layer_norm_eps: the LayerNorm epsilon.
        bias: whether linear layers and LayerNorms have biases.
        rotary: rotary position embeddings in the self-attention (chapter 5; see
            :class:`companion.MultiHeadAttention`).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
        rotary: bool = False,
    ) -> None:
        super().__init__(d_model, d_ff, dropout, activation, norm_first, layer_norm_eps, bias, num_norms=2)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias, rotary=rotary)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = False,
        cache: KVCache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Encode ``x``; with the causal mask, the same layer is a GPT block (chapter 8).

        Args:
            x: ``(batch, t, d_model)``.
            mask: optional bool, ``True`` = may attend; ``(batch, 1, t)`` for padding, or
                any shape :class:`MultiHeadAttention` accepts.
            need_weights: also return the self-attention weights.
            cache: a :class:`companion.KVCache` for the self-attention (chapter 8): ``x``
                holds only the new positions, which also attend to the cached ones.

        Returns:
            ``(output, weights)``: output ``(batch, t, d_model)``; weights
            ``(batch, num_heads, t, t_k)`` or ``None`` (``t_k = t`` plus the cached positions).
        """
        self._check_x("x", x)
        x, weights = self._sublayer(
            0, x, lambda h: self.self_attn(h, h, h, mask=mask, need_weights=need_weights, cache=cache))
        x, _ = self._sublayer(1, x, self._feed_forward)
        return x, weights


class DecoderLayer(_Layer):
    """Masked self-attention, cross-attention to the encoder output, then feed-forward (chapter 6).

    Takes the same arguments as :class:`EncoderLayer`; the cross-attention's queries come
    from the decoder, its keys and values from the encoder output (``memory``).
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int | None = None,
        dropout: float = 0.1,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
    ) -> None:
        super().__init__(d_model, d_ff, dropout, activation, norm_first, layer_norm_eps, bias, num_norms=3)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor] | None]:
        """Decode ``x`` while attending to ``memory``.

        Args:
            x: ``(batch, t_tgt, d_model)``, the target so far.
            memory: ``(batch, t_src, d_model)``, the encoder output.
            mask: bool self-attention mask, ``True`` = may attend, usually
                ``causal_mask(t_tgt)`` (and-ed with target padding); ``None`` = no mask.
            memory_mask: bool mask over the memory, e.g. source padding ``(batch, 1, t_src)``.
            need_weights: also return both attention maps.

        Returns:
            ``(output, weights)``: output ``(batch, t_tgt, d_model)``; weights ``None`` or a
            dict with ``"self"`` ``(batch, num_heads, t_tgt, t_tgt)`` and ``"cross"``
            ``(batch, num_heads, t_tgt, t_src)``.
        """
        self._check_x("x", x)
        self._check_x("memory", memory)
        x, self_weights = self._sublayer(0, x, lambda h: self.self_attn(h, h, h, mask=mask, need_weights=need_weights))
        x, cross_weights = self._sublayer(
            1, x, lambda h: self.cross_attn(h, memory, memory, mask=memory_mask, need_weights=need_weights)
        )
        x, _ = self._sublayer(2, x, self._feed_forward)
        return x, ({"self": self_weights, "cross": cross_weights} if need_weights else None)
