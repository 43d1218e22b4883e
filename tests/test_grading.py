"""The exercise checks and the grader.

- every reference solution passes; every shipped stub fails as "not implemented yet";
- at least 8 plausible wrong answers per exercise are rejected;
- the notebook's check (in a real Jupyter kernel) and the grader give the same verdict,
  word for word, on the same answers;
- no learner code can forge a pass, crash the grader, or switch the checks off.
"""

import inspect
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import torch
from nbclient import NotebookClient

from companion.course import check
from companion.course.rule import PRELUDE
from companion.course.runner import NOT_IMPLEMENTED, evaluate, run_checks
from companion.course.exercises import EXERCISES, earlier_in_chapter
from companion.course import grading
from companion.course.grading import EXIT_FAILED, EXIT_GRADER_ERROR, EXIT_PASSED, find_exercise_cells, grade_folder, main
from wrong_answers import WRONG

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"


def solution(exercise_id):
    return inspect.getsource(EXERCISES[exercise_id].solution)


def earlier_solutions(exercise_id):
    return [solution(ex.id) for ex in earlier_in_chapter(exercise_id)]


def learner_folder(tmp_path, answers, name="learner", chapters=None):
    """A copy of the shipped notebooks with some exercise cells replaced by ``answers``.

    ``chapters``: only these chapters' notebooks (e.g. ``("01", "07")``), for a test about one
    exercise's verdict: the grader then runs a process only for their exercises (the others are
    reported as missing), which keeps ``make test`` within its time budget."""
    folder = tmp_path / name
    folder.mkdir()
    for path in CHAPTERS.glob("*.ipynb"):
        if chapters is not None and not path.name.startswith(tuple(chapters)):
            continue
        notebook = json.loads(path.read_text())
        for cell in notebook["cells"]:
            exercise_id = cell.get("metadata", {}).get("exercise_id")
            if exercise_id in answers:
                cell["source"] = answers[exercise_id]
        (folder / path.name).write_text(json.dumps(notebook))
    return folder


def solved(**changes):
    return {**{ex: solution(ex) for ex in EXERCISES}, **changes}


def in_chapters(*chapters):
    """The exercises of these chapters (e.g. ``"01"``), in the course's order."""
    return [ex for ex in EXERCISES if ex.startswith(tuple(f"ch{c}-" for c in chapters))]


# A full folder is graded once per session (a process per exercise, each importing torch): the
# solved one and the shipped stubs. Tests of the report's format, exit codes and problems use
# one chapter's notebook, or these reports.


@pytest.fixture(scope="session")
def solved_folder(tmp_path_factory):
    return learner_folder(tmp_path_factory.mktemp("solved"), solved())


@pytest.fixture(scope="session")
def solved_report(solved_folder):
    return grade_folder(solved_folder, timeout=60)


@pytest.fixture(scope="session")
def stubs_report():
    return grade_folder(CHAPTERS, timeout=60)


def test_every_reference_solution_passes_in_the_grader(solved_report):
    assert [r.exercise for r in solved_report.results] == list(EXERCISES)
    assert solved_report.passed == len(EXERCISES), [r for r in solved_report.results if not r.passed]
    assert not solved_report.problems


# --- the checks ------------------------------------------------------------------------------


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_reference_solution_passes(exercise_id):
    assert run_checks(EXERCISES[exercise_id], EXERCISES[exercise_id].solution).passed
    result = evaluate(EXERCISES[exercise_id], solution(exercise_id), earlier_solutions(exercise_id))
    assert result.passed and result.checks_run == len(EXERCISES[exercise_id].checks), result


@pytest.mark.parametrize("exercise_id", list(EXERCISES))
def test_at_least_eight_typical_wrong_answers_fail_with_a_reason(exercise_id):
    assert len(WRONG[exercise_id]) >= 8
    sources = [source for _, source in WRONG[exercise_id]]
    assert len(set(sources)) == len(sources), "a wrong answer is listed twice, word for word"
    for name, source in WRONG[exercise_id]:
        result = evaluate(EXERCISES[exercise_id], source, earlier_solutions(exercise_id))
        assert not result.passed, f"wrong answer accepted: {name}"
        assert result.message != NOT_IMPLEMENTED and len(result.message) > 40, (name, result.message)
        # A check that drew fresh random inputs on each call would give the notebook and the
        # grader different messages for the same answer: the second run says the same.
        again = evaluate(EXERCISES[exercise_id], source, earlier_solutions(exercise_id))
        assert again.message == result.message, (name, result.message, again.message)


