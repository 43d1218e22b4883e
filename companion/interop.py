"""Moving weights between ``companion`` modules and PyTorch's own (every chapter's equality check).

Supported pairs (PyTorch modules must be built with ``batch_first=True``):

===========================  =================================
companion                    PyTorch
===========================  =================================
``MultiHeadAttention``       ``nn.MultiheadAttention``
``EncoderLayer``             ``nn.TransformerEncoderLayer``
``DecoderLayer``             ``nn.TransformerDecoderLayer``
``Encoder`` (its layers)     ``nn.TransformerEncoder``
``Decoder`` (its layers)     ``nn.TransformerDecoder``
===========================  =================================

The only real difference in layout: when key and value widths differ from ``d_model``,
PyTorch keeps the three input biases in one ``in_proj_bias`` while we keep one per
projection; :func:`torch_state_dict` concatenates them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .layers import DecoderLayer, EncoderLayer
from .linear_attention import LinearAttention
from .multihead import MultiHeadAttention
from .transformer import Decoder, Encoder

__all__ = ["copy_weights", "torch_state_dict"]

_PAIRS = {
    MultiHeadAttention: nn.MultiheadAttention,
    EncoderLayer: nn.TransformerEncoderLayer,
    DecoderLayer: nn.TransformerDecoderLayer,
    Encoder: nn.TransformerEncoder,
    Decoder: nn.TransformerDecoder,
}


def _linear(prefix: str, linear: nn.Linear):
    yield prefix + "weight", [linear.weight]
    if linear.bias is not None:
        yield prefix + "bias", [linear.bias]


def _layout(module: nn.Module, prefix: str = ""):
    """Yield ``(pytorch_name, [our tensors])``; several tensors concatenate along dim 0."""
    if isinstance(module, MultiHeadAttention):
        if module.fused:
            yield prefix + "in_proj_weight", [module.W_qkv.weight]
            if module.W_qkv.bias is not None:
                yield prefix + "in_proj_bias", [module.W_qkv.bias]
        else:
            for role, linear in (("q", module.W_q), ("k", module.W_k), ("v", module.W_v)):
                yield f"{prefix}{role}_proj_weight", [linear.weight]
            if module.W_q.bias is not None:
                yield prefix + "in_proj_bias", [module.W_q.bias, module.W_k.bias, module.W_v.bias]
        yield from _linear(prefix + "out_proj.", module.W_o)
    elif isinstance(module, (EncoderLayer, DecoderLayer)):
        yield from _layout(module.self_attn, prefix + "self_attn.")
        if isinstance(module, DecoderLayer):
            yield from _layout(module.cross_attn, prefix + "multihead_attn.")
        yield from _linear(prefix + "linear1.", module.feed_forward.linear1)
        yield from _linear(prefix + "linear2.", module.feed_forward.linear2)
        for name in ("norm1", "norm2", "norm3")[:3 if isinstance(module, DecoderLayer) else 2]:
            yield from _linear(f"{prefix}{name}.", getattr(module, name))  # the same names as PyTorch's
    elif isinstance(module, (Encoder, Decoder)):
        for i, layer in enumerate(module.layers):
            yield from _layout(layer, f"{prefix}layers.{i}.")
        if module.norm is not None:
            yield from _linear(prefix + "norm.", module.norm)
    else:
        raise TypeError(f"no PyTorch counterpart is known for {type(module).__name__}; supported: "
                        + ", ".join(t.__name__ for t in _PAIRS))


def torch_state_dict(module: nn.Module, grad: bool = False) -> dict[str, torch.Tensor]:
    """Our module's parameters (or, with ``grad=True``, their gradients) under PyTorch's names (chapter 4 on).

    ``nn.TransformerEncoderLayer(...).load_state_dict(torch_state_dict(ours))`` works as is.
    """
    out = {}
    for name, tensors in _layout(module):
        if grad and any(t.grad is None for t in tensors):
            raise ValueError(f"{name} has no gradient yet; call .backward() first")
        parts = [t.grad if grad else t for t in tensors]
        out[name] = parts[0].detach() if len(parts) == 1 else torch.cat([p.detach() for p in parts])
    return out


def _activation_name(fn) -> str | None:
    """'relu' or 'gelu' for PyTorch's activation (a function or a module), else None."""
    if fn is F.relu or isinstance(fn, nn.ReLU):
        return "relu"
    if fn is F.gelu or (isinstance(fn, nn.GELU) and fn.approximate == "none"):
        return "gelu"
    return None


