"""Attention without the ``t_q x t_k`` score matrix: online softmax and tiled attention (chapter 10).

The formula ``softmax(Q K^T / sqrt(d_k)) V`` written out stores every score: ``t^2`` numbers
per head, which for long sequences is more memory than everything else together. The
scores are only needed one block at a time, because softmax can be computed **online**: read
the scores in blocks, keep the largest score seen so far ``m`` and the sum ``l`` of
``exp(score - m)``, and when a block raises the maximum, rescale what was summed before by
``exp(m_old - m_new)`` (Milakov and Gimelshein, 2018).

Attention's output is a weighted sum, so it can be rescaled the same way: **tiled
attention** visits the keys one block at a time, keeps a running maximum, sum and
unnormalised output per query, and divides once at the end. Only a ``block x block`` tile
of scores exists at any moment: memory ``O(t d)`` instead of ``O(t^2)``. This is the forward
pass of FlashAttention (Dao et al., 2022); the backward pass does not store the scores
either but recomputes each tile from ``Q``, ``K`` and the saved log-sum-exp of each row
(:class:`TiledAttention`). Written in plain PyTorch it saves memory, not time: the speed of
FlashAttention comes from keeping the tiles in a GPU's on-chip memory, which Python cannot
control.
"""

from __future__ import annotations

import math

import torch

from ._checks import check_positive_int, check_qkv, check_tensor

__all__ = ["online_softmax", "tiled_attention", "TiledAttention"]


