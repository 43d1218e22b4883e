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

Nothing the grader starts outlives it. Each worker watches a pipe whose only reader is the
grader: when the grader ends in any way (SIGKILL included, where no handler can run), the
kernel reports the pipe broken and the worker kills its own process group, learner-started
processes included. On Linux the worker also asks for SIGKILL when the server that forked it
ends (the server ends with the grader), which holds even while learner code keeps the
interpreter busy. On SIGTERM, SIGINT or SIGHUP the grader kills every worker group at once and
exits with 128 + the signal's number; when the process that started the grader ends, the
grader stops the same way (exit 2), so a killed CI job or shell leaves nothing running.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import importlib
import json
import math
import multiprocessing
import os
import secrets
import select
import selectors
import signal
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .rule import RULE
from .runner import NOT_IMPLEMENTED, Result, evaluate
from .exercises import EXERCISES

__all__ = ["Result", "find_exercise_cells", "grade_folder", "Report", "main", "NOT_IMPLEMENTED", "RULE"]

EXIT_PASSED, EXIT_FAILED, EXIT_GRADER_ERROR = 0, 1, 2
MAX_TIMEOUT = 86_400.0  # seconds: the longest --timeout the grader accepts (one day)


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


def _processes():
    """The context that starts each exercise's process: forked from a server that imported torch once.

    A fresh interpreter per exercise spends most of its time importing torch (about 1.5 s here);
    a fork of the server that already imported the package starts in milliseconds, and is
    still a process of its own: its memory, its session, its time limit.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__spec__.name])  # this module, so torch and the checks
    return context


# multiprocessing's bookkeeping is not thread-safe: a start() in one grading thread reads the exit
# status of any process that has ended, which another thread's join() then waits for in vain
# (and reports as 255). Every call that starts, polls, joins or closes a process holds this lock.
_PROCESSES = threading.Lock()

# The workers running now (their pids are their process groups), and whether grading is being
# stopped: a signal handler or an interrupted grade_folder kills them all, and no new one starts.
_LIVE: set[int] = set()
_STOPPING = threading.Event()


def _stop_all() -> None:
    """Stop grading: kill every running worker's group; no new worker starts."""
    _STOPPING.set()
    for pid in list(_LIVE):
        _stop_group(pid)


def _start(process) -> None:
    """Start ``process`` without the caller's main module.

    multiprocessing runs the caller's script (or ``-m`` module) again in every new process, to
    find the functions it defined there; a script that grades at its top level, without an
    ``if __name__ == "__main__":`` guard, would then grade again in each worker. The workers
    need nothing from it, so it is hidden while the process starts.
    """
    with _PROCESSES:
        caller = sys.modules["__main__"]
        sys.modules["__main__"] = types.ModuleType("__main__")
        try:
            process.start()
        finally:
            sys.modules["__main__"] = caller


def _stop_group(pid: int) -> None:
    """Kill the worker and whatever it started (its own session and process group)."""
    # A group numbered like the worker exists only once the worker made it (os.setsid): then it
    # holds what the worker started, even after the worker itself has ended.
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _read_until(process, pipes: dict, deadline: float) -> bool:
    """Read ``pipes`` (connection -> list of chunks) until the process ends or ``deadline``.

    Returns whether the process ended in time. What is already in the pipes is read either way.
    """
    with selectors.DefaultSelector() as selector:
        for connection in pipes:
            selector.register(connection.fileno(), selectors.EVENT_READ, connection)
        selector.register(process.sentinel, selectors.EVENT_READ, None)
        ended = False
        while selector.get_map() and not ended:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            for key, _ in selector.select(left):
                if key.data is None:  # the process ended; whatever it wrote is in the pipes
                    ended = True
                    selector.unregister(key.fd)
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    pipes[key.data].append(chunk)
                else:
                    selector.unregister(key.fd)
        if ended:
            return True
        with _PROCESSES:
            return not process.is_alive()


def _wait_for(fd: int) -> None:
    """Wait until ``fd`` is readable (a process's sentinel: the process has ended)."""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        selector.select()


def _drain(pipes: dict) -> None:
    """Read what is left in the pipes without waiting (the worker's group has been stopped)."""
    for connection, chunks in pipes.items():
        os.set_blocking(connection.fileno(), False)
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(connection.fileno(), 65536):
                chunks.append(chunk)


