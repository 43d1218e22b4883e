"""Grouped-query attention: fewer key-value heads than query heads (chapter 10).

In multi-head attention every query head has its own keys and values. When a model
generates text it keeps every layer's keys and values in a cache (chapter 8), and for long
contexts that cache, not the weights, fills the memory. Grouped-query attention (GQA;
Ainslie et al., 2023) lets ``num_heads / num_kv_heads`` query heads share one key-value
head::

    query head i  attends with  key-value head  i // (num_heads / num_kv_heads)

``num_kv_heads = num_heads`` is multi-head attention; ``num_kv_heads = 1`` is multi-query
attention (MQA; Shazeer, 2019). The cache shrinks by ``num_heads / num_kv_heads``, and so
do ``W_k`` and ``W_v``; the queries and the output projection are unchanged.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_positive_int, check_tensor
from .multihead import MultiHeadAttention

__all__ = ["GroupedQueryAttention", "repeat_kv"]


def repeat_kv(x: torch.Tensor, group_size: int) -> torch.Tensor:
    """Give every query head its key-value head: repeat each head ``group_size`` times (chapter 10).

    Args:
        x: keys or values ``(batch, num_kv_heads, t_k, d_k)``.
        group_size: query heads per key-value head, ``num_heads // num_kv_heads``.

    Returns:
        ``(batch, num_kv_heads * group_size, t_k, d_k)``: head ``i`` is ``x``'s head
        ``i // group_size`` (the order of ``F.scaled_dot_product_attention(enable_gqa=True)``).
    """
    check_tensor("x", x, ndim=4, shape_doc="(batch, num_kv_heads, t_k, d_k)")
    check_positive_int("group_size", group_size)
    return x.repeat_interleave(group_size, dim=1)  # (batch, num_kv_heads * group_size, t_k, d_k)


class GroupedQueryAttention(MultiHeadAttention):
    """Self-attention with ``num_kv_heads`` key-value heads shared by ``num_heads`` query heads (chapter 10).

    A :class:`companion.MultiHeadAttention` (same arguments, masks, caches, rotary
    positions and weights returned) whose keys and values have ``num_kv_heads`` heads.

    Args:
        d_model: width of the input and output; split evenly over the query heads.
        num_heads: query heads; ``d_k = d_model // num_heads``.
        num_kv_heads: key-value heads; must divide ``num_heads``. ``num_heads`` gives
            multi-head attention, ``1`` multi-query attention.
        dropout, bias, rotary: as in :class:`companion.MultiHeadAttention`.

    Parameters: ``W_qkv``, a ``Linear(d_model, d_model + 2 num_kv_heads d_k)``, the stacked
    ``W_q; W_k; W_v``, and ``W_o``, ``Linear(d_model, d_model)``. A
    :class:`companion.KVCache` holds ``(batch, num_kv_heads, t, d_k)`` keys and values.
    """

    def __init__(self, d_model: int, num_heads: int, num_kv_heads: int, dropout: float = 0.0,
                 bias: bool = True, rotary: bool = False) -> None:
        super().__init__(d_model, num_heads, dropout=dropout, bias=bias, rotary=rotary)
        check_positive_int("num_kv_heads", num_kv_heads)
        if num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads} (each key-value "
                             f"head serves num_heads // num_kv_heads query heads); pick a divisor of {num_heads}")
        self.num_kv_heads = num_kv_heads
        self.group_size = num_heads // num_kv_heads  # query heads per key-value head
        d_kv = num_kv_heads * self.d_k  # the width of all key (or value) heads together
        self.widths = [self.d_heads, d_kv, d_kv]  # the rows of W_q, W_k, W_v in W_qkv
        self.W_qkv = nn.Linear(d_model, sum(self.widths), bias=bias)  # [W_q; W_k; W_v], shorter W_k, W_v
        self._reset_parameters()

    def project(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor):
        """``Q`` ``(batch, t_q, d_model)``, ``K`` and ``V`` ``(batch, t_k, num_kv_heads d_k)``."""
        if query is key and key is value:  # self-attention: one product with the stacked W
            return self.W_qkv(query).split(self.widths, dim=-1)
        weights = self.W_qkv.weight.split(self.widths)  # W_q, W_k, W_v
        biases = (None,) * 3 if self.W_qkv.bias is None else self.W_qkv.bias.split(self.widths)
        return tuple(F.linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases))

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, t, heads d_k)`` -> ``(batch, heads, t, d_k)``: ``num_heads`` for Q, ``num_kv_heads`` for K, V."""
        batch, t, width = x.shape
        return x.view(batch, t, width // self.d_k, self.d_k).transpose(1, 2)

    def _attend(self, Q, K, V, mask, need_weights: bool, head_mask):
        """``Q`` ``(batch, num_heads, t_q, d_k)``, ``K``, ``V`` ``(batch, num_kv_heads, t_k, d_k)``."""
        if need_weights:  # the explicit formula: one key-value head per query head
            K, V = repeat_kv(K, self.group_size), repeat_kv(V, self.group_size)  # (batch, num_heads, t_k, d_k)
            return super()._attend(Q, K, V, mask, need_weights, head_mask)
        dropout_p = self.dropout if self.training else 0.0
        heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, dropout_p=dropout_p,
                                               enable_gqa=True)  # (batch, num_heads, t_q, d_k)
        if head_mask is not None:
            heads = heads * head_mask.view(self.num_heads, 1, 1)
        return self.W_o(self.merge_heads(heads)), None  # (batch, t_q, d_model)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", num_kv_heads={self.num_kv_heads}"
