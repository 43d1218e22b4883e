"""What a computation costs in memory (chapter 10): its peak, measured in a fresh process, and the
largest tensor it makes.

A process's resident memory only ever shows its high-water mark, and PyTorch's CPU allocator
keeps no statistics of its own, so the peak of one computation is measured in a process of its
own: its high-water mark after the set-up (inputs made, kernels warmed up) is subtracted from
the mark after the computation. What the computation allocates inside PyTorch's kernels counts
too, which a count of the tensors it returns would miss.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["peak_memory", "LargestTensor"]

_SCRIPT = """
import json, resource, sys
import torch
torch.set_num_threads({threads})
{setup}
def high_water():  # bytes (Linux reports kilobytes, macOS bytes)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else 1024 * peak
before = high_water()
{statement}
print(json.dumps(high_water() - before))
"""


def peak_memory(statement: str, setup: str = "", threads: int = 1, timeout: float = 300.0) -> int:
    """The bytes by which ``statement`` raises a fresh Python process's peak resident memory.

    Args:
        statement: Python code to measure (it may use what ``setup`` defined).
        setup: Python code run first and not counted: imports, inputs, a warm-up call.
        threads: PyTorch's CPU threads in that process.
        timeout: seconds before the measurement is abandoned.

    Returns:
        The growth of the process's peak resident set size, in bytes (a multiple of the page
        size; 0 when the statement fits in memory the set-up already touched).
    """
    if not isinstance(statement, str) or not statement.strip():
        raise ValueError(f"statement must be Python code as a non-empty str, got {statement!r}")
    script = _SCRIPT.format(threads=int(threads), setup=textwrap.dedent(setup),
                            statement=textwrap.dedent(statement))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(f"the measured code failed: {done.stderr.strip()[-2000:]}")
    return int(json.loads(done.stdout.strip().splitlines()[-1]))


class LargestTensor(TorchDispatchMode):
    """Within ``with LargestTensor() as seen:``, ``seen.largest`` counts the most elements of any
    tensor a PyTorch operation returned (chapter 10's checks that no ``t x t`` matrix is made).

    What a single operation allocates inside its kernel and frees before returning is not
    seen: PyTorch's fused attention is one operation.
    """

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out
