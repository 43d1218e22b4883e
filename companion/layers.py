"""Encoder and decoder layers (chapter 6).

Each sublayer (attention or feed-forward) is wrapped in a residual connection and a
LayerNorm. Where the LayerNorm goes is a real choice, and this module makes it explicit.

The sublayers are named as in PyTorch's own layers (``torch/nn/modules/transformer.py``) and
read top to bottom like the paper: ``_sa_block`` (self-attention, shared by both layers),
``_ca_block`` (cross-attention, decoder only) and ``_ff_block`` (feed-forward), with
``norm1``, ``norm2`` (, ``norm3``) and ``dropout1``, ``dropout2`` (, ``dropout3``) declared in
the order the sublayers run. Each ``forward`` has two branches, one per place of the norm:

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

from ._checks import check_choice, check_flags, check_positive_int, check_tensor
from .feedforward import ACTIVATIONS, PositionwiseFeedForward, SwiGLU, swiglu_width
from .gqa import GroupedQueryAttention
from .linear_attention import LinearAttention
from .kv_cache import KVCache, MemoryCache
from .multihead import MultiHeadAttention
from .norms import RMSNorm

__all__ = ["EncoderLayer", "DecoderLayer", "make_norm"]


def make_norm(norm: str, d_model: int, eps: float = 1e-5, bias: bool = True) -> nn.Module:
    """A block's norm (chapters 6 and 10): ``"layer"``: ``nn.LayerNorm(d_model, eps, bias=bias)``;
    ``"rms"``: :class:`companion.RMSNorm` (no bias). Returns a module ``(..., d_model) -> (..., d_model)``."""
    check_choice("norm", norm, ("layer", "rms"))
    check_flags(bias=bias)
    return nn.LayerNorm(d_model, eps=eps, bias=bias) if norm == "layer" else RMSNorm(d_model, eps=eps)


class _Layer(nn.Module):
    """What encoder and decoder layers share: their sizes, the feed-forward network and the
    self-attention block. Each layer declares its own norms and dropouts and wires them in its
    ``forward``, one branch per order."""

    def __init__(self, d_model: int, d_ff: int | None, dropout: float, activation: str, norm: str,
                 bias: bool) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_choice("norm", norm, ("layer", "rms"))
        check_choice("activation", activation, (*ACTIVATIONS, "swiglu"))
        self.d_model = d_model
        if activation == "swiglu":  # three matrices: as many parameters as two of width 4 d_model
            d_ff = swiglu_width(4 * d_model) if d_ff is None else d_ff
            self.feed_forward = SwiGLU(d_model, d_ff, dropout, bias)
        else:
            d_ff = 4 * d_model if d_ff is None else d_ff
            self.feed_forward = PositionwiseFeedForward(d_model, d_ff, dropout, activation, bias)

    def _sa_block(self, x: torch.Tensor, mask, need_weights: bool, cache: KVCache | None):
        """Self-attention, then dropout: ``(batch, t, d_model)`` -> ``(same shape, weights or None)``."""
        x, weights = self.self_attn(x, x, x, mask=mask, need_weights=need_weights, cache=cache)
        return self.dropout1(x), weights

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
        norm: ``"layer"`` (LayerNorm, the paper) or ``"rms"`` (:class:`companion.RMSNorm`,
            chapter 10).
        num_kv_heads: key-value heads of the self-attention (:class:`companion.GroupedQueryAttention`,
            chapter 10); ``None``: one per query head (multi-head attention).
        attention: ``"softmax"``, or ``"linear"``: :class:`companion.LinearAttention` (causal
            only, no dropout on weights; chapter 10).

    With ``activation="swiglu"`` the feed-forward block is :class:`companion.SwiGLU`, and the
    default ``d_ff`` is ``swiglu_width(4 * d_model)``, the two-matrix block's parameters.
    ``norm="rms", activation="swiglu", norm_first=True, bias=False, rotary=True`` is the
    block of Llama and Mistral (chapter 10).
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
        norm: str = "layer",
        num_kv_heads: int | None = None,
        attention: str = "softmax",
    ) -> None:
        super().__init__(d_model, d_ff, dropout, activation, norm, bias)
        check_flags(norm_first=norm_first, rotary=rotary)
        self.norm_first = norm_first
        self.norm1 = make_norm(norm, d_model, layer_norm_eps, bias)
        self.norm2 = make_norm(norm, d_model, layer_norm_eps, bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        check_choice("attention", attention, ("softmax", "linear"))
        if attention == "linear":
            if num_kv_heads is not None:
                raise ValueError("attention='linear' has one key-value head per query head: leave num_kv_heads None")
            self.self_attn = LinearAttention(d_model, num_heads, bias=bias, rotary=rotary)
        elif num_kv_heads is None:
            self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias, rotary=rotary)
        else:
            self.self_attn = GroupedQueryAttention(d_model, num_heads, num_kv_heads, dropout=dropout, bias=bias,
                                                   rotary=rotary)

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
        if self.norm_first:  # pre-norm: x + Sublayer(LayerNorm(x))
            h, weights = self._sa_block(self.norm1(x), mask, need_weights, cache)
            x = x + h
            x = x + self._ff_block(self.norm2(x))
        else:  # post-norm: LayerNorm(x + Sublayer(x))
            h, weights = self._sa_block(x, mask, need_weights, cache)
            x = self.norm1(x + h)
            x = self.norm2(x + self._ff_block(x))
        return x, weights

    def _ff_block(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward network, then dropout: ``(batch, t, d_model)`` -> the same shape."""
        return self.dropout2(self.feed_forward(x))


