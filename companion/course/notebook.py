"""Helpers for the chapter notebooks: reproducible set-up, the package's source, solutions."""

from __future__ import annotations

import inspect
import random
from pathlib import Path

import numpy as np
import torch

__all__ = ["setup", "show_source", "show_solution"]

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


def _where(obj) -> str:
    """``companion/models/classifier.py``: the file that defines ``obj``, inside the package."""
    path = Path(inspect.getsourcefile(obj)).resolve()
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
    from .exercises import EXERCISES

    if exercise_id not in EXERCISES:
        raise ValueError(f"unknown exercise {exercise_id!r}; the exercises are: {', '.join(EXERCISES)}")
    solution = EXERCISES[exercise_id].solution
    return _display_code(f"# reference solution of {exercise_id} ({_where(solution)})\n{inspect.getsource(solution)}")
