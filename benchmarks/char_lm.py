"""Chapter 8's race on one split: add-k and Kneser-Ney n-grams (n = 1..8) and the chapter's Transformer.

    COURSE_IMDB=../shared/data/aclImdb-labeled.tar.gz python benchmarks/char_lm.py     (make bench-lm)
    python benchmarks/char_lm.py --no-transformer          # the counting models only (a few minutes)
    python benchmarks/char_lm.py --steps 4000 --seeds 0 1  # a longer Transformer run, two seeds
    python benchmarks/char_lm.py --quick                   # a smoke run on little text

The split is chapter 8's: IMDB's training reviews shuffled with seed 0, the first 2,400 for
training (3.1 M characters), the last 2,000 held out, 1,000 for validation (every setting,
k or the discount, is chosen there) and 1,000 for test (every number printed). Each n-gram
model is fitted once per setting; the Transformer is the chapter's (the same size, steps,
batch, window and learning rate unless overridden) and is scored on the test text the same
way, in windows of 256 that overlap by half. Its training loss against wall-clock time is
printed every 10 % of the run, beside the best n-gram's test bits, so the crossing can be read.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from companion import (CharVocab, TransformerLM, evaluate_bits_per_char, fit_kneser_ney, fit_ngram, load_imdb,
                       reviews_to_text, train_language_model)

KS = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003)
DISCOUNTS = (None, 0.6, 0.75, 0.9, 1.0)  # None: modified Kneser-Ney's estimated discounts
CONFIG = dict(d_model=128, num_heads=4, num_layers=4, max_len=256, dropout=0.0)  # chapter 8's


def split(quick: bool):
    """Chapter 8's texts: (vocab, train_ids, valid_ids, test_ids)."""
    n_train, n_held = (200, 100) if quick else (2_400, 1_000)
    data = load_imdb()
    order = torch.randperm(len(data["train"]), generator=torch.Generator().manual_seed(0)).tolist()
    reviews = [data["train"].texts[i] for i in order]
    texts = (reviews_to_text(reviews[:n_train]), reviews_to_text(reviews[-2 * n_held:-n_held]),
             reviews_to_text(reviews[-n_held:]))
    vocab = CharVocab.build(texts[0], min_count=20)
    return (vocab, *(vocab.encode(t) for t in texts))


def counting(vocab, train_ids, valid_ids, test_ids, orders) -> dict:
    """Test bits per character of add-k and Kneser-Ney for each order, settings chosen on validation."""
    V, newline = len(vocab), vocab.chars.index("\n")
    train, valid, test = (x.numpy() for x in (train_ids, valid_ids, test_ids))
    rows = {}
    print(f"{'n':>2}  {'add-k':>7} {'k':>6}  {'Kneser-Ney':>10} {'discount':>9}  {'seconds':>7}")
    for n in orders:
        start = time.perf_counter()
        add_k, _ = fit_ngram(n, train, valid, V, ks=KS, start_id=newline)
        kn, _ = fit_kneser_ney(n, train, valid, V, discounts=DISCOUNTS, start_id=newline)
        rows[n] = {"add-k": add_k.bits_per_char(test), "k": add_k.k,
                   "kneser-ney": kn.bits_per_char(test), "discount": kn.discount}
        discount = "modified" if kn.discount is None else f"{kn.discount:g}"
        print(f"{n:>2}  {rows[n]['add-k']:>7.3f} {add_k.k:>6g}  {rows[n]['kneser-ney']:>10.3f} {discount:>9}  "
              f"{time.perf_counter() - start:>7.1f}", flush=True)
    return rows


def transformer(vocab, train_ids, test_ids, steps: int, seed: int, best_ngram: float) -> float:
    torch.manual_seed(seed)
    model = TransformerLM(len(vocab), **CONFIG)
    history = train_language_model(model, train_ids, steps=steps, batch_size=16, block_size=256, lr=3e-3,
                                   warmup=100, seed=seed, progress=False)
    bits, seconds = np.array(history["bits"]), np.array(history["seconds"])
    window = max(1, min(50, steps // 10))
    smooth = np.convolve(bits, np.ones(window) / window, mode="valid")  # the mean of the last `window` steps
    print(f"seed {seed}: training loss (mean of {window} steps) against time; best n-gram's test: {best_ngram:.3f}")
    for k in np.linspace(window - 1, steps - 1, 10).astype(int):
        print(f"  step {k + 1:>5}  {seconds[k]:>6.0f} s  {smooth[k - window + 1]:.3f} bits per character")
    below = np.nonzero(smooth < best_ngram)[0]
    if below.size:
        step = below[0] + window - 1
        print(f"  the training loss first falls below the best n-gram at step {step + 1}, {seconds[step]:.0f} s")
    else:
        print("  the training loss never falls below the best n-gram in this run")
    test = evaluate_bits_per_char(model, test_ids, block_size=256, stride=128)
    print(f"  test: {test:.3f} bits per character after {steps} steps, {seconds[-1]:.0f} s", flush=True)
    return test


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="little text and few steps (a smoke run)")
    parser.add_argument("--orders", type=int, nargs="+", default=list(range(1, 9)), help="n-gram orders")
    parser.add_argument("--no-transformer", action="store_true", help="the counting models only")
    parser.add_argument("--steps", type=int, default=None, help="Transformer steps (default: chapter 8's 2,300)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="Transformer seeds")
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    vocab, train_ids, valid_ids, test_ids = split(args.quick)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; training {len(train_ids):,} characters, "
          f"validation {len(valid_ids):,}, test {len(test_ids):,}; V = {len(vocab)}")
    rows = counting(vocab, train_ids, valid_ids, test_ids, args.orders)
    best_n, best = min(((n, min(r["add-k"], r["kneser-ney"])) for n, r in rows.items()), key=lambda x: x[1])
    best_kind = "Kneser-Ney" if rows[best_n]["kneser-ney"] <= rows[best_n]["add-k"] else "add-k"
    best_add_k = min(r["add-k"] for r in rows.values())
    print(f"best n-gram: {best_kind} {best_n}-gram, {best:.3f} test bits per character "
          f"(best add-k: {best_add_k:.3f})")
    if args.no_transformer:
        return
    steps = args.steps or (60 if args.quick else 2_300)
    tests = [transformer(vocab, train_ids, test_ids, steps, seed, best) for seed in args.seeds]
    mean = float(np.mean(tests))
    print(f"Transformer, mean of {len(tests)} seed(s): {mean:.3f}; against the best n-gram: "
          f"{best - mean:+.3f} bits per character ({'wins' if mean < best else 'loses'})")


if __name__ == "__main__":
    main()
