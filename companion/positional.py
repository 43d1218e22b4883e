"""Positional encodings (chapter 5).

Attention by itself is blind to order: permuting the tokens permutes the outputs. Adding a
position-dependent vector to each token embedding breaks that symmetry.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._checks import check_positive_int, check_tensor

__all__ = ["sinusoidal_encoding", "sinusoidal_shift", "SinusoidalPositionalEncoding", "LearnedPositionalEmbedding"]


def sinusoidal_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """The fixed encodings of "Attention Is All You Need" (chapter 5)::

        E[p, 2i]   = sin(p / 10000^(2i / d_model))
        E[p, 2i+1] = cos(p / 10000^(2i / d_model))

    Args:
        max_len: number of positions ``p = 0 .. max_len - 1``.
        d_model: width of each encoding (odd widths end on a sine).

    Returns:
        float32 ``(max_len, d_model)``.
    """
    check_positive_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)  # (max_len, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d_model / 2),)
    angle = position / (10000.0 ** (two_i / d_model))  # (max_len, ceil(d_model / 2))
    E = torch.zeros(max_len, d_model, dtype=torch.float64)
    E[:, 0::2] = torch.sin(angle)
    E[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return E.float()


def sinusoidal_shift(k: int, d_model: int) -> torch.Tensor:
    """The matrix ``M_k`` that moves every sinusoidal encoding ``k`` positions on (chapter 5)::

        sinusoidal_encoding(n, d_model)[p + k] == M_k @ sinusoidal_encoding(n, d_model)[p]   for every p

    With ``w_i = 10000^(-2i / d_model)``, ``M_k`` is block-diagonal with one 2 x 2 block per
    (sine, cosine) pair, by the angle-addition formulas::

        [ cos(k w_i)   sin(k w_i) ]   [ sin(p w_i) ]   [ sin((p + k) w_i) ]
        [-sin(k w_i)   cos(k w_i) ] @ [ cos(p w_i) ] = [ cos((p + k) w_i) ]

    It depends on ``k`` only, not on ``p``: a shift is a fixed linear map.

    Args:
        k: the shift, any int (negative moves back).
        d_model: the encoding's width, even.

    Returns:
        float32 ``(d_model, d_model)``.
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int (a number of positions), got {type(k).__name__} {k!r}")
    check_positive_int("d_model", d_model)
    if d_model % 2:
        raise ValueError(f"d_model must be even here (one 2 x 2 block per sine-cosine pair), got d_model={d_model}")
    w = 10000.0 ** (-torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (d_model / 2,)
    c, s = torch.cos(k * w), torch.sin(k * w)  # (d_model / 2,) each
    blocks = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (d_model / 2, 2, 2)
    return torch.block_diag(*blocks).float()  # (d_model, d_model)


def _check_length(x: torch.Tensor, d_model: int, max_len: int, offset: int = 0) -> None:
    check_tensor("x", x, ndim=3, shape_doc="(batch, seq, d_model)")
    if x.size(-1) != d_model:
        raise ValueError(f"x must have last dimension d_model={d_model}, got shape {tuple(x.shape)}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ValueError(f"offset must be an int >= 0 (the position of x's first token), got {offset!r}")
    if offset + x.size(1) > max_len:
        where = (f"positions {offset} .. {offset + x.size(1) - 1} go past" if offset
                 else f"sequence length {x.size(1)} is longer than")
        raise ValueError(
            f"{where} max_len={max_len}; "
            f"truncate the input or build the module with max_len >= {offset + x.size(1)}"
        )


class SinusoidalPositionalEncoding(nn.Module):
    """Adds :func:`sinusoidal_encoding` to its input; no trainable parameters (chapter 5).

    The table is a non-persistent buffer: it follows ``.to(device)`` but is not saved in
    the ``state_dict`` (it is recomputed from ``max_len`` and ``d_model``).

    Args:
        d_model: width of the embeddings.
        max_len: longest sequence accepted.
    """

    def __init__(self, d_model: int, max_len: int = 5000) -> None:
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("encoding", sinusoidal_encoding(max_len, d_model), persistent=False)

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``(batch, seq, d_model)`` -> ``(batch, seq, d_model)``: ``x + E[offset : offset + seq]``.

        ``offset`` is the position of ``x``'s first token: ``0``, or the number of tokens a
        decoder has already cached (chapter 8).
        """
        _check_length(x, self.d_model, self.max_len, offset)
        return x + self.encoding[offset : offset + x.size(1)].to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


class LearnedPositionalEmbedding(nn.Module):
    """Adds a trained vector per position, as in BERT and GPT (chapter 5).

    Args:
        max_len: number of positions, and so the longest sequence accepted.
        d_model: width of the embeddings.
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        check_positive_int("max_len", max_len)
        check_positive_int("d_model", d_model)
        self.d_model, self.max_len = d_model, max_len
        self.embedding = nn.Embedding(max_len, d_model)
        nn.init.normal_(self.embedding.weight, std=1.0 / math.sqrt(d_model))

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``(batch, seq, d_model)`` -> ``(batch, seq, d_model)``: ``x + P[offset : offset + seq]``.

        ``offset`` is the position of ``x``'s first token (chapter 8's cached decoding).
        """
        _check_length(x, self.d_model, self.max_len, offset)
        return x + self.embedding.weight[offset : offset + x.size(1)]

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, d_model={self.d_model}"
