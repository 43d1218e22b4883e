"""Loading a real pretrained BERT checkpoint into the course's own modules (chapter 9).

A checkpoint's files are found and read by :mod:`companion.models.checkpoint`; sentences are
tokenised and embedded by :mod:`companion.models.sentence`. Loading is renaming: each checkpoint tensor goes to the course module that does the same
job, and the three projections ``query``, ``key``, ``value`` of a layer are stacked, in that
order, into the "tall" ``W_qkv`` of :class:`companion.MultiHeadAttention` (chapter 4)::

    checkpoint (layer i)                         companion.EncoderLayer
    encoder.layer.i.attention.self.query   ┐
    encoder.layer.i.attention.self.key     ├──>  self_attn.W_qkv  = [W_q; W_k; W_v]
    encoder.layer.i.attention.self.value   ┘
    encoder.layer.i.attention.output.dense       self_attn.W_o
    encoder.layer.i.attention.output.LayerNorm   norm1
    encoder.layer.i.intermediate.dense           feed_forward.linear1
    encoder.layer.i.output.dense                 feed_forward.linear2
    encoder.layer.i.output.LayerNorm             norm2

This module's public names include those of the other two, which it held before they were
split off (``from companion.models.pretrained import encode_sentences`` still works).
"""

from __future__ import annotations

from pathlib import Path

import torch

from .._checks import describe
from .bert import BertConfig, BertEncoder
from .checkpoint import MINILM_ID, checkpoint_folder, minilm_path, read_checkpoint, require, weights_file
from .sentence import encode_sentences, mean_pool, sentence_embedding

__all__ = ["layer_state_dict", "load_pretrained",
           # from companion.models.checkpoint and companion.models.sentence, where they now live:
           "MINILM_ID", "minilm_path", "checkpoint_folder", "read_checkpoint",
           "encode_sentences", "mean_pool", "sentence_embedding"]


def _check_layer(checkpoint: dict[str, torch.Tensor], i: int) -> None:
    """Raise unless ``checkpoint`` holds BERT layer ``i``, naming what it holds instead."""
    if isinstance(i, bool) or not isinstance(i, int) or i < 0:
        raise ValueError(f"i must be a layer index, an int >= 0, got {i!r}")
    key = f"encoder.layer.{i}.attention.self.query.weight"
    if key not in checkpoint:
        layers = sorted({int(k.split(".")[2]) for k in checkpoint
                         if k.startswith("encoder.layer.") and k.split(".")[2].isdigit()})
        held = f"layers {layers[0]} to {layers[-1]}" if layers else "no encoder layers"
        raise KeyError(f"the checkpoint has no {key!r}: it holds {held}; is it a BERT checkpoint read "
                       "with read_checkpoint, and is i within its layers?")


def layer_state_dict(checkpoint: dict[str, torch.Tensor], i: int) -> dict[str, torch.Tensor]:
    """The state dict of the course's :class:`companion.EncoderLayer` for the checkpoint's layer ``i`` (chapter 9).

    Args:
        checkpoint: names -> tensors, as :func:`read_checkpoint` returns them.
        i: the layer, ``0 .. num_layers - 1``.

    Returns:
        A dict to pass to ``EncoderLayer.load_state_dict``; ``self_attn.W_qkv.weight`` is
        ``(3 d_model, d_model)``, the query, key and value weights stacked in that order.
    """
    _check_layer(checkpoint, i)

    def get(name: str) -> torch.Tensor:
        return checkpoint[f"encoder.layer.{i}.{name}"]

    state = {}
    for p in ("weight", "bias"):
        state[f"self_attn.W_qkv.{p}"] = torch.cat(  # (3 d_model, d_model) or (3 d_model,)
            [get(f"attention.self.query.{p}"), get(f"attention.self.key.{p}"), get(f"attention.self.value.{p}")])
        state[f"self_attn.W_o.{p}"] = get(f"attention.output.dense.{p}")  # (d_model, d_model)
        state[f"norm1.{p}"] = get(f"attention.output.LayerNorm.{p}")  # (d_model,)
        state[f"feed_forward.linear1.{p}"] = get(f"intermediate.dense.{p}")  # (d_ff, d_model)
        state[f"feed_forward.linear2.{p}"] = get(f"output.dense.{p}")  # (d_model, d_ff)
        state[f"norm2.{p}"] = get(f"output.LayerNorm.{p}")  # (d_model,)
    return state


