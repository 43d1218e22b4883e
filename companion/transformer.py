"""Stacks of layers: the encoder, the decoder and the encoder-decoder Transformer (chapter 6)."""

from __future__ import annotations

import torch
from torch import nn

from ._checks import check_batch_mask, check_count, check_tokens
from .embedding import TokenEmbedding
from .kv_cache import KVCache, MemoryCache
from .layers import DecoderLayer, EncoderLayer
from .masks import causal_mask

__all__ = ["LayerStack", "Encoder", "Decoder", "Transformer", "apply_layers"]


def apply_layers(layers, x: torch.Tensor, *args, norm: nn.Module | None = None, need_weights: bool = False,
                 caches: list[KVCache] | None = None, memory_caches: list[MemoryCache] | None = None,
                 hidden_states: list | None = None, **kwargs):
    """The layer loop of every stack in the course: ``x`` through each layer in turn, then ``norm``.

    :class:`LayerStack` runs it, and every stack of the course is a :class:`LayerStack`
    (:class:`Encoder`, :class:`Decoder`, :class:`companion.TransformerLM`,
    :class:`companion.WhichFirst`, :class:`companion.BertEncoder`).

    Args:
        layers: the :class:`EncoderLayer` s or :class:`DecoderLayer` s, in order.
        x: ``(batch, t, d_model)``, the first layer's input.
        args, kwargs: the other arguments, passed to every layer (e.g. ``memory`` and ``mask``).
        norm: the stack's final LayerNorm (pre-norm stacks), or ``None``.
        need_weights: also return each layer's attention weights.
        caches: ``None``, or one :class:`companion.KVCache` per layer (generation, chapter 8).
        memory_caches: ``None``, or one :class:`companion.MemoryCache` per decoder layer
            (cached encoder-decoder decoding, chapter 6).
        hidden_states: ``None``, or a list to which each layer's output is appended.

    Returns:
        ``(output, weights)``: output ``(batch, t, d_model)``; weights ``None`` or a list with
        each layer's weights.
    """
    for name, given in (("caches", caches), ("memory_caches", memory_caches)):
        if given is not None and len(given) != len(layers):
            raise ValueError(f"{name} must hold one cache per layer ({len(layers)}), got {len(given)}")
    all_weights = []
    for i, layer in enumerate(layers):
        cache = {} if caches is None else {"cache": caches[i]}
        if memory_caches is not None:
            cache["memory_cache"] = memory_caches[i]
        x, weights = layer(x, *args, need_weights=need_weights, **cache, **kwargs)
        all_weights.append(weights)
        if hidden_states is not None:
            hidden_states.append(x)
    if norm is not None:
        x = norm(x)
    return x, (all_weights if need_weights else None)


class LayerStack(nn.ModuleList):
    """``num_layers`` copies of one layer, run in turn: how every stack in the course is built (chapter 6).

    A ``ModuleList``, so ``stack[i]`` is layer ``i`` and its weights are named ``<name>.i.*``
    in a state dict; calling the stack runs :func:`apply_layers`. The options are passed to
    every layer by name, so a layer's new parameter cannot shift the others.

    Args:
        layer_cls: :class:`EncoderLayer` or :class:`DecoderLayer`.
        num_layers: how many; ``0`` passes ``x`` through (then ``norm``, if given).
        d_model: width of the representations.
        num_heads: attention heads per layer.
        options: the layers' keyword options, e.g. ``d_ff=``, ``dropout=``, ``norm_first=``,
            ``rotary=``, ``norm=``, ``num_kv_heads=`` (see :class:`EncoderLayer`).

    Example:
        >>> stack = LayerStack(EncoderLayer, 2, d_model=8, num_heads=2, norm_first=True)
        >>> y, _ = stack(torch.randn(3, 5, 8), norm=nn.LayerNorm(8))  # (3, 5, 8)
    """

    def __init__(self, layer_cls: type[nn.Module], num_layers: int, d_model: int, num_heads: int,
                 **options) -> None:
        check_count("num_layers", num_layers)
        super().__init__(layer_cls(d_model, num_heads, **options) for _ in range(num_layers))

    def forward(self, x: torch.Tensor, *args, **kwargs):
        """``(output, weights)`` for ``x`` ``(batch, t, d_model)``: see :func:`apply_layers`."""
        return apply_layers(self, x, *args, **kwargs)


