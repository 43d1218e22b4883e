"""The course's exercises: for each, the checks that grade it and a reference solution.

An exercise is a function the learner writes in a chapter notebook (a code cell tagged
``exercise`` whose metadata holds ``exercise_id``). The same checks give feedback in the
notebook (:func:`companion.course.grading.check`) and grade a folder of notebooks
(``python -m companion.course.grading``).
"""

from __future__ import annotations

from ._core import Exercise, Mismatch, expect_close, expect_equal
from . import ch01, ch07

__all__ = ["EXERCISES", "Exercise", "Mismatch", "expect_close", "expect_equal"]

EXERCISES: dict[str, Exercise] = {ex.id: ex for ex in (*ch01.EXERCISES, *ch07.EXERCISES)}
