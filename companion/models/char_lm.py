"""Chapter 8's race on characters: the split, the Transformer's settings, what the benchmark measured.

The chapter notebook and ``benchmarks/char_lm.py`` both use these, so the numbers in the book
and in the benchmark come from the same code and settings.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from ..data.chars import CharVocab, reviews_to_text
from ..data.imdb import Split

__all__ = ["LM_CONFIG", "LM_TRAINING", "BLOCKS", "split_reviews", "LM_RESULTS", "load_lm_results",
           "save_lm_results"]

# What benchmarks/char_lm.py measured (make bench-lm): it writes this file and chapter 8 reads
# it. Shipped with the package, so a notebook in Colab shows it too.
LM_RESULTS = Path(__file__).with_name("char_lm_results.json")

# The chapter's Transformer, sized for throughput on a CPU (chosen on validation text): a
# window of 64 characters is nine times an 8-gram's context and costs a quarter of the
# attention of a window of 256; 64 windows a step keep two cores busy. Sinusoidal
# positions: with learned ones, started as the package starts them, the loss stays at the
# bigram's level longer (chapter 8 measures it, benchmarks/char_lm.py --positions).
LM_CONFIG = dict(d_model=128, num_heads=4, num_layers=3, max_len=64, dropout=0.0, positional="sinusoidal")
LM_TRAINING = dict(steps=2_000, batch_size=64, block_size=64, lr=3e-3, warmup=100)

# Chapter 10's comparison: what each block changes in LM_CONFIG. "2017" is chapter 8's block
# (LayerNorm, ReLU, biases, sinusoidal positions added to the tokens); "modern" is Llama's
# (RMSNorm, SwiGLU at the same parameters, no biases, rotary positions in the attention);
# the others change one thing, share key-value heads (grouped-query, multi-query), or put
# linear attention in the modern block.
MODERN = dict(norm="rms", activation="swiglu", bias=False, rotary=True, positional="none")
BLOCKS = {
    "2017": {},
    "modern": MODERN,
    "RMSNorm": dict(norm="rms"),
    "SwiGLU": dict(activation="swiglu"),
    "no biases": dict(bias=False),
    "rotary": dict(rotary=True, positional="none"),
    "modern, GQA (2 key-value heads)": MODERN | dict(num_kv_heads=2),
    "modern, MQA (1 key-value head)": MODERN | dict(num_kv_heads=1),
    "modern, linear attention": MODERN | dict(attention="linear"),
}


def split_reviews(data: dict[str, Split], quick: bool = False):
    """Chapter 8's texts: IMDB's training reviews shuffled with seed 0; the first 2,400 for
    training, the last 2,000 held out (1,000 validation, then 1,000 test).

    Args:
        data: what :func:`companion.load_imdb` returns.
        quick: 200 training reviews and 100 + 100 held out (smoke runs).

    Returns:
        ``(vocab, reviews, train_ids, valid_ids, test_ids)``: the :class:`companion.CharVocab`
        (characters seen at least 20 times in training, and ``<unk>``), the shuffled reviews,
        and three uint8 ``(n,)`` id streams.
    """
    n_train, n_held = (200, 100) if quick else (2_400, 1_000)
    order = torch.randperm(len(data["train"]), generator=torch.Generator().manual_seed(0)).tolist()
    reviews = [data["train"].texts[i] for i in order]
    texts = (reviews_to_text(reviews[:n_train]), reviews_to_text(reviews[-2 * n_held:-n_held]),
             reviews_to_text(reviews[-n_held:]))
    vocab = CharVocab.build(texts[0], min_count=20)
    return (vocab, reviews, *(vocab.encode(t) for t in texts))


def load_lm_results() -> dict:
    """What ``benchmarks/char_lm.py`` stored: ``{}`` when it never ran."""
    return json.loads(LM_RESULTS.read_text()) if LM_RESULTS.exists() else {}


def save_lm_results(update: dict) -> None:
    """Merge ``update`` into the stored results (one key per kind of run)."""
    results = load_lm_results()
    results.update(update)
    LM_RESULTS.write_text(json.dumps(results, indent=1) + "\n")
