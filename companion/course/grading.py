"""Feedback and grading for the course's exercises.

In a notebook, right after an exercise cell::

    from companion.course.grading import check
    check("ch01-softargmax", softargmax)     # prints a pass mark, or the first failing case

For a folder of learner notebooks (no Jupyter server needed)::

    python -m companion.course.grading chapters/            # a table, the score; exit 1 if any fail
    python -m companion.course.grading chapters/ --json     # the same as JSON, for autograders

Each exercise cell (tagged ``exercise``, its id in the cell metadata ``exercise_id``) runs
in its own Python process with a time limit, so code that raises, prints, loops forever or
crashes is reported as a failure of that exercise and never stops the grader. The cell runs
on its own, after the imports in ``PRELUDE`` (``math``, ``np``, ``torch``, ``F``, ``nn``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from .exercises import EXERCISES, Exercise, Mismatch

__all__ = ["Result", "check", "run_checks", "find_exercise_cells", "grade_folder", "main"]

NOT_IMPLEMENTED = "not implemented yet: replace `raise NotImplementedError` with your code"

# Exercise cells are graded on their own, not after the rest of the notebook (which may train
# for minutes); they may rely on these imports, which every chapter makes in its first cells.
PRELUDE = "import math\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


@dataclass
class Result:
    """The outcome of one exercise."""

    exercise: str
    passed: bool
    message: str


def run_checks(exercise: Exercise, fn) -> Result:
    """Run every check of ``exercise`` on the learner's ``fn``; stop at the first failure."""
    if not callable(fn):
        return Result(exercise.id, False, f"expected a function named {exercise.function}, got {type(fn).__name__}")
    for check_case in exercise.checks:
        try:
            check_case(fn)
        except NotImplementedError:
            return Result(exercise.id, False, NOT_IMPLEMENTED)
        except Mismatch as wrong:
            return Result(exercise.id, False, str(wrong))
        except Exception as error:  # the learner's code raised: report it, do not crash
            return Result(exercise.id, False, f"your function raised {type(error).__name__}: {error}")
    return Result(exercise.id, True, f"all {len(exercise.checks)} checks passed")


def check(exercise_id: str, fn) -> None:
    """Check the learner's ``fn`` for ``exercise_id`` and print the verdict (the notebook's feedback)."""
    if exercise_id not in EXERCISES:
        raise ValueError(f"unknown exercise {exercise_id!r}; known: {', '.join(EXERCISES)}")
    result = run_checks(EXERCISES[exercise_id], fn)
    print(f"{'PASSED' if result.passed else 'NOT YET'} {exercise_id}: {result.message}")


def find_exercise_cells(folder: str | os.PathLike) -> dict[str, list[str]]:
    """``{exercise_id: [cell sources]}`` for every cell tagged ``exercise`` under ``folder``."""
    found: dict[str, list[str]] = {}
    for path in sorted(Path(folder).rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook.get("cells", []):
            metadata = cell.get("metadata", {})
            if cell.get("cell_type") == "code" and "exercise" in metadata.get("tags", []):
                source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                found.setdefault(metadata.get("exercise_id", f"<no exercise_id in {path.name}>"), []).append(source)
    return found


def _grade_source(exercise: Exercise, source: str, timeout: float) -> Result:
    """Run one exercise cell and its checks in a fresh Python process."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "companion.course.grading", "--worker"],
            input=json.dumps({"exercise": exercise.id, "source": source}),
            capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return Result(exercise.id, False, f"timed out after {timeout:g} s (an endless loop?)")
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return Result(exercise.id, False, f"the code stopped the Python process (exit {done.returncode}): {' | '.join(tail)}")
    return Result(**json.loads(lines[-1]))


def grade_folder(folder: str | os.PathLike, timeout: float = 60.0) -> list[Result]:
    """Grade every known exercise against the notebooks under ``folder``; one result each."""
    if not Path(folder).is_dir():
        raise FileNotFoundError(f"no folder {folder!s}; pass the folder that holds the chapter notebooks")
    cells = find_exercise_cells(folder)

    def grade(exercise: Exercise) -> Result:
        sources = cells.get(exercise.id, [])
        if not sources:
            return Result(exercise.id, False, f"no code cell tagged 'exercise' with exercise_id {exercise.id!r} under {folder}")
        if len(sources) > 1:
            return Result(exercise.id, False, f"{len(sources)} cells claim exercise_id {exercise.id!r}; keep one")
        return _grade_source(exercise, sources[0], timeout)

    # each exercise is its own process, so they can run side by side
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return list(pool.map(grade, EXERCISES.values()))


def _worker() -> None:
    """Child process: run one exercise cell, then its checks; print the Result as JSON."""
    request = json.loads(sys.stdin.read())
    exercise = EXERCISES[request["exercise"]]
    source = request["source"]
    try:  # notebook cells may hold IPython syntax (%magics); turn it into plain Python
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except ImportError:
        pass
    namespace: dict = {"__name__": "__exercise__"}
    exec(PRELUDE, namespace)
    learner_output = io.StringIO()  # whatever the learner prints must not garble our JSON
    with contextlib.redirect_stdout(learner_output), contextlib.redirect_stderr(learner_output):
        try:
            exec(compile(source, f"<exercise {exercise.id}>", "exec"), namespace)
        except Exception as error:
            result = Result(exercise.id, False, f"the cell raised {type(error).__name__}: {error}")
        else:
            if exercise.function not in namespace:
                result = Result(exercise.id, False, f"the cell does not define {exercise.function}()")
            else:
                result = run_checks(exercise, namespace[exercise.function])
    print(json.dumps(asdict(result)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion.course.grading", description="Grade the course's exercises.")
    parser.add_argument("folder", nargs="?", help="folder holding the learner's chapter notebooks")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per exercise (default 60)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker()
        return 0
    if args.folder is None:
        parser.error("give the folder that holds the chapter notebooks, e.g. chapters/")
    results = grade_folder(args.folder, timeout=args.timeout)
    passed = sum(r.passed for r in results)
    if args.json:
        print(json.dumps({"score": passed, "max_score": len(results), "results": [asdict(r) for r in results]}, indent=2))
    else:
        width = max(len(r.exercise) for r in results)
        for r in results:
            print(f"{r.exercise:<{width}}  {'passed' if r.passed else 'FAILED'}  {r.message}")
        print(f"\nscore: {passed}/{len(results)}")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
