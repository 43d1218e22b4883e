"""The reader's path, outside the repository: what a Colab reader gets.

Builds the wheel and the sdist from the checkout, makes a fresh virtual environment holding
only what Colab preinstalls (torch, numpy, matplotlib, ipykernel, nbclient), copies each chapter
notebook alone into an empty folder and executes it there in quick mode. The notebook's own
install cell installs the package, pointed at the built wheel instead of the repository's
address. Every cell must run, and the check cells must say "not implemented yet" for the stubs.

It runs under another CPU's arithmetic: ``ATEN_CPU_CAPABILITY=default`` (PyTorch's kernels
without AVX2/AVX-512) and one thread, so that a summation order or a vector width differs
from the run that stored the outputs. Every ``nbval-check-output`` cell must print what its
stored output shows (``make test-notebooks`` compares the same cells under this machine's own
arithmetic): a cell that prints float noise fails here on any machine, not only on another CPU.

Run by ``make test-reader`` (part of ``make test``); a few minutes, two chapters at a time.
"""

from __future__ import annotations

import ast
import concurrent.futures
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
DISTRIBUTION = "attention-course-companion"
COLAB_PREINSTALLED = ["numpy", "matplotlib", "ipykernel", "nbclient"]
TORCH = os.environ.get("COURSE_TORCH", "torch==2.13.0")


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, command))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The wheel and sdist built from the checkout (no build isolation: no download needed)."""
    out = tmp_path_factory.mktemp("dist")
    done = run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--sdist", "--outdir", str(out), str(ROOT)])
    wheel, = out.glob("*.whl")
    sdist, = out.glob("*.tar.gz")
    return {"wheel": wheel, "sdist": sdist, "log": done.stdout + done.stderr}


@pytest.fixture(scope="module")
def colab(tmp_path_factory):
    """A fresh virtual environment with only what Colab preinstalls."""
    venv = tmp_path_factory.mktemp("colab") / "venv"
    run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    run([str(python), "-m", "pip", "install", "-q", TORCH])
    run([str(python), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints.txt"), *COLAB_PREINSTALLED])
    done = subprocess.run([str(python), "-c", "import companion"], capture_output=True, text=True, cwd=venv)
    assert done.returncode != 0, "the fresh environment must not see the repository's companion"
    return venv


# The chapters run one-threaded (OTHER_ARITHMETIC), so two run side by side, each in its own
# copy of the fresh environment (a chapter's install cell installs the package into it).
WORKERS = 2


@pytest.fixture(scope="module")
def executed(dist, colab, tmp_path_factory):
    """Every chapter run alone, as a reader runs it: chapter -> (executed notebook, where companion was)."""
    venvs = [colab] + [tmp_path_factory.mktemp(f"colab{k}") / "venv" for k in range(1, WORKERS)]
    for copy in venvs[1:]:
        shutil.copytree(colab, copy, symlinks=True)  # the scripts are not used: python -m only
    free = queue.Queue()
    for venv in venvs:
        free.put(venv)

    def one(chapter):
        venv = free.get()
        try:
            return chapter, run_alone(chapter, dist, venv, tmp_path_factory.mktemp(chapter.stem))
        finally:
            free.put(venv)

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:  # subprocesses: the threads only wait
        return dict(pool.map(one, CHAPTERS))


def environment(venv: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER"))}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"  # the kernel's `python` is the venv's
    env["COURSE_QUICK"] = "1"
    env.update(OTHER_ARITHMETIC)
    return env


# another CPU's arithmetic, seen on this one: no vector kernels, one thread
OTHER_ARITHMETIC = {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def compared_output(cell) -> str:
    """What nbval compares for a cell: its printed text and its displayed values (not images,
    not stderr, where progress bars and warnings go)."""
    def text(value):
        return "".join(value) if isinstance(value, list) else value

    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream" and out.get("name") == "stdout":
            parts.append(text(out["text"]))
        elif out["output_type"] in ("execute_result", "display_data") and "text/plain" in out.get("data", {}):
            if not any(kind.startswith("image/") for kind in out["data"]):
                parts.append(text(out["data"]["text/plain"]) + "\n")
        elif out["output_type"] == "error":
            parts.append(f"{out['ename']}: {out['evalue']}\n")
    return "".join(parts)


def differing_check_cells(stored: dict, executed: dict) -> list[str]:
    """The nbval-check-output cells whose output differs from the stored one."""
    differ = []
    for number, (old, new) in enumerate(zip(stored["cells"], executed["cells"])):
        if "nbval-check-output" in old.get("metadata", {}).get("tags", []):
            want, got = compared_output(old), compared_output(new)
            if want != got:
                lines = [(a, b) for a, b in zip(want.splitlines() + ["<end>"], got.splitlines() + ["<end>"]) if a != b]
                differ.append(f"cell {number}: stored {lines[0][0]!r}, printed {lines[0][1]!r}" if lines
                              else f"cell {number}: outputs differ")
    return differ


EXECUTE = r"""
import json, sys
import nbformat
from nbclient import NotebookClient
notebook = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(notebook, sys.argv[1])
"""


def use_source(notebook: dict, source: str) -> dict:
    """The notebook with its install cell pointed at ``source`` instead of the repository."""
    first = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    text = "".join(first["source"])
    assert re.search(r'^SOURCE = "git\+https://', text, re.M), "the install cell has no SOURCE line"
    first["source"] = re.sub(r'^SOURCE = ".*"$', f'SOURCE = "{source}"', text, flags=re.M)
    return notebook


def outputs(cell) -> str:
    def text(value):
        return "".join(value) if isinstance(value, list) else value

    return "".join(text(o.get("text", "")) + text(o.get("data", {}).get("text/plain", ""))
                   for o in cell.get("outputs", []))


def test_the_wheel_holds_every_module_and_nothing_large(dist):
    names = zipfile.ZipFile(dist["wheel"]).namelist()
    modules = {n for n in names if n.startswith("companion/")}
    in_repo = {p.relative_to(ROOT).as_posix() for p in (ROOT / "companion").rglob("*.py")}
    assert in_repo <= modules, f"missing from the wheel: {sorted(in_repo - modules)}"
    imported = set()
    for path in CHAPTERS:
        for cell in json.loads(path.read_text())["cells"]:
            if cell["cell_type"] == "code" and "exercise" not in cell["metadata"].get("tags", []):
                try:
                    tree = ast.parse("".join(cell["source"]))
                except SyntaxError:
                    continue
                imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
                imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    for module in sorted(m for m in imported if m.split(".")[0] == "companion"):
        path = module.replace(".", "/")
        assert f"{path}.py" in names or f"{path}/__init__.py" in names, f"the notebooks import {module}"
    info = zipfile.ZipFile(dist["wheel"]).infolist()
    assert all(i.file_size < 200_000 for i in info), [i.filename for i in info if i.file_size >= 200_000]
    assert not [n for n in names if n.endswith((".pt", ".tar.gz", ".ipynb", ".npz"))]
    assert dist["wheel"].stat().st_size < 1_000_000
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(dist["wheel"]).read(metadata).decode()
    assert f"Name: {DISTRIBUTION}" in text and "License-Expression: MIT" in text


def test_the_sdist_builds_the_same_package(dist):
    names = tarfile.open(dist["sdist"]).getnames()
    assert any(n.endswith("companion/course/exercises/ch01.py") for n in names)
    assert any(n.endswith("/LICENSE") for n in names)


def test_the_build_has_no_deprecation_warning(dist):
    assert "deprecat" not in dist["log"].lower(), dist["log"]


def test_a_failed_install_says_what_to_try(colab, tmp_path):
    notebook = use_source(json.loads(CHAPTERS[0].read_text()), "file:///nowhere/missing.whl")
    first = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    done = subprocess.run([str(colab / "bin" / "python"), "-c", "".join(first["source"])],
                          capture_output=True, text=True, cwd=tmp_path, env=environment(colab))
    assert done.returncode != 0
    message = done.stderr.strip().splitlines()[-1]
    assert message.startswith(f"Could not install {DISTRIBUTION} from file:///nowhere/missing.whl")
    assert "install it yourself: pip install" in message


def run_alone(chapter: Path, dist, venv: Path, tmp_path: Path):
    """Execute ``chapter`` alone in an empty folder on ``venv``: (the notebook, or the error; companion's path)."""
    # as in a new Colab session: the package is not there until the install cell runs
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "uninstall", "-y", "-q", DISTRIBUTION],
                   capture_output=True)
    folder = tmp_path / "reader"
    folder.mkdir()
    target = folder / chapter.name
    notebook = use_source(json.loads(chapter.read_text()), dist["wheel"].as_uri())
    for cell in notebook["cells"]:
        cell["outputs"] = [] if cell["cell_type"] == "code" else cell.get("outputs")
        if cell["cell_type"] != "code":
            cell.pop("outputs", None)
    target.write_text(json.dumps(notebook))
    done = subprocess.run([str(venv / "bin" / "python"), "-c", EXECUTE, str(target), str(folder)],
                          capture_output=True, text=True, cwd=folder, env=environment(venv))
    if done.returncode != 0:
        return f"the chapter failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}", ""
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import companion; print(companion.__file__)"],
                           capture_output=True, text=True, cwd=folder, env=environment(venv)).stdout
    return json.loads(target.read_text()), where


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_a_chapter_runs_alone_on_the_installed_package(chapter, executed):
    notebook, where = executed[chapter]
    assert not isinstance(notebook, str), notebook
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert f"installed {DISTRIBUTION}" in outputs(cells[0])
    checks = [c for c in cells if "".join(c["source"]).lstrip().startswith("check(")]
    assert checks, "no check cell ran"
    for cell in checks:
        assert "not implemented yet" in outputs(cell), outputs(cell)
    # under another CPU's arithmetic, every compared cell prints what the page shows
    differ = differing_check_cells(json.loads(chapter.read_text()), notebook)
    assert not differ, (f"{chapter.name}: nbval-check-output cells print something else under "
                        f"{OTHER_ARITHMETIC} than their stored output; print facts that hold on any CPU "
                        f"(booleans, counts, numbers rounded far above float noise): " + "; ".join(differ))
    # it used the installed package, not files of the repository
    assert "site-packages" in where and str(ROOT) not in where


