"""Chapter 10's comparison: chapter 8's character model with the 2017 block against the modern block.

    COURSE_IMDB=../shared/data/aclImdb-labeled.tar.gz python benchmarks/modern_lm.py        (make bench-modern)
    python benchmarks/modern_lm.py --blocks RMSNorm SwiGLU --seeds 0   # chosen rows; the others are kept
    python benchmarks/modern_lm.py --quick                             # a smoke run (stores nothing)

Every block is chapter 8's model (companion.models.char_lm: LM_CONFIG, LM_TRAINING, its split)
with what companion.models.char_lm.BLOCKS changes, trained for the same 2,000 steps from the same
seeds on the same batches, and scored on chapter 8's test text (windows of 64 overlapping by half).
Each row stores its parameters, its seconds per step on this machine, the training loss along the
way (for a comparison at equal time) and its test bits per character. The rows are stored in
companion/models/char_lm_results.json under "blocks", which chapter 10 reads.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform

import numpy as np
import torch

from companion import TransformerLM, evaluate_bits_per_char, load_imdb, train_language_model
from companion.models.char_lm import BLOCKS, LM_CONFIG, LM_TRAINING, load_lm_results, save_lm_results, split_reviews


def run(name: str, vocab, train_ids, test_ids, training: dict, seed: int) -> dict:
    torch.manual_seed(seed)
    model = TransformerLM(len(vocab), **(LM_CONFIG | BLOCKS[name]))
    parameters = sum(p.numel() for p in model.parameters())
    history = train_language_model(model, train_ids, seed=seed, progress=False, **training)
    bits, seconds = np.array(history["bits"]), np.array(history["seconds"])
    every = 50
    curve = {"step": list(range(every, len(bits) + 1, every)),
             "bits": [round(float(bits[i - every:i].mean()), 4) for i in range(every, len(bits) + 1, every)],
             "seconds": [round(float(seconds[i - 1]), 1) for i in range(every, len(bits) + 1, every)]}
    block = training["block_size"]
    test = evaluate_bits_per_char(model, test_ids, block, stride=block // 2)
    row = {"block": name, "seed": seed, "parameters": parameters, "steps": len(bits),
           "seconds": round(float(seconds[-1]), 1), "ms_per_step": round(1000 * float(seconds[-1]) / len(bits), 1),
           "test": round(test, 4), "curve": curve, "date": datetime.date.today().isoformat()}
    print(f"{name:<34} seed {seed}  {parameters:>7,} parameters  {row['ms_per_step']:>5.0f} ms a step  "
          f"training loss (last 50 steps) {curve['bits'][-1]:.3f}  test {test:.3f} bits per character", flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--blocks", nargs="+", choices=list(BLOCKS), default=["2017", "modern"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--quick", action="store_true", help="little text and 60 steps (stores nothing)")
    args = parser.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    training = dict(LM_TRAINING)
    if args.quick:
        training["steps"] = 60
    vocab, _, train_ids, _, test_ids = split_reviews(load_imdb(), quick=args.quick)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {LM_CONFIG}; {training}")
    order = {name: i for i, name in enumerate(BLOCKS)}
    for name in args.blocks:  # each row is stored as soon as it is measured
        for seed in args.seeds:
            row = run(name, vocab, train_ids, test_ids, training, seed)
            if args.quick:
                continue  # a smoke run stores nothing
            stored = load_lm_results().get("blocks", {}).get("rows", [])
            kept = [r for r in stored if (r["block"], r["seed"]) != (name, seed)]  # the others stay
            all_rows = sorted(kept + [row], key=lambda r: (order[r["block"]], r["seed"]))
            save_lm_results({"blocks": {"torch": torch.__version__, "threads": torch.get_num_threads(),
                                        "cpu": platform.processor() or platform.machine(),
                                        "config": LM_CONFIG, "training": LM_TRAINING,
                                        "changes": {n: BLOCKS[n] for n in order}, "rows": all_rows}})
    if not args.quick:
        print("stored under 'blocks' in companion/models/char_lm_results.json")


if __name__ == "__main__":
    main()
