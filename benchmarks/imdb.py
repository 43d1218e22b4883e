"""IMDB sentiment: the seed baseline, a Keras-style reference, the course model and TF-IDF, one run.

    COURSE_IMDB=../shared/data/aclImdb-labeled.tar.gz python benchmarks/imdb.py
    python benchmarks/imdb.py --configs course --quick           # a fast smoke run

Every config trains in a fresh subprocess (so its peak memory is its own) on the same split:
the vocabulary and every choice come from the training reviews (22,500 of them, 2,500 held
out for validation, both halves balanced); the 25,000 test reviews are used once per config,
for the reported accuracy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time

import torch

from companion import TransformerClassifier, Vocab, load_imdb, tokenize
from companion.training import accuracy_of, train_classifier

# Each neural config: model sizes and how it is trained. "vocab" counts <pad> and <unk>.
CONFIGS = {
    # The source material's classifier: 1 layer, d_model 32, 2 heads, feed-forward 128,
    # 50,002 words, max pooling; trained as its notebook does (200 tokens, batch 164, Adam 1e-4, 10 epochs).
    "seed": dict(vocab=50_002, d_model=32, num_heads=2, d_ff=128, num_layers=1, pooling="max", positional="sinusoidal",
                 dropout=0.1, norm_first=False, max_len=200, truncate="head", batch_size=164, lr=1e-4,
                 weight_decay=0.0, epochs=10, schedule="constant", warmup=0.0),
    # Keras' "Text classification with Transformer" example: 20k words, 200 tokens, embedding 32,
    # 2 heads, feed-forward 32, global average pooling, batch 32, Adam, 2 epochs.
    "keras": dict(vocab=20_000, d_model=32, num_heads=2, d_ff=32, num_layers=1, pooling="mean", positional="learned",
                  dropout=0.1, norm_first=False, max_len=200, truncate="head", batch_size=32, lr=1e-3,
                  weight_decay=0.0, epochs=2, schedule="constant", warmup=0.0),
    # The course model: longer reviews (head and tail), wider, pre-norm, mean pooling, AdamW with warm-up + cosine.
    "course": dict(vocab=40_000, d_model=64, num_heads=4, d_ff=128, num_layers=1, pooling="mean", positional="sinusoidal",
                   dropout=0.2, norm_first=True, max_len=512, truncate="head_tail", batch_size=32, lr=2e-3,
                   weight_decay=0.01, epochs=3, schedule="cosine", warmup=0.05),
}
ALL = [*CONFIGS, "tfidf"]


def data_split(seed: int = 0, quick: bool = False):
    """Tokenised train/val/test, the val set carved from train (balanced, seeded)."""
    data = load_imdb()
    g = torch.Generator().manual_seed(seed)
    train_tokens = [tokenize(t) for t in data["train"].texts]
    labels = data["train"].labels
    val_index = set()
    for label in (0, 1):
        members = [i for i, y in enumerate(labels) if y == label]
        picks = torch.randperm(len(members), generator=g)[:1250].tolist()
        val_index.update(members[i] for i in picks)
    split = {
        "train": ([t for i, t in enumerate(train_tokens) if i not in val_index], [y for i, y in enumerate(labels) if i not in val_index]),
        "val": ([train_tokens[i] for i in sorted(val_index)], [labels[i] for i in sorted(val_index)]),
        "test": ([tokenize(t) for t in data["test"].texts], data["test"].labels),
    }
    if quick:  # a subset of every split, for smoke runs
        for name, (x, y) in split.items():
            keep = torch.randperm(len(x), generator=g)[: {"train": 2000, "val": 500, "test": 1000}[name]].tolist()
            split[name] = ([x[i] for i in keep], [y[i] for i in keep])
    return split


def run_neural(name: str, quick: bool) -> dict:
    cfg = CONFIGS[name]
    split = data_split(quick=quick)
    vocab = Vocab.build(split["train"][0], max_size=cfg["vocab"])
    encoded = {k: ([vocab.encode(t) for t in x], y) for k, (x, y) in split.items()}
    torch.manual_seed(0)
    model = TransformerClassifier(len(vocab), 2, d_model=cfg["d_model"], num_heads=cfg["num_heads"],
                                  num_layers=cfg["num_layers"], d_ff=cfg["d_ff"], dropout=cfg["dropout"],
                                  norm_first=cfg["norm_first"], max_len=cfg["max_len"], positional=cfg["positional"],
                                  pooling=cfg["pooling"], pad_id=vocab.pad_id)
    start = time.perf_counter()
    history = train_classifier(model, encoded["train"], encoded["val"], epochs=1 if quick else cfg["epochs"],
                               batch_size=cfg["batch_size"], lr=cfg["lr"], weight_decay=cfg["weight_decay"],
                               warmup_fraction=cfg["warmup"], schedule=cfg["schedule"], max_len=cfg["max_len"],
                               truncate=cfg["truncate"], progress=False)
    wall = time.perf_counter() - start
    test = accuracy_of(model, encoded["test"], max_len=cfg["max_len"], truncate=cfg["truncate"])
    return dict(name=name, params=sum(p.numel() for p in model.parameters()), train_seconds=wall,
                epoch_seconds=sum(history.epoch_seconds) / len(history.epoch_seconds),
                val_accuracy=max(history.val_accuracy), test_accuracy=test, val_curve=history.val_accuracy)


def run_tfidf(quick: bool) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    split = data_split(quick=quick)
    start = time.perf_counter()
    vectorizer = TfidfVectorizer(analyzer=lambda tokens: tokens + [a + " " + b for a, b in zip(tokens, tokens[1:])],
                                 min_df=2, sublinear_tf=True)
    X_train = vectorizer.fit_transform(split["train"][0])
    X_val, X_test = vectorizer.transform(split["val"][0]), vectorizer.transform(split["test"][0])
    best = None
    for C in (1.0, 4.0, 16.0):  # chosen on validation data
        model = LogisticRegression(C=C, max_iter=2000).fit(X_train, split["train"][1])
        val = model.score(X_val, split["val"][1])
        if best is None or val > best[0]:
            best = (val, model)
    wall = time.perf_counter() - start
    return dict(name="tfidf", params=X_train.shape[1] + 1, train_seconds=wall, epoch_seconds=float("nan"),
                val_accuracy=best[0], test_accuracy=best[1].score(X_test, split["test"][1]), val_curve=[])


def child(name: str, quick: bool) -> None:
    result = run_tfidf(quick) if name == "tfidf" else run_neural(name, quick)
    result["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="*", default=ALL, choices=ALL)
    parser.add_argument("--quick", action="store_true", help="subsets and one epoch: a smoke run, not the numbers")
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.child:
        child(args.child, args.quick)
        return
    if not os.environ.get("COURSE_IMDB"):
        print("note: COURSE_IMDB is not set; the loader will download the archive (or use its cache)")
    print(f"torch {torch.__version__}, {platform.machine()}, {args.threads} threads{', QUICK' if args.quick else ''}")
    results = []
    for name in args.configs:
        command = [sys.executable, __file__, "--child", name, "--threads", str(args.threads)] + (["--quick"] if args.quick else [])
        done = subprocess.run(command, capture_output=True, text=True)
        lines = [l for l in done.stdout.splitlines() if l.startswith("RESULT ")]
        if done.returncode != 0 or not lines:
            sys.exit(f"{name} failed:\n{done.stderr[-3000:]}")
        results.append(json.loads(lines[-1][len("RESULT "):]))
        r = results[-1]
        print(f"  {name}: test {r['test_accuracy']:.4f} (val {r['val_accuracy']:.4f}) in {r['train_seconds']:.0f} s", flush=True)
    keras = next((r for r in results if r["name"] == "keras"), None)
    print("\n| config | parameters | training wall time (s) | s / epoch | best val acc | test acc | peak memory (MiB) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print(f"| {r['name']} | {r['params']:,} | {r['train_seconds']:.0f} | {r['epoch_seconds']:.0f} | "
              f"{r['val_accuracy']:.4f} | {r['test_accuracy']:.4f} | {r['peak_mib']:.0f} |")
    course = next((r for r in results if r["name"] == "course"), None)
    if course and keras:
        print(f"\ncourse / keras training wall time: {course['train_seconds'] / keras['train_seconds']:.2f}")
    if course:
        others = [r for r in results if r["name"] in CONFIGS and r["name"] != "course"]
        beats = all(course["test_accuracy"] > r["test_accuracy"] for r in others)
        print(f"course model test accuracy {course['test_accuracy']:.4f}: "
              f"{'>=' if course['test_accuracy'] >= 0.90 else '<'} 0.90 target; "
              f"{'beats' if beats else 'does NOT beat'} every other neural config")


if __name__ == "__main__":
    main()
