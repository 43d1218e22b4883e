"""Training and scoring of chapter 6's sequence-to-sequence models (GRUs and the Transformer).

Every model is called as ``model(src, tgt, src_mask=...)`` and returns ``(logits, weights)``,
so one training loop and one decoder serve all of them.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
import torch.nn.functional as F

from ..data.reversal import BOS, EOS, PAD, Pairs
from .._checks import check_flags
from ..decoding import beam_search, greedy_decode
from ..transformer import Transformer
from .rnn_seq2seq import GRUSeq2Seq
from .train_loop import fit

__all__ = ["train_seq2seq", "translate", "exact_match", "reversal_transformer", "reversal_gru",
           "SEQ2SEQ_RESULTS", "load_seq2seq_results", "save_seq2seq_results"]

SEQ2SEQ_RESULTS = Path(__file__).with_name("seq2seq_results.json")


def reversal_transformer(vocab_size: int, norm_first: bool = True, num_layers: int = 2) -> Transformer:
    """Chapter 6's Transformer for the reversal task: ``d_model`` 64, 4 heads, ``d_ff`` 256, no
    dropout, ``num_layers`` encoder and as many decoder layers, PAD (0) as padding on both sides.

    One constructor for the chapter and ``benchmarks/seq2seq.py``, so the two train the same model.
    """
    return Transformer(vocab_size, vocab_size, d_model=64, num_heads=4, num_encoder_layers=num_layers,
                       num_decoder_layers=num_layers, d_ff=256, dropout=0.0, norm_first=norm_first,
                       max_len=64, src_pad_id=PAD, tgt_pad_id=PAD)


def reversal_gru(vocab_size: int, attention: bool) -> GRUSeq2Seq:
    """Chapter 6's GRU encoder-decoder: embeddings of 32, states of 128, with or without attention."""
    return GRUSeq2Seq(vocab_size, d_embed=32, d_hidden=128, attention=attention)


def load_seq2seq_results() -> dict:
    """What ``make bench-seq2seq`` measured (chapter 6 reads it): ``{"norm": ..., "gru": ..., "seeds": ...}``.

    ``"norm"``: post-norm against pre-norm, ``{"setting", "steps", "layers", "lr", "warmup", "runs"}``
    per setting (``"recipe"``, ``"deep"``), each run ``{"norm", "seed", "losses", "test", "seconds"}``.
    ``"gru"``: ``{"runs": [...]}``, the GRU without attention trained longer than the chapter does,
    each run ``{"steps", "test", "longer", "by_length", "seconds"}``.
    ``"seeds"``: ``{"runs": [...]}``, the chapter's three models trained as the chapter trains them
    but from other seeds, each run ``{"model", "seed", "steps", "lr", "test", "longer",
    "by_length", "seconds", "params"}``. Each section also
    says where it was measured (``torch``, ``threads``, ``date``).

    Raises:
        FileNotFoundError: no results yet (``make bench-seq2seq`` writes them).
    """
    if not SEQ2SEQ_RESULTS.exists():
        raise FileNotFoundError(f"no results at {SEQ2SEQ_RESULTS}; run make bench-seq2seq")
    return json.loads(SEQ2SEQ_RESULTS.read_text(encoding="utf-8"))


def save_seq2seq_results(update: dict) -> None:
    """Write sections of the results file (``"norm"``, ``"gru"``, ``"seeds"``), keeping the others."""
    unknown = set(update) - {"norm", "gru", "seeds"}
    if unknown:
        raise ValueError(f"sections must be 'norm', 'gru' or 'seeds', got {sorted(unknown)}")
    results = json.loads(SEQ2SEQ_RESULTS.read_text(encoding="utf-8")) if SEQ2SEQ_RESULTS.exists() else {}
    results.update(update)
    SEQ2SEQ_RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _src_mask(src: torch.Tensor) -> torch.Tensor:
    return (src != PAD)[:, None, :]  # (batch, 1, t_src): True on real tokens


def train_seq2seq(
    model,
    pairs: Pairs,
    steps: int,
    batch_size: int = 64,
    lr: float = 1e-3,
    warmup: int = 100,
    seed: int = 0,
    progress: bool = False,
    desc: str = "training",
) -> list[float]:
    """Train with teacher forcing and Adam: a linear warm-up, then cosine decay (chapter 6).

    The loop is the course's one training loop, :func:`companion.models.fit`; this function
    says what a batch is (``batch_size`` random pairs) and what its loss is.

    Args:
        model: a :class:`companion.Transformer` or :class:`companion.GRUSeq2Seq`.
        pairs: the training :class:`companion.data.reversal.Pairs`.
        steps: optimiser steps, each on ``batch_size`` pairs drawn at random.
        lr: the peak learning rate.
        warmup: steps of linear warm-up from 0.
        seed: seeds the batches.
        progress: show a progress bar.
        desc: the progress bar's label.

    Returns:
        the training loss (cross-entropy per target token, padding excluded) of every step.
    """
    device = next(model.parameters()).device

    def loss(model, batch):
        src, tgt = batch.src.to(device), batch.tgt.to(device)
        logits, _ = model(src, tgt[:, :-1], src_mask=_src_mask(src))  # (batch, t_tgt - 1, vocab)
        return F.cross_entropy(logits.flatten(0, 1), tgt[:, 1:].flatten(), ignore_index=PAD)

    return fit(model, draw=lambda g: pairs[torch.randint(len(pairs), (batch_size,), generator=g)], loss=loss,
               steps=steps, lr=lr, schedule="cosine", warmup=warmup, clip=1.0, seed=seed, progress=progress,
               desc=desc).loss


def translate(model, pairs: Pairs, batch_size: int = 500, width: int = 1, use_cache: bool = True) -> torch.Tensor:
    """Decoded outputs for every source of ``pairs`` (chapter 6).

    Args:
        model: a trained :class:`companion.Transformer` or :class:`companion.GRUSeq2Seq`.
        pairs: the sources (and targets, for their layout).
        batch_size: sources decoded at once.
        width: 1 for greedy decoding (:func:`companion.greedy_decode`), more for beam search
            (:func:`companion.beam_search`) with that many prefixes kept.
        use_cache: greedy decoding with the model's caches where it has them.

    Returns:
        int64 ``(n, t_src + 2)``: BOS, the output, EOS, then PAD, laid out like ``pairs.tgt``
        (an output that never emits EOS is cut at ``t_src + 1`` tokens).
    """
    check_flags(use_cache=use_cache)
    device = next(model.parameters()).device
    t = pairs.tgt.size(1)
    rows = []
    for start in range(0, len(pairs), batch_size):
        src = pairs.src[start : start + batch_size].to(device)
        if width == 1:
            out = greedy_decode(model, src, BOS, EOS, max_len=t - 1, src_mask=_src_mask(src), pad_id=PAD,
                                use_cache=use_cache)
        else:
            out, _ = beam_search(model, src, BOS, EOS, max_len=t - 1, width=width, src_mask=_src_mask(src),
                                 pad_id=PAD)
        rows.append(F.pad(out.cpu(), (0, t - out.size(1)), value=PAD))
    return torch.cat(rows)


def exact_match(model, pairs: Pairs, width: int = 1) -> torch.Tensor:
    """Bool ``(n,)``: whether each output equals its target exactly, EOS included (chapter 6).

    ``width`` 1 decodes greedily, more with beam search (see :func:`translate`).
    """
    return (translate(model, pairs, width=width) == pairs.tgt).all(dim=1)
