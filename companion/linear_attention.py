"""Linear attention: a kernel instead of the softmax, so the cost grows as ``t``, not ``t^2`` (chapter 10).

Softmax attention weighs key ``j`` for query ``i`` by ``exp(q_i . k_j)``. Replace that by
a product of positive features, ``phi(q_i) . phi(k_j)`` (Katharopoulos et al., 2020, with
``phi(x) = elu(x) + 1``), and the sum over keys can be regrouped::

    out_i = sum_j (phi(q_i) . phi(k_j)) v_j / sum_j phi(q_i) . phi(k_j)
          = phi(q_i)^T (sum_j phi(k_j) v_j^T) / phi(q_i)^T (sum_j phi(k_j))

The ``d_k x d_v`` matrix ``sum_j phi(k_j) v_j^T`` is computed once, so no ``t x t`` matrix
exists. With a causal mask the sums run over ``j <= i``: a running state, updated once per
token, which is why these models generate like recurrent networks. The weights are no
longer a softmax, so the model computes something else; chapter 10 measures what that costs.
"""

from __future__ import annotations

import torch

from ._checks import check_positive_int, check_qkv
from .masks import causal_mask
from .multihead import MultiHeadAttention

__all__ = ["elu_feature_map", "linear_attention", "linear_attention_weights", "LinearAttention"]


def elu_feature_map(x: torch.Tensor) -> torch.Tensor:
    """``phi(x) = elu(x) + 1`` (chapter 10): ``x + 1`` for ``x > 0``, ``exp(x)`` below, so every weight is > 0.

    Any shape in, the same shape out.

    Written as ``exp(x)`` for ``x <= 0`` rather than ``elu(x) + 1``: the same function, but
    ``elu(x) + 1`` rounds to 0 for ``x`` below about -17 in float32. ``exp`` itself rounds
    to 0 below about -104 in float32 (-17 in float16): "every weight > 0" holds for features
    above that; a query whose weights all round to 0 is refused by :func:`linear_attention`.
    """
    return torch.where(x > 0, x + 1.0, torch.exp(x.clamp(max=0.0)))  # clamp: no inf in the unused branch


def _check_causal(Q: torch.Tensor, K: torch.Tensor, causal) -> None:
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    if K.size(-2) == 0:
        raise ValueError(f"K holds no keys (t_k = 0, shape {tuple(K.shape)}): linear attention divides by the sum "
                         "of a query's weights over the keys, 0 / 0 here; give at least one key")
    if causal and K.size(-2) < Q.size(-2):
        raise ValueError(f"causal linear attention needs t_k >= t_q (the queries are the last t_q of the t_k "
                         f"positions), got t_q={Q.size(-2)} and t_k={K.size(-2)}")


def _check_normaliser(denominator: torch.Tensor) -> None:
    """A query whose weights all rounded to 0 (features below about -104 in float32) would be 0 / 0.

    Read on the CPU only: on a GPU the check would make every call wait for the device.
    """
    if denominator.device.type == "cpu" and bool((denominator == 0).any()):
        raise ValueError("a query's linear-attention weights all rounded to 0 (exp of features below about -104 "
                         "in float32, -17 in float16): the weights are 0 / 0; keep Q and K in a moderate range "
                         "(normalise them, or compute in float64)")


def linear_attention_weights(Q: torch.Tensor, K: torch.Tensor, causal: bool = False) -> torch.Tensor:
    """The weights linear attention uses, written out, ``t_q x t_k``: for checking and plotting (chapter 10).

    Args:
        Q: ``(batch, num_heads, t_q, d_k)``; K: ``(batch, num_heads, t_k, d_k)``.
        causal: query ``i`` weighs keys ``0 .. t_k - t_q + i`` only (:func:`companion.causal_mask`).

    Returns:
        ``(batch, num_heads, t_q, t_k)``, each row positive (zero above the diagonal when
        causal) and summing to 1: ``phi(q_i) . phi(k_j) / sum_j' phi(q_i) . phi(k_j')``.
    """
    check_qkv(Q, K, K)  # the same rules as linear_attention's (K stands in for V)
    _check_causal(Q, K, causal)
    if Q.dtype in (torch.float16, torch.bfloat16):  # the row sums overflow half precision
        return linear_attention_weights(Q.float(), K.float(), causal).to(Q.dtype)
    scores = elu_feature_map(Q) @ elu_feature_map(K).transpose(-2, -1)  # (batch, heads, t_q, t_k)
    if causal:
        scores = scores.tril(diagonal=K.size(-2) - Q.size(-2))  # the queries are the last t_q positions
    total = scores.sum(dim=-1, keepdim=True)  # (batch, heads, t_q, 1)
    _check_normaliser(total)
    return scores / total


