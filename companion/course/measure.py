"""What a computation costs in memory (chapter 10): its peak, measured in a fresh process, the
largest tensor it makes, and the operations it runs.

PyTorch's CPU allocator keeps no statistics of its own, so the peak of one computation is
measured in a process of its own, from the operating system's high-water mark of its resident
memory. On Linux the mark is reset after the set-up (inputs made, kernels warmed up), so the
peak counts from the memory resident then; elsewhere the mark since the process began is the
baseline, and growth that stays below what the set-up (importing torch included) once touched
reads as 0. What the computation allocates inside PyTorch's kernels counts too, which a count
of the tensors it returns would miss.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import torch
from torch.utils._python_dispatch import TorchDispatchMode

__all__ = ["peak_memory", "LargestTensor", "Operations"]

_SCRIPT = """
import json, re, resource, sys
import torch
torch.set_num_threads({threads})
{setup}
def status(key):  # bytes, from Linux's /proc/self/status
    with open("/proc/self/status") as f:
        return 1024 * int(re.search(key + r":\\s+(\\d+) kB", f.read()).group(1))
try:  # Linux: reset the high-water mark to the memory resident now
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    before, high_water = status("VmRSS"), lambda: status("VmHWM")
except OSError:  # elsewhere: the mark since the process began (kilobytes; macOS bytes)
    def high_water():
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
        The growth of the process's peak resident set size over what was resident after the set-up,
        in bytes (a multiple of the page size). Outside Linux, over the set-up's own peak.
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


class Operations(TorchDispatchMode):
    """Within ``with Operations() as ops:``, ``ops.calls`` lists every PyTorch (aten) operation run,
    forward and backward, in order: ``(name, input_shapes)``, e.g.
    ``("bmm", [(8, 256, 64), (8, 64, 256)])`` (chapter 10's look inside fused attention).

    ``name`` is the operation's name without its overload (``"clone"``, ``"bmm"``,
    ``"_scaled_dot_product_flash_attention_for_cpu"``); ``input_shapes`` holds the shape of each
    tensor among its positional arguments.
    """

    def __init__(self):
        super().__init__()
        self.calls: list[tuple[str, list[tuple[int, ...]]]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        shapes = [tuple(a.shape) for a in args if isinstance(a, torch.Tensor)]
        self.calls.append((func.overloadpacket.__name__, shapes))
        return func(*args, **(kwargs or {}))

    def names(self) -> list[str]:
        """The operations' names, in the order they ran."""
        return [name for name, _ in self.calls]
