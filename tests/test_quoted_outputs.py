"""Prose that quotes a cell's output quotes what that output now shows.

The realistic drift: a chapter quotes a generated sample ("a story of the story of ..."), the
notebook is re-executed, the sample changes, and the sentence keeps quoting the old one (chapter
8 did). A markdown cell that quotes another cell's output names that cell in its metadata,
``"quotes_outputs_of": "<cell id>"``; every double-quoted fragment of the markdown must then
appear in that cell's stored outputs (a trailing "..." marks a fragment cut short and is not
compared).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
QUOTED = re.compile(r'"([^"]{2,})"')  # a quoted fragment, across line breaks too


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def stored_output(cell: dict) -> str:
    parts = []
    for out in cell.get("outputs", []):
        parts.append(_text(out.get("text", "")))
        for kind in ("text/plain", "text/html", "text/markdown"):
            parts.append(_text(out.get("data", {}).get(kind, "")))
    text = html.unescape(re.sub(r"<[^>]+>", "", "\n".join(parts)))
    return re.sub(r"\s+", " ", text)


def misquoted(cells: list[dict]) -> list[str]:
    """The quoted fragments of every quoting markdown cell that its source cell's outputs lack."""
    by_id = {cell.get("id"): cell for cell in cells}
    problems = []
    for cell in cells:
        source_id = cell.get("metadata", {}).get("quotes_outputs_of")
        if cell["cell_type"] != "markdown" or source_id is None:
            continue
        if source_id not in by_id:
            problems.append(f"cell {cell.get('id')} quotes the outputs of {source_id!r}, which is not a cell id")
            continue
        stored = stored_output(by_id[source_id])
        fragments = QUOTED.findall(_text(cell["source"]))
        if not fragments:
            problems.append(f"cell {cell.get('id')} names {source_id!r} but quotes nothing")
        for fragment in fragments:
            wanted = re.sub(r"\s+", " ", fragment.strip().removesuffix("...").strip())
            if wanted not in stored:
                problems.append(f"cell {cell.get('id')} quotes {fragment!r}, which the stored outputs of "
                                f"{source_id} do not show")
    return problems


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_quoted_outputs_are_in_the_stored_outputs(path):
    problems = misquoted(json.loads(path.read_text())["cells"])
    assert not problems, f"{path.name}: " + "; ".join(problems) + (
        " (a re-execution changed the output: quote what it shows now)")


def test_the_chapter_quoting_samples_is_marked():
    """Chapter 8's sample commentary stays under this test (removing the marker would silence it)."""
    cells = json.loads((ROOT / "chapters" / "08_generative_transformer.ipynb").read_text())["cells"]
    marked = [c for c in cells if c.get("metadata", {}).get("quotes_outputs_of")]
    assert marked, "chapter 8's commentary on its samples should name the cell it quotes (quotes_outputs_of)"


def test_a_stale_quotation_is_caught():
    cells = [{"id": "out", "cell_type": "code", "source": "",
              "outputs": [{"output_type": "display_data",
                           "data": {"text/html": "<td>This movie was <span>a story of the story</span></td>"}}]},
             {"id": "md", "cell_type": "markdown", "metadata": {"quotes_outputs_of": "out"},
              "source": 'a loop ("a story of the story ...") and "twox"'}]
    assert misquoted(cells) == ["cell md quotes 'twox', which the stored outputs of out do not show"]
    cells[1]["source"] = 'a loop ("a story of the story ...")'
    assert misquoted(cells) == []
