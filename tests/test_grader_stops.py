"""Nothing the grader starts outlives it: SIGTERM, SIGINT, SIGKILL, or the end of its parent.

Each test grades chapter 1 with an endless ``softargmax`` (``while True: pass``), waits until
that answer's worker process spins, stops the grader the way a CI time limit, a Ctrl-C, an
out-of-memory killer or a dying job runner would, and then finds no process of that run left
2 s later. The run's processes are found by a marker in their environment, which the grader,
its forkserver and every worker inherit.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_1 = ROOT / "chapters" / "01_attention_as_kv_store.ipynb"
MARK = "COURSE_GRADER_TEST_RUN"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _endless_chapter_1(folder: Path) -> Path:
    folder.mkdir()
    notebook = json.loads(CHAPTER_1.read_text())
    for cell in notebook["cells"]:
        if cell.get("metadata", {}).get("exercise_id") == "ch01-softargmax":
            cell["source"] = "def softargmax(scores, beta=1.0):\n    while True:\n        pass\n"
    (folder / CHAPTER_1.name).write_text(json.dumps(notebook))
    return folder


def _processes(run: str) -> dict[int, tuple[int, str]]:
    """``{pid: (parent pid, state)}`` of the live processes carrying this run's marker."""
    found, needle = {}, f"{MARK}={run}".encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile, or not ours to read
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if state != "Z":  # a zombie runs nothing; its parent has yet to read its exit status
            found[int(entry.name)] = (int(ppid), state)
    return found


def _wait_for_a_spinning_worker(run: str, grader: int) -> None:
    """Until a worker (a process forked by the grader's forkserver) has run its answer for 1 s."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        procs = _processes(run)
        forkservers = {pid for pid, (ppid, _) in procs.items() if ppid == grader}
        if any(ppid in forkservers for ppid, _ in procs.values()):
            time.sleep(1.0)  # in the middle of the endless loop
            return
        time.sleep(0.2)
    pytest.fail(f"no worker started within 120 s; processes of the run: {_processes(run)}")


def _command(folder: Path) -> list[str]:
    return [sys.executable, "-m", "companion.course.grading", str(folder), "--chapter", "1", "--timeout", "300"]


def _env(run: str) -> dict:
    return {**os.environ, MARK: run, "PYTHONPATH": str(ROOT)}


def _assert_nothing_left(run: str) -> None:
    time.sleep(2.0)
    left = _processes(run)
    for pid in left:  # do not leave them burning a core after the failure either
        with __import__("contextlib").suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} process(es) of the stopped grader still running 2 s later: {left}"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL], ids=lambda s: s.name)
def test_a_stopped_grader_leaves_no_process_running(tmp_path, signum):
    run = uuid.uuid4().hex
    folder = _endless_chapter_1(tmp_path / "learner")
    log = tmp_path / "grader.log"  # a file, not a pipe: a leftover worker could hold a pipe open forever
    with log.open("wb") as out:
        grader = subprocess.Popen(_command(folder), env=_env(run), cwd=tmp_path, stdout=out, stderr=out)
    try:
        _wait_for_a_spinning_worker(run, grader.pid)
        grader.send_signal(signum)
        code = grader.wait(timeout=30)
    finally:
        if grader.poll() is None:
            grader.kill()
            grader.wait()
    _assert_nothing_left(run)
    if signum != signal.SIGKILL:  # a handled stop says so, with 128 + the signal's number
        assert code == 128 + signum, (code, log.read_text())
        assert f"stopped by {signum.name}" in log.read_text()


def test_a_grader_whose_parent_ends_leaves_no_process_running(tmp_path):
    run = uuid.uuid4().hex
    folder = _endless_chapter_1(tmp_path / "learner")
    script = " ".join(f"'{part}'" for part in _command(folder)) + " >/dev/null 2>&1 & echo $! ; wait"
    pid_file = tmp_path / "grader.pid"
    parent = subprocess.Popen([shutil.which("bash") or "/bin/bash", "-c", script], env=_env(run), cwd=tmp_path,
                              stdout=pid_file.open("w"), stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not pid_file.read_text().strip() and time.monotonic() < deadline:
            time.sleep(0.1)
        grader = int(pid_file.read_text().split()[0])
        _wait_for_a_spinning_worker(run, grader)
        parent.kill()  # the job runner, or the shell, is gone; the grader is an orphan now
        parent.wait(timeout=30)
    finally:
        if parent.poll() is None:
            parent.kill()
    _assert_nothing_left(run)