def _check_config(ours: nn.Module, theirs: nn.Module, path: str = "") -> None:
    """Raise if the two modules would compute different functions even with equal weights."""
    where = f" (at {path})" if path else ""
    if isinstance(ours, MultiHeadAttention):
        if not theirs.batch_first:
            raise ValueError(f"nn.MultiheadAttention{where} must be built with batch_first=True to match companion")
        if theirs.num_heads != ours.num_heads:
            raise ValueError(f"num_heads differ{where}: companion has {ours.num_heads}, PyTorch {theirs.num_heads}")
        if theirs.add_zero_attn or theirs.bias_k is not None:
            raise ValueError(f"nn.MultiheadAttention{where} uses add_zero_attn/add_bias_kv, which companion does not have")
        if ours.wide:
            raise ValueError(f"the companion MultiHeadAttention{where} has wide heads (d_k = d_model), and PyTorch's "
                             "heads are narrow (d_k = d_model // num_heads): there is no equal PyTorch module")
        if isinstance(ours, LinearAttention):
            raise ValueError(f"the companion attention{where} is linear attention (a feature map instead of the "
                             "softmax), and nn.MultiheadAttention's is softmax attention: there is no equal PyTorch "
                             "module")
        if getattr(ours, "num_kv_heads", ours.num_heads) != ours.num_heads:
            raise ValueError(f"the companion attention{where} has {ours.num_kv_heads} key-value heads for "
                             f"{ours.num_heads} query heads (grouped-query), and nn.MultiheadAttention has one per "
                             "query head: there is no equal PyTorch module")
        if ours.rotary:
            raise ValueError(f"the companion MultiHeadAttention{where} has rotary=True, and PyTorch's has no rotary "
                             f"embeddings: with the same weights they compute different functions")
    elif isinstance(ours, (EncoderLayer, DecoderLayer)):
        if theirs.norm_first != ours.norm_first:
            raise ValueError(f"norm_first differs{where}: companion has {ours.norm_first}, PyTorch {theirs.norm_first}")
        activation = _activation_name(theirs.activation)
        if activation != ours.feed_forward.activation:
            raise ValueError(f"activation differs{where}: companion has {ours.feed_forward.activation!r}, PyTorch {activation!r}")
        if not isinstance(ours.norm1, nn.LayerNorm):
            raise ValueError(f"the companion layer{where} uses {type(ours.norm1).__name__}, and PyTorch's layers "
                             "use LayerNorm: with the same weights they compute different functions")
        if theirs.norm1.eps != ours.norm1.eps:
            raise ValueError(f"layer_norm_eps differs{where}: companion has {ours.norm1.eps}, PyTorch {theirs.norm1.eps}")
        _check_config(ours.self_attn, theirs.self_attn, path + "self_attn")
        if isinstance(ours, DecoderLayer):
            _check_config(ours.cross_attn, theirs.multihead_attn, path + "multihead_attn")
        if ours.self_attn.rotary:
            raise ValueError(f"the companion layer{where} has rotary=True, and PyTorch's layers have no rotary "
                             f"embeddings: with the same weights they compute different functions")
    elif isinstance(ours, (Encoder, Decoder)):
        if len(theirs.layers) != len(ours.layers):
            raise ValueError(f"number of layers differs: companion has {len(ours.layers)}, PyTorch {len(theirs.layers)}")
        if (theirs.norm is None) != (ours.norm is None):
            raise ValueError(
                f"final LayerNorm differs: companion has {'one' if ours.norm is not None else 'none'} "
                f"(norm_first={ours.norm is not None}), PyTorch {'one' if theirs.norm is not None else 'none'}; "
                "pass norm=nn.LayerNorm(d_model) to the PyTorch stack exactly when norm_first=True"
            )
        for i, (a, b) in enumerate(zip(ours.layers, theirs.layers)):
            _check_config(a, b, f"layers.{i}.")


def copy_weights(src: nn.Module, dst: nn.Module) -> nn.Module:
    """Copy ``src``'s weights into ``dst``: one a companion module, the other its PyTorch counterpart (chapter 4 on).

    Afterwards both compute the same function (up to floating-point rounding). Sizes,
    ``num_heads``, ``norm_first``, activation, LayerNorm epsilon and ``batch_first`` are
    checked first. Token embeddings of :class:`Encoder`/:class:`Decoder` are not touched:
    PyTorch's stacks start from embedded input (compare with ``Encoder.encode``).

    Returns:
        ``dst``, for chaining.
    """
    if type(src) in _PAIRS and isinstance(dst, _PAIRS[type(src)]):
        ours, theirs = src, dst
    elif type(dst) in _PAIRS and isinstance(src, _PAIRS[type(dst)]):
        ours, theirs = dst, src
    else:
        raise TypeError(
            f"copy_weights needs a companion module and its PyTorch counterpart, got {type(src).__name__} and "
            f"{type(dst).__name__}; supported pairs: "
            + ", ".join(f"{a.__name__} <-> nn.{b.__name__}" for a, b in _PAIRS.items())
        )
    _check_config(ours, theirs)
    layout = list(_layout(ours))
    theirs_params = dict(theirs.named_parameters())
    ours_names = {name for name, _ in layout}
    if ours_names != set(theirs_params):
        raise ValueError(
            "the two modules hold different parameters (was bias= the same for both?): "
            f"only companion has {sorted(ours_names - set(theirs_params))}, only PyTorch has "
            f"{sorted(set(theirs_params) - ours_names)}"
        )
    with torch.no_grad():
        for name, tensors in layout:
            target = theirs_params[name]
            sizes = [t.size(0) for t in tensors]
            expected = (sum(sizes),) + tuple(tensors[0].shape[1:])
            if tuple(target.shape) != expected:
                raise ValueError(f"{name}: companion has shape {expected}, PyTorch {tuple(target.shape)}")
            if ours is src:
                target.copy_(torch.cat(list(tensors)) if len(tensors) > 1 else tensors[0])
            else:
                for mine, part in zip(tensors, target.split(sizes)):
                    mine.copy_(part)
    return dst
