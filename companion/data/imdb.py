"""The Large Movie Review Dataset (IMDB) for chapter 7: download, verify, read.

Maas et al., "Learning Word Vectors for Sentiment Analysis", ACL 2011: 25,000 training and
25,000 test reviews, half positive (rating >= 7), half negative (rating <= 4), stored as
``aclImdb/{train,test}/{pos,neg}/ID_RATING.txt``.

Where the data comes from, first match wins:

1. ``load_imdb(path=...)``: a local ``.tar.gz`` archive or an extracted ``aclImdb`` folder;
2. the environment variable ``COURSE_IMDB`` (the same; offline machines and CI use it);
3. the official archive, downloaded once with a progress bar, its md5 verified, into the
   cache folder (``cache_dir=`` or pooch's per-user cache). The download is written to a
   temporary file and moved into place only after the hash matches, so an interrupted or
   corrupted download never leaves a file that a later run trusts.
"""

from __future__ import annotations

import os
import re
import tarfile
import zlib
from dataclasses import dataclass
from pathlib import Path

__all__ = ["IMDB_URL", "IMDB_MD5", "ENV_VAR", "Split", "load_imdb", "read_imdb"]

IMDB_URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
IMDB_MD5 = "7c2ac02c03563afcf9b574c7e56c153a"
ENV_VAR = "COURSE_IMDB"
_REVIEW = re.compile(r"(?:^|/)aclImdb/(train|test)/(pos|neg)/(\d+)_(\d+)\.txt$")


@dataclass
class Split:
    """One split of the data set, in a fixed order (negatives then positives, by review id).

    Attributes:
        texts: the reviews, as written (with their ``<br />`` tags).
        labels: 1 for positive, 0 for negative.
        ratings: the reviewer's 1-10 star rating.
    """

    texts: list[str]
    labels: list[int]
    ratings: list[int]

    def __len__(self) -> int:
        return len(self.texts)


def load_imdb(path: str | os.PathLike | None = None, *, cache_dir: str | os.PathLike | None = None,
              url: str = IMDB_URL, known_hash: str = f"md5:{IMDB_MD5}", progress: bool = True) -> dict[str, Split]:
    """Load IMDB's labelled reviews (chapter 7).

    Args:
        path: a local archive (``.tar.gz``) or extracted ``aclImdb`` folder; default: the
            ``COURSE_IMDB`` environment variable, else the download.
        cache_dir: where the download is kept; default: pooch's per-user cache.
        url, known_hash: the archive to download and its ``"md5:..."``/``"sha256:..."`` hash.
        progress: show a progress bar while downloading.

    Returns:
        ``{"train": Split, "test": Split}``.
    """
    if path is None and os.environ.get(ENV_VAR):
        path = os.environ[ENV_VAR]
        if not Path(path).exists():
            raise FileNotFoundError(f"the environment variable {ENV_VAR} names {path}, where there is nothing; "
                                    f"correct it (the .tar.gz archive or the extracted aclImdb folder) or unset "
                                    "it to download the data")
    if path is None:
        path = _download(url, known_hash, cache_dir, progress)
    return read_imdb(path)


def _download(url: str, known_hash: str, cache_dir, progress: bool) -> Path:
    import pooch  # imported here: only a download needs it
    import requests

    try:
        return Path(pooch.retrieve(url, known_hash=known_hash, path=cache_dir or pooch.os_cache("companion"),
                                   fname="aclImdb_v1.tar.gz", progressbar=progress))
    except requests.exceptions.RequestException as error:
        raise ConnectionError(
            f"could not download the IMDB archive from {url} ({type(error).__name__}). Without internet, "
            f"download it elsewhere and pass load_imdb(path='.../aclImdb_v1.tar.gz') or set {ENV_VAR}=<archive or folder>"
        ) from error


def read_imdb(path: str | os.PathLike) -> dict[str, Split]:
    """Read the reviews from an IMDB archive or an extracted ``aclImdb`` folder (chapter 7).

    Raises:
        FileNotFoundError: nothing at ``path``.
        ValueError: a corrupt or truncated archive, or a layout other than
            ``aclImdb/{train,test}/{pos,neg}/ID_RATING.txt``.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no IMDB data at {path}; pass the .tar.gz archive or the extracted aclImdb folder")
    found: dict[str, list[tuple[bool, int, int, str]]] = {"train": [], "test": []}
    for match, text in (_archive_reviews(path) if path.is_file() else _folder_reviews(path)):
        split, sentiment, review_id, rating = match.groups()
        found[split].append((sentiment == "pos", int(review_id), int(rating), text))
    for split in ("train", "test"):
        for label, sentiment in ((False, "neg"), (True, "pos")):
            if not any(item[0] == label for item in found[split]):
                raise ValueError(
                    f"{path} holds no reviews under aclImdb/{split}/{sentiment}/ID_RATING.txt: not the IMDB "
                    "data set, or another layout (expected aclImdb/{train,test}/{pos,neg}/ID_RATING.txt)"
                )
    return {split: _to_split(items) for split, items in found.items()}


def _archive_reviews(path: Path):
    """Yield ``(name match, text)`` for every review file in a tar archive."""
    try:
        with tarfile.open(path, "r:*") as archive:
            for member in archive:
                match = _REVIEW.search(member.name)
                if match and member.isfile():
                    data = archive.extractfile(member).read()
                    try:
                        text = data.decode("utf-8")
                    except UnicodeDecodeError as error:
                        raise ValueError(f"{path}: the review {member.name} is not UTF-8 text ({error}); the "
                                         "IMDB reviews are UTF-8: the archive is corrupt or not the IMDB data "
                                         "set") from error
                    yield match, text
    except (tarfile.TarError, EOFError, OSError, UnicodeDecodeError, zlib.error) as error:
        raise ValueError(
            f"{path} is not a readable IMDB archive ({type(error).__name__}: {error}); it may be truncated or "
            "corrupt: delete it and download again"
        ) from error


def _folder_reviews(path: Path):
    """Yield ``(name match, text)`` for every review file of an extracted copy."""
    root = path.parent if path.name == "aclImdb" else path
    for file in sorted(root.glob("aclImdb/*/*/*.txt")):
        match = _REVIEW.search(file.relative_to(root).as_posix())
        if match:
            try:
                yield match, file.read_text(encoding="utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"{file} is not UTF-8 text ({error}); the IMDB reviews are UTF-8: the copy is "
                                 "corrupt or not the IMDB data set") from error


def _to_split(items) -> Split:
    items.sort(key=lambda item: (item[0], item[1]))
    return Split(texts=[t for *_, t in items], labels=[int(p) for p, *_ in items], ratings=[r for _, _, r, _ in items])