def _expected_shapes(config: BertConfig) -> dict[str, tuple[int, ...]]:
    """Every checkpoint tensor that :class:`BertEncoder` needs, with the shape ``config`` implies."""
    d, d_ff = config.hidden_size, config.intermediate_size
    shapes = {"embeddings.word_embeddings.weight": (config.vocab_size, d),
              "embeddings.position_embeddings.weight": (config.max_position_embeddings, d),
              "embeddings.token_type_embeddings.weight": (config.type_vocab_size, d),
              "embeddings.LayerNorm.weight": (d,), "embeddings.LayerNorm.bias": (d,)}
    for i in range(config.num_hidden_layers):
        layer = {"attention.self.query": (d, d), "attention.self.key": (d, d), "attention.self.value": (d, d),
                 "attention.output.dense": (d, d), "intermediate.dense": (d_ff, d), "output.dense": (d, d_ff)}
        for name, shape in layer.items():
            shapes[f"encoder.layer.{i}.{name}.weight"] = shape
            shapes[f"encoder.layer.{i}.{name}.bias"] = shape[:1]
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes[f"encoder.layer.{i}.{name}.weight"] = shapes[f"encoder.layer.{i}.{name}.bias"] = (d,)
    return shapes


def _check_checkpoint(checkpoint: dict[str, torch.Tensor], config: BertConfig, weights: Path) -> None:
    for name, shape in _expected_shapes(config).items():
        if name not in checkpoint:
            raise ValueError(f"{weights} has no tensor {name!r}, which a {config.num_hidden_layers}-layer BERT "
                             f"needs; do config.json and the weights belong to the same BERT model?")
        got = checkpoint[name]
        if not isinstance(got, torch.Tensor) or not got.is_floating_point() or tuple(got.shape) != shape:
            raise ValueError(f"{weights}: tensor {name!r} should be a float tensor of shape {shape} (from "
                             f"config.json), got {describe(got)}; do config.json and the weights belong together?")


def load_pretrained(path_or_model_id: str | Path, *, device: torch.device | str | None = None):
    """Load a BERT checkpoint into a :class:`BertEncoder`, with its tokenizer (chapter 9).

    Args:
        path_or_model_id: a local checkpoint folder (e.g. :func:`minilm_path`), or a
            Hugging Face Hub id such as ``"sentence-transformers/all-MiniLM-L6-v2"``,
            downloaded into huggingface_hub's cache.
        device: where to put the model; default the CPU.

    Returns:
        ``(model, tokenizer)``: the :class:`BertEncoder` in eval mode (float32), and the
        ``tokenizers.Tokenizer`` of ``tokenizer.json`` (use it through :func:`encode_sentences`).

    Raises:
        FileNotFoundError: a needed file is missing (the message names it).
        ValueError: config.json is not a supported BERT, or a weight is missing or has the
            wrong shape (the message names the file and the key).
    """
    directory = checkpoint_folder(path_or_model_id)
    config = BertConfig.from_json(directory / "config.json")
    weights = weights_file(directory)
    checkpoint = read_checkpoint(directory)
    _check_checkpoint(checkpoint, config, weights)

    state = {"word_embeddings.weight": checkpoint["embeddings.word_embeddings.weight"],  # (vocab_size, d_model)
             "position.embedding.weight": checkpoint["embeddings.position_embeddings.weight"],  # (max_len, d_model)
             "token_type_embeddings.weight": checkpoint["embeddings.token_type_embeddings.weight"],
             "embedding_norm.weight": checkpoint["embeddings.LayerNorm.weight"],
             "embedding_norm.bias": checkpoint["embeddings.LayerNorm.bias"]}
    for i in range(config.num_hidden_layers):
        state.update({f"layers.{i}.{name}": t for name, t in layer_state_dict(checkpoint, i).items()})
    model = BertEncoder(config)
    model.load_state_dict(state)  # strict: every parameter set, and nothing else

    tokenizer_file = directory / "tokenizer.json"
    if not tokenizer_file.is_file():
        raise FileNotFoundError(f"no tokenizer file {tokenizer_file}; the checkpoint needs its tokenizer.json "
                                f"(a fast tokenizer saved by transformers)")
    tokenizer = require("tokenizers").Tokenizer.from_file(str(tokenizer_file))
    if tokenizer.get_vocab_size() > config.vocab_size:
        raise ValueError(f"{tokenizer_file} has {tokenizer.get_vocab_size()} tokens but config.json's "
                         f"'vocab_size' is {config.vocab_size}; the tokenizer belongs to another model")
    return model.to(device).eval(), tokenizer
