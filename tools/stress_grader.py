"""Grade chapters 1, 2 and 7's reference solutions in N fresh grader processes; count wrong verdicts.

The grader starts each exercise's process from a fork server, from two threads at once. A race
in multiprocessing's bookkeeping (one thread's start() reading the exit status another thread's
join() waits for) once failed about one grading in ten, on the first exercise of a fresh
process; this measures it. Usage: python tools/stress_grader.py [N=50]
"""

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ONE_RUN = """
import sys
from pathlib import Path
sys.path.insert(0, {tests!r})
from test_grading import learner_folder, solved
from companion.course.grading import grade_folder
folder = learner_folder(Path({folder!r}), solved(), chapters=("01", "02", "07"))
report = grade_folder(folder, timeout=60, chapters=["1", "2", "7"])
wrong = [r for r in report.results if not r.passed]
print(len(report.results), len(wrong), *[r.message for r in wrong], sep="\\n")
"""


def main(runs: int) -> int:
    failed_runs = 0
    for run in range(runs):
        with tempfile.TemporaryDirectory() as folder:
            code = ONE_RUN.format(tests=str(ROOT / "tests"), folder=folder)
            out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
            lines = out.stdout.splitlines()
            if out.returncode or len(lines) < 2 or lines[1] != "0":
                failed_runs += 1
                print(f"run {run + 1}: {out.stdout.strip()} {out.stderr.strip()[-500:]}")
                if out.returncode:  # the script itself failed: no use going on
                    break
    print(f"{runs - failed_runs} of {runs} fresh grader processes gave every reference solution a pass")
    return 1 if failed_runs else 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 50))
