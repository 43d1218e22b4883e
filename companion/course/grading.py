"""Feedback and grading for the course's exercises.

In a notebook, right after an exercise cell::

    from companion.course import check
    check("ch01-softargmax", softargmax)     # prints PASSED, or the first failing case

For a folder of learner notebooks (no Jupyter server needed)::

    python -m companion.course.grading chapters/         # a table and the score
    python -m companion.course.grading chapters/ --json  # the same as JSON, for autograders

Exit status: 0 every exercise passed, 1 some did not, 2 the grader could not run (no such
folder, no notebooks in it).

Both apply the same rule (:mod:`companion.course.rule`): an exercise cell runs after
``math, np, torch, F, nn`` and the learner's earlier exercise cells of the same chapter.
In the notebook, ``check`` re-runs the cells that defined the functions (IPython keeps their
code); the grader reads them from the ``.ipynb`` files. The grader runs each exercise in a
process of its own with a time limit (forked from a server that imported torch once), and
takes its result only from a pipe that the learner's code is not given, tagged with a
per-run secret, and only if every check ran. In-process checks cannot stop code that
deliberately reads the grader's memory: isolate untrusted submissions (a container per
submission).

Three modules, one job each: :mod:`companion.course.submissions` finds the exercise cells,
:mod:`companion.course.sandbox` runs each in a process of its own (and leaves nothing running
when the grader ends, however it ends), and this one grades a folder and is the command line.
On SIGTERM, SIGINT or SIGHUP the grader kills every worker at once and exits with 128 + the
signal's number; when the process that started it ends, it stops the same way (exit 2).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import sandbox
from .exercises import EXERCISES
from .rule import RULE
from .runner import NOT_IMPLEMENTED, Result
from .submissions import Cell, find_exercise_cells

__all__ = ["Result", "Cell", "find_exercise_cells", "grade_folder", "Report", "main", "NOT_IMPLEMENTED", "RULE"]

EXIT_PASSED, EXIT_FAILED, EXIT_GRADER_ERROR = 0, 1, 2
MAX_TIMEOUT = 86_400.0  # seconds: the longest --timeout the grader accepts (one day)
MIN_TIMEOUT = 1.0  # seconds: below it every exercise would "time out" before its process has started


@dataclass
class Report:
    """One result per known exercise, and the files that could not be read."""

    results: list[Result]
    problems: dict[str, str] = field(default_factory=dict)  # file -> what was wrong with it

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)


def grade_folder(folder: str | os.PathLike, timeout: float = 60.0, chapters: list[str] | None = None) -> Report:
    """Grade every known exercise against the notebooks under ``folder``.

    Args:
        folder: the folder holding the learner's chapter notebooks.
        timeout: seconds allowed per exercise.
        chapters: grade only these chapters' exercises (``["ch03"]`` or ``["3"]``); ``None``: all.

    Raises:
        FileNotFoundError: ``folder`` is not a folder, or holds no notebook.
        ValueError: a chapter that has no exercises.
    """
    wanted = _exercise_ids(chapters)
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder {folder!s}; pass the folder that holds the chapter notebooks")
    if not any(p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts):
        raise FileNotFoundError(f"no notebooks found under {folder!s} (no .ipynb files)")
    cells, problems = find_exercise_cells(folder)
    unreadable = f" ({', '.join(problems)} could not be read)" if problems else ""
    for exercise_id, found in cells.items():
        if exercise_id not in EXERCISES:
            for cell in found:
                problems[cell.where(folder)] = (f"a cell tagged 'exercise' has exercise_id {exercise_id}"
                                                if exercise_id.startswith("<") else
                                                f"exercise_id {exercise_id!r} is not an exercise of the course "
                                                f"(a misspelling? the exercises: {', '.join(EXERCISES)})")

    def grade(exercise_id: str) -> Result:
        found = cells.get(exercise_id, [])
        if not found:
            return Result(exercise_id, False, f"no code cell tagged 'exercise' with exercise_id "
                          f"{exercise_id!r} under {folder}{unreadable} (the notebook keeps both in the cell's "
                          "metadata: use the chapter's own notebook, and keep its exercise cells)")
        if len(found) > 1:
            where = " and ".join(c.where(folder) for c in found)
            return Result(exercise_id, False, f"{len(found)} cells claim exercise_id {exercise_id!r}: {where}; "
                          "keep one (delete the copy)")
        return sandbox.grade_cell(exercise_id, found[0], timeout)

    sandbox.resume()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # one process per exercise
        try:
            results = list(pool.map(grade, wanted))
        except BaseException:  # KeyboardInterrupt, a signal: the workers go before the threads are joined
            sandbox.stop_all()
            raise
    if chapters is not None:  # the other chapters' cells are not this grading's business
        problems = {where: why for where, why in problems.items()
                    if not any(f"exercise_id {other!r}" in why for other in EXERCISES if other not in wanted)}
    return Report(results, problems)


def _chapter_id(text: str) -> str:
    """``"3"``, ``"03"`` or ``"ch03"`` -> ``"ch03"``."""
    number = text.lower().removeprefix("ch")
    if not number.isdigit():
        raise ValueError(f"a chapter is a number such as 3 or ch03, got {text!r}")
    return f"ch{int(number):02d}"


def _exercise_ids(chapters: list[str] | None) -> list[str]:
    if chapters is None:
        return list(EXERCISES)
    ids = [_chapter_id(c) for c in chapters]
    known = sorted({e.split("-", 1)[0] for e in EXERCISES})
    unknown = [c for c in ids if c not in known]
    if unknown:
        raise ValueError(f"no exercises in {', '.join(unknown)}; the chapters with exercises: {', '.join(known)}")
    return [e for e in EXERCISES if e.split("-", 1)[0] in ids]


def seconds(text: str) -> float:
    """``--timeout``: a finite number of seconds, from :data:`MIN_TIMEOUT` to :data:`MAX_TIMEOUT`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not MIN_TIMEOUT <= value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(f"--timeout must be a number of seconds from {MIN_TIMEOUT:g} (a checked "
                                         f"exercise needs a process of its own) to {MAX_TIMEOUT:,.0f} (one day), "
                                         f"got {text!r}")
    return value