def linear_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, causal: bool = False,
                     chunk_size: int = 64) -> torch.Tensor:
    """Attention with weights ``phi(q_i) . phi(k_j)``, in time and memory linear in ``t`` (chapter 10).

    Args:
        Q: ``(batch, num_heads, t_q, d_k)``.
        K: ``(batch, num_heads, t_k, d_k)``.
        V: ``(batch, num_heads, t_k, d_v)``.
        causal: each position sees itself and the positions before it; as in
            :func:`companion.causal_mask`, the queries are the **last** ``t_q`` of the ``t_k``
            positions (``t_q < t_k`` when earlier keys are cached). Computed a chunk at a
            time: within a chunk the weights are written out (``chunk_size^2`` numbers), and
            everything before it enters through the running state ``sum_j phi(k_j) v_j^T``.
        chunk_size: positions per chunk when causal.

    Returns:
        ``(batch, num_heads, t_q, d_v)``: ``linear_attention_weights(Q, K, causal) @ V``,
        without the ``t_q x t_k`` matrix.
    """
    check_qkv(Q, K, V)
    check_positive_int("chunk_size", chunk_size)
    _check_causal(Q, K, causal)
    if Q.dtype in (torch.float16, torch.bfloat16):  # sums over thousands of keys overflow half precision
        return linear_attention(Q.float(), K.float(), V.float(), causal, chunk_size).to(Q.dtype)
    phi_Q, phi_K = elu_feature_map(Q), elu_feature_map(K)  # (batch, heads, t, d_k), positive
    if not causal:
        state = phi_K.transpose(-2, -1) @ V  # (batch, heads, d_k, d_v): sum_j phi(k_j) v_j^T
        normaliser = phi_Q @ phi_K.sum(dim=-2)[..., None]  # (batch, heads, t_q, 1): sum_j phi(q_i) . phi(k_j)
        _check_normaliser(normaliser)
        return (phi_Q @ state) / normaliser  # (batch, heads, t_q, d_v)
    offset = K.size(-2) - Q.size(-2)  # keys before the first query: cached positions
    state = phi_K[..., :offset, :].transpose(-2, -1) @ V[..., :offset, :]  # (batch, heads, d_k, d_v)
    normaliser = phi_K[..., :offset, :].sum(dim=-2)  # (batch, heads, d_k): the positions before the queries
    phi_K, V = phi_K[..., offset:, :], V[..., offset:, :]  # the keys at the queries' positions
    outputs = []
    for start in range(0, Q.size(-2), chunk_size):
        q, k, v = (x[..., start:start + chunk_size, :] for x in (phi_Q, phi_K, V))  # (batch, heads, c, d)
        within = (q @ k.transpose(-2, -1)).tril()  # (batch, heads, c, c): this chunk, causal
        numerator = within @ v + q @ state  # (batch, heads, c, d_v)
        denominator = within.sum(dim=-1) + (q @ normaliser[..., None]).squeeze(-1)  # (batch, heads, c)
        _check_normaliser(denominator)
        outputs.append(numerator / denominator[..., None])
        state = state + k.transpose(-2, -1) @ v  # add this chunk's keys and values
        normaliser = normaliser + k.sum(dim=-2)
    return torch.cat(outputs, dim=-2)  # (batch, heads, t, d_v)


class LinearAttention(MultiHeadAttention):
    """Causal multi-head linear attention: :class:`companion.MultiHeadAttention` with
    :func:`linear_attention` in place of the softmax (chapter 10).

    The same arguments, projections, rotary positions and key-value cache as
    :class:`companion.MultiHeadAttention`; each head computes
    ``linear_attention(Q, K, V, causal=True)``. It is a decoder's attention: the only
    masks it takes are ``causal_mask(t_q, t_k)`` and ``None`` for a single query (which sees
    every key), so a padding mask is refused rather than ignored; attention weights are not
    returned (:func:`linear_attention_weights` writes them out).
    """

    def _attend(self, Q, K, V, mask, need_weights: bool, head_mask):
        """``Q`` ``(batch, num_heads, t_q, d_k)``, ``K``, ``V`` ``(batch, num_heads, t_k, d_k)``."""
        t_q, t_k = Q.size(-2), K.size(-2)
        if need_weights:
            raise ValueError("LinearAttention computes no attention weights; write them out with "
                             "companion.linear_attention_weights(Q, K, causal=True)")
        causal = t_q == 1 and mask is None or (
            isinstance(mask, torch.Tensor) and mask.shape == (t_q, t_k)
            and torch.equal(mask, causal_mask(t_q, t_k, device=mask.device)))
        if not causal:
            raise ValueError(f"LinearAttention is causal: it takes mask=causal_mask({t_q}, {t_k}) (or None for "
                             f"a single query), got {'None' if mask is None else tuple(mask.shape)}")
        if self.training and self.dropout > 0:
            raise ValueError("LinearAttention has no attention weights to drop out: build it with dropout=0")
        heads = linear_attention(Q, K, V, causal=True)  # (batch, num_heads, t_q, d_k)
        if head_mask is not None:
            heads = heads * head_mask.view(self.num_heads, 1, 1)
        return self.W_o(self.merge_heads(heads)), None  # (batch, t_q, d_model)
