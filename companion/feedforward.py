"""The position-wise feed-forward network (chapter 6).

``FFN(x) = W_2 act(W_1 x + b_1) + b_2``, applied to every position separately and
identically. Because the same weights act on each position, it is also a 1-D convolution
with kernel size 1 over the sequence (which is what some texts call it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_choice, check_positive_int, check_probability

__all__ = ["PositionwiseFeedForward", "ACTIVATIONS"]

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


class PositionwiseFeedForward(nn.Module):
    """Two linear layers with an activation between them (chapter 6).

    Args:
        d_model: input and output width.
        d_ff: hidden width (the paper uses ``4 * d_model``).
        dropout: dropout after the activation (training mode only).
        activation: ``"relu"`` or ``"gelu"``.
        bias: whether the linear layers have biases.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu", bias: bool = True) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout)
        check_choice("activation", activation, tuple(ACTIVATIONS))
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)  # W_1
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, seq, d_model)`` -> ``(batch, seq, d_model)``."""
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))
