"""Speed of companion's attention against PyTorch's own, same sizes, same weights, one run.

    python benchmarks/attention.py                 # the issue's sizes + a length sweep
    python benchmarks/attention.py --repeats 5 --lengths 64 128

Each case times forward + backward of our module and of PyTorch's counterpart, alternating
between the two on every repeat (so drift in machine load hits both alike), and reports
medians and the ratio ours / PyTorch's. Targets: <= 1.05 without attention weights (the
fused kernel), <= 1.3 with per-head weights returned (the explicit formula).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import time

import torch
from torch import nn

from companion import EncoderLayer, MultiHeadAttention, copy_weights


def mha_step(module, x, ours, need_weights):
    """Forward + backward of self-attention."""
    if ours:
        out, _ = module(x, x, x, need_weights=need_weights)
    else:
        out, _ = module(x, x, x, need_weights=need_weights, average_attn_weights=False)
    out.sum().backward()


def make_train_step(module, ours):
    """Forward + loss + backward + Adam step of an encoder layer."""
    opt = torch.optim.Adam(module.parameters(), lr=1e-4)

    def step(x):
        out = module(x)[0] if ours else module(x)
        loss = out.pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def time_pair(fn_ours, fn_theirs, repeats: int, warmup: int = 2) -> tuple[float, float]:
    """Median seconds of each, timed alternately."""
    for _ in range(warmup):
        fn_ours()
        fn_theirs()
    ours, theirs = [], []
    for r in range(repeats):
        order = [(fn_ours, ours), (fn_theirs, theirs)]
        if r % 2:
            order.reverse()
        for fn, sink in order:
            start = time.perf_counter()
            fn()
            sink.append(time.perf_counter() - start)
    return statistics.median(ours), statistics.median(theirs)


def cases(batch: int, length: int, d_model: int, heads: int):
    torch.manual_seed(0)
    x = torch.randn(batch, length, d_model, requires_grad=True)
    ours_mha = MultiHeadAttention(d_model, heads)
    theirs_mha = copy_weights(ours_mha, nn.MultiheadAttention(d_model, heads, batch_first=True))
    for need_weights in (False, True):
        label = "MultiHeadAttention fwd+bwd" + (", weights" if need_weights else "")
        yield label, need_weights, (
            lambda nw=need_weights: mha_step(ours_mha, x, True, nw),
            lambda nw=need_weights: mha_step(theirs_mha, x, False, nw),
        )
    ours_layer = EncoderLayer(d_model, heads, 4 * d_model, dropout=0.1)
    theirs_layer = copy_weights(
        ours_layer, nn.TransformerEncoderLayer(d_model, heads, 4 * d_model, dropout=0.1, batch_first=True)
    )
    xs = x.detach()
    step_ours, step_theirs = make_train_step(ours_layer, True), make_train_step(theirs_layer, False)
    yield "EncoderLayer train step", False, (lambda: step_ours(xs), lambda: step_theirs(xs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--lengths", type=int, nargs="*", default=[64, 128, 256, 512, 1024],
                        help="sequence lengths of the sweep (batch 8 there); none to skip it")
    parser.add_argument("--sweep-batch", type=int, default=8)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"torch {torch.__version__}, {platform.machine()}, {args.threads} threads, float32, CPU")
    rows = []
    runs = [(args.batch, args.length)] + [(args.sweep_batch, t) for t in args.lengths]
    for batch, length in runs:
        for label, need_weights, (ours, theirs) in cases(batch, length, args.d_model, args.heads):
            t_ours, t_theirs = time_pair(ours, theirs, args.repeats)
            target = 1.3 if need_weights else 1.05
            ratio = t_ours / t_theirs
            rows.append((label, batch, length, t_ours * 1e3, t_theirs * 1e3, ratio, target))
            print(f"  {label:<36} batch {batch:>3} len {length:>5}: ratio {ratio:.3f}", flush=True)

    print(f"\nd_model {args.d_model}, {args.heads} heads, median of {args.repeats} interleaved repeats\n")
    print("| case | batch | length | companion ms | PyTorch ms | ratio | target | |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for label, batch, length, ms_ours, ms_theirs, ratio, target in rows:
        verdict = "ok" if ratio <= target else "OVER"
        print(f"| {label} | {batch} | {length} | {ms_ours:.2f} | {ms_theirs:.2f} | {ratio:.3f} | <= {target} | {verdict} |")


if __name__ == "__main__":
    main()
