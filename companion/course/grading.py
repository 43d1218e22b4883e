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
code); the grader reads them from the ``.ipynb`` files. The grader runs each exercise in its
own Python process with a time limit, and takes its result only from a pipe that the learner's
code is not given, tagged with a per-run secret, and only if every check ran. In-process
checks cannot stop code that deliberately reads the grader's memory: isolate untrusted
submissions (a container per submission).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .rule import RULE
from .runner import NOT_IMPLEMENTED, Result, evaluate
from .exercises import EXERCISES

__all__ = ["Result", "find_exercise_cells", "grade_folder", "Report", "main", "NOT_IMPLEMENTED", "RULE"]

EXIT_PASSED, EXIT_FAILED, EXIT_GRADER_ERROR = 0, 1, 2


# --- reading a folder of notebooks ---------------------------------------------------------


@dataclass
class Cell:
    """An exercise cell found in a notebook: where, and its code."""

    path: Path
    index: int  # the cell's position in the notebook (0-based)
    source: str
    earlier: list[tuple[str, str]] = field(default_factory=list)  # (exercise_id, code) of the chapter's earlier ones

    def where(self, folder: Path) -> str:
        return f"{self.path.relative_to(folder)} (cell {self.index + 1})"


@dataclass
class Report:
    """One result per known exercise, and the files that could not be read."""

    results: list[Result]
    problems: dict[str, str] = field(default_factory=dict)  # file -> what was wrong with it

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.results)


def _source(cell: dict) -> str:
    return cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])