def _grade_cell(exercise_id: str, cell: Cell, timeout: float) -> Result:
    """Run one exercise cell and its checks in a process of its own; read the result from a pipe."""
    if _STOPPING.is_set():
        return Result(exercise_id, False, "not graded: the grading was stopped")
    secret = secrets.token_hex(16)
    request = {"exercise": exercise_id, "source": cell.source, "earlier": [code for _, code in cell.earlier],
               "secret": secret}
    context = _processes()
    channel_read, channel_write = context.Pipe(duplex=False)
    stderr_read, stderr_write = context.Pipe(duplex=False)
    worker = importlib.import_module(__spec__.name)._worker  # not __main__'s, under -m
    process = context.Process(target=worker, args=(json.dumps(request), channel_write, stderr_write))
    try:
        _start(process)
        with _PROCESSES:
            _LIVE.add(process.pid)
    finally:
        channel_write.close(), stderr_write.close()
    if _STOPPING.is_set():  # a stop that came while this one started
        _stop_group(process.pid)
    pipes = {channel_read: [], stderr_read: []}
    timed_out = not _read_until(process, pipes, time.monotonic() + timeout)
    _stop_group(process.pid)  # nothing the learner's code started outlives the grading
    with _PROCESSES:
        _LIVE.discard(process.pid)
    _wait_for(process.sentinel)  # its exit status has come: join() below only reads it
    with _PROCESSES:
        process.join()
    _drain(pipes)
    channel_read.close(), stderr_read.close()
    lines = b"".join(pipes[channel_read]).decode("utf-8", "replace").splitlines()
    stderr = b"".join(pipes[stderr_read]).decode("utf-8", "replace")
    with _PROCESSES:
        returncode = process.exitcode
        process.close()
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
                          f"{returncode}: {tail}) before this exercise could be checked; the earlier "
                          "cells run first (the rule), so fix that one")
        return Result(exercise_id, False, f"the code stopped the grader's Python process before the checks "
                      f"finished (exit {returncode}: {tail})")
    if result.passed and (result.checks_run != len(exercise.checks) or returncode not in (0, -9)):
        return Result(exercise_id, False, f"the checks did not all run ({result.checks_run} of "
                      f"{len(exercise.checks)}, exit {returncode}): not graded as passed")
    return result


def _last_progress(lines: list[str], secret: str) -> int | None:
    """The index of the cell the worker was running when it stopped (``len(earlier)``: its own)."""
    for line in reversed(lines):
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            message = json.loads(line)
            if message["secret"] == secret:
                return int(message["running"])
    return None


def _die_with_the_grader(channel_fd: int) -> None:
    """Kill this worker's process group as soon as the grader is gone, however it ended.

    ``channel_fd`` is the write end of a pipe whose only reader is the grader. The kernel closes
    the read end when the grader's process ends (SIGKILL too), and ``poll`` then reports the
    write end broken: no polling interval, no pid that could be reused. A second guard on Linux:
    SIGKILL when the forkserver that forked this worker ends, which it does when the grader's
    end of its own pipe closes; that signal needs no Python thread, so it holds while learner
    code keeps the interpreter busy in C.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            PR_SET_PDEATHSIG = 1
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    def watch() -> None:
        poller = select.poll()
        poller.register(channel_fd, 0)  # POLLERR and POLLHUP are always reported
        while True:
            with contextlib.suppress(InterruptedError):
                if poller.poll():
                    os.killpg(0, signal.SIGKILL)  # this worker and whatever the learner's code started

    threading.Thread(target=watch, name="die-with-the-grader", daemon=True).start()


def _worker(request: str, channel, stderr) -> None:
    """Child process: its own session, stderr to the grader; then the learner's cell and the checks.

    Before each cell it writes which one runs (so that a cell that ends the process is named),
    and at the end the result; each line carries the secret.
    """
    os.setsid()  # a group of its own: the grader stops it and whatever it starts together
    _die_with_the_grader(channel.fileno())
    with open(os.devnull, "r+b") as devnull:  # no input; what the cells print goes nowhere
        os.dup2(devnull.fileno(), 0), os.dup2(devnull.fileno(), 1)
    os.dup2(stderr.fileno(), 2)
    stderr.close()
    request = json.loads(request)
    secret = request.pop("secret")
    channel = os.fdopen(os.dup(channel.fileno()), "w", encoding="utf-8")

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

    _STOPPING.clear()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:  # one process per exercise
        try:
            results = list(pool.map(grade, wanted))
        except BaseException:  # KeyboardInterrupt, a signal: the workers go before the threads are joined
            _stop_all()
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
    """``--timeout``: a finite number of seconds, above 0 and at most :data:`MAX_TIMEOUT`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_TIMEOUT:
        raise argparse.ArgumentTypeError(f"--timeout must be a number of seconds above 0 and at most "
                                         f"{MAX_TIMEOUT:,.0f} (one day), got {text!r}")
    return value


class _Stopped(Exception):
    """Raised in the main thread by a stopping signal, or when the grader's parent has ended."""

    def __init__(self, why: str, code: int):
        super().__init__(why)
        self.code = code


def _stop_on_signals() -> None:
    """SIGTERM, SIGINT and SIGHUP stop the workers at once and end the grader (exit 128 + signal)."""

    def handler(signum, frame):
        _stop_all()
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
        _stop_all()
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
    if args.folder is None:
        parser.error("give the folder that holds the chapter notebooks, e.g. chapters/")
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
