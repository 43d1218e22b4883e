"""Sentences in, unit-length vectors out, with a pretrained BERT (chapter 9): tokenising into a
padded batch, the mean over real tokens, and sentence-transformers' published recipe.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from .._checks import check_tensor, describe
from ..pooling import masked_mean
from .bert import BertEncoder

__all__ = ["encode_sentences", "mean_pool", "sentence_embedding"]


def _restore(tokenizer, padding: dict | None, truncation: dict | None) -> None:
    """Put a ``tokenizers.Tokenizer``'s padding and truncation settings back as they were."""
    if padding is None:
        tokenizer.no_padding()
    else:
        tokenizer.enable_padding(**padding)
    if truncation is None:
        tokenizer.no_truncation()
    else:
        tokenizer.enable_truncation(**truncation)


def encode_sentences(tokenizer, sentences: list[str], *, max_length: int | None = None, device=None):
    """Tokenise sentences into a batch padded to the longest one (chapter 9).

    The checkpoint's ``tokenizer.json`` may carry its own settings (all-MiniLM-L6-v2's pads
    every sentence to 128 tokens and cuts at 128); this function uses its own for the call:
    pad to the longest sentence in the batch, on the right, with the tokenizer's pad token,
    and cut at ``max_length`` tokens (``[CLS]`` and ``[SEP]`` included) when given. The
    tokenizer's settings are put back afterwards, so the caller's tokenizer is unchanged.

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
    saved_padding, saved_truncation = padding, tokenizer.truncation  # put back below
    try:
        tokenizer.enable_padding(pad_id=pad_id, pad_token=pad_token)  # length=None: to the longest in the batch
        if max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(max_length)
        encodings = tokenizer.encode_batch(list(sentences))
    finally:
        _restore(tokenizer, saved_padding, saved_truncation)
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
    return masked_mean(hidden, attention_mask, name="attention_mask")  # (batch, d_model); checks the mask


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
