"""Input checks shared by the whole package.

Every public function validates what it is given and raises a ``TypeError`` or
``ValueError`` whose message says what was expected, what arrived, and how to fix it.
Nothing is silently coerced. (Plain ``assert`` statements are not used for this: they
disappear under ``python -O`` and their messages are rarely helpful.)
"""

from __future__ import annotations

import math

import numpy as np
import torch


def describe(x) -> str:
    """A short description of ``x`` for error messages: shape and dtype for tensors."""
    if isinstance(x, torch.Tensor):
        return f"a tensor of shape {tuple(x.shape)} and dtype {x.dtype}"
    return f"{type(x).__name__} {x!r}"


def check_tensor(name: str, x, ndim: int | tuple[int, ...] | None = None, shape_doc: str = "") -> None:
    """Raise unless ``x`` is a floating-point tensor with ``ndim`` dimensions."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor{' ' + shape_doc if shape_doc else ''}, got {describe(x)}")
    if not x.is_floating_point():
        raise TypeError(
            f"{name} must be a floating-point tensor, got dtype {x.dtype}; "
            f"convert it with {name}.float() (token ids go through an embedding first)"
        )
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else ndim
        if x.dim() not in allowed:
            want = " or ".join(f"{d}-D" for d in allowed)
            raise ValueError(
                f"{name} must be {want}{' ' + shape_doc if shape_doc else ''}, "
                f"got {x.dim()}-D shape {tuple(x.shape)}"
            )


def check_tokens(name: str, tokens, pad_hint: str = "") -> None:
    """Raise unless ``tokens`` is a 2-D integer tensor ``(batch, seq)`` of token ids."""
    if not isinstance(tokens, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of token ids (batch, seq), got {describe(tokens)}")
    if tokens.is_floating_point() or tokens.dtype == torch.bool or tokens.is_complex():
        raise TypeError(
            f"{name} must hold integer token ids (torch.long), got dtype {tokens.dtype}; "
            f"use {name}.long() if these really are ids"
        )
    if tokens.dim() != 2:
        raise ValueError(
            f"{name} must be 2-D (batch, seq){pad_hint}, got {tokens.dim()}-D shape {tuple(tokens.shape)}; "
            f"for a single sequence use {name}.unsqueeze(0)"
        )
    if tokens.dtype not in (torch.int64, torch.int32):
        raise TypeError(
            f"{name} must hold int64 (or int32) token ids, got dtype {tokens.dtype}: an embedding looks ids up "
            f"with those only; use {name}.long()"
        )


def check_id_range(name: str, tokens: torch.Tensor, vocab_size: int, extra: str = "") -> None:
    """Raise unless every id of ``tokens`` is in ``[0, vocab_size)``.

    The minimum and maximum come back from the device in one read (on a GPU, one wait);
    ``extra`` ends the message (what an id at ``vocab_size`` would mean, for instance).
    """
    if tokens.numel() == 0:
        return
    low, high = torch.aminmax(tokens)
    low, high = torch.stack([low, high]).tolist()  # one device-to-host copy
    if low < 0 or high >= vocab_size:
        raise ValueError(f"{name}: token ids must be in [0, vocab_size={vocab_size}), got min {low} and max "
                         f"{high}; map unknown words to an <unk> id{extra}")


def check_mask(mask, scores_shape: torch.Size | tuple[int, ...], what: str = "(..., t_q, t_k)") -> None:
    """Raise unless ``mask`` is a bool tensor that broadcasts to ``scores_shape`` unchanged.

    The mask convention of the whole package is that of
    ``torch.nn.functional.scaled_dot_product_attention``: ``True`` means *may attend*.
    """
    if not isinstance(mask, torch.Tensor):
        raise TypeError(f"mask must be a bool tensor (True = may attend), got {describe(mask)}")
    if mask.dtype != torch.bool:
        raise TypeError(
            f"mask must have dtype torch.bool (True = may attend), got {mask.dtype}. "
            "A float mask of 0/-inf or an int 0/1 mask is ambiguous here; build a bool one, "
            "e.g. mask = (m == 1) or mask = torch.isfinite(float_mask)"
        )
    try:
        broadcast = torch.broadcast_shapes(mask.shape, scores_shape)
    except RuntimeError:
        broadcast = None
    if broadcast != torch.Size(scores_shape):
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to the attention scores "
            f"{what} = {tuple(scores_shape)}; give it shape (t_q, t_k), (batch, t_q, t_k) or "
            "(batch, 1, t_k) for padding (see companion.padding_mask)"
        )


def check_batch_mask(name: str, mask, batch: int, t_q: int, t_k: int, what: str) -> None:
    """Raise unless ``mask`` (or ``None``) is a bool mask with a batch axis that broadcasts to
    ``(batch, t_q, t_k)``. A 2-D mask is refused: a padding mask ``(batch, t_k)`` would be read
    as ``(t_q, t_k)`` rows whenever ``batch == t_q``, silently."""
    if mask is None:
        return
    if isinstance(mask, torch.Tensor) and mask.dim() == 2:
        raise ValueError(
            f"{name} must have a batch axis, {what}; got a 2-D mask of shape {tuple(mask.shape)}, which is "
            "ambiguous: a padding mask (batch, t) would be read as (t_q, t_k) rows whenever batch equals t_q. "
            f"For a padding mask add the query axis, {name}[:, None, :] (as companion.padding_mask returns "
            f"it); for one (t_q, t_k) mask shared by the batch, add a batch axis, {name}[None]")
    try:
        check_mask(mask, (batch, t_q, t_k), what=what)
    except (TypeError, ValueError) as error:  # say which argument
        raise type(error)(f"{name}: {error}") from None


def check_probability(name: str, p) -> None:
    """Raise unless ``p`` is a real number in [0, 1)."""
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise TypeError(f"{name} must be a float in [0, 1), got {describe(p)}")
    if not (0.0 <= p < 1.0):
        raise ValueError(f"{name} must be in [0, 1) (the probability of zeroing an element), got {p}")


def check_positive_int(name: str, n) -> None:
    """Raise unless ``n`` is a positive Python int."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{name} must be a positive int, got {describe(n)}")
    if n <= 0:
        raise ValueError(f"{name} must be a positive int, got {n}")


