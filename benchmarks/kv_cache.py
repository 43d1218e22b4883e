"""Cached generation: the time per token of chapter 8's model shape, with the key-value cache.

    python benchmarks/kv_cache.py                    # 1,024 and 4,096 tokens, 3 repeats
    python benchmarks/kv_cache.py --tokens 256 --repeats 1

Chapter 8's model (LM_CONFIG: d_model 128, four heads, three blocks, sinusoidal positions)
with ``max_len`` raised to the longest generation, so that the cache is never rebuilt:
``generate(..., use_cache=True, temperature=0)`` from a one-token prompt, batch 1, no
gradients. Reports the median over the repeats of the whole generation's seconds and its
milliseconds per token. A cache that is copied at every step (``torch.cat``) copies
O(t^2) numbers over a generation of t tokens; one written into a preallocated buffer, O(t).
Run it before and after a change to the cache.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch

from companion import TransformerLM
from companion.models.char_lm import LM_CONFIG
from companion.models.language_model import generate


def one_generation(model: TransformerLM, tokens: int) -> float:
    """Seconds for ``tokens`` greedy tokens after a one-token prompt."""
    prompt = torch.zeros(1, 1, dtype=torch.long)
    start = time.perf_counter()
    generate(model, prompt, tokens, temperature=0.0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, nargs="+", default=[1024, 4096])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: PyTorch's)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"{platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} threads; "
          f"chapter 8's model shape, batch 1, greedy, median of {args.repeats}")
    print(f"{'tokens':>7} {'seconds':>8} {'ms/token':>9}")
    for tokens in args.tokens:
        torch.manual_seed(0)
        model = TransformerLM(100, **(LM_CONFIG | {"max_len": tokens + 1})).eval()
        generate(model, torch.zeros(1, 1, dtype=torch.long), 16, temperature=0.0)  # warm-up
        total = statistics.median(one_generation(model, tokens) for _ in range(args.repeats))
        print(f"{tokens:>7,} {total:>8.2f} {1e3 * total / tokens:>9.2f}")


if __name__ == "__main__":
    main()