def test_no_wrong_answer_group_is_lost_to_a_repeated_key():
    """The wrong answers are dict literals keyed by exercise id; a key written twice in one of
    them keeps only its last list, silently dropping the first."""
    import ast

    tree = ast.parse((ROOT / "tests" / "wrong_answers.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            assert len(keys) == len(set(keys)), sorted({k for k in keys if keys.count(k) > 1})


def test_every_exercise_has_exactly_one_stub_in_the_chapters():
    cells, problems = find_exercise_cells(CHAPTERS)
    assert not problems and set(cells) == set(EXERCISES)
    assert all(len(found) == 1 for found in cells.values())


def test_exercises_are_listed_in_the_order_the_notebooks_ask_them():
    cells, _ = find_exercise_cells(CHAPTERS)
    order = sorted(EXERCISES, key=lambda ex: (cells[ex][0].path.name, cells[ex][0].index))
    assert order == list(EXERCISES)


def test_every_chapter_imports_what_exercise_cells_may_use():
    """The rule gives exercise cells PRELUDE's names; the chapter's import cell must give them too."""
    for path in CHAPTERS.glob("*.ipynb"):
        code = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        if any("exercise" in c["metadata"].get("tags", []) for c in code):
            imports = "".join(code[1]["source"])  # the cell after the install cell
            missing = [line for line in PRELUDE.splitlines() if line not in imports.splitlines()]
            assert not missing, f"{path.name}: its import cell lacks {missing}"


def test_shipped_stubs_fail_as_not_implemented(stubs_report):
    assert [r.exercise for r in stubs_report.results] == list(EXERCISES)
    for r in stubs_report.results:
        assert not r.passed and r.message == NOT_IMPLEMENTED, r


# --- the notebook and the grader agree ----------------------------------------------------------

# Answers whose verdicts once differed between the notebook and the grader, and the rule's edges.
PARITY_CASES = [
    ("ch01-hardargmax", "F.one_hot without importing F (F is one of the exercise imports)", True,
     "def hardargmax(scores):\n    n = scores.shape[-1]\n    return F.one_hot(scores.argmax(-1), n).to(scores.dtype)\n"),
    ("ch01-soft-lookup", "reuses the learner's own softargmax from the earlier exercise", True,
     "def soft_lookup(query, keys, values, beta=1.0):\n    return softargmax(keys @ query, beta) @ values\n"),
    ("ch01-self-attention", "calls scaled_dot_product_attention from the chapter's import cell", False,
     "def self_attention(X, beta=1.0):\n    return scaled_dot_product_attention(X, X, X, scale=beta)\n"),
    ("ch01-self-attention", "imports companion's function under another name", False,
     "import companion\n\ndef self_attention(X, beta=1.0):\n"
     "    return companion.scaled_dot_product_attention(X, X, X, scale=beta)\n"),
    ("ch01-self-attention", "a helper defined in the same cell", True,
     "def _weights(X, beta):\n    return torch.softmax(beta * (X @ X.mT), -1)\n\n"
     "def self_attention(X, beta=1.0):\n    A = _weights(X, beta)\n    return A @ X, A\n"),
    ("ch01-self-attention", "IPython syntax in the cell", False,
     "%time 1 + 1\ndef self_attention(X, beta=1.0):\n    A = torch.softmax(beta * (X @ X.mT), -1)\n    return A @ X, A\n"),
    ("ch01-hardargmax", "the function calls sys.exit()", False,
     "import sys\n\ndef hardargmax(scores):\n    sys.exit(0)\n"),
    ("ch07-masked-mean", "collate from the earlier exercise is visible", True,
     "assert callable(collate)\n\ndef masked_mean(x, keep):\n"
     "    w = keep.unsqueeze(-1).to(x.dtype)\n    return torch.where(keep[..., None], x, 0).sum(1) / w.sum(1)\n"),
]


def _parity_notebook(answers):
    """A notebook that, for each exercise in order, runs every answer and its check, then the solution."""
    cells = [nbformat.v4.new_code_cell(PRELUDE + "from companion import scaled_dot_product_attention\n"
                                       "from companion.course import check\n")]
    for exercise_id, exercise in EXERCISES.items():
        for source in [s for ex, s in answers if ex == exercise_id]:
            cells.append(nbformat.v4.new_code_cell(source))
            cells.append(nbformat.v4.new_code_cell(f"check({exercise_id!r}, {exercise.function})"))
        cells.append(nbformat.v4.new_code_cell(solution(exercise_id)))
    return nbformat.v4.new_notebook(cells=cells)


def test_the_notebook_and_the_grader_give_the_same_verdicts(tmp_path):
    answers = [(ex, source) for ex, _, _, source in PARITY_CASES]
    answers += [(ex, source) for ex, wrong in WRONG.items() for _, source in wrong if "companion" not in source]
    answers += [(ex, solution(ex)) for ex in EXERCISES]
    notebook = _parity_notebook(answers)
    NotebookClient(notebook, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = {}
    for answer, checked in zip(notebook.cells, notebook.cells[1:]):
        if checked.source.startswith("check("):
            exercise_id = checked.source.split("'")[1]
            # the verdict only (printed; a kernel may split one print into several stream messages)
            assert checked.outputs and {o.output_type for o in checked.outputs} == {"stream"}, checked.outputs
            printed[(exercise_id, answer.source)] = "".join(o.get("text", "") for o in checked.outputs).strip()
    assert len(printed) == len(answers)
    for exercise_id, source in answers:
        verdict = evaluate(EXERCISES[exercise_id], source, earlier_solutions(exercise_id))
        expected = f"{'PASSED' if verdict.passed else 'NOT YET'} {exercise_id}: {verdict.message}"
        assert printed[(exercise_id, source)] == expected, source
    for exercise_id, name, passes, source in PARITY_CASES:
        assert printed[(exercise_id, source)].startswith("PASSED" if passes else "NOT YET"), (name, printed)


def test_the_grader_process_gives_the_verdicts_of_the_rule(tmp_path):
    """The same cases through grade_folder: one process per exercise, cells read from the files."""
    for exercise_id, name, passes, source in PARITY_CASES:
        folder = learner_folder(tmp_path, solved(**{exercise_id: source}),
                                name=f"case{PARITY_CASES.index((exercise_id, name, passes, source))}",
                                chapters=(exercise_id[2:4],))
        result = next(r for r in grade_folder(folder, timeout=60).results if r.exercise == exercise_id)
        expected = evaluate(EXERCISES[exercise_id], source, earlier_solutions(exercise_id))
        assert (result.passed, result.message) == (expected.passed, expected.message) == (passes, expected.message), name


def test_the_notebook_check_prints_the_verdict_and_returns_nothing(capsys):
    def hardargmax(scores):
        return torch.zeros_like(scores).scatter(-1, scores.argmax(-1, keepdim=True), 1.0)  # noqa: F821

    assert check("ch01-hardargmax", hardargmax) is None  # the cell shows the verdict, no repr after it
    checks = len(EXERCISES["ch01-hardargmax"].checks)
    assert capsys.readouterr().out.startswith(f"PASSED ch01-hardargmax: all {checks} checks passed")
    def softargmax(scores, beta=1.0):
        return scores

    check("ch01-softargmax", softargmax)
    out = capsys.readouterr().out
    assert out.startswith("NOT YET ch01-softargmax: softargmax([1, 2, 3], beta=1): expected") and "Hint:" in out
    check("ch01-softargmax", max)
    assert "could not read the code of softargmax()" in capsys.readouterr().out
    with pytest.raises(ValueError, match="unknown exercise 'ch99-x'"):
        check("ch99-x", print)


def test_messages_point_at_the_real_mistake():
    # an answer that calls an earlier exercise's function that is still the stub
    stub = "def softargmax(scores, beta=1.0):\n    raise NotImplementedError\n"
    calls_it = "def soft_lookup(query, keys, values, beta=1.0):\n    return softargmax(keys @ query, beta) @ values\n"
    result = evaluate(EXERCISES["ch01-soft-lookup"], calls_it, [stub, solution("ch01-hardargmax")])
    assert "calls softargmax(), which is still the stub of the earlier exercise ch01-softargmax" in result.message
    # a larger result: the row that is wrong, not the first row
    later_row = ("def hardargmax(scores):\n    m = scores == scores.max(dim=-1, keepdim=True).values\n"
                 "    return (m & (m.cumsum(0) == 1)).to(scores.dtype)\n")
    result = evaluate(EXERCISES["ch01-hardargmax"], later_row, [solution("ch01-softargmax")])
    assert "at row [1, :]: expected [0.0, 0.0, 0.0, 0.0, 1.0], got [0.0, 0.0, 0.0, 0.0, 0.0]" in result.message
    # values equal to 4 decimals but not to float64 precision
    float32_step = ("def soft_lookup(query, keys, values, beta=1.0):\n"
                    "    w = torch.softmax((beta * (keys @ query)).float(), -1)\n    return w.to(values.dtype) @ values\n")
    result = evaluate(EXERCISES["ch01-soft-lookup"], float32_step, [solution("ch01-softargmax")])
    assert "they differ by up to" in result.message and "float64" in result.message
    shown = re.search(r"expected (\[.*?\]), got (\[.*?\])", result.message)
    assert shown and shown.group(1) != shown.group(2), result.message  # enough digits to see the difference


# --- a grader that cannot be fooled or crashed ---------------------------------------------------

FORGED = """import json, os, sys
sys.__stdout__.write(json.dumps({"exercise": "ch01-softargmax", "passed": True,
                                 "message": "all 7 checks passed", "checks_run": 7}) + "\\n")
sys.__stdout__.flush()
os._exit(0)
"""


def test_a_forged_pass_is_not_believed(tmp_path):
    folder = learner_folder(tmp_path, solved(**{"ch01-softargmax": FORGED}), chapters=("01",))
    result = grade_folder(folder, timeout=60).results[0]
    assert not result.passed
    assert "stopped the grader's Python process before the checks finished" in result.message


def test_replacing_a_pytorch_function_does_not_switch_the_checks_off(tmp_path):
    cheat = ("torch.allclose = lambda *args, **kwargs: True\ntorch.equal = lambda *args: True\n"
             "def softargmax(scores, beta=1.0):\n    return scores * 0\n")
    folder = learner_folder(tmp_path, solved(**{"ch01-softargmax": cheat}), chapters=("01",))
    result = grade_folder(folder, timeout=60).results[0]
    assert not result.passed and "replaced torch.allclose" in result.message, result.message


def test_pytorch_wrapping_its_own_functions_is_not_a_learner_change(monkeypatch):
    """Loading torch._dynamo (torch.compile, the FLOP counter of chapter 4) wraps torch.manual_seed;
    a notebook that did so before an exercise must still get its verdict."""
    # the disguised cheat below runs in this process: put torch.allclose back afterwards
    monkeypatch.setattr(torch, "allclose", torch.allclose)
    source = "import torch._dynamo\n" + solution("ch01-softargmax")
    assert evaluate(EXERCISES["ch01-softargmax"], source).passed
    disguised = ("import functools\n"
                 "torch.allclose = functools.wraps(torch.allclose)(lambda *a, **k: True)\n"
                 "def softargmax(scores, beta=1.0):\n    return scores * 0\n")
    result = evaluate(EXERCISES["ch01-softargmax"], disguised)
    assert not result.passed and "replaced torch.allclose" in result.message, result.message


@pytest.mark.parametrize("source", [
    "from torch.nn.functional import *\n",
    "from torch.nn.functional import scaled_dot_product_attention as sdpa\n",
    "scaled_dot_product_attention = F.scaled_dot_product_attention\n",
])
def test_a_forbidden_function_is_caught_however_it_is_named(source):
    """Found by a learner trial: a star import used to get past the ban."""
    answer = source + ("def multi_head_attention(X_q, X_kv, W_q, W_k, W_v, W_o):\n"
                       "    Q = torch.einsum('btd,hdk->bhtk', X_q, W_q)\n"
                       "    K = torch.einsum('btd,hdk->bhtk', X_kv, W_k)\n"
                       "    V = torch.einsum('btd,hdv->bhtv', X_kv, W_v)\n"
                       "    heads = F.softmax(Q @ K.mT / math.sqrt(Q.shape[-1]), -1) @ V\n"
                       "    return heads.transpose(1, 2).flatten(2) @ W_o\n")
    assert evaluate(EXERCISES["ch04-multi-head"], answer[len(source):]).passed  # without the first line: honest
    result = evaluate(EXERCISES["ch04-multi-head"], answer)
    assert not result.passed and ("import *" in result.message or "asks you not to use" in result.message), result


def test_a_learner_variable_that_shares_a_forbidden_name_is_allowed():
    """The ban is on PyTorch's function, not on the word: a local variable called softmax is fine."""
    answer = ("def softargmax(scores, beta=1.0):\n"
              "    s = scores.float() if scores.dtype in (torch.float16, torch.bfloat16) else scores\n"
              "    z = s - s.max(dim=-1, keepdim=True).values\n"
              "    fits = torch.finfo(z.dtype).tiny <= beta <= torch.finfo(z.dtype).max\n"
              "    z = beta * z if fits else (beta * z.double()).to(z.dtype)\n"
              "    softmax = torch.exp(z)\n"
              "    return (softmax / softmax.sum(dim=-1, keepdim=True)).to(scores.dtype)\n")
    assert evaluate(EXERCISES["ch01-softargmax"], answer).passed


_CONV_BODY = ("    h = F.relu(F.conv1d(x.transpose(1, 2), W1[:, :, None], b1))\n"
              "    return F.conv1d(h, W2[:, :, None], b2).transpose(1, 2)\n")


@pytest.mark.parametrize("line", [
    "    x = (x @ W1.T) @ torch.linalg.pinv(W1.T)\n",  # a matrix product that changes nothing
    "    x = x.clone()\n    x @= torch.eye(x.shape[-1], dtype=x.dtype)\n",
])
def test_the_matrix_product_operator_can_be_forbidden(line):
    """ch06-conv asks for F.conv1d: `@` and `@=` are refused like a forbidden function."""
    honest = "def conv_feed_forward(x, W1, b1, W2, b2):\n" + _CONV_BODY
    assert evaluate(EXERCISES["ch06-conv"], honest).passed
    result = evaluate(EXERCISES["ch06-conv"], "def conv_feed_forward(x, W1, b1, W2, b2):\n" + line + _CONV_BODY)
    assert not result.passed and "`@`" in result.message, result
    # where `@` is not forbidden it is an ordinary operator
    assert "@" not in EXERCISES["ch06-additive"].forbidden
    assert evaluate(EXERCISES["ch06-additive"], inspect.getsource(EXERCISES["ch06-additive"].solution)).passed


DELIBERATE = {
    "a Tensor method overridden": ("torch.Tensor.__matmul__ = lambda a, b: b\n"
                                   "def self_attention(X, beta=1.0):\n    return X.clone()\n",
                                   "ch01-self-attention", "replaced torch.Tensor.__matmul__"),
    "a Tensor subclass whose comparisons always agree": (
        "class _Yes(torch.Tensor):\n    @classmethod\n"
        "    def __torch_function__(cls, func, types, args=(), kwargs=None):\n        return True\n"
        "def hardargmax(scores):\n    return torch.zeros_like(scores).as_subclass(_Yes)\n",
        "ch01-hardargmax", "a subclass of torch.Tensor"),
    "the checker's saved comparison patched": (
        "import sys\ncore = getattr(sys, 'mod' + 'ules')['compan' + 'ion.course.exercises._core']\n"
        "core._allclose = lambda *a, **k: True\n"
        "def soft_lookup(query, keys, values, beta=1.0):\n    return values[0]\n",
        "ch01-soft-lookup", "replaced companion.course.exercises._core._allclose"),
    "sys.modules read directly": (
        "import sys\ncore = sys.modules['compan' + 'ion.course.exercises._core']\n"
        "def soft_lookup(query, keys, values, beta=1.0):\n    return values[0]\n",
        "ch01-soft-lookup", "uses `sys.modules`"),
    "a module imported by a built name": (
        "import importlib\n"
        "def soft_lookup(query, keys, values, beta=1.0):\n"
        "    return importlib.import_module('compan' + 'ion').softargmax(keys @ query, beta) @ values\n",
        "ch01-soft-lookup", "uses `importlib`"),
    "the caller's variables through the stack": (
        "import sys\n"
        "def soft_lookup(query, keys, values, beta=1.0):\n"
        "    return sys._getframe(1).f_globals['soft_lookup'](query, keys, values, beta)\n",
        "ch01-soft-lookup", "reaches modules or the caller's variables"),
    "a forbidden PyTorch function under a built name": (
        "def softargmax(scores, beta=1.0):\n"
        "    beta = min(beta, torch.finfo(scores.dtype).max)\n"
        "    shifted = scores - scores.amax(dim=-1, keepdim=True)\n"
        "    return getattr(torch, 'soft' + 'max')(beta * shifted, dim=-1)\n",
        "ch01-softargmax", "calls PyTorch's `softmax`"),
    "a forbidden PyTorch function through a class that calls it": (
        "def softargmax(scores, beta=1.0):\n"
        "    beta = min(beta, torch.finfo(scores.dtype).max)\n"
        "    shifted = scores - scores.amax(dim=-1, keepdim=True)\n"
        "    return getattr(nn, 'Soft' + 'max')(dim=-1)(beta * shifted)\n",
        "ch01-softargmax", "calls PyTorch's `softmax`"),
    "the package reached at run time, inside the function": (
        "def hardargmax(scores):\n    import sys\n"
        "    pkg = getattr(sys, 'mod' + 'ules')['compan' + 'ion']\n"
        "    return getattr(pkg, 'hard' + 'argmax')(scores)\n",
        "ch01-hardargmax", "reached the course's package at run time (`hardargmax`)"),
    "a reference solution reached at run time": (
        "def soft_lookup(query, keys, values, beta=1.0):\n    import sys\n"
        "    mod = getattr(sys, 'mod' + 'ules')['compan' + 'ion.course.exercises.ch01']\n"
        "    return getattr(mod, 'soft_' + 'lookup')(query, keys, values, beta)\n",
        "ch01-soft-lookup", "reached the course's package at run time (`the reference solution soft_lookup()`)"),
    "the trace function switched off": (
        "def hardargmax(scores):\n    import sys\n    sys.settrace(None)\n"
        "    return torch.zeros_like(scores).scatter(-1, scores.argmax(-1, keepdim=True), 1.0)\n",
        "ch01-hardargmax", "changed Python's trace function"),
    "input()": ("name = input()\n" + "def softargmax(scores, beta=1.0):\n    return scores\n",
                "ch01-softargmax", "asked for input"),
}


@pytest.mark.parametrize("case", list(DELIBERATE))
def test_deliberate_tricks_are_caught(tmp_path, case):
    source, exercise_id, expected = DELIBERATE[case]  # in the grader's process: they change PyTorch
    folder = learner_folder(tmp_path, solved(**{exercise_id: source}), chapters=("01",))
    result = next(r for r in grade_folder(folder, timeout=60).results if r.exercise == exercise_id)
    assert not result.passed and expected in result.message, result.message


def test_a_timeout_holds_when_the_cell_starts_other_processes(tmp_path):
    sleeper = "import subprocess\nsubprocess.Popen(['sleep', '120'])\nwhile True:\n    pass\n"
    folder = learner_folder(tmp_path, solved(**{"ch01-soft-lookup": sleeper}), chapters=("01",))
    start = time.monotonic()
    results = {r.exercise: r for r in grade_folder(folder, timeout=8).results}
    assert time.monotonic() - start < 60  # not the sleeper's 120 s
    assert "timed out after 8 s" in results["ch01-soft-lookup"].message
    assert "in your earlier exercise cell ch01-soft-lookup" in results["ch01-self-attention"].message
    assert results["ch01-softargmax"].passed


def test_unknown_and_malformed_exercise_ids_are_reported(tmp_path):
    folder = learner_folder(tmp_path, solved(), chapters=("01",))
    notebook = json.loads((folder / "01_attention_as_kv_store.ipynb").read_text())
    tagged = [c for c in notebook["cells"] if "exercise" in c.get("metadata", {}).get("tags", [])]
    tagged[0]["metadata"]["exercise_id"] = "ch01-softargmx"
    tagged[1]["metadata"]["exercise_id"] = 7
    (folder / "01_attention_as_kv_store.ipynb").write_text(json.dumps(notebook))
    report = grade_folder(folder, timeout=60)
    problems = " ".join(report.problems.values())
    assert "exercise_id 'ch01-softargmx' is not an exercise of the course (a misspelling?" in problems
    assert "exercise_id <exercise_id 7, not a string>" in problems
    assert report.passed == len(in_chapters("01")) - 2


def test_grader_survives_misbehaving_code(tmp_path):
    folder = learner_folder(tmp_path, solved(**{
        "ch01-softargmax": "print('debugging ' * 1000)\n" + solution("ch01-softargmax"),  # prints: fine
        "ch01-hardargmax": "def hardargmax(scores):\n    while True:\n        pass\n",  # never returns
        "ch01-soft-lookup": "def soft_lookup(query, keys, values, beta=1.0):\n    return values\n",  # wrong shape
        "ch01-self-attention": "import os\nos._exit(3)\n",  # kills its process
        "ch07-collate": "import os\nos.system('printf x')\n" + solution("ch07-collate"),  # output, no newline
        "ch07-masked-mean": "import sys\nsys.exit(0)\n",  # exits
    }), chapters=("01", "07"))
    results = {r.exercise: r for r in grade_folder(folder, timeout=8).results}
    assert results["ch01-softargmax"].passed
    assert "timed out after 8 s" in results["ch01-hardargmax"].message
    assert "expected shape" in results["ch01-soft-lookup"].message
    assert "stopped the grader's Python process before the checks finished (exit 3" in results["ch01-self-attention"].message
    assert results["ch07-collate"].passed
    assert "the cell called exit() (SystemExit): exiting is not allowed" in results["ch07-masked-mean"].message


def test_what_a_cell_prints_stays_out_of_the_graders_output(tmp_path, capfd):
    """The workers are forked from a server that shares the grader's terminal: a cell's prints,
    at Python's level or the file descriptor's, must not reach the report (or --json)."""
    loud = ("import os, sys\nprint('MARK-print')\nos.write(1, b'MARK-fd1')\nos.system('echo MARK-shell')\n"
            "assert sys.stdin.read() == ''\n" + solution("ch01-softargmax"))
    folder = learner_folder(tmp_path, solved(**{"ch01-softargmax": loud}), chapters=("01",))
    results = {r.exercise: r for r in grade_folder(folder, timeout=60, chapters=["1"]).results}
    assert results["ch01-softargmax"].passed, results["ch01-softargmax"]
    printed = capfd.readouterr()
    assert "MARK" not in printed.out + printed.err


def test_a_script_that_grades_at_its_top_level_grades_once(tmp_path):
    """The workers start without the caller's main module: a script with no __main__ guard is
    not run again in each worker (multiprocessing's default would)."""
    folder = learner_folder(tmp_path, solved(), chapters=("01",))
    script = tmp_path / "grade_my_class.py"
    script.write_text("from companion.course.grading import grade_folder\n"
                      f"report = grade_folder({str(folder)!r}, chapters=['1'])\n"
                      "print('GRADED', report.passed)\n")
    ran = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0 and ran.stdout == f"GRADED {len(in_chapters('01'))}\n", ran.stdout + ran.stderr[-2000:]


def test_an_earlier_cell_that_ends_the_process_is_named(tmp_path):
    folder = learner_folder(tmp_path, solved(**{"ch01-softargmax": FORGED}), chapters=("01", "07"))
    results = {r.exercise: r for r in grade_folder(folder, timeout=60).results}
    assert "stopped the grader's Python process before the checks finished" in results["ch01-softargmax"].message
    for later in ("ch01-hardargmax", "ch01-soft-lookup", "ch01-self-attention"):
        assert "your earlier exercise cell ch01-softargmax stopped" in results[later].message, results[later]
    assert results["ch07-collate"].passed  # another chapter: unaffected


def test_grader_reports_cells_that_raise_or_miss_the_function(tmp_path):
    folder = learner_folder(tmp_path, solved(**{
        "ch01-softargmax": "raise RuntimeError('oops')",
        "ch01-hardargmax": "def hard_arg_max(scores):\n    return scores\n",
        "ch01-soft-lookup": "def soft_lookup(q, k, v, beta=1.0):\n    return 1 / 0\n",
        "ch01-self-attention": "%%time\ndef self_attention(X, beta=1.0):\n    return X\n",
    }), chapters=("01",))
    results = {r.exercise: r for r in grade_folder(folder, timeout=30).results}
    assert results["ch01-softargmax"].message == "the cell raised RuntimeError: oops"
    assert results["ch01-hardargmax"].message == "the cell does not define hardargmax()"
    assert "your function raised ZeroDivisionError" in results["ch01-soft-lookup"].message
    assert "the cell uses IPython syntax on line 1" in results["ch01-self-attention"].message


def test_an_unreadable_notebook_is_reported_and_the_rest_graded(tmp_path, capsys, solved_report, monkeypatch):
    folder = learner_folder(tmp_path, solved(), chapters=("01",))
    (folder / "broken.ipynb").write_text('{"cells": [')
    report = grade_folder(folder)
    assert report.passed == len(in_chapters("01"))
    assert "broken.ipynb" in report.problems and "not a readable notebook" in report.problems["broken.ipynb"]
    # every exercise passed: the unreadable extra notebook is reported, and the grade still passes
    full = type(solved_report)(solved_report.results, {**solved_report.problems, **report.problems})
    monkeypatch.setattr(grading, "grade_folder", lambda folder, timeout, chapters=None: full)
    assert main([str(folder)]) == EXIT_PASSED
    assert "broken.ipynb: not a readable notebook" in capsys.readouterr().out


def test_missing_and_duplicated_exercise_cells_name_the_files(tmp_path):
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "empty.ipynb").write_text(json.dumps(nbformat.v4.new_notebook()))
    assert all("no code cell tagged 'exercise'" in r.message for r in grade_folder(tmp_path / "none").results)
    folder = learner_folder(tmp_path, {}, chapters=("01",))
    source = folder / "01_attention_as_kv_store.ipynb"
    (folder / "01_attention_as_kv_store-Copy1.ipynb").write_text(source.read_text())
    results = {r.exercise: r for r in grade_folder(folder).results}
    message = results["ch01-softargmax"].message
    assert "2 cells claim exercise_id 'ch01-softargmax'" in message
    assert "01_attention_as_kv_store-Copy1.ipynb (cell" in message and "01_attention_as_kv_store.ipynb (cell" in message


def test_exit_codes_tell_pass_fail_and_grader_error_apart(tmp_path, capsys, solved_folder, solved_report,
                                                         stubs_report, monkeypatch):
    assert main([str(tmp_path / "nowhere")]) == EXIT_GRADER_ERROR
    assert "no folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main([str(tmp_path / "empty")]) == EXIT_GRADER_ERROR
    assert "no notebooks found" in capsys.readouterr().err
    one_chapter = learner_folder(tmp_path, solved(), chapters=("01",))  # graded for real: missing ones fail
    assert main([str(one_chapter)]) == EXIT_FAILED
    assert f"score: {len(in_chapters('01'))}/{len(EXERCISES)}" in capsys.readouterr().out
    reports = {str(solved_folder): solved_report, str(CHAPTERS): stubs_report}  # the folders graded once
    monkeypatch.setattr(grading, "grade_folder", lambda folder, timeout, chapters=None: reports[str(folder)])
    assert main([str(solved_folder)]) == EXIT_PASSED
    assert f"score: {len(EXERCISES)}/{len(EXERCISES)}" in capsys.readouterr().out
    assert main([str(CHAPTERS), "--json"]) == EXIT_FAILED
    report = json.loads(capsys.readouterr().out)
    assert report["score"] == 0 and report["max_score"] == len(EXERCISES) and report["problems"] == {}


def test_one_chapter_is_graded_without_rows_for_the_others(tmp_path, capsys):
    one_chapter = learner_folder(tmp_path, solved(), chapters=("01",))
    assert main([str(one_chapter), "--chapter", "1"]) == EXIT_PASSED  # graded for real: 4 exercises
    out = capsys.readouterr().out
    assert f"score: {len(in_chapters('01'))}/{len(in_chapters('01'))}" in out and "ch02-" not in out
    assert main([str(one_chapter), "--chapter", "ch01", "--chapter", "02", "--json"]) == EXIT_FAILED
    report = json.loads(capsys.readouterr().out)
    assert report["max_score"] == len(in_chapters("01")) + len(in_chapters("02"))
    with pytest.raises(SystemExit) as exited:
        main([str(one_chapter), "--chapter", "12"])
    assert exited.value.code == 2 and "no exercises in ch12" in capsys.readouterr().err


def test_plain_pytest_grading_for_classroom(tmp_path):
    """grading/ is what GitHub Classroom runs: it must pass on solutions and fail on stubs. One
    chapter is enough here (the whole solved folder is graded once, by the session fixture):
    chapter 1 solved passes with CHAPTER=1; chapter 1's stubs with every other exercise missing
    fail every exercise; and CHAPTER=1 on the stubs fails chapter 1's only."""
    solved_one = learner_folder(tmp_path, solved(), name="solved", chapters=("01",))
    stubs = learner_folder(tmp_path, {}, name="stubs", chapters=("01",))
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(ROOT / "grading")]
    env = {**__import__("os").environ}
    ok = subprocess.run(command, env={**env, "NOTEBOOKS": str(solved_one), "CHAPTER": "1"}, capture_output=True,
                        text=True, cwd=ROOT)
    assert ok.returncode == 0 and f"{len(in_chapters('01')) + 1} passed" in ok.stdout, ok.stdout
    failed = subprocess.run(command, env={**env, "NOTEBOOKS": str(stubs)}, capture_output=True, text=True, cwd=ROOT)
    assert failed.returncode == 1 and f"{len(EXERCISES)} failed" in failed.stdout, failed.stdout
    one = subprocess.run(command, env={**env, "NOTEBOOKS": str(stubs), "CHAPTER": "1"}, capture_output=True,
                         text=True, cwd=ROOT)
    assert one.returncode == 1 and f"{len(in_chapters('01'))} failed, 1 passed" in one.stdout, one.stdout


def test_show_source_names_the_package_file_even_through_a_decorator(capsys):
    """Found by a learner trial: greedy_decode is wrapped by @torch.no_grad(), and its header
    named torch's _contextlib.py instead of companion/decoding.py."""
    from companion import greedy_decode, scaled_dot_product_attention
    from companion.course.notebook import _where

    assert _where(greedy_decode) == "companion/decoding.py"
    assert _where(scaled_dot_product_attention) == "companion/attention.py"


def test_every_output_must_carry_a_gradient():
    from companion.course.exercises import Mismatch, expect_gradients_reach

    W, V = torch.randn(3, 3, requires_grad=True), torch.randn(3, requires_grad=True)
    x = torch.randn(2, 3)

    def outputs():  # a fresh graph each time: the check runs backward through it
        return x @ W, torch.softmax(x @ W, -1)

    expect_gradients_reach(outputs(), {"W": W}, "case", "hint")  # both carry one
    context, weights = outputs()
    with pytest.raises(Mismatch, match=r"case \(output 1 of 2\): the result carries no gradient"):
        expect_gradients_reach((context, weights.detach()), {"W": W}, "case", "hint")
    with pytest.raises(Mismatch, match="no gradient reaches V"):
        expect_gradients_reach(outputs()[:1], {"W": W, "V": V}, "case", "hint")