def check_count(name: str, n) -> None:
    """Raise unless ``n`` is a Python int >= 0 (a count that may be zero)."""
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{name} must be an int >= 0, got {describe(n)}")
    if n < 0:
        raise ValueError(f"{name} must be an int >= 0, got {n}")


def check_positive_finite(name: str, x) -> None:
    """Raise unless ``x`` is a finite real number > 0."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise TypeError(f"{name} must be a positive number, got {describe(x)}")
    if not (math.isfinite(x) and x > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {x}")


def check_flags(**flags) -> None:
    """Raise unless every flag is ``True`` or ``False``: a string such as ``"no"`` is truthy, and
    would silently mean yes."""
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {describe(value)}")


def check_choice(name: str, value, choices: tuple[str, ...]) -> None:
    """Raise unless ``value`` is one of ``choices``."""
    if value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {options}, got {value!r}")


def check_same_dtype_device(**tensors: torch.Tensor) -> None:
    """Raise unless all the named tensors share one dtype and one device."""
    items = list(tensors.items())
    first_name, first = items[0]
    for name, t in items[1:]:
        if t.dtype != first.dtype:
            raise TypeError(
                f"{first_name} and {name} must have the same dtype, got {first.dtype} and {t.dtype}; "
                f"convert one with .to({first_name}.dtype)"
            )
        if t.device != first.device:
            raise ValueError(
                f"{first_name} and {name} must be on the same device, got {first.device} and {t.device}; "
                f"move one with .to({first_name}.device)"
            )


def check_features(name: str, x, width: int, weight: torch.Tensor, width_name: str = "d_model") -> None:
    """Raise unless ``x`` is ``(..., width)`` of the dtype and device of the module's ``weight``."""
    check_tensor(name, x, shape_doc=f"(..., {width_name})")
    if x.dim() == 0 or x.size(-1) != width:
        raise ValueError(f"{name} must have last dimension {width_name}={width}, got shape {tuple(x.shape)}")
    if x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):  # autocast mixes them
        raise TypeError(f"{name} has dtype {x.dtype} but the module's weights are {weight.dtype}; convert one: "
                        f"{name}.to({weight.dtype}) or module.to({x.dtype})")
    if x.device != weight.device:
        raise ValueError(f"{name} is on {x.device} but the module's weights are on {weight.device}; move one "
                         f"with .to()")


def check_qkv(Q, K, V) -> None:
    """Raise unless ``Q (batch, num_heads, t_q, d_k)``, ``K (batch, num_heads, t_k, d_k)`` and
    ``V (batch, num_heads, t_k, d_v)`` are tensors of one dtype and device whose shapes agree (chapter 10)."""
    check_tensor("Q", Q, ndim=4, shape_doc="(batch, num_heads, t_q, d_k)")
    check_tensor("K", K, ndim=4, shape_doc="(batch, num_heads, t_k, d_k)")
    check_tensor("V", V, ndim=4, shape_doc="(batch, num_heads, t_k, d_v)")
    check_same_dtype_device(Q=Q, K=K, V=V)
    if Q.shape[:2] != K.shape[:2] or K.shape[:3] != V.shape[:3] or Q.size(-1) != K.size(-1):
        raise ValueError(f"Q (batch, num_heads, t_q, d_k), K (batch, num_heads, t_k, d_k) and V (batch, "
                         f"num_heads, t_k, d_v) must agree, got {tuple(Q.shape)}, {tuple(K.shape)} and "
                         f"{tuple(V.shape)}")
