"""Grading one exercise in a process of its own, with a time limit (the grader's sandbox).

Each exercise runs in a worker forked from a server that imported torch and the checks once
(multiprocessing's forkserver), in a session of its own; the result comes back on a pipe the
learner's code is not given, tagged with a per-run secret, and counts only if every check ran.

Nothing the grader starts outlives it. Each worker watches a pipe whose only reader is the
grader: when the grader ends in any way (SIGKILL included, where no handler can run), the
kernel reports the pipe broken and the worker kills its own process group, learner-started
processes included. On Linux the worker also asks for SIGKILL when the server that forked it
ends (the server ends with the grader), which holds even while learner code keeps the
interpreter busy in C. Why a pipe, and not only the parent-death signal: that signal follows
the forkserver, not the grader, and cannot reach what the learner's code started; a pipe
needs no polling and no process id that could be reused. :func:`stop_all` kills every running
worker's group at once (the grader's signal handlers call it).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
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
from dataclasses import asdict

from .exercises import EXERCISES
from .runner import Result, evaluate
from .submissions import Cell

__all__ = ["grade_cell", "stop_all", "resume"]


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


def resume() -> None:
    """Allow new workers again (a new grading starts)."""
    _STOPPING.clear()


def stop_all() -> None:
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


def grade_cell(exercise_id: str, cell: Cell, timeout: float) -> Result:
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