class _Stack(nn.Module):
    """``num_layers`` copies of a layer over a token embedding; pre-norm adds a final LayerNorm.

    ``num_layers=0`` leaves the embedding alone (with pre-norm, then the final LayerNorm): the
    "no attention" row of an ablation.
    """

    def __init__(self, layer_cls, vocab_size: int, d_model: int, num_heads: int, num_layers: int, *,
                 d_ff: int | None, dropout: float, activation: str, norm_first: bool, max_len: int,
                 positional: str, pad_id: int | None, layer_norm_eps: float, bias: bool, rotary: bool) -> None:
        super().__init__()
        check_count("num_layers", num_layers)
        self.embed = TokenEmbedding(vocab_size, d_model, max_len, positional, dropout, pad_id)
        self.layers = LayerStack(layer_cls, num_layers, d_model, num_heads, d_ff=d_ff, dropout=dropout,
                                 activation=activation, norm_first=norm_first, layer_norm_eps=layer_norm_eps,
                                 bias=bias, rotary=rotary)
        # Pre-norm layers leave their output un-normalised; one LayerNorm closes the stack.
        self.norm = nn.LayerNorm(d_model, eps=layer_norm_eps, bias=bias) if norm_first else None


class Encoder(_Stack):
    """Token embedding + positions, then ``num_layers`` :class:`EncoderLayer` (chapter 6).

    Args:
        vocab_size: number of token ids.
        d_model: width of the token representations.
        num_heads: attention heads per layer.
        num_layers: number of stacked layers (``N`` in the paper); 0 for the embedding alone.
        d_ff: feed-forward hidden width; default ``4 * d_model``.
        dropout: dropout everywhere (see :class:`EncoderLayer`).
        activation: ``"relu"`` or ``"gelu"``.
        norm_first: post-norm (``False``, the paper) or pre-norm (``True``).
        max_len: longest sequence accepted.
        positional: ``"sinusoidal"`` or ``"learned"``.
        pad_id: optional padding id (its embedding stays zero).
        layer_norm_eps: the LayerNorm epsilon.
        bias: whether linear layers and LayerNorms have biases.
        rotary: rotary position embeddings in every self-attention (chapter 5).
    """

    def __init__(self, vocab_size: int, d_model: int, num_heads: int, num_layers: int, d_ff: int | None = None,
                 dropout: float = 0.1, activation: str = "relu", norm_first: bool = False, max_len: int = 512,
                 positional: str = "sinusoidal", pad_id: int | None = None, layer_norm_eps: float = 1e-5,
                 bias: bool = True, rotary: bool = False) -> None:
        super().__init__(EncoderLayer, vocab_size, d_model, num_heads, num_layers, d_ff=d_ff, dropout=dropout,
                         activation=activation, norm_first=norm_first, max_len=max_len, positional=positional,
                         pad_id=pad_id, layer_norm_eps=layer_norm_eps, bias=bias, rotary=rotary)

    def encode(self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = False,
               caches: list[KVCache] | None = None):
        """Run the layers on already embedded input.

        Args:
            x: ``(batch, t, d_model)``.
            mask: bool, ``True`` = may attend, e.g. ``padding_mask(...)`` ``(batch, 1, t)``.
            need_weights: also return each layer's attention weights.
            caches: ``None``, or one :class:`companion.KVCache` per layer.

        Returns:
            ``(output, weights)``: output ``(batch, t, d_model)``; weights ``None`` or a list
            with one ``(batch, num_heads, t, t)`` tensor per layer.
        """
        return self.layers(x, norm=self.norm, mask=mask, need_weights=need_weights, caches=caches)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = False):
        """int tokens ``(batch, t)`` -> ``(output (batch, t, d_model), weights)``; see :meth:`encode`."""
        if tokens.dim() == 2:  # the embedding refuses other shapes
            check_batch_mask("mask", mask, tokens.size(0), tokens.size(1), tokens.size(1),
                             "(batch, 1, t) padding or (batch, t, t)")
        return self.encode(self.embed(tokens), mask=mask, need_weights=need_weights)


