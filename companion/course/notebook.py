"""Helpers for the chapter notebooks: reproducible set-up, exercise feedback, the package's source,
solutions."""

from __future__ import annotations

import inspect
import linecache
import os
import random
import textwrap
from pathlib import Path

import numpy as np
import torch

from .runner import Result, evaluate
from .exercises import EXERCISES, earlier_in_chapter

__all__ = ["setup", "check", "show_source", "show_solution"]

_PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds companion/


def setup(seed: int = 0) -> torch.device:
    """Seed every random generator and pick the device (every chapter).

    Returns:
        ``cuda`` when a GPU is available (Colab with a GPU runtime), else ``cpu``.
    """
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def _cell_source(fn) -> str | None:
    """The code of the notebook cell that defined ``fn`` (IPython keeps it in ``linecache``).

    Outside IPython (a function from a ``.py`` file) it is the function's own source.
    """
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    if not os.path.exists(code.co_filename):  # an IPython cell: its whole code
        lines = linecache.getlines(code.co_filename)
        return "".join(lines) or None
    try:
        return textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None


def check(exercise_id: str, fn) -> None:
    """Check the learner's ``fn`` for ``exercise_id`` and print the verdict (every exercise).

    Prints ``PASSED``, or ``NOT YET`` with the first failing case (expected vs got, a hint).
    Applies the same rule as the grader (:mod:`companion.course.rule`): the cell that defined
    ``fn`` is run again after the exercise imports and the cells of the chapter's earlier
    exercises, so that a name the grader would not see fails here too.

    It returns nothing, so that the cell shows only the verdict; to get the verdict as a value,
    use :func:`companion.course.runner.evaluate`.
    """
    if exercise_id not in EXERCISES:
        raise ValueError(f"unknown exercise {exercise_id!r}; known: {', '.join(EXERCISES)}")
    exercise = EXERCISES[exercise_id]
    if not callable(fn):
        result = Result(exercise_id, False, f"expected the function {exercise.function}, got {type(fn).__name__}")
    elif (source := _cell_source(fn)) is None:
        result = Result(exercise_id, False, f"could not read the code of {exercise.function}(): define it with "
                        "`def` in the exercise cell and run that cell")
    else:
        namespace = getattr(fn, "__globals__", {})
        earlier = [_cell_source(namespace[ex.function]) for ex in earlier_in_chapter(exercise_id)
                   if callable(namespace.get(ex.function))]
        result = evaluate(exercise, source, [s for s in earlier if s])
    print(f"{'PASSED' if result.passed else 'NOT YET'} {exercise_id}: {result.message}")


def _where(obj) -> str:
    """``companion/models/classifier.py``: the file that defines ``obj``, inside the package."""
    path = Path(inspect.getsourcefile(inspect.unwrap(obj))).resolve()  # through decorators
    try:
        return path.relative_to(_PACKAGE_ROOT).as_posix()
    except ValueError:
        return path.name


def _display_code(source: str):
    try:
        from IPython.display import Code
    except ImportError:  # plain Python: print it
        print(source)
        return None
    return Code(source, language="python")


def show_source(obj) -> object:
    """Display the real source of a companion function, class or method (every chapter).

    Chapters show the package's code with this instead of copying it, so the page always
    shows what actually runs. The first line names the file it lives in. Returns an object
    that Jupyter renders with syntax highlighting (plain text outside Jupyter).
    """
    return _display_code(f"# {_where(obj)}\n{inspect.getsource(obj)}")


def show_solution(exercise_id: str) -> object:
    """Display the reference solution of an exercise, e.g. ``show_solution("ch01-softargmax")``.

    The same source as the website's solution dropdown (``companion/course/exercises/chNN.py``),
    for readers in Colab or Jupyter, where the dropdown shows as plain text. Try the exercise
    first: the check cell under it tells you what is still wrong.
    """
    if exercise_id not in EXERCISES:
        raise ValueError(f"unknown exercise {exercise_id!r}; the exercises are: {', '.join(EXERCISES)}")
    solution = EXERCISES[exercise_id].solution
    return _display_code(f"# reference solution of {exercise_id} ({_where(solution)})\n{inspect.getsource(solution)}")
