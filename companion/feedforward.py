"""The position-wise feed-forward network (chapter 6).

``FFN(x) = W_2 act(W_1 x + b_1) + b_2``, applied to every position separately and
identically. Because the same weights act on each position, it is also a 1-D convolution
with kernel size 1 over the sequence (which is what some texts call it).

:class:`SwiGLU` is the feed-forward block of today's models (PaLM, Llama, Mistral;
chapter 10): a gated linear unit (Shazeer, 2020), whose hidden vector is the product of two
projections, one passed through SiLU (``x sigmoid(x)``, also called Swish)::

    SwiGLU(x) = W_2 (SiLU(W_1 x) * W_3 x)

Three matrices instead of two, so at the same parameter count the hidden width is 2/3 of
the two-matrix block's (``d_ff = 8 d_model / 3`` where the paper's block has ``4 d_model``).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ._checks import check_choice, check_flags, check_features, check_positive_int, check_probability

__all__ = ["PositionwiseFeedForward", "SwiGLU", "ACTIVATIONS", "swiglu_width"]

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
        check_flags(bias=bias)
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)  # W_1
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, seq, d_model)`` -> ``(batch, seq, d_model)``."""
        check_features("x", x, self.linear1.in_features, self.linear1.weight)
        return self.linear2(self.dropout(ACTIVATIONS[self.activation](self.linear1(x))))


def swiglu_width(d_ff: int, multiple_of: int = 1) -> int:
    """The hidden width that gives :class:`SwiGLU` the parameters of a two-matrix block of width ``d_ff`` (chapter 10).

    Three ``d_model x d_hidden`` matrices match two ``d_model x d_ff`` ones when
    ``d_hidden = 2 d_ff / 3``; rounded up to a multiple of ``multiple_of`` (Llama rounds to
    256 for fast kernels). Biases are not counted.
    """
    check_positive_int("d_ff", d_ff)
    check_positive_int("multiple_of", multiple_of)
    hidden = (2 * d_ff + 2) // 3  # ceil(2 d_ff / 3)
    return -(-hidden // multiple_of) * multiple_of


class SwiGLU(nn.Module):
    """The gated feed-forward block of Llama and PaLM: ``W_2 (SiLU(W_1 x) * W_3 x)`` (chapter 10).

    Args:
        d_model: input and output width.
        d_ff: hidden width (:func:`swiglu_width` gives the one that matches a
            :class:`PositionwiseFeedForward` of a given width in parameters).
        dropout: dropout on the gated hidden vector (training mode only).
        bias: whether the linear layers have biases (Llama: none).

    Parameters: ``linear1`` (``W_1``, the gate's projection), ``linear3`` (``W_3``, the
    value's) and ``linear2`` (``W_2``, back to ``d_model``); Llama calls them ``gate_proj``,
    ``up_proj`` and ``down_proj``.
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, bias: bool = False) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout)
        check_flags(bias=bias)
        self.activation = "swiglu"
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)  # W_1: the gate
        self.linear3 = nn.Linear(d_model, d_ff, bias=bias)  # W_3: what the gate lets through
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(batch, seq, d_model)`` -> ``(batch, seq, d_model)``."""
        check_features("x", x, self.linear1.in_features, self.linear1.weight)
        hidden = F.silu(self.linear1(x)) * self.linear3(x)  # (batch, seq, d_ff): gate * value
        return self.linear2(self.dropout(hidden))
