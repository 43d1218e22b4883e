"""The key-value cache: fast generation with a decoder (chapter 8).

A decoder generates one token at a time. Without a cache, step ``t`` runs the whole model
on all ``t`` tokens again, although the keys and values of tokens ``0 .. t-1`` are the same
as at the previous step: the causal mask means no earlier position ever sees a later one.
With a cache, each attention layer keeps the keys and values it has computed, and a step
only computes the new token's query, key and value::

    K = [K_cache; k_new]          (batch, num_heads, t + 1, d_k)
    V = [V_cache; v_new]
    out = softmax(q_new K^T / sqrt(d_k)) V

The work of one step then grows like ``t`` (one query against ``t`` keys) instead of ``t^2``.
One :class:`KVCache` belongs to one attention layer; a model keeps a list, one per layer.

An encoder-decoder's cross-attention reads the same memory at every step: its keys and values
need computing once. A :class:`MemoryCache` keeps the first ones it is given, and
:class:`companion.MultiHeadAttention` reuses them without projecting the memory again
(chapter 6's cached greedy decoding).
"""

from __future__ import annotations

import torch

from ._checks import check_same_dtype_device, check_tensor

__all__ = ["KVCache", "MemoryCache"]


class KVCache:
    """The keys and values one attention layer has seen so far (chapter 8).

    Starts empty. :meth:`update` appends the new positions' keys and values and returns all of
    them; ``len(cache)`` is the number of cached positions, so it is also the position of the
    next token.

    Attributes:
        K: ``(batch, num_heads, t, d_k)`` or ``None`` while empty.
        V: ``(batch, num_heads, t, d_v)`` or ``None`` while empty.
    """

    def __init__(self) -> None:
        self.K: torch.Tensor | None = None
        self.V: torch.Tensor | None = None

    def __len__(self) -> int:
        return 0 if self.K is None else self.K.size(2)

    def update(self, K: torch.Tensor, V: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the new positions and return every position's keys and values.

        Args:
            K: ``(batch, num_heads, t_new, d_k)``, the new positions' keys.
            V: ``(batch, num_heads, t_new, d_v)``, their values.

        Returns:
            ``(K, V)`` of all ``t + t_new`` positions, the cached ones first:
            ``(batch, num_heads, t + t_new, d_k)`` and ``(batch, num_heads, t + t_new, d_v)``.
        """
        check_tensor("K", K, ndim=4, shape_doc="(batch, num_heads, t_new, d_k)")
        check_tensor("V", V, ndim=4, shape_doc="(batch, num_heads, t_new, d_v)")
        if K.shape[:3] != V.shape[:3]:
            raise ValueError(f"K and V must agree on (batch, num_heads, t_new), got K {tuple(K.shape)} and "
                             f"V {tuple(V.shape)}: one value per key")
        check_same_dtype_device(K=K, V=V)
        if self.K is not None:
            if K.shape[:2] != self.K.shape[:2] or K.size(3) != self.K.size(3) or V.size(3) != self.V.size(3):
                raise ValueError(
                    f"the new keys {tuple(K.shape)} and values {tuple(V.shape)} do not continue the cached ones "
                    f"{tuple(self.K.shape)} and {tuple(self.V.shape)}: batch, num_heads and the head widths must "
                    "stay the same (start a new cache for a new batch of prompts)"
                )
            check_same_dtype_device(cached_K=self.K, K=K)
        self.K = K if self.K is None else torch.cat([self.K, K], dim=2)  # (batch, num_heads, t + t_new, d_k)
        self.V = V if self.V is None else torch.cat([self.V, V], dim=2)  # (batch, num_heads, t + t_new, d_v)
        return self.K, self.V

    def __repr__(self) -> str:
        shape = "empty" if self.K is None else f"K {tuple(self.K.shape)}, V {tuple(self.V.shape)}"
        return f"KVCache({shape})"


class MemoryCache(KVCache):
    """The memory's keys and values for one cross-attention layer (chapter 6).

    Filled at the first decoding step; after that :class:`companion.MultiHeadAttention` reads
    ``K`` and ``V`` from it and projects only the new queries. It never grows: the memory
    (the encoder's output) is the same at every step.
    """

    def update(self, K: torch.Tensor, V: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Store the memory's ``K`` ``(batch, num_heads, t_src, d_k)`` and ``V``, once."""
        if self.K is not None:
            raise ValueError("a MemoryCache holds one memory's keys and values and cannot be extended; "
                             "start a new one for a new memory")
        return super().update(K, V)

    def __repr__(self) -> str:
        return "Memory" + super().__repr__()
