"""Attention masks (chapters 2 and 6).

Convention, everywhere in ``companion``: a bool tensor where ``True`` means *may attend*,
broadcastable to the scores ``(..., t_q, t_k)``, the convention of
``torch.nn.functional.scaled_dot_product_attention``. PyTorch's ``key_padding_mask``
argument (of ``nn.MultiheadAttention`` and the ``nn.Transformer*`` layers) is the opposite,
``True`` = ignore: convert with :func:`from_key_padding_mask`. Masks combine with ``&``::

    mask = causal_mask(t) & padding_mask(lengths, max_len=t)   # (batch, t, t)
"""

from __future__ import annotations

import torch

from ._checks import check_positive_int, describe

__all__ = ["causal_mask", "sliding_window_mask", "padding_mask", "from_key_padding_mask"]


def causal_mask(t_q: int, t_k: int | None = None, *, device: torch.device | str | None = None) -> torch.Tensor:
    """Position ``i`` may attend to positions ``0..i`` only: the decoder's self-attention (chapter 6).

    With ``t_k > t_q`` the queries are the **last** ``t_q`` of ``t_k`` positions: the new
    tokens of a decoder that keeps the earlier keys in a cache (chapter 8). Query ``i`` sits
    at position ``t_k - t_q + i`` and sees keys ``0 .. t_k - t_q + i``.

    Args:
        t_q: number of queries (the sequence length when there is no cache).
        t_k: number of keys, ``>= t_q``; default ``t_q``.
        device: where to create the mask.

    Returns:
        bool ``(t_q, t_k)``, lower triangular from the diagonal ``t_k - t_q``, ``True`` = may attend.
    """
    check_positive_int("t_q" if t_k is not None else "t", t_q)
    if t_k is None:
        t_k = t_q
    check_positive_int("t_k", t_k)
    if t_k < t_q:
        raise ValueError(f"causal_mask needs t_k >= t_q (the queries are the last t_q of the t_k positions), got "
                         f"t_q={t_q} and t_k={t_k}")
    return torch.ones(t_q, t_k, dtype=torch.bool, device=device).tril(diagonal=t_k - t_q)


def sliding_window_mask(t_q: int, t_k: int | None = None, *, window: int,
                        device: torch.device | str | None = None) -> torch.Tensor:
    """Causal attention to the last ``window`` positions only: local attention (chapter 10).

    As in :func:`causal_mask`, the queries are the **last** ``t_q`` of ``t_k`` positions
    (``t_k > t_q`` when earlier keys are cached). Query ``i`` sits at position
    ``p = t_k - t_q + i`` and sees keys ``p - window + 1 .. p``: itself and the
    ``window - 1`` before it (Mistral's sliding window; Longformer's local attention).

    Args:
        t_q: number of queries.
        t_k: number of keys, ``>= t_q``; default ``t_q``.
        window: how many positions each query sees, itself included; ``>= 1``.
        device: where to create the mask.

    Returns:
        bool ``(t_q, t_k)``, ``True`` = may attend: a band of width ``window`` ending on the
        diagonal ``t_k - t_q``.
    """
    check_positive_int("window", window)
    mask = causal_mask(t_q, t_k, device=device)  # (t_q, t_k): keys up to each query's position
    t_k = mask.size(1)
    return mask & ~torch.ones_like(mask).tril(diagonal=t_k - t_q - window)  # and none window or more back


def padding_mask(
    lengths: torch.Tensor | None = None,
    *,
    max_len: int | None = None,
    tokens: torch.Tensor | None = None,
    pad_id: int | None = None,
) -> torch.Tensor:
    """Keys that are real tokens may be attended to; padding may not (chapter 2).

    Call it either with ``lengths`` (and optionally ``max_len``) or with ``tokens`` and
    ``pad_id``.

    Args:
        lengths: int ``(batch,)``, the number of real tokens in each sequence.
        max_len: padded length ``t_k``; defaults to ``lengths.max()``.
        tokens: int ``(batch, t_k)`` token ids.
        pad_id: the id that marks padding in ``tokens``.

    Returns:
        bool ``(batch, 1, t_k)``, ``True`` at real tokens. The middle 1 broadcasts over the
        queries, so the mask can be passed straight to attention over ``(batch, t_q, t_k)``
        scores.
    """
    if (lengths is None) == (tokens is None):
        raise ValueError(
            "padding_mask needs either lengths (with optional max_len) or tokens with pad_id, "
            f"got lengths={'given' if lengths is not None else None} and tokens={'given' if tokens is not None else None}"
        )
    if tokens is not None:
        if not isinstance(tokens, torch.Tensor) or tokens.is_floating_point() or tokens.dim() != 2:
            raise TypeError(f"tokens must be an integer tensor (batch, t_k), got {describe(tokens)}")
        if isinstance(pad_id, bool) or not isinstance(pad_id, int):
            raise TypeError(f"pad_id must be an int when tokens are given, got {describe(pad_id)}")
        if max_len is not None:
            raise ValueError("max_len is taken from tokens.shape[1]; do not pass it together with tokens")
        return (tokens != pad_id).unsqueeze(1)  # (batch, 1, t_k)

    if not isinstance(lengths, torch.Tensor) or lengths.is_floating_point() or lengths.dim() != 1:
        raise TypeError(f"lengths must be a 1-D integer tensor (batch,), got {describe(lengths)}")
    if pad_id is not None:
        raise ValueError("pad_id is only used with tokens; with lengths, pass max_len if needed")
    if (lengths < 0).any():
        raise ValueError(f"lengths must be >= 0, got {lengths.tolist()}")
    longest = int(lengths.max()) if lengths.numel() else 0
    if max_len is None:
        max_len = longest
    check_positive_int("max_len", max_len)
    if longest > max_len:
        raise ValueError(f"a sequence of length {longest} does not fit max_len={max_len}; raise max_len or truncate")
    positions = torch.arange(max_len, device=lengths.device)  # (t_k,)
    return (positions < lengths.unsqueeze(-1)).unsqueeze(1)  # (batch, 1, t_k)


def from_key_padding_mask(key_padding_mask: torch.Tensor) -> torch.Tensor:
    """Convert PyTorch's ``key_padding_mask`` (``True`` = ignore) to our convention (chapter 4).

    Args:
        key_padding_mask: bool ``(batch, t_k)``, ``True`` at padding.

    Returns:
        bool ``(batch, 1, t_k)``, ``True`` at real tokens (may attend).
    """
    if not isinstance(key_padding_mask, torch.Tensor) or key_padding_mask.dtype != torch.bool:
        raise TypeError(f"key_padding_mask must be a bool tensor (batch, t_k), got {describe(key_padding_mask)}")
    if key_padding_mask.dim() != 2:
        raise ValueError(f"key_padding_mask must be 2-D (batch, t_k), got shape {tuple(key_padding_mask.shape)}")
    return (~key_padding_mask).unsqueeze(1)
