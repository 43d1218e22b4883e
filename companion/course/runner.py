"""Runs an exercise cell under the rule (:mod:`companion.course.rule`) and its checks, watched by
the guard (:mod:`companion.course.guard`), the same way in the notebook and in the grader, so that a
learner's verdict is the same in both.

:func:`evaluate` takes a cell's source: the notebook's ``check`` passes the cells it ran, the
grader the cells it read from the ``.ipynb`` file.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import sys
import threading
from dataclasses import dataclass

import torch
from torch.overrides import TorchFunctionMode

from .exercises import EXERCISES, Exercise, Mismatch, earlier_in_chapter
from .guard import Guard
from .rule import PRELUDE, RULE, as_ipython_runs_it, static_problem, uses_companion

__all__ = ["NOT_IMPLEMENTED", "Result", "evaluate", "run_checks"]

NOT_IMPLEMENTED = "not implemented yet: replace `raise NotImplementedError` with your code"


@dataclass
class Result:
    """The outcome of one exercise; ``checks_run`` counts the checks that ran to the end."""

    exercise: str
    passed: bool
    message: str
    checks_run: int = 0


def _exec_quietly(source: str, namespace: dict, name: str) -> BaseException | None:
    """Run ``source`` in ``namespace`` with its printing captured; return what it raised."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            exec(compile(source, name, "exec"), namespace)
        except BaseException as error:  # noqa: BLE001 - SystemExit and KeyboardInterrupt too
            return error
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


LEARNER_CELL = "<exercise "  # the file name an exercise cell is compiled under (see evaluate)


def _learner_code_running() -> bool:
    """Whether an exercise cell's code is on the call stack (the checks' own code is not)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(LEARNER_CELL):
            return True
        frame = frame.f_back
    return False


class _ForbiddenCalls(TorchFunctionMode):
    """Refuses, while the learner's function runs, the PyTorch functions the statement forbids.

    The rule (:func:`companion.course.rule.static_problem`) refuses a forbidden name written in
    the cell; this catches the same function reached under a name built at run time
    (``getattr(F, "soft" + "max")``, ``importlib``) or through a class that calls it
    (``nn.MultiheadAttention`` calls ``F.multi_head_attention_forward``). The checks' own calls of
    those functions, which compute the expected values, are not the learner's and pass.
    """

    def __init__(self, exercise: Exercise) -> None:
        super().__init__()
        self.exercise, self.names = exercise, frozenset(exercise.forbidden)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in self.names and _learner_code_running():
            raise RuntimeError(f"it calls PyTorch's `{name}`, which the statement of this exercise asks you not "
                               f"to use (a name built at run time, or a class that calls it, is still that "
                               f"function); write {self.exercise.function}() from the basic operations it names")
        return func(*args, **(kwargs or {}))


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../companion
_COURSE = os.path.dirname(os.path.abspath(__file__))  # .../companion/course: the checks' own code


class _PackageCalls:
    """Notes the learner's function reaching the course's package while the checks run.

    The rule refuses ``companion`` written in the cell or bound in its namespace; this catches
    it reached at run time (``getattr(sys, "mod" + "ules")["companion"]``, a frame's globals):
    a call into the package's files, or into a reference solution, made from the learner's
    code rather than from the checks. The checks never call the package outside
    ``companion/course``, and call the reference solutions only from their own frames.
    A trace function sees every new Python frame while the learner's function runs (no
    line-by-line tracing); a cell that removes it is refused. What the function leaves to run
    later (a gradient hook, say) is not watched.
    """

    def __init__(self, solutions) -> None:
        self.solutions = frozenset(f.__code__ for f in solutions if hasattr(f, "__code__"))
        self.reached: str | None = None
        self.removed = False

    def watching(self, fn):
        """``fn``, run under this trace function each time it is called (and only then: tracing
        slows all Python code, and the checks' own work need not pay for it)."""
        @functools.wraps(fn)
        def watched(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return watched

    def __call__(self, frame, event, arg):
        """Python's trace function: called once for every new frame; no line-by-line tracing."""
        local = self.chained(frame, event, arg) if self.chained is not None else None
        if self.reached is None:
            code = frame.f_code
            inside = code.co_filename.startswith(_PACKAGE) and not code.co_filename.startswith(_COURSE)
            if inside or code in self.solutions:
                caller = frame.f_back
                while caller is not None:  # who asked: the learner's code, or the checks?
                    name = caller.f_code.co_filename
                    if name.startswith(LEARNER_CELL) or name.startswith("<earlier exercise"):
                        self.reached = code.co_qualname if inside else f"the reference solution {code.co_name}()"
                        break
                    if name.startswith(_COURSE):
                        break
                    caller = caller.f_back
        return local

    def __enter__(self) -> "_PackageCalls":
        self.chained = sys.gettrace()  # a coverage tool or debugger keeps working
        self.before = threading.gettrace()
        sys.settrace(self)
        threading.settrace(self)
        return self

    def __exit__(self, *exc) -> None:
        self.removed = self.removed or sys.gettrace() is not self
        sys.settrace(self.chained)
        threading.settrace(self.before)

    def message(self, exercise: Exercise) -> str | None:
        if self.reached is not None:
            return (f"your {exercise.function}() reached the course's package at run time "
                    f"(`{self.reached}`): writing {exercise.function}() yourself is the exercise ({RULE})")
        if self.removed:
            return ("the cell changed Python's trace function (sys.settrace), which the checks use to see "
                    "what your function calls: remove that")
        return None


def run_checks(exercise: Exercise, fn, guard: Guard | None = None) -> Result:
    """Run every check of ``exercise`` on ``fn``; stop at the first failure.

    The checks make their inputs on the CPU even where ``torch.set_default_device`` names a
    GPU, so that the notebook's verdict is the grader's.
    """
    forbidden = _ForbiddenCalls(exercise) if exercise.forbidden else contextlib.nullcontext()
    package = _PackageCalls(ex.solution for ex in EXERCISES.values())
    with torch.device("cpu"), forbidden:
        result = _run_checks(exercise, package.watching(fn) if callable(fn) else fn, guard)
    reached = package.message(exercise)
    if reached is not None:
        return Result(exercise.id, False, reached, result.checks_run)
    return result


def _run_checks(exercise: Exercise, fn, guard: Guard | None) -> Result:
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
    source = as_ipython_runs_it(source)
    problem = static_problem(exercise, source)
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
    name = uses_companion(namespace)
    if name is not None:
        return Result(exercise.id, False, f"`{name}` comes from the course's package: writing "
                      f"{exercise.function}() yourself is the exercise ({RULE})")
    if exercise.function not in namespace:
        return Result(exercise.id, False, f"the cell does not define {exercise.function}()")
    return run_checks(exercise, namespace[exercise.function], guard)


BASELINE = Guard()  # taken when the course's machinery is imported, before any exercise cell runs