class Decoder(_Stack):
    """Token embedding + positions, then ``num_layers`` :class:`DecoderLayer` (chapter 6).

    Takes the same arguments as :class:`Encoder`.
    """

    def __init__(self, vocab_size: int, d_model: int, num_heads: int, num_layers: int, d_ff: int | None = None,
                 dropout: float = 0.1, activation: str = "relu", norm_first: bool = False, max_len: int = 512,
                 positional: str = "sinusoidal", pad_id: int | None = None, layer_norm_eps: float = 1e-5,
                 bias: bool = True, rotary: bool = False) -> None:
        super().__init__(DecoderLayer, vocab_size, d_model, num_heads, num_layers, d_ff=d_ff, dropout=dropout,
                         activation=activation, norm_first=norm_first, max_len=max_len, positional=positional,
                         pad_id=pad_id, layer_norm_eps=layer_norm_eps, bias=bias, rotary=rotary)

    def decode(self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None = None,
               memory_mask: torch.Tensor | None = None, need_weights: bool = False,
               caches: list[KVCache] | None = None, memory_caches: list[MemoryCache] | None = None):
        """Run the layers on already embedded targets.

        Args:
            x: ``(batch, t_tgt, d_model)`` (with ``caches``: only the new positions).
            memory: ``(batch, t_src, d_model)``, the encoder output.
            mask: bool self-attention mask (``True`` = may attend), usually causal.
            memory_mask: bool mask over the memory, e.g. ``(batch, 1, t_src)`` padding.
            need_weights: also return each layer's attention maps.
            caches: ``None``, or one :class:`companion.KVCache` per layer (its self-attention).
            memory_caches: ``None``, or one :class:`companion.MemoryCache` per layer (its
                cross-attention's keys and values of ``memory``).

        Returns:
            ``(output, weights)``: output ``(batch, t_tgt, d_model)``; weights ``None`` or a
            list with one ``{"self": ..., "cross": ...}`` dict per layer.
        """
        return self.layers(x, memory, norm=self.norm, mask=mask, memory_mask=memory_mask,
                           need_weights=need_weights, caches=caches, memory_caches=memory_caches)

    def forward(self, tokens: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None, need_weights: bool = False):
        """int tokens ``(batch, t_tgt)`` -> ``(output (batch, t_tgt, d_model), weights)``; see :meth:`decode`."""
        if tokens.dim() == 2 and memory.dim() == 3:  # the layers refuse other shapes
            check_batch_mask("memory_mask", memory_mask, tokens.size(0), tokens.size(1), memory.size(1),
                             "(batch, 1, t_src) padding")
        return self.decode(self.embed(tokens), memory, mask=mask, memory_mask=memory_mask, need_weights=need_weights)


