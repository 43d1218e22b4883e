"""The numbers a chapter's text quotes come from that chapter's outputs.

The realistic drift: a notebook is re-executed, a printed number changes, and the sentence that
quotes it does not. So every measured-looking number in a chapter's markdown (a decimal, a
percentage, a number with thousands separators, a power of ten, a whole number of ms, MiB or
GiB) must appear among the numbers
its stored outputs print: as printed, or rounded from a printed number to the digits the prose
gives ("0.29" from "0.2931"; "0.85 million" from "848,985"). Numbers that are not measurements
(a paper's figure, a setting, a definition) stand in ``tests/prose_constants.yml`` with a
reason; an entry the prose no longer uses fails too, so the list stays short and true.

Not counted: section references ("section 3.4", "(3.4)" where 3.4 is a heading of the
chapter), math (``$...$``), code spans and blocks, link targets and directive options.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
CONSTANTS = yaml.safe_load((Path(__file__).with_name("prose_constants.yml")).read_text()) or {}

# a quantity in the prose: 15,393,794 | 0.29 | 1e-5 | 35 % | 2.4e-07
PROSE_NUMBER = re.compile(
    r"(?<![\w.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+(?:e[-+]?\d+)?|\d+e[-+]?\d+|\d+(?=\s?(?:%|MiB|GiB|ms\b)))"
    r"(?:[\s-](million|billion))?(?![\w])", re.I)
OUTPUT_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?", re.I)
HEADING_NUMBER = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)+)", re.M)


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else value


def prose(markdown: str) -> str:
    """The markdown's running text: math, code, link targets and directive options removed."""
    text = re.sub(r"^(`{3,})[^\n]*\{(?:math|code-cell|literalinclude|code-block|code)\}.*?^\1",
                  " ", markdown, flags=re.S | re.M)
    text = re.sub(r"^(`{3,})(?!\{)[^\n]*\n.*?^\1", " ", text, flags=re.S | re.M)  # plain code fences
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"(?<!\\)\$[^$\n]+\$", " ", text)
    text = re.sub(r"`[^`\n]+`", " ", text)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"^:[\w-]+:.*$", " ", text, flags=re.M)
    return re.sub(r"<[^>]+>", " ", text)


def output_text(cells) -> str:
    parts = []
    for cell in cells:
        for out in cell.get("outputs", []):
            parts.append(_text(out.get("text", "")))
            for kind in ("text/plain", "text/markdown"):
                parts.append(_text(out.get("data", {}).get(kind, "")))
    return "\n".join(parts)


def output_numbers(text: str) -> set[Decimal]:
    numbers = set()
    for found in OUTPUT_NUMBER.findall(text):
        try:
            numbers.add(Decimal(found.replace(",", "")))
        except InvalidOperation:
            pass
    return numbers


def quoted(number: str, scale: str | None, printed: set[Decimal]) -> bool:
    """``number`` (as the prose writes it) is a printed number, or one rounded to its digits."""
    value = Decimal(number.replace(",", ""))
    if "e" in number.lower():  # a power of ten: the same order and first digits
        return any(o and abs(o - value) <= abs(value) * Decimal("0.05") for o in printed)
    factor = {"million": Decimal(10) ** 6, "billion": Decimal(10) ** 9}.get((scale or "").lower(), Decimal(1))
    step = Decimal(1).scaleb(value.as_tuple().exponent)
    for o in printed:
        o = o / factor
        if o == value or (o.as_tuple().exponent < value.as_tuple().exponent and o.quantize(step) == value):
            return True
    return False


def prose_numbers(cells):
    """(number, scale, context) for every quantity in the notebook's markdown."""
    markdown = [_text(c["source"]) for c in cells if c["cell_type"] == "markdown"]
    sections = {m for text in markdown for m in HEADING_NUMBER.findall(text)}
    for text in markdown:
        body = prose(text)
        for match in PROSE_NUMBER.finditer(body):
            number, scale = match.group(1), match.group(2)
            after = body[match.end(1):match.end(1) + 3]
            if number in sections and "%" not in after:  # "## 3.4 ...", "section 3.4", "(3.4)"
                continue
            context = body[max(0, match.start() - 60):match.end() + 20].replace("\n", " ")
            yield number, scale, context


