"""How an exercise is judged, the same way in the notebook and in the grader: three parts, one
job each.

- :mod:`companion.course.rule`: what an exercise cell may use (:data:`PRELUDE`, :data:`RULE`),
  checked before anything runs;
- :mod:`companion.course.guard`: notices a cell that replaced PyTorch's, NumPy's or Python's own
  functions;
- :mod:`companion.course.runner`: runs the cell and the exercise's checks (:func:`evaluate`).

This module gathers their public names (it was the single module before they were split).
"""

from .guard import Guard
from .rule import PRELUDE, RULE
from .runner import BASELINE, NOT_IMPLEMENTED, Result, evaluate, run_checks

__all__ = ["PRELUDE", "RULE", "NOT_IMPLEMENTED", "Result", "Guard", "BASELINE", "evaluate", "run_checks"]