def test_solutions_are_reachable_without_the_website(dist, colab, tmp_path):
    run([str(colab / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall", str(dist["wheel"])])
    script = ("from companion.course import show_solution\n"
              "from companion.course.exercises import EXERCISES\n"
              "for exercise_id in EXERCISES:\n"
              "    code = show_solution(exercise_id)\n"
              "    print(exercise_id, 'def ' in code.data, len(code.data.splitlines()))\n")
    done = run([str(colab / "bin" / "python"), "-c", script], cwd=tmp_path, env=environment(colab))
    lines = done.stdout.split("\n")[:-1]
    assert lines and all(line.split()[1] == "True" for line in lines), done.stdout


def test_the_comparison_names_a_check_cell_that_prints_something_else():
    """The guard behind the other-arithmetic run: a check-output cell whose printed text moved
    (float noise printed as 4.8e-07 instead of 3.6e-07) is named; other cells are not compared."""
    stored = json.loads(CHAPTERS[3].read_text())  # chapter 4
    executed = json.loads(CHAPTERS[3].read_text())
    assert differing_check_cells(stored, executed) == []
    number, cell = next((i, c) for i, c in enumerate(executed["cells"])
                        if "nbval-check-output" in c.get("metadata", {}).get("tags", [])
                        and any(o.get("name") == "stdout" for o in c.get("outputs", [])))
    out = next(o for o in cell["outputs"] if o.get("name") == "stdout")
    out["text"] = "max difference 4.8e-07\n"
    differ = differing_check_cells(stored, executed)
    assert len(differ) == 1 and differ[0].startswith(f"cell {number}:") and "4.8e-07" in differ[0], differ
    ignored = next(c for c in executed["cells"] if "nbval-ignore-output" in c.get("metadata", {}).get("tags", [])
                   and c.get("outputs"))
    ignored["outputs"] = []
    assert len(differing_check_cells(stored, executed)) == 1
