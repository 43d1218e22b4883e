"""Rotary position embeddings, RoPE (chapter 5).

Instead of adding a position vector to the tokens, rotary embeddings *rotate* each query and
each key by an angle that grows with its position. The ``d_k`` features form ``d_k / 2``
pairs ``(x[2i], x[2i+1])``; at position ``p`` pair ``i`` is turned by ``p * theta_i`` with
the sinusoidal encoding's frequencies ``theta_i = base^(-2i / d_k)``::

    rotate(x, p)[2i]   = x[2i] cos(p theta_i) - x[2i+1] sin(p theta_i)
    rotate(x, p)[2i+1] = x[2i] sin(p theta_i) + x[2i+1] cos(p theta_i)

Read as complex numbers ``z_i = x[2i] + j x[2i+1]`` this is ``z_i * exp(j p theta_i)``. A
rotation by ``a`` followed by the transpose of a rotation by ``b`` is a rotation by ``a - b``,
so the score of a query at ``p`` and a key at ``q`` depends on ``p - q`` only::

    rotate(q, p) . rotate(k, r) = q . rotate(k, r - p)

This module pairs neighbouring features (the RoFormer paper's layout, and the one that
matches :func:`companion.sinusoidal_encoding`). GPT-NeoX and the Hugging Face Llama code pair
feature ``i`` with feature ``i + d_k / 2`` instead ("rotate half"): the same idea on
permuted features, so weights move between the two layouts only with that permutation.
"""

from __future__ import annotations

import functools

import torch

from ._checks import check_positive_finite, check_positive_int, check_tensor, describe

__all__ = ["rotary_angles", "apply_rotary"]


def _check_positions(positions) -> None:
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a torch.Tensor (t,) of positions, got {describe(positions)}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise TypeError(f"positions must hold integers (or real numbers), got dtype {positions.dtype}")
    if positions.dim() != 1:
        raise ValueError(f"positions must be 1-D (t,), one position per row, got shape {tuple(positions.shape)}")
    if positions.is_floating_point() and not bool(torch.isfinite(positions).all()):
        raise ValueError("positions must be finite: a NaN or infinite position has no angle (got "
                         f"{positions[~torch.isfinite(positions)][:3].tolist()})")


def _check_even(d_k: int) -> None:
    if d_k % 2:
        raise ValueError(f"rotary embeddings rotate pairs of features, so d_k must be even, got d_k={d_k}; "
                         f"use an even head width d_k = d_model // num_heads")


def rotary_angles(positions: torch.Tensor, d_k: int, base: float = 10000.0) -> torch.Tensor:
    """The rotation angles ``p * theta_i`` with ``theta_i = base^(-2i / d_k)`` (chapter 5).

    Args:
        positions: int64 or float ``(t,)``, the position of each row (usually ``0 .. t - 1``).
        d_k: the rotated width, even.
        base: the frequencies' base; 10000 as in the sinusoidal encoding.

    Returns:
        float64 ``(t, d_k / 2)``: column ``i`` holds the angles of feature pair ``i``.
    """
    _check_positions(positions)
    check_positive_int("d_k", d_k)
    check_positive_finite("base", base)
    _check_even(d_k)
    two_i = torch.arange(0, d_k, 2, dtype=torch.float64, device=positions.device)  # (d_k / 2,)
    theta = base ** (-two_i / d_k)  # (d_k / 2,)
    return positions.to(torch.float64)[:, None] * theta  # (t, d_k / 2)


@functools.lru_cache(maxsize=32)
def _cos_sin_table(end: int, d_k: int, base: float, device: torch.device, dtype: torch.dtype):
    """``cos`` and ``sin`` of the angles of positions ``0 .. end - 1``, ``(end, d_k / 2)`` each.

    Kept per length, width, base, device and dtype: a model's layers share one table, and a
    forward pass reads it instead of recomputing the angles in float64. Made outside autograd
    and inference mode, so any later forward may use it.
    """
    with torch.inference_mode(False), torch.no_grad():
        angle = rotary_angles(torch.arange(end, device=device), d_k, base)  # (end, d_k / 2), float64
        return angle.cos().to(dtype), angle.sin().to(dtype)


def apply_rotary(x: torch.Tensor, positions: torch.Tensor | None = None, base: float = 10000.0, *,
                 offset: int = 0) -> torch.Tensor:
    """Rotate every feature pair of ``x`` by its position's angle (chapter 5).

    Args:
        x: float ``(..., t, d_k)`` with ``d_k`` even, e.g. queries or keys
            ``(batch, num_heads, t, d_k)``. The positions are the second-to-last axis: a
            ``(batch, t, num_heads, d_k)`` tensor must be transposed first, or its heads are
            rotated as if they were positions (no error can tell the two layouts apart).
        positions: optional int64 ``(t,)``; default ``offset .. offset + t - 1``.
        base: the frequencies' base.
        offset: the position of the first row when ``positions`` is not given (the number of
            positions already in a key-value cache, chapter 8).

    Returns:
        a new tensor of the shape and dtype of ``x``; ``x`` is not modified.

    Consecutive positions (``positions`` not given) read a table of ``cos`` and ``sin`` kept
    per length, device and dtype; explicit ``positions`` compute their angles afresh.
    """
    check_tensor("x", x, shape_doc="(..., t, d_k)")
    if x.dim() < 2:
        raise ValueError(f"x must have shape (..., t, d_k), got shape {tuple(x.shape)}")
    t, d_k = x.shape[-2], x.shape[-1]
    if positions is None:
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be an int >= 0 (the position of the first row), got {offset!r}")
        check_positive_int("d_k", d_k)
        check_positive_finite("base", base)
        _check_even(d_k)
        end = 1 << max(offset + t - 1, 1).bit_length()  # a power of two >= offset + t: few tables
        cos, sin = _cos_sin_table(end, d_k, float(base), x.device, x.dtype)
        cos, sin = cos[offset:offset + t], sin[offset:offset + t]  # (t, d_k / 2) each
    else:
        if offset != 0:
            raise ValueError(f"give positions or offset, not both: offset={offset!r} would be ignored when "
                             "positions are given (add the offset to the positions instead)")
        _check_positions(positions)
        if positions.size(0) != t:
            raise ValueError(f"positions must have shape (t,) = ({t},), one position per row of x, "
                             f"got shape {tuple(positions.shape)}")
        angle = rotary_angles(positions.to(x.device), d_k, base)  # (t, d_k / 2)
        cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., t, d_k / 2) each: the pairs' two features
    rotated = torch.stack((x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1)  # (..., t, d_k / 2, 2)
    return rotated.flatten(-2)  # (..., t, d_k): pairs back side by side
