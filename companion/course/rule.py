"""The one rule for what an exercise cell may use, checked before anything runs.

An exercise cell runs after the chapter's exercise imports (:data:`PRELUDE`: ``math``, ``np``,
``torch``, ``F`` and ``nn``, which every chapter's imports cell, after its install cell, imports
too) and after the learner's *earlier exercise cells of the same chapter*, in order. Anything
else the cell needs it imports itself, except the course's own package ``companion``: writing
that function is the exercise. IPython syntax (``%time``, ``!pip``) is not allowed in an
exercise cell, and neither is changing PyTorch's functions (:mod:`companion.course.guard`) or
exiting.
"""

from __future__ import annotations

import ast
import math
import re
import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # only named in a signature: the exercises import this module for RULE
    from .exercises import Exercise

__all__ = ["PRELUDE", "RULE", "static_problem", "as_ipython_runs_it", "uses_companion"]

RULE = ("an exercise cell may use math, np, torch, F and nn, your functions from the earlier exercises "
        "of this chapter, and what the cell imports itself (but not companion)")

PRELUDE = "import math\nimport numpy as np\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


_IPYTHON_CALL = re.compile(r"\bget_ipython\(\)\.(run_line_magic|run_cell_magic|system|getoutput)\(")


def _ipython_line(source: str) -> int | None:
    """The number of the first line in IPython syntax (``%magic``, ``!shell``, ``obj?``), if any.

    The notebook hands over a cell as IPython compiled it, where ``%time x`` already reads
    ``get_ipython().run_line_magic('time', 'x')`` on the same line; both forms count.
    """
    for number, line in enumerate(source.splitlines(), start=1):
        if _IPYTHON_CALL.search(line):
            return number
    try:
        ast.parse(source)
        return None
    except SyntaxError:
        pass
    for number, line in enumerate(source.splitlines(), start=1):
        text = line.strip()
        if text.startswith(("%", "!")) or (text.endswith("?") and not text.startswith("#")):
            return number
    return None


# attributes that import a module by a built name, or reach the checks' own variables through
# the call stack or the garbage collector: around the rule, not through it
_REACHES_AROUND = frozenset({"import_module", "_getframe", "currentframe", "f_globals", "f_locals", "f_back",
                             "get_objects", "get_referrers", "__builtins__", "__globals__"})


def static_problem(exercise: Exercise, source: str) -> str | None:
    """What the rule rejects before running anything (the same text in notebook and grader)."""
    magic = _ipython_line(source)
    if magic is not None:
        return (f"the cell uses IPython syntax on line {magic} (a %magic, !command or ?help): an exercise "
                "cell must be plain Python, so that the grader runs it as the notebook does; move that "
                "line to a cell of its own")
    try:
        tree = ast.parse(source)
    except SyntaxError as error:
        return f"the cell has a syntax error on line {error.lineno}: {error.msg}"
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"companion(\..*)?", node.value):
            names = [node.value]
        if any(name == "companion" or name.startswith("companion.") for name in names):
            return (f"the cell uses the course's package (`{names[0]}`, line {node.lineno}): writing "
                    f"{exercise.function}() yourself is the exercise, so companion's own version is not "
                    f"allowed here ({RULE})")
    for node in ast.walk(tree):
        dynamic = None
        if isinstance(node, ast.Name) and node.id == "__import__":
            dynamic = "__import__"
        elif isinstance(node, ast.Attribute) and (node.attr in _REACHES_AROUND or (
                node.attr == "modules" and isinstance(node.value, ast.Name) and node.value.id == "sys")):
            dynamic = node.attr if node.attr != "modules" else "sys.modules"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            dynamic = next((m for m in modules if m.partition(".")[0] == "importlib"), None)
        if dynamic:
            return (f"the cell uses `{dynamic}` (line {node.lineno}), which reaches modules or the caller's "
                    "variables by a route built at run time; import what you need with an import statement "
                    f"({RULE})")
    if exercise.forbidden:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
                return (f"the cell imports everything from `{node.module}` (`import *`, line {node.lineno}), which "
                        f"can bring in what this exercise asks you not to use ({', '.join(exercise.forbidden)}); "
                        "import the names you need one by one")
            used = node.attr if isinstance(node, ast.Attribute) else None
            if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, ast.MatMult):
                used = "@"  # the matrix-product operator, where the statement asks for another route
            if isinstance(node, ast.alias):
                used = node.name.rpartition(".")[2]
            if used in exercise.forbidden:
                return (f"the cell uses `{used}` (line {getattr(node, 'lineno', '?')}), which the statement of "
                        f"this exercise asks you not to use; write {exercise.function}() from the basic operations "
                        "it names")
    return None


def as_ipython_runs_it(source: str) -> str:
    """The cell as IPython compiles it: leading blank lines dropped, a common indent removed.

    The notebook's check gets the code from IPython, the grader from the ``.ipynb`` file; the
    same clean-up on both keeps line numbers in messages identical.
    """
    lines = source.splitlines(keepends=True)
    while lines and not lines[0].strip():
        lines.pop(0)
    return textwrap.dedent("".join(lines))


def uses_companion(namespace: dict) -> str | None:
    """The name of a value in ``namespace`` that comes from ``companion``, if any."""
    for key, value in namespace.items():
        module = value.__name__ if isinstance(value, type(math)) else getattr(value, "__module__", None)
        if isinstance(module, str) and (module == "companion" or module.startswith("companion.")):
            return key
    return None
