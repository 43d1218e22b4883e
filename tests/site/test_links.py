"""Launch buttons, download button and the install cell point at this course's repository."""

import json
import re

import yaml

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO = CONFIG["repository"]["url"].rstrip("/")
OWNER_REPO = REPO.removeprefix("https://github.com/")
CHAPTER = "chapters/01_attention_as_kv_store"


def test_config_names_this_course_not_jupyter_books_repository():
    assert "executablebooks" not in REPO and REPO.startswith("https://github.com/")


def test_chapter_page_has_colab_binder_and_download_buttons(site):
    html = (site / f"{CHAPTER}.html").read_text()
    branch = CONFIG["repository"]["branch"]
    assert f'href="https://colab.research.google.com/github/{OWNER_REPO}/blob/{branch}/{CHAPTER}.ipynb"' in html
    assert f"https://mybinder.org/v2/gh/{OWNER_REPO}/{branch}?urlpath=tree/{CHAPTER}.ipynb" in html
    assert re.search(rf'href="[./]*_sources/{CHAPTER}\.ipynb"', html), "no .ipynb download link"
    assert (site / "_sources" / f"{CHAPTER}.ipynb").exists()
    assert "executablebooks/jupyter-book" not in html


def test_notebook_install_cell_uses_the_configured_repository():
    notebook = json.loads((ROOT / f"{CHAPTER}.ipynb").read_text())
    first_code = next(c for c in notebook["cells"] if c["cell_type"] == "code")
    source = "".join(first_code["source"])
    assert f"git+{REPO}" in source
    assert "remove-cell" in first_code["metadata"].get("tags", [])
