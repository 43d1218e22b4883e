"""The exercise cells in a folder of learner notebooks: what the grader grades.

:func:`find_exercise_cells` reads every ``.ipynb`` under a folder (checkpoints left out) and
returns, per exercise id, the code cells tagged ``exercise`` that claim it, each with the code
of its chapter's earlier exercise cells (the rule runs those first); a file that is not a
readable notebook is reported, not fatal.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Cell", "find_exercise_cells"]


@dataclass
class Cell:
    """An exercise cell found in a notebook: where, and its code."""

    path: Path
    index: int  # the cell's position in the notebook (0-based)
    source: str
    earlier: list[tuple[str, str]] = field(default_factory=list)  # (exercise_id, code) of the chapter's earlier ones

    def where(self, folder: Path) -> str:
        return f"{self.path.relative_to(folder)} (cell {self.index + 1})"


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
