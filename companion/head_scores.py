"""What a head does, read from its attention weights: previous-token and induction scores (chapter 11).

Both scores average one entry of each query's row of weights, the one a head of that kind
puts its weight on (Olsson et al., 2022):

* **previous-token score**: query ``i`` attends to key ``i - 1``.
* **induction score**, on a sequence whose second half repeats its first (``half`` tokens
  each): query ``i`` of the second half attends to key ``i - half + 1``, the position just
  after the earlier copy of its own token, whose token comes next.

A score near 1 says the head puts almost all of its weight there; a head that spreads its
weight evenly over ``n`` keys scores about ``1 / n``.
"""

from __future__ import annotations

import torch

from ._checks import check_tensor

__all__ = ["previous_token_score", "induction_score"]


def _check_weights(weights) -> None:
    check_tensor("weights", weights, ndim=4, shape_doc="(batch, num_heads, t, t)")
    if weights.size(-1) != weights.size(-2) or not weights.is_floating_point():
        raise ValueError(f"weights must be float self-attention weights (batch, num_heads, t, t), got "
                         f"{weights.dtype} of shape {tuple(weights.shape)}")
    if weights.numel() == 0:
        return
    tol = 1e-2 if weights.dtype in (torch.float16, torch.bfloat16) else 1e-4
    sums = weights.sum(dim=-1)  # (batch, num_heads, t): 1 for a softmax row, 0 for a row with no keys
    low, high, off = torch.stack([weights.amin(), weights.amax(),
                                  torch.minimum((sums - 1).abs(), sums.abs()).amax()]).tolist()
    if not (low >= -tol and high <= 1 + tol and off <= tol):  # NaN fails too
        raise ValueError(f"weights must be attention weights, each query's row of entries in [0, 1] summing to "
                         f"1, got entries from {low:.3g} to {high:.3g} and a row sum {off:.3g} away from 1: "
                         "pass the weights after the softmax, as (batch, num_heads, query, key)")


def previous_token_score(weights: torch.Tensor, real: torch.Tensor | None = None) -> torch.Tensor:
    """Each head's mean weight from a query to the key just before it (chapter 11).

    Args:
        weights: float ``(batch, num_heads, t, t)``, self-attention weights, ``t >= 2``.
        real: optional bool ``(batch, t)``, ``True`` on real tokens: only queries ``i`` whose
            token and token ``i - 1`` are both real count. ``None``: every ``i >= 1``.

    Returns:
        ``(num_heads,)`` in ``weights``' dtype: the mean of ``weights[b, h, i, i - 1]`` over the
        counted ``(b, i)``.
    """
    _check_weights(weights)
    batch, _, t, _ = weights.shape
    if t < 2:
        raise ValueError(f"a previous-token score needs t >= 2 positions, got t={t}")
    i = torch.arange(1, t, device=weights.device)
    to_previous = weights[:, :, i, i - 1]  # (batch, num_heads, t - 1)
    if real is None:
        return to_previous.mean(dim=(0, 2))
    if not isinstance(real, torch.Tensor) or real.dtype != torch.bool or real.shape != (batch, t):
        got = f"{real.dtype} {tuple(real.shape)}" if isinstance(real, torch.Tensor) else type(real).__name__
        raise ValueError(f"real must be a bool tensor (batch, t) = ({batch}, {t}), got {got}")
    counted = (real[:, 1:] & real[:, :-1]).to(weights.dtype)  # (batch, t - 1)
    if not counted.any():
        raise ValueError("real leaves no query whose token and the one before it are both real")
    return (to_previous * counted[:, None]).sum(dim=(0, 2)) / counted.sum()


def induction_score(weights: torch.Tensor, half: int) -> torch.Tensor:
    """Each head's mean weight from a second-half query to the position after its earlier copy (chapter 11).

    Args:
        weights: float ``(batch, num_heads, 2 half, 2 half)``, self-attention weights over
            sequences whose second half repeats the first.
        half: the length of each half, ``>= 1``.

    Returns:
        ``(num_heads,)`` in ``weights``' dtype: the mean of ``weights[b, h, i, i - half + 1]``
        over the batch and the queries ``i = half, ..., 2 half - 1``.
    """
    _check_weights(weights)
    if isinstance(half, bool) or not isinstance(half, int) or half < 1 or weights.size(-1) != 2 * half:
        raise ValueError(f"half must be an int with 2 * half = t = {weights.size(-1)}, got {half!r}")
    i = torch.arange(half, 2 * half, device=weights.device)
    return weights[:, :, i, i - half + 1].mean(dim=(0, 2))
