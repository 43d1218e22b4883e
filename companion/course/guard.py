"""The tamper guard: notices an exercise cell that replaced a function of PyTorch, NumPy, math,
the built-ins or the course's own checking code, which could make a wrong answer look right.

The runner (:mod:`companion.course.runner`) takes its baseline when the course's machinery is
imported, before any exercise cell runs.
"""

from __future__ import annotations

import builtins
import inspect
import math
import os
import sys

import numpy
import torch
import torch.nn.functional

__all__ = ["Guard"]


_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


def _pytorch_wrapper_of(value, original) -> bool:
    """Whether ``value`` is PyTorch's own wrapper around ``original``.

    When ``torch._dynamo`` loads (``torch.compile``, or the FLOP counter of chapter 4), it
    wraps ``torch.manual_seed`` in a function of its own. That is not a learner's change: every
    function from ``value`` down its ``__wrapped__`` chain to ``original`` must be defined in
    PyTorch's files, so ``functools.wraps(torch.allclose)(lambda *a: True)`` is still caught.
    """
    for _ in range(8):
        if value is original:
            return True
        code = getattr(value, "__code__", None)
        if code is None or not os.path.abspath(code.co_filename).startswith(_TORCH_DIR):
            return False
        value = getattr(value, "__wrapped__", None)
    return False


class Guard:
    """Notices learner code that replaces a function of PyTorch, NumPy, math or the built-ins.

    The checks compare with PyTorch (``torch.softmax``, ``torch.allclose``, ...); a cell that
    replaced one of them could make a wrong answer look right. Only replacements count: new
    attributes (PyTorch loads some submodules lazily) are fine.
    """

    MODULES = {"torch": torch, "torch.nn.functional": torch.nn.functional, "torch.nn": torch.nn,
               "torch.linalg": torch.linalg, "math": math, "numpy": numpy, "builtins": builtins}
    # classes: every attribute, inherited and special ones too (``Tensor.__matmul__``, ``.mean``)
    CLASSES = {"torch.Tensor": torch.Tensor}
    # the course's own checking code (its saved comparisons, every chapter's checks, this rule)
    COURSE = ("companion.course.exercises", "companion.course.answer", "companion.course.guard",
              "companion.course.rule", "companion.course.runner")
    # IPython swaps some built-ins (exit, display, ...) around every cell: watch the ones checks use
    BUILTINS = ("isinstance", "len", "type", "all", "any", "zip", "enumerate", "repr", "range", "tuple",
                "list", "float", "int", "bool", "str", "abs", "max", "min", "sum", "getattr", "print")

    def __init__(self) -> None:
        self.modules = dict(self.MODULES)
        self.modules.update({name: module for name, module in sys.modules.items()
                             if name.startswith(self.COURSE) and module is not None})
        self.saved = {name: dict(vars(module)) for name, module in self.modules.items()}
        self.saved["builtins"] = {k: v for k, v in self.saved["builtins"].items() if k in self.BUILTINS}
        self.saved_classes = {name: {key: inspect.getattr_static(cls, key) for key in dir(cls)}
                              for name, cls in self.CLASSES.items()}

    def changed(self) -> list[str]:
        """``["torch.allclose", ...]``: what was replaced since the guard was made."""
        found = []
        for name, module in self.modules.items():
            now = vars(module)
            found += [f"{name}.{key}" for key, value in self.saved[name].items()
                      if key in now and now[key] is not value and not key.startswith("__")
                      and not _pytorch_wrapper_of(now[key], value)]
        missing = object()
        for name, cls in self.CLASSES.items():
            found += [f"{name}.{key}" for key, value in self.saved_classes[name].items()
                      if inspect.getattr_static(cls, key, missing) is not value]
        return found

    def message(self) -> str | None:
        changed = self.changed()
        if not changed:
            return None
        return (f"your code replaced {', '.join(changed[:3])}: exercises may not change PyTorch's, NumPy's "
                "or Python's own functions (the checks rely on them); remove that assignment")

