"""What the grader's run-time watch costs: every reference solution through the checks.

    python benchmarks/grader.py
    python benchmarks/grader.py --repeats 5

Runs ``companion.course.runner.evaluate`` on the reference solution of every exercise (with the
chapter's earlier solutions before it, as a learner's notebook has them) and prints the best
total time of the repeats. Every solution must pass. The learner's function runs under a trace
function that refuses reaching into the package at run time (``_PackageCalls``); comparing this
number before and after a change to the runner shows what the watch costs.
"""

from __future__ import annotations

import argparse
import inspect
import platform
import time

import torch

from companion.course.exercises import EXERCISES, earlier_in_chapter
from companion.course.runner import evaluate


def run_all() -> float:
    start = time.perf_counter()
    for exercise in EXERCISES.values():
        earlier = [inspect.getsource(ex.solution) for ex in earlier_in_chapter(exercise.id)]
        result = evaluate(exercise, inspect.getsource(exercise.solution), earlier)
        if not result.passed:
            raise SystemExit(f"{exercise.id}: the reference solution failed: {result.message}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    run_all()  # warm-up: imports and first calls
    best = min(run_all() for _ in range(args.repeats))
    print(f"{platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"{len(EXERCISES)} reference solutions through their checks: {best:.1f} s (best of {args.repeats})")


if __name__ == "__main__":
    main()
