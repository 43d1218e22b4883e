"""A BERT encoder built from the course's own blocks (chapter 9).

BERT (Devlin et al., 2018) is the encoder of chapter 6 with three choices made:

* the input of layer 1 is ``LayerNorm(word + position + token type)``: learned absolute
  positions (chapter 5) and a learned vector per segment (sentence A or B);
* every layer is post-norm (``norm_first=False``) with an exact-erf GELU feed-forward;
* the LayerNorm epsilon is ``1e-12`` rather than PyTorch's ``1e-5``.

So a real pretrained checkpoint (e.g. ``sentence-transformers/all-MiniLM-L6-v2``) runs in
:class:`BertEncoder` unchanged: :func:`companion.models.pretrained.load_pretrained` copies
its weights in, and chapter 9 checks that the result equals Hugging Face's ``BertModel``.
"""

from __future__ import annotations

import math

import json
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import torch
from torch import nn

from .._checks import check_flags, check_tokens, describe
from ..layers import EncoderLayer
from ..positional import LearnedPositionalEmbedding
from ..transformer import LayerStack

__all__ = ["BertConfig", "BertEncoder", "BertOutput", "HIDDEN_ACTS"]

# config.json's hidden_act -> the course's activation: both are the exact functions
# (Hugging Face's "gelu" is the erf GELU, F.gelu; "gelu_new" and "gelu_pytorch_tanh" are
# the tanh approximation, which the course's feed-forward block does not have).
HIDDEN_ACTS = {"gelu": "gelu", "relu": "relu"}


