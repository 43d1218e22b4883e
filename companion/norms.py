"""RMSNorm: LayerNorm without the mean (chapter 10).

LayerNorm centres each vector and scales it to unit variance, then applies a gain and a
bias. RMSNorm (Zhang and Sennrich, 2019; used by T5, Llama, Mistral, Gemma) keeps only the
scaling::

    RMSNorm(x) = g * x / sqrt(mean(x_i^2) + eps)

No mean is subtracted and there is no bias: one reduction per vector instead of two, and
``d_model`` fewer parameters. For a vector whose mean is already 0 it equals LayerNorm
without a bias.
"""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_features, check_positive_finite, check_positive_int, check_tensor

__all__ = ["RMSNorm"]


class RMSNorm(nn.Module):
    """Root-mean-square normalisation of the last dimension, equal to ``nn.RMSNorm`` (chapter 10).

    Args:
        d_model: the width of the vectors (the last dimension).
        eps: added to the mean square before the square root.

    Parameters: ``weight``, the gain ``g`` of shape ``(d_model,)``, started at 1.
    """

    def __init__(self, d_model: int, eps: float = 1e-6) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_finite("eps", eps)
        self.d_model, self.eps = d_model, eps
        self.weight = nn.Parameter(torch.ones(d_model))  # g

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(..., d_model)`` -> ``(..., d_model)``: each vector divided by its RMS, times ``g``."""
        check_features("x", x, self.d_model, self.weight)
        wide = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x  # x^2 overflows half precision
        mean_square = wide.pow(2).mean(dim=-1, keepdim=True)  # (..., 1)
        return self.weight * (wide * torch.rsqrt(mean_square + self.eps)).to(x.dtype)  # (..., d_model)

    def extra_repr(self) -> str:
        return f"{self.d_model}, eps={self.eps}"
