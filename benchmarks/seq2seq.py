"""Chapter 6's longer experiments, too slow for the chapter's 10-minute budget; it reads their results.

    python benchmarks/seq2seq.py            (make bench-seq2seq: all three parts, about 18 min on 2 cores)
    python benchmarks/seq2seq.py --norm     # post-norm against pre-norm only
    python benchmarks/seq2seq.py --gru      # the GRU without attention, trained 2 and 4 times as long
    python benchmarks/seq2seq.py --seeds    # the chapter's three models from seeds 1 and 2
    python benchmarks/seq2seq.py --quick    # a smoke run (a few steps; stores nothing)

"norm": the chapter's Transformer (companion.models.seq2seq.reversal_transformer) trained with
the LayerNorm after each residual addition (post-norm) and before each sublayer (pre-norm), from
seeds 0 and 1, in two settings: the chapter's recipe (2 + 2 layers, 1,500 steps, peak lr 1e-3,
100 warm-up steps) and a deep one (6 + 6 layers, 600 steps, lr 3e-3 from the first step). The same
seed gives both orders the same initial weights (up to where the LayerNorms sit) and the same batches.

"gru": the GRU without attention trained for 4,000 and for 8,000 steps instead of the chapter's
2,000 (each a run of its own, with its own cosine schedule). A step of the GRU with attention
takes 2 to 3 times as long as one without (chapter 6's table; the ratio varies from run to run on
a shared CPU), so 8,000 steps give the model without attention at least the attention model's
training time. It tells whether that model's fall with the source length is its bottleneck or
too little training.

"seeds": the chapter's three models (the GRU without and with attention, the Transformer), each
trained exactly as the chapter trains it (steps, peak learning rate, warm-up) but from seeds 1 and
2 (the initial weights and the batches); the chapter trains seed 0 itself and reports all three.

Results go to companion/models/seq2seq_results.json (chapter 6 reads them with
companion.models.seq2seq.load_seq2seq_results).
"""

from __future__ import annotations

import argparse
import datetime
import platform
import time

import torch

from companion.data.reversal import reversal_splits
from companion.models.seq2seq import exact_match, reversal_gru, reversal_transformer, save_seq2seq_results, train_seq2seq

VOCAB = 13  # the chapter's: PAD, BOS, EOS and ten symbols
SETTINGS = {  # name -> how the two orders are trained
    "recipe": dict(steps=1500, layers=2, lr=1e-3, warmup=100),
    "deep": dict(steps=600, layers=6, lr=3e-3, warmup=0),
}
SEEDS = (0, 1)
GRU_STEPS = (4000, 8000)  # 2 and 4 times the chapter's 2,000 steps
# the chapter's three models, and how it trains each: (constructor, steps, peak learning rate)
THREE = {
    "GRU, no attention": (lambda: reversal_gru(VOCAB, attention=False), 2000, 3e-3),
    "GRU + attention": (lambda: reversal_gru(VOCAB, attention=True), 2000, 3e-3),
    "Transformer": (lambda: reversal_transformer(VOCAB), 1500, 1e-3),
}
MORE_SEEDS = (1, 2)  # the chapter trains seed 0


def about() -> dict:
    return dict(torch=torch.__version__, threads=torch.get_num_threads(), machine=platform.machine(),
                date=datetime.date.today().isoformat())


def norm_orders(splits, quick: bool) -> dict:
    out = {}
    for setting, cfg in SETTINGS.items():
        steps = 5 if quick else cfg["steps"]
        runs = []
        for seed in SEEDS:
            for norm in ("pre-norm", "post-norm"):
                torch.manual_seed(seed)
                model = reversal_transformer(VOCAB, norm_first=norm == "pre-norm", num_layers=cfg["layers"])
                start = time.perf_counter()
                losses = train_seq2seq(model, splits["train"], steps, lr=cfg["lr"], warmup=cfg["warmup"], seed=seed,
                                       progress=True, desc=f"{setting}, {norm}, seed {seed}")
                seconds = time.perf_counter() - start
                test = exact_match(model, splits["test"]).float().mean().item()
                print(f"{setting}, {norm}, seed {seed}: {test:.1%} exact match on test ({seconds:.0f} s)")
                runs.append(dict(norm=norm, seed=seed, losses=[round(x, 5) for x in losses], test=test,
                                 seconds=round(seconds, 1), params=sum(p.numel() for p in model.parameters())))
        out[setting] = dict(setting=setting, **cfg, runs=runs)
    return out


def scores(model, splits) -> dict:
    """Exact match on the test and the longer sources, and by source length (as chapter 6's score)."""
    ok = {name: exact_match(model, splits[name]) for name in ("test", "longer")}
    lengths = torch.cat([splits["test"].lengths, splits["longer"].lengths])
    hits = torch.cat([ok["test"], ok["longer"]]).float()
    return dict(test=ok["test"].float().mean().item(), longer=ok["longer"].float().mean().item(),
                by_length={int(n): hits[lengths == n].mean().item() for n in lengths.unique()})


def gru_longer(splits, quick: bool) -> dict:
    runs = []
    for steps in (5,) if quick else GRU_STEPS:
        torch.manual_seed(0)  # as the chapter's GRU
        model = reversal_gru(VOCAB, attention=False)
        start = time.perf_counter()
        train_seq2seq(model, splits["train"], steps, lr=3e-3, progress=True, desc="GRU, no attention")
        seconds = time.perf_counter() - start
        r = scores(model, splits)
        print(f"GRU, no attention, {steps:,} steps: {r['test']:.1%} on test, {r['longer']:.1%} on longer "
              f"({seconds:.0f} s)")
        runs.append(dict(steps=steps, lr=3e-3, seed=0, params=sum(p.numel() for p in model.parameters()), **r,
                         seconds=round(seconds, 1)))
    return dict(runs=runs)


def three_models(splits, quick: bool) -> dict:
    runs = []
    for seed in MORE_SEEDS:
        for name, (build, steps, lr) in THREE.items():
            torch.manual_seed(seed)  # the initial weights
            model = build()
            start = time.perf_counter()
            train_seq2seq(model, splits["train"], 5 if quick else steps, lr=lr, seed=seed, progress=True,
                          desc=f"{name}, seed {seed}")
            seconds = time.perf_counter() - start
            r = scores(model, splits)
            print(f"{name}, seed {seed}: {r['test']:.1%} on test, {r['longer']:.1%} on longer ({seconds:.0f} s)")
            runs.append(dict(model=name, seed=seed, steps=steps, lr=lr, **r, seconds=round(seconds, 1),
                             params=sum(p.numel() for p in model.parameters())))
    return dict(runs=runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--norm", action="store_true", help="post-norm against pre-norm only")
    parser.add_argument("--gru", action="store_true", help="the longer-trained GRUs only")
    parser.add_argument("--seeds", action="store_true", help="the chapter's three models from seeds 1 and 2 only")
    parser.add_argument("--quick", action="store_true", help="a few steps of each; stores nothing")
    args = parser.parse_args()
    all_parts = not (args.norm or args.gru or args.seeds)
    splits = reversal_splits()
    update = {}
    if args.norm or all_parts:
        update["norm"] = dict(about(), **norm_orders(splits, args.quick))
    if args.gru or all_parts:
        update["gru"] = dict(about(), **gru_longer(splits, args.quick))
    if args.seeds or all_parts:
        update["seeds"] = dict(about(), **three_models(splits, args.quick))
    if args.quick:
        print("quick run: nothing stored")
    else:
        save_seq2seq_results(update)


if __name__ == "__main__":
    main()
