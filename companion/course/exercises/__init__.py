"""The course's exercises: for each, the checks that grade it and a reference solution.

An exercise is a function the learner writes in a chapter notebook (a code cell tagged
``exercise`` whose metadata holds ``exercise_id``). The same checks give feedback in the
notebook (:func:`companion.course.check`) and grade a folder of notebooks
(``python -m companion.course.grading``), under one rule (:mod:`companion.course.rule`).
``EXERCISES`` lists them in the order the chapters ask them.
"""

from __future__ import annotations

import torch

from ._core import (Exercise, Mismatch, call, expect_close, expect_equal, expect_gradient,
                    expect_gradients_reach)

with torch.device("cpu"):  # the checks' data is made on the CPU, whatever torch.set_default_device says
    from . import ch01, ch02, ch03, ch04, ch05, ch06, ch07, ch08, ch09, ch10, ch11

__all__ = ["EXERCISES", "Exercise", "Mismatch", "call", "expect_close", "expect_equal", "expect_gradient",
           "expect_gradients_reach"]

EXERCISES: dict[str, Exercise] = {ex.id: ex for ex in (*ch01.EXERCISES, *ch02.EXERCISES, *ch03.EXERCISES, *ch04.EXERCISES, *ch05.EXERCISES, *ch06.EXERCISES,
                                                      *ch07.EXERCISES, *ch08.EXERCISES, *ch09.EXERCISES, *ch10.EXERCISES,
                                                      *ch11.EXERCISES)}


def earlier_in_chapter(exercise_id: str) -> list[Exercise]:
    """The exercises of the same chapter asked before ``exercise_id``, in order."""
    chapter = EXERCISES[exercise_id].chapter
    same = [ex for ex in EXERCISES.values() if ex.chapter == chapter]
    return same[: [ex.id for ex in same].index(exercise_id)]
