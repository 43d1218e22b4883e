"""IMDB sentiment models of chapter 7: their configurations, the data split, training, saving.

The chapter notebook and ``benchmarks/imdb.py`` both use these, so the numbers in the book
and in the benchmark come from the same code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from .classifier import TransformerClassifier
from ..data.imdb import Split
from ..data.word_pairs import count_bigrams
from ..data.text import Vocab, tokenize
from .training import History, train_classifier

__all__ = ["CONFIGS", "split_imdb", "build_classifier", "train_config", "save_classifier", "load_classifier",
           "RESULTS", "load_results", "save_results"]

# What benchmarks/imdb.py measured (make bench-imdb, make bench-ablation): it writes this file and
# chapter 7 reads it, so the chapter's numbers are the benchmark's. Shipped with the package.
RESULTS = Path(__file__).with_name("sentiment_results.json")

# Model sizes and training settings. "vocab" counts <pad> and <unk>; "bigrams" is the most
# word pairs (seen at least twice in training) that get their own embedding, 0 for none.
CONFIGS: dict[str, dict] = {
    # "nyu": the source material's classifier as its notebook trains it (NYU-DLSP20,
    # 15-transformer.ipynb): 3 post-norm layers (the lecture notes print 1), d_model 32, 2 heads,
    # feed-forward 128, 50,002 words, fixed sinusoidal positions, no dropout (its `p` is never
    # used), max pooling over the first 200 tokens; AdamW at 1e-3 (PyTorch's default weight
    # decay, 0.01), constant, batch 164, 10 epochs, no gradient clipping. What differs: our
    # tokenizer; its embeddings pass through a LayerNorm; it pads every review to 200 tokens and
    # max-pools over the padding too (we mask it); it keeps the last epoch (we keep the best on
    # validation). Its printed test accuracy, 0.8047, is a sum of per-batch accuracies divided
    # by the number of batches minus one.
    "nyu": dict(vocab=50_002, d_model=32, num_heads=2, d_ff=128, num_layers=3, pooling="max",
                 positional="sinusoidal", dropout=0.0, norm_first=False, max_len=200, truncate="head",
                 batch_size=164, lr=1e-3, weight_decay=0.01, epochs=10, schedule="constant", warmup=0.0,
                 bigrams=0, clip=None),
    # Keras' "Text classification with Transformer" example: 20k words, 200 tokens (its comment
    # says the first 200; pad_sequences keeps the last),
    # embedding 32, 2 heads, feed-forward 32, global average pooling, batch 32, Adam at 1e-3,
    # 2 epochs, no clipping. What differs: its two heads are 32 wide each (MultiHeadAttention with
    # key_dim=embed_dim), ours split d_model = 32 into two of 16; its head has a hidden layer of 20
    # units; its average includes the padding (ours masks it); pad_sequences cuts a long review
    # from the start, so it reads the *last* 200 tokens, as we do here; it validates on the test
    # set (we never do): its printed val_accuracy after 2 epochs, 0.8745, is a test accuracy.
    "keras": dict(vocab=20_000, d_model=32, num_heads=2, d_ff=32, num_layers=1, pooling="mean",
                  positional="learned", dropout=0.1, norm_first=False, max_len=200, truncate="tail",
                  batch_size=32, lr=1e-3, weight_decay=0.0, epochs=2, schedule="constant", warmup=0.0,
                  bigrams=0, clip=None),
    # The course model: longer reviews (their start and their end), embeddings for the 200,000
    # most frequent word pairs, wider, pre-norm, mean pooling, AdamW with warm-up and a cosine
    # schedule, gradients clipped at norm 1. Two epochs: without word pairs and with three
    # epochs, validation accuracy peaked after the second (and training loss fell to 0.07:
    # overfitting).
    "course": dict(vocab=40_000, d_model=64, num_heads=4, d_ff=128, num_layers=1, pooling="mean",
                   positional="sinusoidal", dropout=0.2, norm_first=True, max_len=512, truncate="head_tail",
                   batch_size=32, lr=2e-3, weight_decay=0.01, epochs=2, schedule="cosine", warmup=0.05,
                   bigrams=200_000, clip=1.0),
}


def split_imdb(data: dict[str, Split], val_size: int = 2500, seed: int = 0, quick: bool = False) -> dict:
    """Tokenise, and carve a balanced validation set out of the training reviews (chapter 7).

    Args:
        data: what :func:`companion.load_imdb` returns.
        val_size: validation reviews, half of each class.
        seed: the carving is random but reproducible.
        quick: keep a small random subset of every split (2,000 / 500 / 2,000), for smoke runs.

    Returns:
        ``{"train": (token lists, labels), "val": (...), "test": (...), "ratings": {...}}``;
        ``ratings`` holds each review's star rating (1-4 negative, 7-10 positive) per split, in
        the same order.
    """
    g = torch.Generator().manual_seed(seed)
    labels = data["train"].labels
    val_index: set[int] = set()
    for label in (0, 1):
        members = [i for i, y in enumerate(labels) if y == label]
        val_index.update(members[i] for i in torch.randperm(len(members), generator=g, device="cpu")[: val_size // 2].tolist())
    train_index = [i for i in range(len(labels)) if i not in val_index]
    val_sorted = sorted(val_index)
    texts = data["train"].texts
    if quick:
        train_index = [train_index[i] for i in torch.randperm(len(train_index), generator=g, device="cpu")[:2000].tolist()]
        val_sorted = [val_sorted[i] for i in torch.randperm(len(val_sorted), generator=g, device="cpu")[:500].tolist()]
    test_index = list(range(len(data["test"])))
    if quick:
        test_index = torch.randperm(len(test_index), generator=g, device="cpu")[:2000].tolist()
    ratings = data["train"].ratings
    return {
        "train": ([tokenize(texts[i]) for i in train_index], [labels[i] for i in train_index]),
        "val": ([tokenize(texts[i]) for i in val_sorted], [labels[i] for i in val_sorted]),
        "test": ([tokenize(data["test"].texts[i]) for i in test_index], [data["test"].labels[i] for i in test_index]),
        "ratings": {"train": [ratings[i] for i in train_index], "val": [ratings[i] for i in val_sorted],
                    "test": [data["test"].ratings[i] for i in test_index]},
    }


def build_classifier(config: dict, vocab: Vocab, bigram_keys: torch.Tensor | None = None) -> TransformerClassifier:
    """The :class:`TransformerClassifier` a config describes, for ``vocab`` (chapter 7).

    A config with ``bigrams > 0`` needs ``bigram_keys``, from :func:`companion.count_bigrams`
    on the training ids (:func:`train_config` does this).
    """
    if bool(config["bigrams"]) != (bigram_keys is not None):
        raise ValueError(
            f"config has bigrams={config['bigrams']} but bigram_keys is "
            f"{'missing' if bigram_keys is None else 'given'}: pass count_bigrams(training ids, len(vocab), "
            "config['bigrams']) when bigrams > 0, and nothing when it is 0"
        )
    return TransformerClassifier(len(vocab), 2, d_model=config["d_model"], num_heads=config["num_heads"],
                                 num_layers=config["num_layers"], d_ff=config["d_ff"], dropout=config["dropout"],
                                 norm_first=config["norm_first"], max_len=config["max_len"],
                                 positional=config["positional"], pooling=config["pooling"], pad_id=vocab.pad_id,
                                 bigram_keys=bigram_keys)


def train_config(config: dict, split: dict, *, epochs: int | None = None, device: torch.device | str = "cpu",
                 seed: int = 0, progress: bool = True,
                 eval_every: int | None = None) -> tuple[TransformerClassifier, Vocab, History]:
    """Build the vocabulary (and bigram table) from the training reviews, then build and train the model (chapter 7).

    ``eval_every`` (steps) records a finer learning curve without changing the training.

    Returns:
        ``(model, vocab, history)``; the model holds its best-validation weights.
    """
    vocab = Vocab.build(split["train"][0], max_size=config["vocab"])
    encoded = {k: ([vocab.encode(t) for t in split[k][0]], split[k][1]) for k in ("train", "val")}
    keys = None
    if config["bigrams"]:
        keys = count_bigrams(encoded["train"][0], len(vocab), config["bigrams"], ignore_ids=(vocab.pad_id, vocab.unk_id))
    torch.manual_seed(seed)
    model = build_classifier(config, vocab, keys)
    history = train_classifier(model, encoded["train"], encoded["val"], epochs=epochs or config["epochs"],
                               batch_size=config["batch_size"], lr=config["lr"], weight_decay=config["weight_decay"],
                               warmup_fraction=config["warmup"], schedule=config["schedule"],
                               max_len=config["max_len"], truncate=config["truncate"], clip=config["clip"],
                               device=device, seed=seed,
                               progress=progress, eval_every=eval_every)
    return model, vocab, history


def save_classifier(path: str | os.PathLike, model: TransformerClassifier, vocab: Vocab, config: dict) -> None:
    """Save weights, vocabulary and config in one file (chapter 7); :func:`load_classifier` reads it."""
    torch.save({"state_dict": model.state_dict(), "vocab": vocab.to_json(), "config": json.dumps(config)}, Path(path))


def load_classifier(path: str | os.PathLike, device: torch.device | str = "cpu"):
    """Read what :func:`save_classifier` wrote (chapter 7).

    Returns:
        ``(model, vocab, config)``, the model in eval mode on ``device``.
    """
    saved = torch.load(Path(path), map_location=device, weights_only=True)
    vocab, config = Vocab.from_json(saved["vocab"]), json.loads(saved["config"])
    model = build_classifier(config, vocab, saved["state_dict"].get("bigrams.keys")).to(device)
    model.load_state_dict(saved["state_dict"])
    return model.eval(), vocab, config


def load_results(path: str | os.PathLike = RESULTS) -> dict:
    """The measured benchmark results (chapter 7): ``{"benchmark": {...}, "ablation": {...}}``.

    Each section holds where it was measured (``torch``, ``machine``, ``threads``, ``date``) and
    its ``rows``: for ``benchmark`` one per config (``name``, ``params``, ``train_seconds``,
    ``epoch_seconds``, ``val_accuracy``, ``test_accuracy``, ``peak_mib``); for ``ablation`` one per
    change to the course model (``label``, ``changes`` and the same measurements).

    Raises:
        FileNotFoundError: no results yet; ``make bench-imdb`` and ``make bench-ablation`` write them.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no benchmark results at {path}; run make bench-imdb and make bench-ablation")
    return json.loads(path.read_text(encoding="utf-8"))


def save_results(section: str, about: dict, rows: list[dict], path: str | os.PathLike = RESULTS) -> None:
    """Write one section (``"benchmark"`` or ``"ablation"``) of the results file, keeping the other."""
    if section not in ("benchmark", "ablation"):
        raise ValueError(f"section must be 'benchmark' or 'ablation', got {section!r}")
    path = Path(path)
    results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    results[section] = {**about, "rows": rows}
    path.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