class Transformer(nn.Module):
    """The encoder-decoder Transformer for sequence-to-sequence tasks (chapter 6).

    The decoder's self-attention is always causal (position ``i`` sees targets ``0..i``);
    a ``tgt_mask`` you pass is and-ed with that causal mask, never replaces it.

    Args:
        src_vocab_size: source token ids.
        tgt_vocab_size: target token ids (the output classes).
        d_model, num_heads, d_ff, dropout, activation, norm_first, max_len, positional, layer_norm_eps:
            as for :class:`Encoder`.
        bias, rotary: as for :class:`Encoder`; ``rotary`` acts in both stacks' self-attention, and
            ``bias=False`` removes every bias, the output projection's too.
        num_encoder_layers: encoder depth.
        num_decoder_layers: decoder depth.
        src_pad_id, tgt_pad_id: optional padding ids.

    Attributes:
        encoder, decoder: the two stacks.
        output_proj: the final ``nn.Linear(d_model, tgt_vocab_size)``, decoder output -> logits
            (The Annotated Transformer's ``generator``; in this course ``generator`` always
            names a ``torch.Generator``).
    """

    def __init__(self, src_vocab_size: int, tgt_vocab_size: int, d_model: int = 512, num_heads: int = 8,
                 num_encoder_layers: int = 6, num_decoder_layers: int = 6, d_ff: int | None = None,
                 dropout: float = 0.1, activation: str = "relu", norm_first: bool = False, max_len: int = 512,
                 positional: str = "sinusoidal", src_pad_id: int | None = None, tgt_pad_id: int | None = None,
                 layer_norm_eps: float = 1e-5, bias: bool = True, rotary: bool = False) -> None:
        super().__init__()
        common = dict(d_model=d_model, num_heads=num_heads, d_ff=d_ff, dropout=dropout, activation=activation,
                      norm_first=norm_first, max_len=max_len, positional=positional, layer_norm_eps=layer_norm_eps,
                      bias=bias, rotary=rotary)
        self.encoder = Encoder(src_vocab_size, num_layers=num_encoder_layers, pad_id=src_pad_id, **common)
        self.decoder = Decoder(tgt_vocab_size, num_layers=num_decoder_layers, pad_id=tgt_pad_id, **common)
        self.output_proj = nn.Linear(d_model, tgt_vocab_size, bias=bias)  # logits over the target vocabulary

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, src_mask: torch.Tensor | None = None,
                tgt_mask: torch.Tensor | None = None, need_weights: bool = False):
        """Teacher-forced decoding of ``tgt`` given ``src``.

        Args:
            src: int ``(batch, t_src)``.
            tgt: int ``(batch, t_tgt)``, the targets shifted right (starting with BOS).
            src_mask: bool ``(batch, 1, t_src)``, ``True`` on real source tokens (source
                padding); used by encoder self-attention and decoder cross-attention.
            tgt_mask: optional extra bool mask over targets, e.g. padding ``(batch, 1, t_tgt)``;
                and-ed with the causal mask.
            need_weights: also return every attention map.

        Returns:
            ``(logits, weights)``: logits ``(batch, t_tgt, tgt_vocab_size)``; weights ``None``
            or ``{"encoder": [...], "decoder": [...]}`` as returned by the stacks.
        """
        self._check_batch(src, tgt, src_mask, tgt_mask)
        memory, enc_weights = self.encoder(src, mask=src_mask, need_weights=need_weights)
        causal = causal_mask(tgt.size(1), device=tgt.device)  # (t_tgt, t_tgt)
        mask = causal if tgt_mask is None else causal & tgt_mask
        out, dec_weights = self.decoder(tgt, memory, mask=mask, memory_mask=src_mask, need_weights=need_weights)
        weights = {"encoder": enc_weights, "decoder": dec_weights} if need_weights else None
        return self.output_proj(out), weights

    def new_caches(self) -> tuple[list[KVCache], list[MemoryCache]]:
        """Empty caches for :meth:`decode_step`: one :class:`KVCache` and one :class:`MemoryCache` per decoder layer."""
        return [KVCache() for _ in self.decoder.layers], [MemoryCache() for _ in self.decoder.layers]

    def decode_step(self, tgt: torch.Tensor, memory: torch.Tensor, caches: tuple[list[KVCache], list[MemoryCache]],
                    src_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The logits of new target positions, the earlier ones read from ``caches`` (chapter 6).

        Decoding with :meth:`forward` runs the whole prefix again at every step; here each step
        runs only the new tokens: the self-attention keys and values of earlier positions are
        cached, and the cross-attention's keys and values of ``memory`` are computed once.

        Args:
            tgt: int ``(batch, t_new)``, the new target tokens (at the first step: BOS).
            memory: ``(batch, t_src, d_model)``, ``self.encoder(src, mask=src_mask)[0]``.
            caches: from :meth:`new_caches`, passed again at every step; updated in place.
            src_mask: as for :meth:`forward`.

        Returns:
            logits ``(batch, t_new, tgt_vocab_size)``, equal to the last ``t_new`` positions
            of :meth:`forward` on the whole prefix.
        """
        check_tokens("tgt", tgt)
        self._check_caches(caches)
        self_caches, memory_caches = caches
        check_batch_mask("src_mask", src_mask, memory.size(0), tgt.size(1), memory.size(1), "(batch, 1, t_src)")
        offset = len(self_caches[0])  # target positions already decoded
        x = self.decoder.embed(tgt, offset)  # (batch, t_new, d_model), at positions offset ...
        mask = causal_mask(tgt.size(1), offset + tgt.size(1), device=tgt.device)  # (t_new, offset + t_new)
        out, _ = self.decoder.decode(x, memory, mask=mask, memory_mask=src_mask, caches=self_caches,
                                     memory_caches=memory_caches)
        return self.output_proj(out)

    def _check_batch(self, src, tgt, src_mask, tgt_mask) -> None:
        """The front door of :meth:`forward`: int ``(batch, t)`` tokens, a source of at least one
        token, and masks with a batch axis (a 2-D padding mask is ambiguous)."""
        check_tokens("src", src)
        check_tokens("tgt", tgt)
        if src.size(0) != tgt.size(0):
            raise ValueError(f"src and tgt must hold the same number of sequences, got batch {src.size(0)} "
                             f"and {tgt.size(0)}")
        if src.size(1) == 0 or tgt.size(1) == 0:
            raise ValueError(f"src and tgt need at least one token each (tgt starts with BOS), got shapes "
                             f"{tuple(src.shape)} and {tuple(tgt.shape)}")
        check_batch_mask("tgt_mask", tgt_mask, tgt.size(0), tgt.size(1), tgt.size(1), "(batch, t_tgt, t_tgt)")
        # the source mask serves the encoder and the cross-attention, whose queries are the targets:
        # only a padding mask (batch, 1, t_src) fits both
        check_batch_mask("src_mask", src_mask, src.size(0), 1, src.size(1), "(batch, 1, t_src), source padding")

    def _check_caches(self, caches) -> None:
        """Refuse caches that are not :meth:`new_caches`' pair of lists, one cache object per layer."""
        layers = len(self.decoder.layers)
        if not (isinstance(caches, tuple) and len(caches) == 2 and all(isinstance(c, list) for c in caches)):
            raise TypeError(f"caches must be the pair (self_caches, memory_caches) that model.new_caches() "
                            f"returns, got {type(caches).__name__}")
        for name, kind, given in (("self-attention", KVCache, caches[0]), ("memory", MemoryCache, caches[1])):
            if len(given) != layers or not all(isinstance(c, kind) for c in given):
                raise ValueError(f"caches must hold one {kind.__name__} per decoder layer ({layers}) for the "
                                 f"{name} caches, got {[type(c).__name__ for c in given]}; use model.new_caches()")
            if len({id(c) for c in given}) != len(given):
                raise ValueError(f"the {name} caches hold the same {kind.__name__} object more than once "
                                 f"([{kind.__name__}()] * n repeats one object): each layer needs its own; use "
                                 "model.new_caches()")
