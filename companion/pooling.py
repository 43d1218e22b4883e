"""Pooling a sequence into one vector: the mean over the real positions only (chapters 7 and 9).

A padded batch holds sequences of different lengths; the mean of a sequence must not count its
padding. With ``keep`` 1 at real positions and 0 at padding::

    mean_b = sum_j keep[b, j] x[b, j] / sum_j keep[b, j]
"""

from __future__ import annotations

import torch

from ._checks import check_tensor, describe

__all__ = ["masked_mean"]


def masked_mean(x: torch.Tensor, keep: torch.Tensor, *, name: str = "keep") -> torch.Tensor:
    """The mean of each sequence's vectors over its real positions only (chapters 7 and 9).

    Args:
        x: float ``(batch, t, d)``.
        keep: bool or int ``(batch, t)``, true (1) at real positions and false (0) at padding.
        name: what the errors call ``keep`` (the caller's name for it, e.g. ``attention_mask``).

    Returns:
        ``(batch, d)``, in ``x``'s dtype: ``sum_j keep[b, j] x[b, j] / sum_j keep[b, j]``. Padding
        never enters the sum (an infinite or NaN vector there changes nothing), and half-precision
        inputs are summed in float32, so that a long sum of moderate values does not overflow.

    Raises:
        ValueError: ``keep`` is a float tensor, has another shape than ``x.shape[:2]``, or a row of
            it is all false (the mean over no position is undefined).
    """
    check_tensor("x", x, ndim=3, shape_doc="(batch, t, d)")
    if not isinstance(keep, torch.Tensor) or keep.is_floating_point() or keep.shape != x.shape[:2]:
        raise ValueError(f"{name} must be a bool or int tensor (batch, t) = {tuple(x.shape[:2])} matching x, "
                         f"1 at real positions and 0 at padding; got {describe(keep)}")
    if keep.dtype != torch.bool and not bool(((keep == 0) | (keep == 1)).all()):
        raise ValueError(f"{name} must hold only 0 (padding) and 1 (real positions); got the values "
                         f"{sorted(set(keep.unique().tolist()))[:8]}")
    real = keep.bool().unsqueeze(-1)  # (batch, t, 1): true at real positions
    counts = real.sum(dim=1)  # (batch, 1)
    if not bool((counts > 0).all()):
        raise ValueError(f"a row of {name} is all 0 (false): the mean over no position is undefined; every "
                         "sequence needs at least one real position")
    total_dtype = torch.float32 if x.dtype in (torch.float16, torch.bfloat16) else x.dtype
    total = torch.where(real, x, 0).sum(dim=1, dtype=total_dtype)  # (batch, d): padding selected out
    return (total / counts).to(x.dtype)  # (batch, d)