class _Stopped(Exception):
    """Raised in the main thread by a stopping signal, or when the grader's parent has ended."""

    def __init__(self, why: str, code: int):
        super().__init__(why)
        self.code = code


def _stop_on_signals() -> None:
    """SIGTERM, SIGINT and SIGHUP stop the workers at once and end the grader (exit 128 + signal)."""

    def handler(signum, frame):
        sandbox.stop_all()
        raise _Stopped(f"stopped by {signal.Signals(signum).name}", 128 + signum)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, handler)


def _stop_with_the_parent() -> None:
    """When the process that started the grader ends, stop grading (a killed CI job or shell).

    The grader is then an orphan whose output nobody reads; it kills its workers and ends with
    exit 2. Polled twice a second: a parent has no pipe to the grader that could tell sooner.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        sandbox.stop_all()
        os.kill(os.getpid(), signal.SIGUSR1)  # wakes the main thread, which raises _Stopped

    def handler(signum, frame):
        raise _Stopped("stopped: the process that started the grader has ended", EXIT_GRADER_ERROR)

    signal.signal(signal.SIGUSR1, handler)
    threading.Thread(target=watch, name="stop-with-the-parent", daemon=True).start()


def main(argv: list[str] | None = None, *, supervised: bool = False) -> int:
    """The command line; ``supervised`` (as a program): signals and the parent's end stop the grading."""
    parser = argparse.ArgumentParser(prog="python -m companion.course.grading",
                                     description="Grade the course's exercises in a folder of notebooks.")
    parser.add_argument("folder", nargs="?", help="folder holding the learner's chapter notebooks")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--timeout", type=seconds, default=60.0, metavar="SECONDS",
                        help=f"seconds allowed per exercise (default 60, at most {MAX_TIMEOUT:,.0f})")
    parser.add_argument("--chapter", action="append", metavar="N",
                        help="grade only chapter N's exercises (3 or ch03); repeat for several")
    args = parser.parse_args(argv)
    if args.folder is None or not args.folder.strip():
        parser.error("give the folder that holds the chapter notebooks, e.g. chapters/ (an empty name would "
                     "grade the current folder)")
    try:
        _exercise_ids(args.chapter)
    except ValueError as error:
        parser.error(str(error))
    if supervised:
        _stop_on_signals()
        _stop_with_the_parent()
    try:
        report = grade_folder(args.folder, timeout=args.timeout, chapters=args.chapter)
    except _Stopped as stopped:
        print(f"grader {stopped}; no exercise process is left running", file=sys.stderr)
        return stopped.code
    except Exception as error:  # noqa: BLE001 - exit 1 means "an exercise failed", never "the grader broke"
        what = str(error) if isinstance(error, FileNotFoundError) else f"{type(error).__name__}: {error}"
        print(f"grader error: {what}", file=sys.stderr)
        if args.json:
            print(json.dumps({"error": what, "score": 0, "max_score": len(_exercise_ids(args.chapter)),
                              "results": []}))
        return EXIT_GRADER_ERROR
    results = report.results
    if args.json:
        print(json.dumps({"score": report.passed, "max_score": len(results), "problems": report.problems,
                          "results": [asdict(r) for r in results]}, indent=2))
    else:
        width = max(len(r.exercise) for r in results)
        for r in results:
            print(f"{r.exercise:<{width}}  {'passed' if r.passed else 'FAILED'}  {r.message}")
        for path, why in report.problems.items():
            print(f"\n{path}: {why}")
        print(f"\nscore: {report.passed}/{len(results)}")
    return EXIT_PASSED if report.passed == len(results) else EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main(supervised=True))
