"""Multi-head attention (chapter 4; self vs cross attention in chapter 2).

Each of ``num_heads`` heads attends in its own ``d_k = d_model // num_heads``-dimensional
subspace::

    head_i = Attention(Q W_q^i, K W_k^i, V W_v^i)
    MultiHead(Q, K, V) = concat(head_1, ..., head_h) W_o

These are **narrow** heads: together they are as wide as one full-width head, so the layer
costs the same for any number of heads. **Wide** heads (``wide=True``) give every head the
full width, ``d_k = d_model``, so ``h`` heads cost ``h`` times the parameters and operations
(``W_q`` is ``(h d_model, d_model)``, ``W_o`` is ``(d_model, h d_model)``); chapter 4
measures both.

All heads' projections are stored as one matrix per role, so one matrix product computes
every head at once; ``split_heads`` then reshapes ``(batch, t, d_model)`` into
``(batch, num_heads, t, d_k)``. When query, key and value have the same width the three
matrices are stacked into one "tall" ``W_qkv`` of shape ``(3 d_model, d_model)``, and
self-attention computes Q, K and V with a single product.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_flags, check_mask, check_positive_int, check_probability, check_same_dtype_device, check_tensor
from .attention import scaled_dot_product_attention
from .kv_cache import KVCache, MemoryCache
from .rotary import apply_rotary

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with batch-first tensors, equal to ``nn.MultiheadAttention`` (chapter 4).

    Args:
        d_model: width of the queries and of the output; split evenly over the heads.
        num_heads: number of heads; must divide ``d_model`` (unless ``wide``).
        dropout: dropout on the attention weights (training mode only).
        bias: whether the projections have biases.
        kdim: width of the keys (cross-attention from another sequence); default ``d_model``.
        vdim: width of the values; default ``d_model``.
        rotary: rotate every head's queries and keys by their positions
            (:func:`companion.apply_rotary`, chapter 5): query ``i`` and key ``j`` at
            positions ``0 .. t_q - 1`` and ``0 .. t_k - 1``; ``d_k`` must be even.
        wide: every head full width (``d_k = d_model``), as in source 002's ``former``;
            ``False`` (the paper, PyTorch): ``d_k = d_model // num_heads``.

    Parameters: ``W_qkv`` (a ``Linear(d_model, 3 d_heads)``, the stacked ``W_q; W_k; W_v``)
    when ``kdim == vdim == d_model``, otherwise separate ``W_q``, ``W_k``, ``W_v``; and the
    output projection ``W_o``, ``Linear(d_heads, d_model)``. ``d_heads = num_heads * d_k``
    is the width of all heads together: ``d_model`` for narrow heads.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        rotary: bool = False,
        wide: bool = False,
    ) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("num_heads", num_heads)
        check_probability("dropout", dropout)
        check_flags(bias=bias, rotary=rotary, wide=wide)
        if not wide and d_model % num_heads != 0:
            raise ValueError(
                f"d_model={d_model} is not divisible by num_heads={num_heads} "
                f"(each head gets d_model // num_heads dimensions); pick num_heads among the divisors of d_model"
            )
        kdim = d_model if kdim is None else kdim
        vdim = d_model if vdim is None else vdim
        check_positive_int("kdim", kdim)
        check_positive_int("vdim", vdim)
        self.d_model, self.num_heads, self.wide = d_model, num_heads, wide
        self.d_k = d_model if wide else d_model // num_heads  # one head's width
        self.d_heads = num_heads * self.d_k  # all heads together: d_model, or num_heads * d_model
        self.kdim, self.vdim, self.dropout = kdim, vdim, dropout
        if not isinstance(rotary, bool):
            raise TypeError(f"rotary must be True or False, got {rotary!r}")
        if rotary and self.d_k % 2:
            raise ValueError(f"rotary embeddings rotate pairs of features, so the head width d_k must be even, "
                             f"got d_k={self.d_k}; change d_model or num_heads")
        self.rotary = rotary
        self.fused = kdim == d_model and vdim == d_model
        if self.fused:
            self.W_qkv = nn.Linear(d_model, 3 * self.d_heads, bias=bias)  # the "tall W": [W_q; W_k; W_v]
        else:
            self.W_q = nn.Linear(d_model, self.d_heads, bias=bias)
            self.W_k = nn.Linear(kdim, self.d_heads, bias=bias)
            self.W_v = nn.Linear(vdim, self.d_heads, bias=bias)
        self.W_o = nn.Linear(self.d_heads, d_model, bias=bias)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        # The same initialisation as nn.MultiheadAttention: Glorot-uniform weights, zero biases.
        projections = [self.W_qkv] if self.fused else [self.W_q, self.W_k, self.W_v]
        for linear in projections:
            nn.init.xavier_uniform_(linear.weight)
            if linear.bias is not None:
                nn.init.zeros_(linear.bias)
        if self.W_o.bias is not None:
            nn.init.zeros_(self.W_o.bias)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, t, d_heads)`` -> ``(batch, num_heads, t, d_k)`` (``d_heads = d_model`` for narrow heads)."""
        batch, t, _ = x.shape
        return x.view(batch, t, self.num_heads, self.d_k).transpose(1, 2)

    def merge_heads(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, num_heads, t, d_k)`` -> ``(batch, t, d_heads)``, the inverse of ``split_heads``."""
        batch, _, t, _ = x.shape
        return x.transpose(1, 2).reshape(batch, t, self.d_heads)

    def project(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor):
        """Compute ``Q = query W_q^T``, ``K = key W_k^T``, ``V = value W_v^T`` for all heads.

        Returns three tensors ``(batch, t, d_heads)``: ``Q`` has ``t_q`` rows, ``K`` and
        ``V`` have ``t_k``.
        """
        if not self.fused:
            return self.W_q(query), self.W_k(key), self.W_v(value)
        if query is key and key is value:  # self-attention: one product with the tall W
            return self.W_qkv(query).chunk(3, dim=-1)
        w_q, w_kv = self.W_qkv.weight.split([self.d_heads, 2 * self.d_heads])
        b_q, b_kv = (None, None) if self.W_qkv.bias is None else self.W_qkv.bias.split([self.d_heads, 2 * self.d_heads])
        Q = F.linear(query, w_q, b_q)
        if key is value:  # cross-attention over one memory: K and V in one product
            K, V = F.linear(key, w_kv, b_kv).chunk(2, dim=-1)
        else:
            w_k, w_v = w_kv.chunk(2)
            b_k, b_v = (None, None) if b_kv is None else b_kv.chunk(2)
            K, V = F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)
        return Q, K, V

    def project_query(self, query: torch.Tensor) -> torch.Tensor:
        """``Q = query W_q^T``, ``(batch, t_q, d_heads)``: all a step needs when K and V are cached."""
        if not self.fused:
            return self.W_q(query)
        w_q = self.W_qkv.weight[: self.d_heads]  # the first d_heads rows of the tall W
        b_q = None if self.W_qkv.bias is None else self.W_qkv.bias[: self.d_heads]
        return F.linear(query, w_q, b_q)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        head_mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Self-attention passes the same tensor three times: ``mha(x, x, x)``.

        Args:
            query: ``(batch, t_q, d_model)``.
            key: ``(batch, t_k, kdim)``.
            value: ``(batch, t_k, vdim)``.
            mask: optional bool, ``True`` = may attend, of shape ``(t_q, t_k)``,
                ``(batch, t_q, t_k)`` (the same for every head; a padding mask
                ``(batch, 1, t_k)`` fits here) or ``(batch, num_heads, t_q, t_k)``;
                any of its dimensions may be 1 to broadcast.
            need_weights: also return the attention weights. Without them the fused
                ``F.scaled_dot_product_attention`` kernel runs; with them the explicit
                formula :func:`companion.scaled_dot_product_attention` does (same result).
            head_mask: optional ``(num_heads,)`` float factors, one per head, multiplying
                each head's output before ``W_o`` mixes them: ``0`` removes a head (the
                ablation of chapter 4), ``1`` keeps it. The returned weights are unchanged.
            cache: a :class:`companion.KVCache` (chapter 8): the new keys and values are
                appended to it, and the queries attend to every cached position plus the
                new ones, so ``t_k`` in ``mask`` and in the weights counts them all
                (``len(cache)`` before the call plus ``key``'s length). A cross-attention
                memory's keys and values are cached by :class:`companion.DecoderLayer`
                (a :class:`companion.MemoryCache`, read through :meth:`attend`).

        Returns:
            ``(output, weights)``: output ``(batch, t_q, d_model)``; weights
            ``(batch, num_heads, t_q, t_k)`` per head, or ``None`` unless ``need_weights``.
        """
        self._check_inputs(query, key, value)
        check_flags(need_weights=need_weights)
        if isinstance(cache, MemoryCache):
            raise TypeError("cache is a MemoryCache, which holds a cross-attention memory and never grows; "
                            "self-attention needs a KVCache, which appends each step's keys (a MemoryCache "
                            "goes to DecoderLayer as memory_cache)")
        if cache is not None and not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a companion.KVCache (or None), got {type(cache).__name__}")
        offset = 0 if cache is None else len(cache)  # the position of the first new key
        mask = self._full_mask(mask, query.size(0), query.size(1), offset + key.size(1))
        if head_mask is not None:
            self._check_head_mask(head_mask, query)
        Q, K, V = self.project(query, key, value)  # (batch, t_q | t_k, d_model)
        Q, K, V = self.split_heads(Q), self.split_heads(K), self.split_heads(V)  # (batch, num_heads, t, d_k)
        if self.rotary:  # turn each query and key by its position's angles (chapter 5)
            Q = apply_rotary(Q, offset=offset)  # the new positions: offset .. offset + t_q - 1
            K = apply_rotary(K, offset=offset)  # the new keys, after the cached ones
        if cache is not None:  # prepend the cached positions: (batch, num_heads, t_k, d_k)
            K, V = cache.update(K, V)
        return self._attend(Q, K, V, mask, need_weights, head_mask)

    def project_memory(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A cross-attention memory's keys and values, in heads (what a :class:`companion.MemoryCache` holds).

        Args:
            memory: ``(batch, t_src, kdim)``, e.g. the encoder output.

        Returns:
            ``(K, V)``, each ``(batch, num_heads, t_src, d_k)``.
        """
        check_tensor("memory", memory, ndim=3, shape_doc="(batch, t_src, kdim)")
        no_queries = memory.new_empty(memory.size(0), 0, self.d_model)  # only K and V are needed
        self._check_inputs(no_queries, memory, memory)
        _, K, V = self.project(no_queries, memory, memory)  # (batch, t_src, d_heads) each
        return self.split_heads(K), self.split_heads(V)

    def attend(self, query: torch.Tensor, K: torch.Tensor, V: torch.Tensor, mask: torch.Tensor | None = None,
               need_weights: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to keys and values already in heads (from :meth:`project_memory`).

        Args:
            query: ``(batch, t_q, d_model)``; only its queries are projected.
            K: ``(batch, num_heads, t_k, d_k)``.
            V: ``(batch, num_heads, t_k, d_k)``.
            mask, need_weights: as for :meth:`forward`.

        Returns:
            ``(output, weights)`` as for :meth:`forward`.
        """
        check_tensor("query", query, ndim=3, shape_doc="(batch, t_q, d_model)")
        check_flags(need_weights=need_weights)
        if query.size(-1) != self.d_model:
            raise ValueError(f"query must have last dimension d_model={self.d_model}, got shape {tuple(query.shape)}")
        self._check_weights_dtype("query has", query)
        if self.rotary:
            raise ValueError("attend reads keys and values without positions (a cross-attention memory); "
                             "rotary positions belong to self-attention: call the module itself")
        kv_heads = getattr(self, "num_kv_heads", self.num_heads)  # fewer for grouped-query attention
        for name, t in (("K", K), ("V", V)):
            check_tensor(name, t, ndim=4, shape_doc="(batch, heads, t_k, d_k)")
        if tuple(K.shape) != (query.size(0), kv_heads, K.size(2), self.d_k) or tuple(V.shape) != tuple(K.shape):
            raise ValueError(f"K and V must be (batch, heads, t_k, d_k) = (batch {query.size(0)}, {kv_heads}, t_k, "
                             f"{self.d_k}) for queries of batch {query.size(0)}, got K {tuple(K.shape)} and V "
                             f"{tuple(V.shape)}: from this module's project_memory, for the same batch?")
        check_same_dtype_device(query=query, K=K, V=V)
        mask = self._full_mask(mask, query.size(0), query.size(1), K.size(2))
        Q = self.split_heads(self.project_query(query))  # (batch, num_heads, t_q, d_k)
        return self._attend(Q, K, V, mask, need_weights, None)

    def _full_mask(self, mask, batch: int, t_q: int, t_k: int):
        """Check ``mask`` against ``(batch, num_heads, t_q, t_k)``; a 3-D mask gets its head axis."""
        if mask is None:
            return None
        if isinstance(mask, torch.Tensor) and mask.dim() == 3:
            mask = mask.unsqueeze(1)  # (batch, 1, t_q, t_k): the same mask for every head
        check_mask(mask, (batch, self.num_heads, t_q, t_k), what="(batch, num_heads, t_q, t_k)")
        return mask

    def _attend(self, Q, K, V, mask, need_weights: bool, head_mask):
        """Heads ``(batch, num_heads, t, d_k)`` -> ``(output (batch, t_q, d_model), weights)``."""
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            heads, weights = scaled_dot_product_attention(Q, K, V, mask=mask, dropout_p=dropout_p)
        else:  # the fused kernel computes the same softmax(Q K^T / sqrt(d_k)) V without storing the weights
            heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask, dropout_p=dropout_p)
            weights = None
        if head_mask is not None:  # (num_heads,) -> (num_heads, 1, 1): one factor per head
            heads = heads * head_mask.view(self.num_heads, 1, 1)
        return self.W_o(self.merge_heads(heads)), weights  # (batch, t_q, d_model)

    def _check_head_mask(self, head_mask, query) -> None:
        check_tensor("head_mask", head_mask, ndim=1, shape_doc="(num_heads,)")
        if head_mask.size(0) != self.num_heads:
            raise ValueError(
                f"head_mask must have shape (num_heads,) = ({self.num_heads},), one factor per head "
                f"(1 keeps a head, 0 removes it), got shape {tuple(head_mask.shape)}"
            )
        check_same_dtype_device(query=query, head_mask=head_mask)

    def _check_inputs(self, query, key, value) -> None:
        check_tensor("query", query, ndim=3, shape_doc="(batch, t_q, d_model)")
        check_tensor("key", key, ndim=3, shape_doc="(batch, t_k, kdim)")
        check_tensor("value", value, ndim=3, shape_doc="(batch, t_k, vdim)")
        for name, t, width in (("query", query, self.d_model), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.size(-1) != width:
                arg = {"query": "d_model", "key": "kdim", "value": "vdim"}[name]
                raise ValueError(
                    f"{name} must have last dimension {arg}={width}, got shape {tuple(t.shape)}; "
                    f"construct MultiHeadAttention with {arg}={t.size(-1)} for this input"
                )
        if key.size(1) != value.size(1):
            raise ValueError(
                f"key and value must have the same length t_k (one value per key), "
                f"got key {tuple(key.shape)} and value {tuple(value.shape)}"
            )
        if not (query.size(0) == key.size(0) == value.size(0)):
            raise ValueError(
                f"query, key and value must have the same batch size, got "
                f"{query.size(0)}, {key.size(0)} and {value.size(0)}"
            )
        check_same_dtype_device(query=query, key=key, value=value)
        self._check_weights_dtype("query, key and value have", query)

    def _check_weights_dtype(self, what: str, query: torch.Tensor) -> None:
        """Refuse inputs in another dtype than the weights (autocast mixes them on purpose)."""
        weight = next(self.parameters())
        if query.dtype != weight.dtype and not torch.is_autocast_enabled(query.device.type):
            raise TypeError(f"{what} dtype {query.dtype} but the module's weights are {weight.dtype}; convert "
                            f"one: query.to({weight.dtype}) or module.to({query.dtype})")

    def extra_repr(self) -> str:
        extra = "" if self.fused else f", kdim={self.kdim}, vdim={self.vdim}"
        extra += ", rotary=True" if self.rotary else ""
        extra += ", wide=True" if self.wide else ""
        return f"d_model={self.d_model}, num_heads={self.num_heads}, d_k={self.d_k}, dropout={self.dropout}{extra}"