class DecoderLayer(_Layer):
    """Masked self-attention, cross-attention to the encoder output, then feed-forward (chapter 6).

    Takes the same arguments as :class:`EncoderLayer` but ``num_kv_heads``; the cross-attention's queries come
    from the decoder, its keys and values from the encoder output (``memory``). ``rotary``
    rotates the self-attention's queries and keys only (the memory's positions are the
    source's, not the target's).
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
        norm: str = "layer",
    ) -> None:
        super().__init__(d_model, d_ff, dropout, activation, norm, bias)
        check_flags(norm_first=norm_first, rotary=rotary)
        self.norm_first = norm_first
        self.norm1 = make_norm(norm, d_model, layer_norm_eps, bias)
        self.norm2 = make_norm(norm, d_model, layer_norm_eps, bias)
        self.norm3 = make_norm(norm, d_model, layer_norm_eps, bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias, rotary=rotary)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout=dropout, bias=bias)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        need_weights: bool = False,
        cache: KVCache | None = None,
        memory_cache: MemoryCache | None = None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor] | None]:
        """Decode ``x`` while attending to ``memory``.

        Args:
            x: ``(batch, t_tgt, d_model)``, the target so far (with ``cache``: only the new
                positions).
            memory: ``(batch, t_src, d_model)``, the encoder output.
            mask: bool self-attention mask, ``True`` = may attend, usually
                ``causal_mask(t_tgt)`` (and-ed with target padding); ``None`` = no mask.
                With ``cache``: ``(t_new, t_cached + t_new)``, e.g. ``causal_mask(t_new, t_k)``.
            memory_mask: bool mask over the memory, e.g. source padding ``(batch, 1, t_src)``.
            need_weights: also return both attention maps.
            cache: a :class:`companion.KVCache` for the self-attention: the new positions
                attend to the cached ones too, so greedy decoding computes one position per
                step.
            memory_cache: a :class:`companion.MemoryCache` for the cross-attention: the
                memory's keys and values, projected at the first step and reused after.

        Returns:
            ``(output, weights)``: output ``(batch, t_tgt, d_model)``; weights ``None`` or a
            dict with ``"self"`` ``(batch, num_heads, t_tgt, t_k)`` and ``"cross"``
            ``(batch, num_heads, t_tgt, t_src)``.
        """
        self._check_x("x", x)
        self._check_x("memory", memory)
        if self.norm_first:  # pre-norm: x + Sublayer(LayerNorm(x)), three times
            h, self_weights = self._sa_block(self.norm1(x), mask, need_weights, cache)
            x = x + h
            h, cross_weights = self._ca_block(self.norm2(x), memory, memory_mask, need_weights, memory_cache)
            x = x + h
            x = x + self._ff_block(self.norm3(x))
        else:  # post-norm: LayerNorm(x + Sublayer(x)), three times
            h, self_weights = self._sa_block(x, mask, need_weights, cache)
            x = self.norm1(x + h)
            h, cross_weights = self._ca_block(x, memory, memory_mask, need_weights, memory_cache)
            x = self.norm2(x + h)
            x = self.norm3(x + self._ff_block(x))
        return x, ({"self": self_weights, "cross": cross_weights} if need_weights else None)

    def _ca_block(self, x: torch.Tensor, memory: torch.Tensor, memory_mask, need_weights: bool,
                  memory_cache: MemoryCache | None):
        """Cross-attention to ``memory`` ``(batch, t_src, d_model)``, then dropout."""
        if memory_cache is None:
            x, weights = self.cross_attn(x, memory, memory, mask=memory_mask, need_weights=need_weights)
        else:  # the memory's keys and values: projected at the first step, read from the cache after
            if not isinstance(memory_cache, MemoryCache):
                raise TypeError(f"memory_cache must be a companion.MemoryCache (or None), got "
                                f"{type(memory_cache).__name__}; a KVCache belongs to self-attention (cache=)")
            K, V = memory_cache.keys_values(memory, self.cross_attn.project_memory)  # (batch, heads, t_src, d_k)
            x, weights = self.cross_attn.attend(x, K, V, mask=memory_mask, need_weights=need_weights)
        return self.dropout2(x), weights

    def _ff_block(self, x: torch.Tensor) -> torch.Tensor:
        """The feed-forward network, then dropout: ``(batch, t, d_model)`` -> the same shape."""
        return self.dropout3(self.feed_forward(x))