def online_softmax(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """``softmax(x)`` over the last dimension, its maximum and sum found in one pass over blocks (chapter 10).

    Args:
        x: float ``(..., n)``; entries may be ``-inf`` (masked), but every row needs one
            finite entry.
        block_size: how many entries of a row are read at a time; need not divide ``n``.

    Returns:
        ``(..., n)``, equal to ``torch.softmax(x, dim=-1)``.
    """
    check_tensor("x", x)
    check_positive_int("block_size", block_size)
    if x.dim() == 0:
        raise ValueError("x is a 0-d tensor (a single number): softmax needs a last dimension to normalise over; "
                         "use x[None] for a row of one")
    if x.size(-1) == 0:
        return x.clone()  # rows of no entries: nothing to normalise, as torch.softmax returns
    if bool(torch.isnan(x).any()):
        raise ValueError("x holds NaN: a NaN entry has no softmax weight; find where it came from")
    if bool(torch.isposinf(x).any()):
        raise ValueError("x holds +inf: softmax needs finite entries (or -inf for masked ones)")
    dtype, x = x.dtype, x.to(torch.promote_types(x.dtype, torch.float32))  # half precision: sum in float32
    m = torch.full(x.shape[:-1], -math.inf, dtype=x.dtype, device=x.device)  # (...,) running maximum
    l = torch.zeros_like(m)  # (...,) running sum of exp(x - m)
    for start in range(0, x.size(-1), block_size):
        block = x[..., start:start + block_size]  # (..., <= block_size)
        m_new = torch.maximum(m, block.max(dim=-1).values)  # (...,)
        rescale = torch.exp(m - m_new).nan_to_num(0.0)  # (...,) exp(-inf - -inf) is nan: nothing summed yet
        l = l * rescale + torch.exp(block - m_new[..., None]).nan_to_num(0.0).sum(dim=-1)
        m = m_new
    if not bool(torch.isfinite(m).all()):
        raise ValueError("a row of x is all -inf: its softmax is undefined; every row needs a finite entry")
    return (torch.exp(x - m[..., None]) / l[..., None]).to(dtype)  # (..., n)


def _key_blocks(q_start: int, q_end: int, t_k: int, block_size: int, causal: bool, offset: int):
    """The key blocks a query block must visit: with a causal mask, none past its last query."""
    last = offset + q_end if causal else t_k  # query q_end - 1 sees keys up to offset + q_end - 1
    return range(0, last, block_size)


def _tile_scores(Q_i, K_j, scale: float, q_start: int, k_start: int, causal: bool, offset: int):
    """One tile of scaled scores ``(batch, heads, b_q, b_k)``, ``-inf`` where the causal mask forbids."""
    S = Q_i @ K_j.transpose(-2, -1) * scale  # (batch, heads, b_q, b_k)
    if causal:
        q_pos = offset + q_start + torch.arange(Q_i.size(-2), device=Q_i.device)  # (b_q,)
        k_pos = k_start + torch.arange(K_j.size(-2), device=Q_i.device)  # (b_k,)
        S = S.masked_fill(k_pos[None, :] > q_pos[:, None], -math.inf)
    return S


def _check_tiled(Q, K, V, block_size, causal) -> None:
    """What tiled attention accepts, checked where the work is done (``TiledAttention.apply`` too)."""
    check_qkv(Q, K, V)
    check_positive_int("block_size", block_size)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be True or False, got {causal!r}")
    if causal and K.size(-2) < Q.size(-2):
        raise ValueError(f"a causal tiled attention needs t_k >= t_q (the queries are the last t_q of the t_k "
                         f"positions), got t_q={Q.size(-2)} and t_k={K.size(-2)}")


def _forward(Q, K, V, block_size: int, causal: bool):
    """Tiled forward: the output ``(batch, heads, t_q, d_v)`` and each row's log-sum-exp ``(batch, heads, t_q)``."""
    dtype, work = Q.dtype, torch.promote_types(Q.dtype, torch.float32)  # half precision: sum in float32
    Q, K, V = Q.to(work), K.to(work), V.to(work)
    t_q, t_k = Q.size(-2), K.size(-2)
    scale = 1.0 / math.sqrt(Q.size(-1))
    offset = t_k - t_q  # with a cache the queries are the last t_q positions
    O = Q.new_empty(*Q.shape[:-1], V.size(-1))  # (batch, heads, t_q, d_v)
    L = Q.new_empty(Q.shape[:-1])  # (batch, heads, t_q)
    for q_start in range(0, t_q, block_size):
        Q_i = Q[..., q_start:q_start + block_size, :]  # (batch, heads, b_q, d_k)
        q_end = q_start + Q_i.size(-2)
        m = Q.new_full(Q_i.shape[:-1], -math.inf)  # (batch, heads, b_q) running maximum
        l = Q.new_zeros(Q_i.shape[:-1])  # (batch, heads, b_q) running sum of exp(S - m)
        acc = Q.new_zeros(*Q_i.shape[:-1], V.size(-1))  # (batch, heads, b_q, d_v) unnormalised output
        for k_start in _key_blocks(q_start, q_end, t_k, block_size, causal, offset):
            K_j = K[..., k_start:k_start + block_size, :]  # (batch, heads, b_k, d_k)
            V_j = V[..., k_start:k_start + block_size, :]  # (batch, heads, b_k, d_v)
            S = _tile_scores(Q_i, K_j, scale, q_start, k_start, causal, offset)  # (batch, heads, b_q, b_k)
            m_new = torch.maximum(m, S.amax(dim=-1))  # (batch, heads, b_q)
            rescale = torch.exp(m - m_new)  # earlier sums were taken against a smaller maximum
            P = torch.exp(S - m_new[..., None])  # (batch, heads, b_q, b_k), masked entries 0
            l = l * rescale + P.sum(dim=-1)
            acc = acc * rescale[..., None] + P @ V_j  # (batch, heads, b_q, d_v)
            m = m_new
        # normalise once, at the end; no keys at all (t_k = 0) leave l = 0 and give 0, as PyTorch's kernel does,
        # while a NaN (or an infinite score) stays NaN, as it does there
        O[..., q_start:q_end, :] = torch.where(l[..., None] == 0, 0.0, acc / l[..., None])
        L[..., q_start:q_end] = m + torch.log(l)  # log sum_j exp(S_j): what the backward pass needs
    return O.to(dtype), L


class TiledAttention(torch.autograd.Function):
    """Tiled attention with a backward pass that recomputes each tile (FlashAttention's, in PyTorch; chapter 10).

    The forward pass saves ``Q``, ``K``, ``V``, the output ``O`` and each row's log-sum-exp
    ``L``: ``O(t d)`` numbers, no scores. The backward pass rebuilds each tile's weights
    ``P = exp(S - L)`` and uses ``dS = P * (dP - D)`` with ``D = rowsum(dO * O)``, the
    softmax's derivative written without the full rows.
    """

    @staticmethod
    def forward(ctx, Q, K, V, block_size: int, causal: bool):
        _check_tiled(Q, K, V, block_size, causal)
        O, L = _forward(Q, K, V, block_size, causal)
        ctx.save_for_backward(Q, K, V, O, L)
        ctx.block_size, ctx.causal = block_size, causal
        return O

    @staticmethod
    def backward(ctx, dO):
        Q, K, V, O, L = ctx.saved_tensors
        dtype = Q.dtype
        Q, K, V, O, dO = (t.to(L.dtype) for t in (Q, K, V, O, dO))  # half precision: work in float32
        block_size, causal = ctx.block_size, ctx.causal
        t_q, t_k = Q.size(-2), K.size(-2)
        scale, offset = 1.0 / math.sqrt(Q.size(-1)), t_k - t_q
        dQ, dK, dV = torch.zeros_like(Q), torch.zeros_like(K), torch.zeros_like(V)
        D = (dO * O).sum(dim=-1)  # (batch, heads, t_q): sum_j P_ij dP_ij, row by row
        for q_start in range(0, t_q, block_size):
            rows = slice(q_start, q_start + block_size)
            Q_i, dO_i, L_i, D_i = Q[..., rows, :], dO[..., rows, :], L[..., rows], D[..., rows]
            q_end = q_start + Q_i.size(-2)
            for k_start in _key_blocks(q_start, q_end, t_k, block_size, causal, offset):
                cols = slice(k_start, k_start + block_size)
                K_j, V_j = K[..., cols, :], V[..., cols, :]
                S = _tile_scores(Q_i, K_j, scale, q_start, k_start, causal, offset)  # (batch, heads, b_q, b_k)
                P = torch.exp(S - L_i[..., None])  # the tile's attention weights, recomputed
                dV[..., cols, :] += P.transpose(-2, -1) @ dO_i  # (batch, heads, b_k, d_v)
                dP = dO_i @ V_j.transpose(-2, -1)  # (batch, heads, b_q, b_k)
                dS = P * (dP - D_i[..., None]) * scale  # through the softmax and the 1/sqrt(d_k)
                dQ[..., rows, :] += dS @ K_j  # (batch, heads, b_q, d_k)
                dK[..., cols, :] += dS.transpose(-2, -1) @ Q_i  # (batch, heads, b_k, d_k)
        return dQ.to(dtype), dK.to(dtype), dV.to(dtype), None, None


def tiled_attention(Q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, block_size: int = 64,
                    causal: bool = False) -> torch.Tensor:
    """``softmax(Q K^T / sqrt(d_k)) V`` one ``block_size x block_size`` tile of scores at a time (chapter 10).

    Args:
        Q: ``(batch, num_heads, t_q, d_k)``.
        K: ``(batch, num_heads, t_k, d_k)``.
        V: ``(batch, num_heads, t_k, d_v)``.
        block_size: rows and columns of a tile; need not divide ``t_q`` or ``t_k``.
        causal: query ``i`` sees keys ``0 .. t_k - t_q + i`` (:func:`companion.causal_mask`;
            with ``t_k > t_q`` the queries are the last ``t_q`` positions); tiles wholly
            above the diagonal are skipped.

    Returns:
        ``(batch, num_heads, t_q, d_v)``, equal to ``F.scaled_dot_product_attention`` (with
        ``causal_mask(t_q, t_k)`` when ``causal``); differentiable, by recomputation
        (:class:`TiledAttention`).
    """
    return TiledAttention.apply(Q, K, V, block_size, causal)  # checks its inputs (_check_tiled)
