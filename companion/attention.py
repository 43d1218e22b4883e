"""Attention as a (soft) key-value lookup.

Chapter 1 introduces :func:`hardargmax` and :func:`softargmax`; chapter 3 derives the
``1/sqrt(d_k)`` scale of :func:`scaled_dot_product_attention`.

Mask convention (the whole package, and ``torch.nn.functional.scaled_dot_product_attention``):
a bool tensor where ``True`` means *may attend*; it broadcasts to the scores ``(..., t_q, t_k)``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from ._checks import (
    check_mask,
    check_positive_finite,
    check_probability,
    check_same_dtype_device,
    check_tensor,
)

__all__ = ["softargmax", "hardargmax", "scaled_dot_product_attention"]


def softargmax(scores: torch.Tensor, beta: float = 1.0, dim: int = -1) -> torch.Tensor:
    """Soft attention: ``softmax(beta * scores)`` along ``dim`` (chapter 1).

    ``beta`` is the inverse temperature. At ``beta -> 0`` every entry gets the same weight;
    as ``beta`` grows the result approaches :func:`hardargmax`, the one-hot of the maximum.

    Args:
        scores: any shape ``(..., n)``; ``dim`` picks the axis to normalise.
        beta: inverse temperature, a finite number > 0.
        dim: the axis whose entries sum to one.

    Returns:
        weights of the same shape as ``scores``, non-negative, summing to 1 along ``dim``.

    The maximum is subtracted *before* the multiplication by ``beta``: ``beta * (s - max s)``
    is at most 0, so it cannot overflow however large ``beta`` is, even in float16 (where
    ``beta * s`` would already be ``inf`` for ``beta = 1000``, ``s = 100``). Softmax does not
    change when a constant is subtracted from every score, so the weights are the same. Half
    precision is computed in float32 and rounded once; a ``beta`` beyond the dtype's range
    (or below its smallest number) is applied in float64, so ``1e39`` gives the hard limit
    (ties share the weight) and a masked score keeps weight 0 however small ``beta`` is.
    """
    check_tensor("scores", scores)
    check_positive_finite("beta", beta)
    work = torch.float32 if scores.dtype in (torch.float16, torch.bfloat16) else scores.dtype
    s = scores.to(work)  # half precision is computed in float32, then rounded once
    shifted = s - s.amax(dim=dim, keepdim=True).detach()  # (..., n), <= 0, the maximum at 0
    if torch.finfo(work).tiny <= beta <= torch.finfo(work).max:
        z = beta * shifted
    else:  # beta itself would round to 0 or inf in the dtype (0 * -inf and inf * 0 are NaN):
        z = (beta * shifted.double()).to(work)  # scale in float64, where any finite beta fits
    return torch.softmax(z, dim=dim).to(scores.dtype)


def hardargmax(scores: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Hard attention: the one-hot vector of the maximum along ``dim`` (chapter 1).

    Ties go to the first maximum, as in :func:`torch.argmax`.

    Args:
        scores: any shape ``(..., n)``.
        dim: the axis to take the maximum over.

    Returns:
        a tensor of the same shape and dtype as ``scores`` holding a single 1 along ``dim``.
    """
    check_tensor("scores", scores)
    index = scores.argmax(dim=dim, keepdim=True)
    return torch.zeros_like(scores).scatter_(dim, index, 1.0)


def scaled_dot_product_attention(
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``softmax(Q K^T / sqrt(d_k)) V``, written out so the weights can be returned (chapter 3).

    A query row whose keys are *all* masked gets zero weights and a zero output (never NaN,
    in every floating dtype), as PyTorch's fused kernel does on the CPU.

    Args:
        query: ``(..., t_q, d_k)``.
        key: ``(..., t_k, d_k)``.
        value: ``(..., t_k, d_v)``.
        mask: optional bool tensor, ``True`` = may attend, broadcastable to
            ``(..., t_q, t_k)``; see :func:`companion.causal_mask` and
            :func:`companion.padding_mask`.
        dropout_p: probability of zeroing a weight (applied whenever it is > 0; modules
            pass 0.0 in eval mode).
        scale: the factor on ``Q K^T``; ``None`` means ``1 / sqrt(d_k)``.

    Returns:
        ``(output, weights)``: output ``(..., t_q, d_v)``; weights ``(..., t_q, t_k)``, the
        attention weights actually applied to ``value`` (after dropout).
    """
    _check_qkv(query, key, value)
    check_probability("dropout_p", dropout_p)
    d_k = query.size(-1)
    if scale is None:
        scale = 1.0 / math.sqrt(d_k)
    else:
        check_positive_finite("scale", scale)

    # (Q * scale) K^T rather than (Q K^T) * scale: the same scores, but the scaling touches
    # t_q * d_k numbers instead of t_q * t_k, which matters for long sequences.
    scores = (query * scale) @ key.transpose(-2, -1)  # (..., t_q, t_k)
    if mask is not None:
        check_mask(mask, scores.shape)
        # The most negative finite number, not -inf: a fully masked row then stays finite
        # (uniform) through softmax, with finite gradients, and is zeroed just below.
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)  # (..., t_q, t_k), rows sum to 1
    if mask is not None:
        has_any_key = mask.any(dim=-1, keepdim=True)  # (..., t_q, 1)
        weights = torch.where(has_any_key, weights, torch.zeros((), dtype=weights.dtype, device=weights.device))
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights  # (..., t_q, d_v), (..., t_q, t_k)


def _check_qkv(query, key, value) -> None:
    """Shape, dtype and device checks shared by the explicit and fused attention paths."""
    check_tensor("query", query, shape_doc="(..., t_q, d_k)")
    check_tensor("key", key, shape_doc="(..., t_k, d_k)")
    check_tensor("value", value, shape_doc="(..., t_k, d_v)")
    for name, t in (("query", query), ("key", key), ("value", value)):
        if t.dim() < 2:
            raise ValueError(f"{name} must have at least 2 dimensions (..., seq, features), got shape {tuple(t.shape)}")
    check_same_dtype_device(query=query, key=key, value=value)
    if query.size(-1) != key.size(-1):
        raise ValueError(
            f"query and key must have the same last dimension d_k (each score is a dot product q . k), "
            f"got query {tuple(query.shape)} and key {tuple(key.shape)}"
        )
    if key.size(-2) != value.size(-2):
        raise ValueError(
            f"key and value must have the same length t_k (one value per key), "
            f"got key {tuple(key.shape)} and value {tuple(value.shape)}"
        )
    if not (query.shape[:-2] == key.shape[:-2] == value.shape[:-2]):
        raise ValueError(
            f"query, key and value must share their leading (batch) dimensions, got "
            f"{tuple(query.shape[:-2])}, {tuple(key.shape[:-2])} and {tuple(value.shape[:-2])}"
        )
