"""Why chapter 7 trains with fused AdamW: one optimizer step on the course model, both ways.

    python benchmarks/optimizer.py
    python benchmarks/optimizer.py --bigrams 0 --repeats 20

Builds the course IMDB model at full size (40,000 words; a 200,000-pair bigram table by
default), gives every parameter a random gradient, and times ``AdamW.step()`` with PyTorch's
default implementation and with ``fused=True``, alternating the two on every repeat. It also
runs both from the same start for a few steps and prints the largest difference between their
parameters, to show that the fused kernel computes the same update.
"""

from __future__ import annotations

import argparse
import copy
import platform
import statistics
import time

import torch

from companion import TransformerClassifier


def build(bigrams: int) -> TransformerClassifier:
    vocab = 40_000
    keys = torch.randperm(vocab * vocab)[:bigrams].sort().values if bigrams else None
    return TransformerClassifier(vocab, 2, d_model=64, num_heads=4, d_ff=128, num_layers=1, dropout=0.2,
                                 norm_first=True, pooling="mean", bigram_keys=keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bigrams", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    models = {"default": build(args.bigrams)}
    models["fused"] = copy.deepcopy(models["default"])  # same weights
    gradients = [torch.randn_like(p) * 1e-3 for p in models["default"].parameters()]
    for model in models.values():  # and the same gradients
        for p, g in zip(model.parameters(), gradients):
            p.grad = g.clone()
    optimizers = {name: torch.optim.AdamW(m.parameters(), lr=2e-3, weight_decay=0.01, fused=name == "fused")
                  for name, m in models.items()}
    for optimizer in optimizers.values():  # same steps for both, then compare the parameters
        for _ in range(5):
            optimizer.step()
    difference = max((a - b).abs().max().item()
                     for a, b in zip(models["default"].parameters(), models["fused"].parameters()))
    times = {name: [] for name in optimizers}
    for _ in range(args.repeats):
        for name, optimizer in optimizers.items():
            start = time.perf_counter()
            optimizer.step()
            times[name].append(time.perf_counter() - start)
    params = sum(p.numel() for p in models["default"].parameters())
    print(f"torch {torch.__version__}, {platform.machine()}, {args.threads} threads; "
          f"{params:,} parameters ({args.bigrams:,} bigrams), {args.repeats} repeats")
    default, fused = (statistics.median(times[n]) * 1000 for n in ("default", "fused"))
    print(f"AdamW.step() median: default {default:.1f} ms, fused {fused:.1f} ms, {default / fused:.1f}x faster")
    print(f"largest parameter difference after 5 identical steps: {difference:.2e}")


if __name__ == "__main__":
    main()
