"""The set-up's promises are true: the Python it claims installs the pinned set, every
distribution in the environment make builds is pinned (torch's own dependencies included), and
``make TORCH=...`` reaches every place that installs torch."""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
OWN = canonicalize_name(PYPROJECT["project"]["name"])
MADE_BY_MAKE = (Path(sys.prefix) / ".installed").exists()  # the .venv that `make` builds


def installed():
    """The distributions installed in the environment's site-packages (not the ones a package
    vendors, e.g. setuptools/_vendor, which appear on sys.path once setuptools is imported)."""
    return metadata.distributions(path=[sysconfig.get_paths()["purelib"]])


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin (name==version)"
            found[canonicalize_name(name)] = version.split(";")[0].strip()
    return found


def lowest_python() -> Version:
    claim = PYPROJECT["project"]["requires-python"]
    match = re.fullmatch(r">=\s*(\d+\.\d+)", claim)
    assert match, f"requires-python should be a lower bound (>=3.x), got {claim!r}"
    return Version(match.group(1))


def test_the_readme_claims_the_same_python():
    claim = f"Python >= {lowest_python()}"
    assert claim in (ROOT / "README.md").read_text(), f"the README should say {claim!r}, as pyproject.toml does"


@pytest.mark.skipif(not MADE_BY_MAKE, reason="checks the environment that make builds (.venv)")
def test_every_pin_installs_on_the_lowest_python_claimed():
    lowest = lowest_python()
    pinned = pins()
    refused = []
    for dist in installed():
        name = canonicalize_name(dist.metadata["Name"])
        needs = dist.metadata.get("Requires-Python")
        if name in pinned and needs and not SpecifierSet(needs).contains(f"{lowest}.0"):
            refused.append(f"{name}=={pinned[name]} needs Python {needs}")
    assert not refused, (f"pyproject.toml claims Python >= {lowest}, but these pins do not install there: "
                         f"{refused}; pin versions that do, or claim a newer Python")


@pytest.mark.skipif(not MADE_BY_MAKE, reason="checks the environment that make builds (.venv)")
def test_every_installed_distribution_is_pinned():
    pinned = pins()
    unpinned, other = [], []
    for dist in installed():
        name = canonicalize_name(dist.metadata["Name"])
        if name in {OWN, "torch", "pip"}:  # torch: chosen by make TORCH=...; pip: comes with the venv
            continue
        if name not in pinned:
            unpinned.append(f"{name}=={dist.version}")
        elif pinned[name] != dist.version:
            other.append(f"{name}: pinned {pinned[name]}, installed {dist.version}")
    assert not unpinned, f"installed without a pin in constraints.txt: {sorted(unpinned)}"
    assert not other, f"installed at another version than constraints.txt pins: {other}"


def test_make_installs_torch_with_the_pins_and_passes_it_to_the_readers_path():
    plan = subprocess.run(["make", "-n", "-B", "TORCH=torch==9.9.9", "VENV=/nonexistent-venv", "setup", "test-reader"],
                          cwd=ROOT, capture_output=True, text=True).stdout
    install = [line for line in plan.splitlines() if "pip install" in line and "torch==9.9.9" in line]
    assert install and all("-c constraints.txt" in line for line in install), plan
    assert re.search(r'COURSE_TORCH="?torch==9\.9\.9"?.*pytest.*tests/reader', plan), plan
