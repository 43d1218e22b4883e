"""The exercise checks and the grader: right answers pass, stubs and wrong answers fail,
and no learner code can crash the grader."""

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from companion.course.exercises import EXERCISES
from companion.course.grading import NOT_IMPLEMENTED, check, find_exercise_cells, grade_folder, main, run_checks
from wrong_answers import WRONG

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"


def solution_source(exercise_id):
    return inspect.getsource(EXERCISES[exercise_id].solution)


def learner_folder(tmp_path, answers):
    """A copy of the shipped notebooks with some exercise cells replaced by ``answers``."""
    folder = tmp_path / "learner"
    folder.mkdir()
    for path in CHAPTERS.glob("*.ipynb"):
        notebook = json.loads(path.read_text())
        for cell in notebook["cells"]:
            exercise_id = cell.get("metadata", {}).get("exercise_id")
            if exercise_id in answers:
                cell["source"] = answers[exercise_id]
        (folder / path.name).write_text(json.dumps(notebook))
    return folder


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_reference_solution_passes(exercise_id):
    result = run_checks(EXERCISES[exercise_id], EXERCISES[exercise_id].solution)
    assert result.passed, result.message


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_at_least_three_typical_wrong_answers_fail(exercise_id):
    wrong = WRONG[exercise_id]
    assert len(wrong) >= 3
    for fn in wrong:
        result = run_checks(EXERCISES[exercise_id], fn)
        assert not result.passed, f"{fn.__name__} was accepted"
        assert "Hint:" in result.message or "raised" in result.message, result.message


def test_every_exercise_has_exactly_one_stub_in_the_chapters():
    cells = find_exercise_cells(CHAPTERS)
    assert set(cells) == set(EXERCISES)
    assert all(len(sources) == 1 for sources in cells.values())


def test_shipped_stubs_fail_as_not_implemented():
    results = grade_folder(CHAPTERS, timeout=60)
    assert [r.exercise for r in results] == list(EXERCISES)
    for r in results:
        assert not r.passed and r.message == NOT_IMPLEMENTED, r


def test_notebook_feedback(capsys):
    check("ch01-hardargmax", EXERCISES["ch01-hardargmax"].solution)
    assert capsys.readouterr().out.startswith("PASSED ch01-hardargmax")
    check("ch01-hardargmax", WRONG["ch01-hardargmax"][1])
    out = capsys.readouterr().out
    assert out.startswith("NOT YET ch01-hardargmax") and "expected" in out and "got" in out
    with pytest.raises(ValueError, match="unknown exercise 'ch99-x'"):
        check("ch99-x", print)


def test_grader_survives_misbehaving_code(tmp_path):
    folder = learner_folder(tmp_path, {
        **{ex: solution_source(ex) for ex in EXERCISES},
        "ch01-softargmax": "print('debugging ' * 1000)\n" + solution_source("ch01-softargmax"),  # prints: fine
        "ch01-hardargmax": "def hardargmax(scores):\n    while True:\n        pass\n",  # never returns
        "ch01-soft-lookup": "import os\nos._exit(3)\n",  # kills its process
        "ch01-self-attention": "def self_attention(X, beta=1.0):\n    return X[0]\n",  # wrong shape
    })
    results = {r.exercise: r for r in grade_folder(folder, timeout=10)}
    assert results["ch01-softargmax"].passed
    assert "timed out after 10 s" in results["ch01-hardargmax"].message
    assert "stopped the Python process (exit 3)" in results["ch01-soft-lookup"].message
    assert "expected shape (3, 2), got shape (2,)" in results["ch01-self-attention"].message


def test_grader_reports_cells_that_raise_or_miss_the_function(tmp_path):
    folder = learner_folder(tmp_path, {
        "ch01-softargmax": "raise RuntimeError('oops')",
        "ch01-hardargmax": "def hard_arg_max(scores):\n    return scores\n",
        "ch01-soft-lookup": "def soft_lookup(q, k, v, beta=1.0):\n    return 1 / 0\n",
        "ch01-self-attention": "def self_attention(X, beta=1.0):\n    return torch.softmax(beta * X @ X.T, -1) @ X\n",
    })
    results = {r.exercise: r for r in grade_folder(folder, timeout=30)}
    assert results["ch01-softargmax"].message == "the cell raised RuntimeError: oops"
    assert results["ch01-hardargmax"].message == "the cell does not define hardargmax()"
    assert "your function raised ZeroDivisionError" in results["ch01-soft-lookup"].message
    assert results["ch01-self-attention"].passed  # torch comes from the grader's prelude


def test_missing_and_duplicated_exercise_cells(tmp_path):
    (tmp_path / "empty").mkdir()
    results = grade_folder(tmp_path / "empty")
    assert all("no code cell tagged 'exercise'" in r.message for r in results)
    folder = learner_folder(tmp_path, {})
    (folder / "copies").mkdir()
    for notebook in list(folder.glob("*.ipynb")):
        (folder / "copies" / notebook.name).write_text(notebook.read_text())
    assert all("2 cells claim exercise_id" in r.message for r in grade_folder(folder))
    with pytest.raises(FileNotFoundError, match="no folder"):
        grade_folder(tmp_path / "nowhere")


def test_command_line_table_json_and_exit_code(tmp_path, capsys):
    solved = learner_folder(tmp_path, {ex: solution_source(ex) for ex in EXERCISES})
    assert main([str(solved)]) == 0
    assert f"score: {len(EXERCISES)}/{len(EXERCISES)}" in capsys.readouterr().out
    assert main([str(CHAPTERS), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["score"] == 0 and report["max_score"] == len(EXERCISES)
    assert {r["exercise"] for r in report["results"]} == set(EXERCISES)


def test_plain_pytest_grading_for_classroom(tmp_path):
    """grading/ is what GitHub Classroom runs: it must pass on solutions and fail on stubs."""
    solved = learner_folder(tmp_path, {ex: solution_source(ex) for ex in EXERCISES})
    env = dict(os.environ)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "grading")]
    ok = subprocess.run(command, env={**env, "NOTEBOOKS": str(solved)}, capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and f"{len(EXERCISES)} passed" in ok.stdout, ok.stdout
    stubs = subprocess.run(command, env={**env, "NOTEBOOKS": str(CHAPTERS)}, capture_output=True, text=True, cwd=ROOT)
    assert stubs.returncode == 1 and f"{len(EXERCISES)} failed" in stubs.stdout, stubs.stdout
