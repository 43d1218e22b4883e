"""How the chapters read: the main-line measure of the chapter standard's "Teach first".

The main line is a chapter's markdown outside fenced blocks (code, directives such as exercise,
solution, dropdown), ``<details>`` blocks (measurement notes, "What the checks try"), display
math, tables, HTML and headings, with inline math, inline code, link targets, section
references and years removed. Paragraphs of fewer than 8 words are not counted.

Per chapter: numbers per paragraph (mean, max, paragraphs with more than 3), hedges per 1,000
words ("not measured", "this run", "seed", "likely", "this CPU", ...) and the words of each
exercise statement (inside its ``{exercise}`` directive, nested blocks left out).

    python tools/readability.py [chapters/NN_*.ipynb ...] [--check]

prints a table and the chapters short of the targets; ``--check`` exits 1 when one is short.
tests/test_readability.py holds every chapter to the targets.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

# the standard's targets: numbers per paragraph (mean), numbers in one paragraph (max),
# hedges per 1,000 words, words in one exercise statement
TARGETS = {"mean": 1.0, "max": 3, "hedges": 1.5, "statement": 90}

NUMBER = re.compile(r"(?<![\w.])[-−]?\d[\d,]*(?:\.\d+)?(?:\s?%|\s?×|x\b)?")
HEDGE = re.compile(r"not measured|not tested|not timed|unmeasured|not shown here|this run|one run|"
                   r"\bseeds?\b|\blikely\b|this cpu|this machine|in our runs|not separate", re.I)
FENCE = re.compile(r"^(`{3,}|:{3,})(.*)$")


@dataclass
class Reading:
    """The main line of one chapter, measured."""
    paragraphs: list[str]
    statements: list[str]

    @property
    def numbers(self) -> list[int]:
        return [len(NUMBER.findall(p)) for p in self.paragraphs]

    @property
    def mean(self) -> float:
        return sum(self.numbers) / max(1, len(self.paragraphs))

    @property
    def max(self) -> int:
        return max(self.numbers, default=0)

    @property
    def dense(self) -> list[str]:
        """Paragraphs with more than ``TARGETS['max']`` numbers."""
        return [p for p, n in zip(self.paragraphs, self.numbers) if n > TARGETS["max"]]

    @property
    def hedges(self) -> float:
        words = sum(len(p.split()) for p in self.paragraphs)
        return 1000 * sum(len(HEDGE.findall(p)) for p in self.paragraphs) / max(1, words)

    @property
    def statement(self) -> int:
        return max((len(s.split()) for s in self.statements), default=0)

    def short(self) -> list[str]:
        """The targets this chapter misses, each as 'what: got > target'."""
        got = {"mean": self.mean, "max": self.max, "hedges": self.hedges, "statement": self.statement}
        return [f"{k}: {got[k]:.2f} > {t}" for k, t in TARGETS.items() if got[k] > t]


def _split(markdown: str) -> tuple[list[str], list[str]]:
    """The main-line lines of one markdown cell, and the exercise statements in it."""
    main, statements, lines, i = [], [], markdown.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE.match(line)
        if fence:
            mark, head, body, j = fence.group(1), fence.group(2), [], i + 1
            while j < len(lines) and not (lines[j].startswith(mark) and lines[j].strip() == mark):
                body.append(lines[j])
                j += 1
            if "{exercise}" in head:
                statements.append(" ".join(_statement(body)))
            main.append("")
            i = j + 1
            continue
        if line.lstrip().lower().startswith("<details"):
            while i < len(lines) and "</details>" not in lines[i].lower():
                i += 1
            main.append("")
            i += 1
            continue
        if line.startswith("$$"):  # display math, to the line that closes it
            i += 1
            while i < len(lines) and not lines[i].rstrip().endswith("$$"):
                i += 1
            main.append("")
            i += 1
            continue
        stripped = line.lstrip()
        main.append("" if line.startswith("#") or stripped.startswith(("|", "<")) else line)
        i += 1
    return main, statements


def _statement(body: list[str]) -> list[str]:
    """An exercise directive's text without its options and nested blocks."""
    text, nested = [], False
    for line in body:
        if re.match(r"^(`{3,}|:{3,})\{", line):
            nested = True
        elif nested and re.match(r"^(`{3,}|:{3,})\s*$", line):
            nested = False
        elif not nested and not line.startswith(":"):
            text.append(line)
    return text


def _clean(paragraph: str) -> str:
    p = re.sub(r"\$[^$]+\$", " ", paragraph)
    p = re.sub(r"`[^`]+`", " ", p)
    p = re.sub(r"\]\([^)]*\)", "]", p)
    p = re.sub(r"\{[a-z-]+\}`[^`]*`", " ", p)
    p = re.sub(r"\b(?:section|chapter|figure|table|step)s?\s+\d+(?:\.\d+)?", " ", p, flags=re.I)
    return re.sub(r"\b(?:19|20)\d\d\b", " ", p)  # years of citations


def read(notebook: Path | dict) -> Reading:
    """Measure one chapter notebook (a path or its parsed JSON)."""
    nb = json.loads(Path(notebook).read_text()) if not isinstance(notebook, dict) else notebook
    paragraphs, statements = [], []
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        source = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        main, found = _split(source)
        statements += found
        for p in re.split(r"\n\s*\n", "\n".join(main)):
            p = " ".join(p.split())
            if len(p.split()) >= 8:
                paragraphs.append(_clean(p))
    return Reading(paragraphs, statements)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="exit 1 when a chapter misses a target")
    args = parser.parse_args()
    paths = args.notebooks or sorted(Path(__file__).resolve().parents[1].glob("chapters/[0-9][0-9]_*.ipynb"))
    print(f"{'chapter':30} {'paras':>5} {'num/para':>8} {'max':>4} {'>3':>3} {'hedge/1kw':>9} {'statement max':>13}")
    missed = False
    for path in paths:
        r = read(path)
        print(f"{path.stem[:30]:30} {len(r.paragraphs):5} {r.mean:8.2f} {r.max:4} {len(r.dense):3} "
              f"{r.hedges:9.1f} {r.statement:13}")
        for what in r.short():
            print(f"  short of target: {what}")
            missed = True
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
