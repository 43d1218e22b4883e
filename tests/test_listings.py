"""The listings on the site are today's code: every stored ``show_source`` output equals what
``show_source`` prints now, and every listing a cell asks for is displayed.

A stored listing goes stale when the package changes after the notebook was last executed in
full; ``make execute`` (or ``python tools/execute_notebooks.py chapters/NN_*.ipynb``) refreshes
it. Only a cell's last expression is displayed, so a cell holds one ``show_source`` call, as
its last expression.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from companion.course import show_source

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def _is_show_source(node) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "show_source"


def companion_namespace(cells) -> dict:
    """The names the notebook imports from companion (only those: nothing else is executed)."""
    namespace: dict = {}
    for cell in cells:
        try:
            tree = ast.parse(_text(cell["source"]))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "companion":
                exec(compile(ast.Module([node], []), "<imports>", "exec"), namespace)
            elif isinstance(node, ast.Import) and all(a.name.split(".")[0] == "companion" for a in node.names):
                exec(compile(ast.Module([node], []), "<imports>", "exec"), namespace)
    return namespace


def listing_cells(path: Path):
    """(cell number, cell, its parsed source) for every code cell that calls show_source."""
    cells = json.loads(path.read_text())["cells"]
    for number, cell in enumerate(cells):
        if cell["cell_type"] == "code" and "show_source(" in _text(cell["source"]):
            yield number, cell, ast.parse(_text(cell["source"]))


def stored_listing(cell) -> str | None:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "execute_result":
            return _text(out.get("data", {}).get("text/plain", ""))
    return None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_listing_is_the_last_expression_of_its_cell(path):
    wrong = []
    for number, _, tree in listing_cells(path):
        calls = [n for n in ast.walk(tree) if _is_show_source(n)]
        last = tree.body[-1] if tree.body else None
        if len(calls) != 1 or not (isinstance(last, ast.Expr) and _is_show_source(last.value)):
            wrong.append(f"cell {number}: {len(calls)} show_source call(s), last expression "
                         f"{ast.unparse(last) if last else None!r}")
    assert not wrong, (f"{path.name}: only a cell's last expression is displayed; put each show_source "
                       f"in a cell of its own, as its last line: {wrong}")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_stored_listings_are_todays_source(path):
    cells = json.loads(path.read_text())["cells"]
    namespace = companion_namespace([c for c in cells if c["cell_type"] == "code"])
    stale = []
    for number, cell, tree in listing_cells(path):
        call = next(n for n in ast.walk(tree) if _is_show_source(n))
        expression = ast.unparse(call.args[0])
        obj = eval(expression, dict(namespace))  # noqa: S307 -- a name or attribute from the notebook's imports
        today = show_source(obj).data
        stored = stored_listing(cell)
        if stored is None:
            stale.append(f"cell {number}, show_source({expression}): no stored listing")
        elif stored.rstrip("\n") != today.rstrip("\n"):
            old, new = stored.splitlines(), today.splitlines()
            first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
            stale.append(f"cell {number}, show_source({expression}): line {first + 1} stored "
                         f"{old[first] if first < len(old) else '<end>'!r}, today "
                         f"{new[first] if first < len(new) else '<end>'!r}")
    assert not stale, (f"{path.name} shows code that is no longer the package's; re-execute it in full "
                       f"(python tools/execute_notebooks.py {path.relative_to(ROOT)}): " + "; ".join(stale))
