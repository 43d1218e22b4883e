"""The one rule for what an exercise cell may use, applied the same way in the notebook and
in the grader, so that a learner's verdict is the same in both.

**The rule.** An exercise cell runs after the chapter's exercise imports (:data:`PRELUDE`:
``math``, ``np``, ``torch``, ``F`` and ``nn``, which every chapter's first code cell imports
too) and after the learner's *earlier exercise cells of the same chapter*, in order. Anything
else the cell needs it imports itself, except the course's own package ``companion``: writing
that function is the exercise. IPython syntax (``%time``, ``!pip``) is not allowed in an
exercise cell, and neither is changing PyTorch's functions or exiting.

:func:`evaluate` applies the rule to a cell's source: the notebook's ``check`` passes the
cells it ran, the grader the cells it read from the ``.ipynb`` file.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import os
import io
import math
import re
import sys
import textwrap
from dataclasses import dataclass

import numpy
import torch
import torch.nn.functional

from .exercises import Exercise, Mismatch, earlier_in_chapter
from .exercises._core import RULE

__all__ = ["PRELUDE", "RULE", "NOT_IMPLEMENTED", "Result", "Guard", "evaluate", "run_checks"]

PRELUDE = "import math\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


NOT_IMPLEMENTED = "not implemented yet: replace `raise NotImplementedError` with your code"


@dataclass
class Result:
    """The outcome of one exercise; ``checks_run`` counts the checks that ran to the end."""

    exercise: str
    passed: bool
    message: str
    checks_run: int = 0


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
    COURSE = ("companion.course.exercises", "companion.course.answer")
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


_IPYTHON_CALL = re.compile(r"\bget_ipython\(\)\.(run_line_magic|run_cell_magic|system|getoutput)\(")


def _ipython_line(source: str) -> int | None:
    """The number of the first line in IPython syntax (``%magic``, ``!shell``, ``obj?``), if any.

    The notebook hands over a cell as IPython compiled it, where ``%time x`` already reads
    ``get_ipython().run_line_magic('time', 'x')`` on the same line; both forms count.
    """
    for number, line in enumerate(source.splitlines(), start=1):
        if _IPYTHON_CALL.search(line):
            return number
    try:
        ast.parse(source)
        return None
    except SyntaxError:
        pass
    for number, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if text.startswith(("%", "!")) or (text.endswith("?") and not text.startswith("#")):
            return number
    return None


def _static_problem(exercise: Exercise, source: str) -> str | None:
    """What the rule rejects before running anything (the same text in notebook and grader)."""
    magic = _ipython_line(source)
    if magic is not None:
        return (f"the cell uses IPython syntax on line {magic} (a %magic, !command or ?help): an exercise "
                "cell must be plain Python, so that the grader runs it as the notebook does; move that "
                "line to a cell of its own")
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return f"the cell has a syntax error on line {error.lineno}: {error.msg}"
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"companion(\..*)?", node.value):
            names = [node.value]
        if any(name == "companion" or name.startswith("companion.") for name in names):
            return (f"the cell uses the course's package (`{names[0]}`, line {node.lineno}): writing "
                    f"{exercise.function}() yourself is the exercise, so companion's own version is not "
                    f"allowed here ({RULE})")
    if exercise.forbidden:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                return (f"the cell imports everything from `{node.module}` (`import *`, line {node.lineno}), which "
                        f"can bring in what this exercise asks you not to use ({', '.join(exercise.forbidden)}); "
                        "import the names you need one by one")
            used = node.attr if isinstance(node, ast.Attribute) else None
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                used = "@"  # the matrix-product operator, where the statement asks for another route
            if isinstance(node, ast.alias):
                used = node.name.rpartition(".")[2]
            if used in exercise.forbidden:
                return (f"the cell uses `{used}` (line {getattr(node, 'lineno', '?')}), which the statement of "
                        f"this exercise asks you not to use; write {exercise.function}() from the basic operations "
                        "it names")
    return None


def _exec_quietly(source: str, namespace: dict, name: str) -> BaseException | None:
    """Run ``source`` in ``namespace`` with its printing captured; return what it raised."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            exec(compile(source, name, "exec"), namespace)
        except BaseException as error:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too
            return error
    return None


def _uses_companion(namespace: dict) -> str | None:
    for key, value in namespace.items():
        module = value.__name__ if isinstance(value, type(math)) else getattr(value, "__module__", None)
        if isinstance(module, str) and (module == "companion" or module.startswith("companion.")):
            return key
    return None


