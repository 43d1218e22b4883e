"""The package's layout keeps its imports one way: blocks <- data <- models <- course.

- ``companion/*.py`` (the building blocks) import no wing;
- ``companion.data`` imports no model and not the course wing;
- ``companion.models`` does not import the course wing;
- nothing outside ``companion.course`` imports it;
- no module imports itself back through a chain (no cycles).

Imports are read with ``ast`` from the source, so an import inside a function counts too.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "companion"
WINGS = ("models", "data", "course")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """Absolute names of the ``companion`` modules that ``path`` imports."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            found.add(target)
            # "from . import ch01" names submodules
            found.update(f"{target}.{alias.name}" for alias in node.names
                         if (PACKAGE.parent / Path(*f"{target}.{alias.name}".split("."))).with_suffix(".py").exists())
    return {name for name in found if name == "companion" or name.startswith("companion.")}


def wing_of(name: str) -> str:
    """'block', one of WINGS, or 'facade' for the top-level ``companion/__init__.py``."""
    parts = name.split(".")
    if len(parts) == 1:
        return "facade"
    return parts[1] if parts[1] in WINGS else "block"


MODULES = {module_name(p): imports_of(p) for p in sorted(PACKAGE.rglob("*.py"))}

ALLOWED = {  # who may import whom
    "block": {"block"},
    "data": {"block", "data"},
    "models": {"block", "data", "models"},
    "course": {"block", "data", "models", "course", "facade"},
    "facade": {"block", "data", "models"},
}


def violations(modules: dict[str, set[str]]) -> list[str]:
    wrong = []
    for name, imported in modules.items():
        for target in sorted(imported):
            if wing_of(target) not in ALLOWED[wing_of(name)]:
                wrong.append(f"{name} ({wing_of(name)}) imports {target} ({wing_of(target)})")
    return wrong


def cycles(modules: dict[str, set[str]]) -> list[list[str]]:
    """Import cycles between modules (package __init__ files re-export, so they are left out)."""
    graph = {m: {t for t in ts if t in modules and not (PACKAGE.parent / Path(*t.split("."))).is_dir()}
             for m, ts in modules.items() if not (PACKAGE.parent / Path(*m.split("."))).is_dir()}
    found, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return found


def test_the_package_has_the_three_wings():
    for wing in WINGS:
        assert (PACKAGE / wing / "__init__.py").exists(), wing
    assert {"companion.attention", "companion.multihead", "companion.layers"} <= set(MODULES)


def test_imports_go_one_way():
    assert violations(MODULES) == []


def test_no_import_cycles():
    assert cycles(MODULES) == []


@pytest.mark.parametrize("module, bad_import, expected", [
    ("companion.attention", {"companion.data.text"}, "companion.attention (block) imports companion.data.text (data)"),
    ("companion.data.text", {"companion.models.training"}, "(data) imports companion.models.training (models)"),
    ("companion.models.training", {"companion.course.grading"}, "(models) imports companion.course.grading"),
    ("companion", {"companion.course"}, "companion (facade) imports companion.course (course)"),
])
def test_the_checker_catches_a_wrong_import(module, bad_import, expected):
    modules = {name: set(imports) for name, imports in MODULES.items()}
    modules[module] |= bad_import
    assert any(expected in v for v in violations(modules)), violations(modules)


def test_the_checker_catches_a_cycle():
    modules = {name: set(imports) for name, imports in MODULES.items()}
    modules["companion.masks"] |= {"companion.multihead"}   # an import back the other way
    modules["companion.multihead"] |= {"companion.masks"}
    assert cycles(modules), "a masks <-> multihead cycle was not found"


def test_every_subpackage_is_a_package_setuptools_finds():
    from setuptools import find_packages

    found = set(find_packages(str(PACKAGE.parent), include=["companion", "companion.*"]))
    folders = {module_name(p / "__init__.py") for p in PACKAGE.rglob("*") if p.is_dir() and p.name != "__pycache__"}
    assert folders <= found, folders - found


WHEEL_FILE_LIMIT = 200_000  # bytes; tests/reader checks the built wheel against the same limit


def large_files(folder: Path, limit: int = WHEEL_FILE_LIMIT) -> list[str]:
    """Files under ``folder`` (outside caches) of ``limit`` bytes or more."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                  if p.is_file() and "__pycache__" not in p.parts and p.stat().st_size >= limit)


def test_no_file_in_the_package_is_large():
    # the wheel carries every file of companion/ (package data included): stored results keep
    # what the chapters read, not every loss of every run
    assert large_files(PACKAGE) == [], "too large for the wheel; store less"


def test_the_size_check_finds_a_large_file(tmp_path):
    (tmp_path / "results.json").write_bytes(b"0" * WHEEL_FILE_LIMIT)
    (tmp_path / "small.json").write_bytes(b"0" * 10)
    assert large_files(tmp_path) == ["results.json"]