def unquoted_numbers(cells, constants: dict) -> tuple[list[str], set[str]]:
    """The prose's numbers that no output prints, and the constants the prose uses."""
    printed = output_numbers(output_text(cells))
    unquoted, used = [], set()
    for number, scale, context in prose_numbers(cells):
        key = f"{number} {scale}" if scale else number
        if key in constants:
            used.add(key)
        elif not quoted(number, scale, printed):
            unquoted.append(f"{key!r} in '...{context}...'")
    return unquoted, used


def constants_of(path: Path) -> dict:
    return {str(k): v for k, v in (CONSTANTS.get(path.stem) or {}).items()}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_numbers_in_the_text_are_printed_by_the_notebook(path):
    constants = constants_of(path)
    unquoted, used = unquoted_numbers(json.loads(path.read_text())["cells"], constants)
    assert not unquoted, (
        f"{path.name}: the text quotes numbers that no output prints (a re-execution changed them, or they "
        f"were never measured). Quote the printed number, print the number the text needs, or, for a "
        f"setting, a definition or a paper's figure, list it in tests/prose_constants.yml with a reason: "
        + "; ".join(unquoted))
    unused = sorted(set(constants) - used)
    assert not unused, f"{path.name}: tests/prose_constants.yml lists numbers the text no longer quotes: {unused}"


def drift(text: str, number: str) -> str:
    """``text`` with every print of ``number`` moved by 7 % and 0.3, at the same precision."""
    decimals = len(number.split(".")[1])
    moved = f"{float(number) * 1.07 + 0.3:.{decimals}f}"
    return re.sub(rf"(?<![\d.]){re.escape(number)}(?!\d)", moved, text)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_planted_drift_is_caught(path):
    """Re-execution changes a printed number that the prose quotes: the guard names it."""
    cells = json.loads(path.read_text())["cells"]
    constants = constants_of(path)
    printed_text = output_text(cells)
    candidates = [n for n, s, _ in prose_numbers(cells)
                  if not s and n not in constants and "." in n and len(n.replace(".", "").lstrip("0")) >= 2
                  and re.search(rf"(?<![\d.]){re.escape(n)}(?!\d)", printed_text)
                  and not quoted(n, None, output_numbers(drift(printed_text, n)))]  # only its own print backs it
    if not candidates:
        pytest.skip(f"{path.name} quotes no printed number with two digits")
    number = max(candidates, key=lambda n: len(n.replace(".", "").lstrip("0")))  # the most precise
    for cell in cells:
        for out in cell.get("outputs", []):
            for holder, key in [(out, "text")] + [(out.get("data", {}), k) for k in ("text/plain", "text/markdown")]:
                if key in holder:
                    holder[key] = drift(_text(holder[key]), number)
    unquoted, _ = unquoted_numbers(cells, constants)
    assert any(entry.startswith(repr(number)) for entry in unquoted), (number, unquoted)


def test_every_constant_has_a_reason():
    for stem, entries in CONSTANTS.items():
        assert any(p.stem == stem for p in NOTEBOOKS), f"prose_constants.yml: no notebook {stem}"
        for number, reason in (entries or {}).items():
            assert isinstance(reason, str) and len(reason.split()) >= 2, f"{stem}: {number} needs a reason"


def test_the_guard_catches_a_changed_output():
    """A re-execution that changes a printed number the prose quotes is caught."""
    cells = [{"cell_type": "markdown", "source": "## 4.7 Ablation\nRemoving head 1 leaves 65.0 % (section 4.7)."},
             {"cell_type": "code", "source": "", "outputs": [{"output_type": "stream", "text": "head 1: 65.0%\n"}]}]
    found = [(n, s) for n, s, _ in prose_numbers(cells)]
    assert found == [("65.0", None)]
    assert quoted("65.0", None, output_numbers(output_text(cells)))
    assert quoted("65", None, output_numbers("65.0%"))
    assert quoted("0.29", None, output_numbers("|dL/dq| = 0.2931"))
    assert quoted("0.85", "million", output_numbers("848,985 parameters"))
    assert not quoted("65.0", None, output_numbers("head 1: 71.5%"))
    assert not quoted("0.29", None, output_numbers("|dL/dq| = 0.2831"))
    assert not quoted("2.154", None, output_numbers("bits per character 2.161"))