def _not_implemented(exercise: Exercise, error: NotImplementedError) -> str:
    """Which stub is still a stub: this exercise's, or an earlier one's that the answer calls."""
    traceback, raised_in = error.__traceback__, None
    while traceback is not None:
        raised_in, traceback = traceback.tb_frame.f_code.co_name, traceback.tb_next
    earlier = {ex.function: ex.id for ex in earlier_in_chapter(exercise.id)}
    if raised_in in earlier and raised_in != exercise.function:
        return (f"your {exercise.function}() calls {raised_in}(), which is still the stub of the earlier "
                f"exercise {earlier[raised_in]}: finish that one first (or do not call it)")
    return NOT_IMPLEMENTED


def run_checks(exercise: Exercise, fn, guard: Guard | None = None) -> Result:
    """Run every check of ``exercise`` on ``fn``; stop at the first failure."""
    guard = guard or BASELINE
    if not callable(fn):
        return Result(exercise.id, False, f"expected a function named {exercise.function}, got {type(fn).__name__}")
    for done, check_case in enumerate(exercise.checks):
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                check_case(fn)
        except NotImplementedError as error:
            return Result(exercise.id, False, _not_implemented(exercise, error), done)
        except Mismatch as wrong:
            return Result(exercise.id, False, guard.message() or str(wrong), done)
        except SystemExit:
            return Result(exercise.id, False, "your function called exit(): exiting is not allowed in an exercise", done)
        except Exception as error:  # a check's own computation failed on what fn returned
            return Result(exercise.id, False, f"your function's result made the check fail with "
                          f"{type(error).__name__}: {error}", done)
        tampered = guard.message()
        if tampered:
            return Result(exercise.id, False, tampered, done)
    return Result(exercise.id, True, f"all {len(exercise.checks)} checks passed", len(exercise.checks))




def _as_ipython_runs_it(source: str) -> str:
    """The cell as IPython compiles it: leading blank lines dropped, a common indent removed.

    The notebook's check gets the code from IPython, the grader from the ``.ipynb`` file; the
    same clean-up on both keeps line numbers in messages identical.
    """
    lines = source.splitlines(keepends=True)
    while lines and not lines[0].strip():
        lines.pop(0)
    return textwrap.dedent("".join(lines))


def evaluate(exercise: Exercise, source: str, earlier: list[str] = (), on_cell=None) -> Result:
    """Apply the rule: run the prelude, the ``earlier`` exercise cells and ``source``; check the function.

    Args:
        exercise: the exercise the cell answers.
        source: the exercise cell's code.
        earlier: the code of the learner's earlier exercise cells of the same chapter, in order.
        on_cell: called with ``k`` before the ``k``-th earlier cell runs, and with
            ``len(earlier)`` before ``source`` runs (the grader uses it to name a cell that
            ended its process).
    """
    guard = BASELINE
    source = _as_ipython_runs_it(source)
    problem = _static_problem(exercise, source)
    if problem:
        return Result(exercise.id, False, problem)
    namespace: dict = {"__name__": "__exercise__"}
    exec(PRELUDE, namespace)
    for k, cell in enumerate(earlier):  # an earlier answer that fails is graded on its own
        if on_cell:
            on_cell(k)
        _exec_quietly(cell, namespace, f"<earlier exercise cell {k + 1}>")
    namespace.pop(exercise.function, None)  # only this cell may define the answer
    if on_cell:
        on_cell(len(earlier))
    error = _exec_quietly(source, namespace, f"<exercise {exercise.id}>")
    if isinstance(error, SystemExit):
        return Result(exercise.id, False, "the cell called exit() (SystemExit): exiting is not allowed in an "
                      "exercise cell; remove it")
    if isinstance(error, NotImplementedError):
        return Result(exercise.id, False, NOT_IMPLEMENTED)
    if isinstance(error, EOFError):
        return Result(exercise.id, False, "the cell asked for input (input()): an exercise cell cannot read "
                      "input when it is checked or graded; remove it")
    if error is not None:
        return Result(exercise.id, False, f"the cell raised {type(error).__name__}: {error}")
    tampered = guard.message()
    if tampered:
        return Result(exercise.id, False, tampered)
    name = _uses_companion(namespace)
    if name is not None:
        return Result(exercise.id, False, f"`{name}` comes from the course's package: writing "
                      f"{exercise.function}() yourself is the exercise ({RULE})")
    if exercise.function not in namespace:
        return Result(exercise.id, False, f"the cell does not define {exercise.function}()")
    return run_checks(exercise, namespace[exercise.function], guard)


BASELINE = Guard()  # taken when the course's machinery is imported, before any exercise cell runs
