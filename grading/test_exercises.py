"""Grade a learner's notebooks with plain pytest: one test per exercise.

    NOTEBOOKS=path/to/notebooks python -m pytest grading        # GitHub Classroom, any CI
    NOTEBOOKS=path/to/notebooks CHAPTER=3 python -m pytest grading   # one chapter (CHAPTER="3 4": two)

The same checks as the notebooks' check cells and `python -m companion.course.grading`.
"""

import os

import pytest

from companion.course.grading import _exercise_ids, grade_folder

FOLDER = os.environ.get("NOTEBOOKS", "chapters")
TIMEOUT = float(os.environ.get("GRADING_TIMEOUT", "60"))
CHAPTERS = os.environ.get("CHAPTER", "").split() or None


@pytest.fixture(scope="session")
def report():
    try:
        return grade_folder(FOLDER, timeout=TIMEOUT, chapters=CHAPTERS)
    except FileNotFoundError as error:  # not the learner's failure: the grader could not run
        pytest.exit(f"grader error: {error}", returncode=2)


def test_every_notebook_is_readable(report):
    assert not report.problems, "; ".join(f"{path}: {why}" for path, why in report.problems.items())


@pytest.mark.parametrize("exercise_id", _exercise_ids(CHAPTERS))
def test_exercise(report, exercise_id):
    result = next(r for r in report.results if r.exercise == exercise_id)
    assert result.passed, result.message