def find_exercise_cells(folder: str | os.PathLike) -> tuple[dict[str, list[Cell]], dict[str, str]]:
    """``({exercise_id: [cells]}, {unreadable file: why})`` for the notebooks under ``folder``."""
    folder = Path(folder)
    found: dict[str, list[Cell]] = {}
    problems: dict[str, str] = {}
    for path in sorted(folder.rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        try:
            notebook = json.loads(path.read_text(encoding="utf-8"))
            cells = notebook["cells"]
            tagged = [(i, c) for i, c in enumerate(cells) if c.get("cell_type") == "code"
                      and "exercise" in c.get("metadata", {}).get("tags", [])]
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
            problems[str(path.relative_to(folder))] = f"not a readable notebook ({type(error).__name__}: {error})"
            continue
        by_chapter: dict[str, list[tuple[str, str]]] = {}
        for index, cell in tagged:
            exercise_id = cell["metadata"].get("exercise_id", "<no exercise_id>")
            if not isinstance(exercise_id, str):
                exercise_id = f"<exercise_id {exercise_id!r}, not a string>"
            chapter = exercise_id.split("-", 1)[0]
            source = _source(cell)
            found.setdefault(exercise_id, []).append(Cell(path, index, source, list(by_chapter.get(chapter, []))))
            by_chapter.setdefault(chapter, []).append((exercise_id, source))
    return found, problems


# --- grading one exercise in its own process ------------------------------------------------


def _stop_group(process: subprocess.Popen) -> None:
    """Kill the worker and whatever it started (its own process group)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _grade_cell(exercise_id: str, cell: Cell, timeout: float) -> Result:
    """Run one exercise cell and its checks in a fresh Python process; read the result from a pipe."""
    secret = secrets.token_hex(16)
    read_end, write_end = os.pipe()
    request = {"exercise": exercise_id, "source": cell.source, "earlier": [code for _, code in cell.earlier],
               "secret": secret, "fd": write_end}
    try:
        process = subprocess.Popen([sys.executable, "-c", "from companion.course.grading import _worker; _worker()"],
                                   stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   pass_fds=(write_end,), text=True, start_new_session=True)
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "r", encoding="utf-8") as channel:
        timed_out = False
        try:
            _, stderr = process.communicate(json.dumps(request), timeout=timeout)
        except subprocess.TimeoutExpired:  # still running, or something it started holds the pipes
            timed_out = True
        _stop_group(process)  # nothing the learner's code started outlives the grading
        if timed_out:
            _, stderr = process.communicate()
        lines = channel.read().splitlines()
    exercise = EXERCISES[exercise_id]
    try:
        message = json.loads(lines[-1])
        if message.pop("secret") != secret:  # not an assert: python -O would drop it
            raise ValueError("not the worker's reply")
        result = Result(**message)
    except Exception:  # nothing, or something else than the worker's reply
        running = _last_progress(lines, secret)
        earlier = (f"your earlier exercise cell {cell.earlier[running][0]} "
                   if running is not None and running < len(cell.earlier) else None)
        if timed_out:
            return Result(exercise_id, False, f"timed out after {timeout:g} s (an endless loop?)" + (
                f" in {earlier}, which runs first (the rule): fix that one" if earlier else ""))
        tail = " | ".join(stderr.strip().splitlines()[-2:]) or "no message"
        if earlier:
            return Result(exercise_id, False, f"{earlier}stopped the grader's Python process (exit "
                          f"{process.returncode}: {tail}) before this exercise could be checked; the earlier "
                          "cells run first (the rule), so fix that one")
        return Result(exercise_id, False, f"the code stopped the grader's Python process before the checks "
                      f"finished (exit {process.returncode}: {tail})")
    if result.passed and (result.checks_run != len(exercise.checks) or process.returncode not in (0, -9)):
        return Result(exercise_id, False, f"the checks did not all run ({result.checks_run} of "
                      f"{len(exercise.checks)}, exit {process.returncode}): not graded as passed")
    return result


def _last_progress(lines: list[str], secret: str) -> int | None:
    """The index of the cell the worker was running when it stopped (``len(earlier)``: its own)."""
    for line in reversed(lines):
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            message = json.loads(line)
            if message["secret"] == secret:
                return int(message["running"])
    return None


def _worker() -> None:
    """Child process: read the request, keep the channel, then run the learner's cell and the checks.

    Before each cell it writes which one runs (so that a cell that ends the process is named),
    and at the end the result; each line carries the secret.
    """
    request = json.loads(sys.stdin.read())
    secret, channel = request.pop("secret"), os.fdopen(request.pop("fd"), "w", encoding="utf-8")

    def running(k: int) -> None:
        channel.write(json.dumps({"running": k, "secret": secret}) + "\n")
        channel.flush()

    exercise = EXERCISES[request["exercise"]]
    result = evaluate(exercise, request["source"], request["earlier"], on_cell=running)
    channel.write(json.dumps({**asdict(result), "secret": secret}) + "\n")
    channel.close()


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
        return _grade_cell(exercise_id, found[0], timeout)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # one process per exercise
        results = list(pool.map(grade, wanted))
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


def _positive_seconds(text: str) -> float:
    seconds = float(text)
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"the time limit must be a positive number of seconds, got {text}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m companion.course.grading",
                                     description="Grade the course's exercises in a folder of notebooks.")
    parser.add_argument("folder", nargs="?", help="folder holding the learner's chapter notebooks")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--timeout", type=_positive_seconds, default=60.0,
                        help="seconds allowed per exercise (default 60)")
    parser.add_argument("--chapter", action="append", metavar="N",
                        help="grade only chapter N's exercises (3 or ch03); repeat for several")
    args = parser.parse_args(argv)
    if args.folder is None:
        parser.error("give the folder that holds the chapter notebooks, e.g. chapters/")
    try:
        _exercise_ids(args.chapter)
    except ValueError as error:
        parser.error(str(error))
    try:
        report = grade_folder(args.folder, timeout=args.timeout, chapters=args.chapter)
    except FileNotFoundError as error:
        print(f"grader error: {error}", file=sys.stderr)
        if args.json:
            print(json.dumps({"error": str(error), "score": 0, "max_score": len(_exercise_ids(args.chapter)),
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
    sys.exit(main())
