"""Chapter 8's race on one split: add-k and Kneser-Ney n-grams (n = 1..8) and the chapter's Transformer.

    COURSE_IMDB=../shared/data/aclImdb-labeled.tar.gz python benchmarks/char_lm.py     (make bench-lm)
    python benchmarks/char_lm.py --no-transformer      # the counting models only (a few minutes)
    python benchmarks/char_lm.py --steps 10000 --eval-every 1000 --seeds 0 --orders 8   # the stored longer run
    python benchmarks/char_lm.py --positions           # the loss plateau: learned against sinusoidal
    python benchmarks/char_lm.py --quick               # a smoke run on little text (stores nothing)

The split is chapter 8's (companion.models.char_lm.split_reviews): IMDB's training reviews
shuffled with seed 0, the first 2,400 for training (3.1 M characters), the last 2,000 held out,
1,000 for validation (every setting, k, the discount, the model's size and learning rate, is
chosen there) and 1,000 for test (every number printed). The Transformer is the chapter's
(LM_CONFIG, LM_TRAINING), trained with seeds 0 and 1, and scored on the test text in windows
that overlap by half.

What a full run measures is stored in companion/models/char_lm_results.json, which chapter 8
reads: "race" (the default run), "long" (--steps with --eval-every: the test bits along a longer
run, and where they cross the best n-gram) and "positions" (--positions). A run with any of
--d-model, --layers, --block, --batch, --lr or --positional is a search and stores nothing.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import time

import numpy as np
import torch

from companion import TransformerLM, evaluate_bits_per_char, fit_kneser_ney, fit_ngram, load_imdb, train_language_model
from companion.models.char_lm import LM_CONFIG, LM_TRAINING, save_lm_results, split_reviews

KS = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003)
DISCOUNTS = (None, 0.6, 0.75, 0.9, 1.0)  # None: modified Kneser-Ney's estimated discounts
POSITIONS = {  # the plateau's ablation: how the positions start
    "learned": dict(positional="learned"),  # as the package starts them: std 1/sqrt(d_model)
    "learned, at the tokens' scale": dict(positional="learned", position_std=1.0),
    "sinusoidal": dict(positional="sinusoidal"),
}


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


def transformer(vocab, train_ids, valid_ids, test_ids, config: dict, training: dict, seed: int,
                best_ngram: float, eval_every: int | None = None, position_std: float | None = None,
                score: bool = True) -> dict:
    """Train one model; its test (and validation) bits, and the training loss against time."""
    torch.manual_seed(seed)
    model = TransformerLM(len(vocab), **config)
    if position_std is not None:  # re-initialise learned positions at another scale
        torch.nn.init.normal_(model.embedding.positional.embedding.weight, std=position_std)
    extra = dict(eval_ids=test_ids, eval_every=eval_every) if eval_every else {}
    history = train_language_model(model, train_ids, seed=seed, progress=False, **training, **extra)
    bits, seconds = np.array(history["bits"]), np.array(history["seconds"])
    steps = len(bits)
    every = 10 if steps <= 1000 else 50
    curve = {"step": list(range(every, steps + 1, every)),  # the mean loss of each `every` steps
             "bits": [round(float(bits[i - every:i].mean()), 4) for i in range(every, steps + 1, every)],
             "seconds": [round(float(seconds[i - 1]), 1) for i in range(every, steps + 1, every)]}
    row = {"seed": seed, "steps": steps, "seconds": round(float(seconds[-1]), 1),
           "ms_per_step": round(1000 * float(seconds[-1]) / steps, 1), "curve": curve}
    print(f"seed {seed}: {steps} steps, {seconds[-1]:.0f} s ({row['ms_per_step']:.0f} ms a step); training loss "
          f"(mean of {every} steps) against time; best n-gram's test: {best_ngram:.3f}")
    for k in np.linspace(0, len(curve["step"]) - 1, min(10, len(curve["step"]))).astype(int):
        print(f"  step {curve['step'][k]:>5}  {curve['seconds'][k]:>6.0f} s  {curve['bits'][k]:.3f} bits per character")
    if eval_every:
        row["test_along"] = {"step": history["eval_steps"], "bits": [round(b, 4) for b in history["eval_bits"]],
                             "seconds": [round(float(seconds[s - 1]), 1) for s in history["eval_steps"]]}
        print("  test bits along the way: " + ", ".join(
            f"{s} steps ({t:.0f} s) {b:.3f}" for s, b, t in zip(*row["test_along"].values())))
        crossed = [(s, t) for s, b, t in zip(*row["test_along"].values()) if b < best_ngram]
        row["crossing"] = {"step": crossed[0][0], "seconds": crossed[0][1]} if crossed else None
        print(f"  first below the best n-gram: {crossed[0][0]} steps, {crossed[0][1]:.0f} s of training"
              if crossed else "  never below the best n-gram in this run")
    if score:
        block = training["block_size"]
        row["test"] = round(evaluate_bits_per_char(model, test_ids, block, stride=block // 2), 4)
        row["valid"] = round(evaluate_bits_per_char(model, valid_ids, block, stride=block // 2), 4)
        print(f"  test: {row['test']:.3f} bits per character (validation {row['valid']:.3f})", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="little text and few steps (a smoke run)")
    parser.add_argument("--orders", type=int, nargs="+", default=list(range(1, 9)), help="n-gram orders")
    parser.add_argument("--no-transformer", action="store_true", help="the counting models only")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1], help="Transformer seeds")
    parser.add_argument("--steps", type=int, default=None, help=f"steps (chapter 8: {LM_TRAINING['steps']:,})")
    parser.add_argument("--eval-every", type=int, default=None, help="score the test text every N steps")
    parser.add_argument("--positions", action="store_true",
                        help="the plateau: learned, learned at the tokens' scale and sinusoidal positions, "
                             "one seed, 600 steps unless --steps")
    search = parser.add_argument_group("a search (stores nothing)")
    search.add_argument("--d-model", type=int)
    search.add_argument("--layers", type=int)
    search.add_argument("--block", type=int, help="context (window) length")
    search.add_argument("--batch", type=int)
    search.add_argument("--lr", type=float)
    search.add_argument("--positional", choices=("learned", "sinusoidal"))
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)

    config, training = dict(LM_CONFIG), dict(LM_TRAINING)
    for key, value in (("d_model", args.d_model), ("num_layers", args.layers), ("positional", args.positional)):
        if value is not None:
            config[key] = value
    for key, value in (("batch_size", args.batch), ("lr", args.lr)):
        if value is not None:
            training[key] = value
    if args.block is not None:
        training["block_size"] = config["max_len"] = args.block
    searching = (config, training) != (LM_CONFIG, LM_TRAINING)
    if args.steps:
        training["steps"] = args.steps
    elif args.positions:
        training["steps"] = 600
    if args.quick:
        training["steps"] = min(training["steps"], 60)
    store = not (args.quick or searching)

    vocab, _, train_ids, valid_ids, test_ids = split_reviews(load_imdb(), quick=args.quick)
    stamp = {"date": datetime.date.today().isoformat(), "torch": torch.__version__,
             "threads": torch.get_num_threads(), "cpu": platform.processor() or platform.machine(),
             "config": config, "training": training}
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; training {len(train_ids):,} characters, "
          f"validation {len(valid_ids):,}, test {len(test_ids):,}; V = {len(vocab)}")
    print(f"Transformer: {config}; {training}")

    if args.positions:
        runs = {}
        for name, how in POSITIONS.items():
            print(f"positions: {name}")
            runs[name] = transformer(vocab, train_ids, valid_ids, test_ids, config | {"positional": how["positional"]},
                                     training, seed=0, best_ngram=float("nan"),
                                     position_std=how.get("position_std"), score=False)
        if store:
            save_lm_results({"positions": stamp | {"runs": runs}})
        return

    rows = counting(vocab, train_ids, valid_ids, test_ids, args.orders)
    best_n, best = min(((n, min(r["add-k"], r["kneser-ney"])) for n, r in rows.items()), key=lambda x: x[1])
    best_kind = "Kneser-Ney" if rows[best_n]["kneser-ney"] <= rows[best_n]["add-k"] else "add-k"
    best_add_k = min(r["add-k"] for r in rows.values())
    print(f"best n-gram: {best_kind} {best_n}-gram, {best:.3f} test bits per character "
          f"(best add-k: {best_add_k:.3f})")
    if args.no_transformer:
        return
    seeds = [row for seed in args.seeds for row in [transformer(
        vocab, train_ids, valid_ids, test_ids, config, training, seed, best, eval_every=args.eval_every)]]
    tests = [row["test"] for row in seeds]
    mean = float(np.mean(tests))
    print(f"Transformer, mean of {len(tests)} seed(s): {mean:.3f} ({min(tests):.3f}-{max(tests):.3f}); against the "
          f"best n-gram: {best - mean:+.3f} bits per character ({'wins' if mean < best else 'loses'})")
    if store:
        key = "race" if training["steps"] == LM_TRAINING["steps"] and not args.eval_every else "long"
        save_lm_results({key: stamp | {"ngrams": {str(n): r for n, r in rows.items()},
                                       "best_ngram": {"kind": best_kind, "n": best_n, "bits": best},
                                       "transformer": seeds}})
        print(f"stored as {key!r} in companion/models/char_lm_results.json")


if __name__ == "__main__":
    main()