@dataclass(frozen=True)
class BertConfig:
    """The sizes of a BERT encoder: what ``config.json`` says that the model needs (chapter 9).

    Attributes (with all-MiniLM-L6-v2's values):
        vocab_size: number of token ids (30522).
        hidden_size: ``d_model`` (384).
        num_hidden_layers: number of encoder layers (6).
        num_attention_heads: ``num_heads`` (12), so ``d_k = 384 / 12 = 32``.
        intermediate_size: ``d_ff``, the feed-forward hidden width (1536).
        max_position_embeddings: number of learned positions, the longest input (512).
        type_vocab_size: number of token types (segments) (2).
        layer_norm_eps: the epsilon of every LayerNorm (1e-12).
        hidden_act: the feed-forward activation, ``"gelu"`` (exact, erf) or ``"relu"``.
    """

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    hidden_act: str

    def __post_init__(self) -> None:  # a config built directly is checked as one read from a file
        for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"BertConfig: {key} must be a positive integer, got {value!r}")
        eps = self.layer_norm_eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"BertConfig: layer_norm_eps must be a finite number > 0, got {eps!r}")
        if self.hidden_act not in HIDDEN_ACTS:
            raise ValueError(f"BertConfig: hidden_act must be one of {sorted(HIDDEN_ACTS)}, got {self.hidden_act!r}")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"BertConfig: hidden_size {self.hidden_size} is not divisible by num_attention_heads "
                             f"{self.num_attention_heads} (each head gets hidden_size / num_attention_heads features)")

    @classmethod
    def from_json(cls, path: str | Path) -> "BertConfig":
        """Read and check a Hugging Face ``config.json`` of a BERT model.

        Raises:
            FileNotFoundError: no such file.
            ValueError: not a BERT config (``model_type``), a needed key missing, a value
                of the wrong type, or an architecture the course's blocks do not have
                (``hidden_act``, ``position_embedding_type``); the message names the file
                and the key.
        """
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"no config file {path}; a checkpoint directory needs its config.json")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ValueError(f"{path} is not valid JSON ({err})") from err
        if not isinstance(raw, dict):
            raise ValueError(f"{path} must hold a JSON object of settings, got {type(raw).__name__}")

        def get(key, default=None):
            if key not in raw and default is None:
                raise ValueError(f"{path} has no key {key!r}, which a BERT config needs; "
                                 f"is this the config.json of a BERT checkpoint?")
            return raw.get(key, default)

        model_type = get("model_type")
        if model_type != "bert":
            raise ValueError(f"{path}: key 'model_type' is {model_type!r}, but only 'bert' is supported "
                             f"(a BERT encoder such as sentence-transformers/all-MiniLM-L6-v2)")
        position_type = get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ValueError(f"{path}: key 'position_embedding_type' is {position_type!r}, but only 'absolute' "
                             f"(learned positions, chapter 5) is supported")
        if get("is_decoder", False):
            raise ValueError(f"{path}: key 'is_decoder' is true; only BERT encoders are supported")
        act = get("hidden_act")
        if act not in HIDDEN_ACTS:
            raise ValueError(f"{path}: key 'hidden_act' is {act!r}, but only {sorted(HIDDEN_ACTS)} are supported "
                             f"(the course's feed-forward block has the exact GELU and ReLU, not tanh approximations)")
        sizes = {}
        for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                    "intermediate_size", "max_position_embeddings", "type_vocab_size"):
            value = get(key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{path}: key {key!r} must be a positive integer, got {value!r}")
            sizes[key] = value
        eps = get("layer_norm_eps")
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
            raise ValueError(f"{path}: key 'layer_norm_eps' must be a positive number, got {eps!r}")
        if sizes["hidden_size"] % sizes["num_attention_heads"]:
            raise ValueError(f"{path}: 'hidden_size' {sizes['hidden_size']} is not divisible by "
                             f"'num_attention_heads' {sizes['num_attention_heads']}")
        return cls(**sizes, layer_norm_eps=float(eps), hidden_act=act)


class BertOutput(NamedTuple):
    """What :meth:`BertEncoder.forward` returns, a named tuple (chapter 9).

    Attributes:
        last_hidden_state: ``(batch, t, d_model)``, the output of the last layer.
        hidden_states: ``None``, or ``num_layers + 1`` tensors ``(batch, t, d_model)``:
            the embeddings, then the output of every layer.
        attentions: ``None``, or ``num_layers`` tensors ``(batch, num_heads, t, t)``:
            every layer's attention weights.
    """

    last_hidden_state: torch.Tensor
    hidden_states: tuple[torch.Tensor, ...] | None
    attentions: tuple[torch.Tensor, ...] | None


class BertEncoder(nn.Module):
    """BERT's encoder from the course's blocks: embeddings, then post-norm encoder layers (chapter 9).

    Args:
        config: the sizes, from :meth:`BertConfig.from_json`.
        dropout: dropout inside every layer; ``0.0`` because chapter 9 only runs the
            pretrained model (BERT was trained with 0.1).

    Modules: ``word_embeddings`` ``(vocab_size, d_model)``, ``position``
    (:class:`companion.LearnedPositionalEmbedding`), ``token_type_embeddings``
    ``(type_vocab_size, d_model)``, ``embedding_norm``, and ``layers``, a
    :class:`companion.LayerStack` of :class:`companion.EncoderLayer` with ``norm_first=False``
    and ``activation="gelu"``.
    """

    def __init__(self, config: BertConfig, dropout: float = 0.0) -> None:
        super().__init__()
        if not isinstance(config, BertConfig):
            raise TypeError(f"config must be a BertConfig (see BertConfig.from_json), got {type(config).__name__}")
        self.config = config
        d_model = config.hidden_size
        self.word_embeddings = nn.Embedding(config.vocab_size, d_model)
        self.position = LearnedPositionalEmbedding(config.max_position_embeddings, d_model)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, d_model)
        self.embedding_norm = nn.LayerNorm(d_model, eps=config.layer_norm_eps)
        self.layers = LayerStack(EncoderLayer, config.num_hidden_layers, d_model, config.num_attention_heads,
                                 d_ff=config.intermediate_size, dropout=dropout,
                                 activation=HIDDEN_ACTS[config.hidden_act], norm_first=False,
                                 layer_norm_eps=config.layer_norm_eps)

    def embed(self, input_ids: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        """``LayerNorm(word + token type + position)``: int ``(batch, t)`` twice -> ``(batch, t, d_model)``."""
        x = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)  # (batch, t, d_model)
        x = self.position(x)  # + P[:t], positions 0 .. t - 1
        return self.embedding_norm(x)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        need_weights: bool = False,
        output_hidden_states: bool = False,
    ) -> BertOutput:
        """Encode a padded batch of token ids.

        Args:
            input_ids: int ``(batch, t)``, ``t <= max_position_embeddings``.
            attention_mask: int or bool ``(batch, t)``, 1 at real tokens, 0 at padding
                (what :func:`companion.models.pretrained.encode_sentences` returns); ``None`` = no
                padding. Padding keys get no attention; padded positions still get an
                output, which means nothing.
            token_type_ids: int ``(batch, t)``, the segment of each token; ``None`` = all 0
                (one sentence per row).
            need_weights: also return every layer's attention weights.
            output_hidden_states: also return the embeddings and every layer's output.

        Returns:
            :class:`BertOutput` ``(last_hidden_state, hidden_states, attentions)``: the
            last ``(batch, t, d_model)``, and ``None`` for what was not asked.
        """
        check_flags(output_hidden_states=output_hidden_states)
        keep = self._check_inputs(input_ids, attention_mask, token_type_ids)  # (batch, 1, t) or None
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)  # (batch, t): every token in segment 0
        x = self.embed(input_ids, token_type_ids)  # (batch, t, d_model)
        hidden_states = [x]
        x, attentions = self.layers(x, mask=keep, need_weights=need_weights,
                                    hidden_states=hidden_states)  # post-norm: no final LayerNorm
        return BertOutput(x, tuple(hidden_states) if output_hidden_states else None,
                          tuple(attentions) if need_weights else None)  # weights (batch, num_heads, t, t)

    def _check_inputs(self, input_ids, attention_mask, token_type_ids) -> torch.Tensor | None:
        """Check the inputs; return the padding mask as bool ``(batch, 1, t)``, ``True`` = may attend."""
        config = self.config
        check_tokens("input_ids", input_ids, pad_hint=" padded to the longest sentence")
        _check_range("input_ids", input_ids, config.vocab_size, "vocab_size")
        if input_ids.size(1) > config.max_position_embeddings:
            raise ValueError(
                f"input_ids has {input_ids.size(1)} tokens, more than the model's max_position_embeddings="
                f"{config.max_position_embeddings} learned positions; truncate, e.g. encode_sentences(..., max_length="
                f"{config.max_position_embeddings})"
            )
        if token_type_ids is not None:
            check_tokens("token_type_ids", token_type_ids)
            _check_same_shape("token_type_ids", token_type_ids, input_ids)
            _check_range("token_type_ids", token_type_ids, config.type_vocab_size, "type_vocab_size")
        if attention_mask is None:
            return None
        if not isinstance(attention_mask, torch.Tensor) or attention_mask.is_floating_point():
            raise TypeError(f"attention_mask must be an int or bool tensor (batch, t) with 1 at real tokens, "
                            f"got {describe(attention_mask)}; use attention_mask.long()")
        _check_same_shape("attention_mask", attention_mask, input_ids)
        if attention_mask.numel() and not bool(((attention_mask == 0) | (attention_mask == 1)).all()):
            raise ValueError("attention_mask must hold only 0 (padding) and 1 (real token), got other values")
        keep = attention_mask.bool()  # (batch, t)
        if not bool(keep.any(dim=1).all()):
            raise ValueError("a row of attention_mask is all 0 (a sentence with no real token); "
                             "every sentence needs at least one token")
        return keep.unsqueeze(1)  # (batch, 1, t): the same keys for every query

    def extra_repr(self) -> str:
        c = self.config
        return (f"num_layers={c.num_hidden_layers}, d_model={c.hidden_size}, num_heads={c.num_attention_heads}, "
                f"d_ff={c.intermediate_size}, vocab_size={c.vocab_size}")


def _check_same_shape(name: str, x: torch.Tensor, input_ids: torch.Tensor) -> None:
    if x.shape != input_ids.shape:
        raise ValueError(f"{name} must have the shape of input_ids {tuple(input_ids.shape)} (batch, t), "
                         f"got {tuple(x.shape)}")


def _check_range(name: str, ids: torch.Tensor, size: int, size_name: str) -> None:
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= size):
        raise ValueError(f"{name} must be in [0, {size_name}={size}), got min {int(ids.min())} and max "
                         f"{int(ids.max())}; were they made by this model's tokenizer?")
