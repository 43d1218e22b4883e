"""Committed notebooks: outputs that show the data set are not stored (we do not republish IMDB)."""

import json
import os
from pathlib import Path

import pytest

from companion import read_imdb, tokenize

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
SHARED = ROOT.parent / "shared" / "data" / "aclImdb-labeled.tar.gz"


def output_text(path):
    notebook = json.loads(path.read_text())
    parts = []
    for cell in notebook["cells"]:
        for out in cell.get("outputs", []):
            parts.append("".join(out.get("text", "")))
            for kind in ("text/plain", "text/html"):
                parts.append("".join(out.get("data", {}).get(kind, "")))
    return "\n".join(parts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_data_output_cells_are_stored_without_outputs(path):
    notebook = json.loads(path.read_text())
    for cell in notebook["cells"]:
        if "data-output" in cell.get("metadata", {}).get("tags", []):
            assert cell["outputs"] == [], f"{path.name}: a data-output cell has stored outputs (run make execute)"


@pytest.mark.skipif(not SHARED.exists() and os.environ.get("CI") != "true", reason=f"no {SHARED}")
def test_no_review_text_in_any_stored_output():
    stored = "\n".join(output_text(p) for p in NOTEBOOKS).lower()
    data = read_imdb(SHARED)
    leaked = []
    for split in data.values():
        for text in split.texts:
            for probe in (text.lower()[:60], " ".join(tokenize(text))[:60]):
                if len(probe) >= 40 and probe in stored:
                    leaked.append(probe)
    assert not leaked, f"{len(leaked)} reviews appear in stored notebook outputs, e.g. {leaked[:2]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_code_lines_fit_the_page(path):
    """The site's column shows about 80 characters of code without a scroll bar."""
    long = [(i, line) for i, cell in enumerate(json.loads(path.read_text())["cells"]) if cell["cell_type"] == "code"
            for line in "".join(cell["source"]).splitlines() if len(line) > 80]
    assert not long, f"{path.name}: code lines over 80 characters: {long[:3]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_exercise_has_its_statement_and_solution_directives(path):
    """The site's solution dropdowns point at an {exercise} directive labelled with the exercise id
    (sphinx-exercise): without it the strict build fails with an undefined label."""
    sources = ["".join(cell["source"]) for cell in json.loads(path.read_text())["cells"]]
    for cell in json.loads(path.read_text())["cells"]:
        exercise_id = cell.get("metadata", {}).get("exercise_id")
        if exercise_id:
            assert any(s.startswith("```{exercise}") and f":label: {exercise_id}\n" in s for s in sources), \
                f"{path.name}: no {{exercise}} directive with :label: {exercise_id}"
            assert any(s.startswith(f"````{{solution}} {exercise_id}\n") for s in sources), \
                f"{path.name}: no {{solution}} {exercise_id} dropdown"
