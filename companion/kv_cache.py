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
need computing once. A :class:`MemoryCache` holds them; :class:`companion.DecoderLayer` fills
it at the first step and reuses it after (chapter 6's cached greedy decoding).
"""

from __future__ import annotations

import torch

from ._checks import check_positive_int, check_same_dtype_device, check_tensor

__all__ = ["KVCache", "MemoryCache"]


class KVCache:
    """The keys and values one attention layer has seen so far (chapter 8).

    Starts empty. :meth:`update` writes the new positions' keys and values after the cached
    ones and returns all of them; ``len(cache)`` is the number of cached positions, so it is
    also the position of the next token.

    The positions live in a buffer allocated once for ``max_len`` positions (a model's
    ``new_caches()`` passes its own), so a step writes only its new positions: concatenating
    instead would copy the whole cache at every step, ``O(t^2)`` numbers over ``t`` steps.
    Without ``max_len`` the buffer doubles when full. While autograd records (keys that
    require gradients), the cache concatenates instead, since writing into a tensor that an
    earlier step saved for its backward pass would break it.

    Args:
        max_len: the most positions it will hold (a longer update is refused), or ``None``.

    Attributes:
        K: ``(batch, num_heads, t, d_k)``, the cached keys, or ``None`` while empty.
        V: ``(batch, num_heads, t, d_v)``, their values, or ``None`` while empty.
    """

    def __init__(self, max_len: int | None = None) -> None:
        if max_len is not None:
            check_positive_int("max_len", max_len)
        self.max_len = max_len
        self._K: torch.Tensor | None = None  # (batch, num_heads, capacity, d_k)
        self._V: torch.Tensor | None = None  # (batch, num_heads, capacity, d_v)
        self._t = 0  # positions filled

    @property
    def K(self) -> torch.Tensor | None:
        return None if self._K is None else self._K[:, :, :self._t]

    @property
    def V(self) -> torch.Tensor | None:
        return None if self._V is None else self._V[:, :, :self._t]

    def __len__(self) -> int:
        return self._t

    def update(self, K: torch.Tensor, V: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Write the new positions after the cached ones and return every position's keys and values.

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
        t, t_new = self._t, K.size(2)
        if self._K is not None:
            if K.shape[:2] != self._K.shape[:2] or K.size(3) != self._K.size(3) or V.size(3) != self._V.size(3):
                raise ValueError(
                    f"the new keys {tuple(K.shape)} and values {tuple(V.shape)} do not continue the cached ones "
                    f"{tuple(self.K.shape)} and {tuple(self.V.shape)}: batch, num_heads and the head widths must "
                    "stay the same (start a new cache for a new batch of prompts)"
                )
            check_same_dtype_device(cached_K=self._K, K=K)
        if self.max_len is not None and t + t_new > self.max_len:
            raise ValueError(f"the cache holds at most max_len={self.max_len} positions; it has {t} and was given "
                             f"{t_new} more: start a new cache (a model's window is its max_len)")
        if torch.is_grad_enabled() and (K.requires_grad or V.requires_grad):  # keep autograd's saved tensors
            self._K = K if self._K is None else torch.cat([self.K, K], dim=2)  # (batch, num_heads, t + t_new, d_k)
            self._V = V if self._V is None else torch.cat([self.V, V], dim=2)
        else:
            if self._K is None or t + t_new > self._K.size(2):  # allocate, or grow
                capacity = self.max_len or max(t + t_new, 2 * t)
                self._K, self._V = self._grown(self._K, K, capacity), self._grown(self._V, V, capacity)
            self._K[:, :, t:t + t_new] = K  # write the new positions in place
            self._V[:, :, t:t + t_new] = V
        self._t = t + t_new
        return self.K, self.V

    def _grown(self, old: torch.Tensor | None, new: torch.Tensor, capacity: int) -> torch.Tensor:
        """A buffer of ``capacity`` positions shaped like ``new``, holding ``old``'s filled positions."""
        buffer = new.new_empty(new.size(0), new.size(1), capacity, new.size(3))
        if old is not None:
            buffer[:, :, :self._t] = old[:, :, :self._t]
        return buffer

    def __repr__(self) -> str:
        shape = "empty" if self._K is None else f"K {tuple(self.K.shape)}, V {tuple(self.V.shape)}"
        return f"KVCache({shape})"


class MemoryCache:
    """The memory's keys and values for one cross-attention layer (chapter 6).

    The memory (the encoder's output) is the same at every decoding step, so its keys and
    values need computing once. :meth:`keys_values` computes them at the first step and
    returns the same tensors after that; :class:`companion.DecoderLayer` calls it, and its
    cross-attention then projects only the new queries. The cache keeps the memory it was
    filled from, so that a step given another memory is refused rather than answered from the
    old one's keys and values.

    Attributes:
        memory: ``(batch, t_src, d_model)``, what ``K`` and ``V`` were computed from, or ``None``.
        K: ``(batch, num_heads, t_src, d_k)``, the memory's keys, or ``None`` while empty.
        V: ``(batch, num_heads, t_src, d_v)``, its values, or ``None`` while empty.
    """

    def __init__(self) -> None:
        self.memory: torch.Tensor | None = None
        self.K: torch.Tensor | None = None
        self.V: torch.Tensor | None = None
        self._version = 0  # memory._version when K and V were computed: in-place changes bump it
        self._owner = None  # the layer whose projection computed K and V

    def __len__(self) -> int:
        """The number of memory positions held: ``t_src``, or 0 while empty."""
        return 0 if self.K is None else self.K.size(2)

    def keys_values(self, memory: torch.Tensor, project) -> tuple[torch.Tensor, torch.Tensor]:
        """``memory``'s keys and values: ``project(memory)`` at the first call, the same after.

        Args:
            memory: ``(batch, t_src, d_model)``, the encoder output.
            project: computes ``(K, V)``, each ``(batch, num_heads, t_src, d_k)``, from ``memory``
                (:meth:`companion.MultiHeadAttention.project_memory`).

        Returns:
            ``(K, V)``, each ``(batch, num_heads, t_src, d_k)``.
        """
        check_tensor("memory", memory, ndim=3, shape_doc="(batch, t_src, d_model)")
        owner = getattr(project, "__self__", project)  # the attention layer that projects
        if self.memory is None:
            self.K, self.V = project(memory)
            self.memory, self._version, self._owner = memory, memory._version, owner
            return self.K, self.V
        if owner is not self._owner:
            raise ValueError("this MemoryCache holds the keys and values another layer (or another model) "
                             "projected; every cross-attention layer needs a cache of its own: start new caches "
                             "(model.new_caches())")
        self.check_memory(memory)
        return self.K, self.V

    def check_memory(self, memory: torch.Tensor) -> None:
        """Refuse a ``memory`` other than the one the cache was filled from (the same tensor, or
        equal values: a step that passes the same memory costs no comparison)."""
        held = self.memory
        if held is None or (memory is held and memory._version == self._version):
            return
        if memory is held:  # the same tensor, changed in place since the keys and values were made from it
            raise ValueError("the memory was changed in place after this MemoryCache projected it, so its keys "
                             "and values are stale: start new caches (model.new_caches()) for the new memory")
        if memory.shape != held.shape or memory.dtype != held.dtype or not torch.equal(memory, held):
            raise ValueError(
                f"this MemoryCache holds the keys and values of another memory (shape {tuple(held.shape)}, "
                f"{held.dtype}), computed at the first step, and was given a different one (shape "
                f"{tuple(memory.shape)}, {memory.dtype}): "
                "start new caches (model.new_caches()) for a new source")

    def __repr__(self) -> str:
        shape = "empty" if self.K is None else f"K {tuple(self.K.shape)}, V {tuple(self.V.shape)}"
        return f"MemoryCache({shape})"
