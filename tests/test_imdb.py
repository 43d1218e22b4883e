"""The IMDB loader, offline: small archives built here, downloads from a local HTTP server."""

import functools
import hashlib
import http.server
import io
import os
import tarfile
import threading
from pathlib import Path

import pytest

from companion.data.imdb import ENV_VAR, load_imdb, read_imdb

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "aclImdb-labeled.tar.gz"
LAYOUT = {
    "aclImdb/README": "the data set",
    "aclImdb/train/pos/10_9.txt": "Wonderful.<br />Loved it.",
    "aclImdb/train/pos/2_8.txt": "Great fun.",
    "aclImdb/train/neg/5_1.txt": "Dreadful.",
    "aclImdb/test/pos/7_10.txt": "A masterpiece.",
    "aclImdb/test/neg/3_2.txt": "Boring.",
    "aclImdb/test/neg/1_4.txt": "Meh.",
}


def make_archive(path, files=LAYOUT):
    with tarfile.open(path, "w:gz") as archive:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def md5(path):
    return "md5:" + hashlib.md5(Path(path).read_bytes()).hexdigest()


def test_reads_an_archive_in_a_fixed_order(tmp_path):
    data = read_imdb(make_archive(tmp_path / "imdb.tar.gz"))
    assert data["train"].texts == ["Dreadful.", "Great fun.", "Wonderful.<br />Loved it."]  # neg, then pos by id
    assert data["train"].labels == [0, 1, 1] and data["train"].ratings == [1, 8, 9]
    assert data["test"].labels == [0, 0, 1] and len(data["test"]) == 3


def test_reads_an_extracted_folder_like_the_archive(tmp_path):
    archive = make_archive(tmp_path / "imdb.tar.gz")
    with tarfile.open(archive) as t:
        t.extractall(tmp_path / "x", filter="data")
    assert read_imdb(tmp_path / "x") == read_imdb(archive) == read_imdb(tmp_path / "x" / "aclImdb")


def test_environment_variable_points_at_a_local_copy(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV_VAR, str(make_archive(tmp_path / "imdb.tar.gz")))
    assert len(load_imdb()["train"]) == 3


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no IMDB data at .*nothing.tar.gz; pass the .tar.gz archive"):
        read_imdb(tmp_path / "nothing.tar.gz")


def test_wrong_layout_is_a_clear_error(tmp_path):
    files = {k: v for k, v in LAYOUT.items() if "test/neg" not in k}
    with pytest.raises(ValueError, match=r"no reviews under aclImdb/test/neg/ID_RATING.txt"):
        read_imdb(make_archive(tmp_path / "partial.tar.gz", files))
    (tmp_path / "folder").mkdir()
    with pytest.raises(ValueError, match="not the IMDB data set"):
        read_imdb(tmp_path / "folder")


def test_corrupt_and_truncated_archives_are_clear_errors(tmp_path):
    garbage = tmp_path / "garbage.tar.gz"
    garbage.write_bytes(os.urandom(5000))
    with pytest.raises(ValueError, match="not a readable IMDB archive"):
        read_imdb(garbage)
    big = {f"aclImdb/{s}/{p}/{i}_7.txt": os.urandom(300).hex() for s in ("train", "test") for p in ("pos", "neg") for i in range(30)}
    whole = make_archive(tmp_path / "whole.tar.gz", big).read_bytes()
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_imdb(truncated)


class _Server:
    """A local HTTP server for one archive; ``mode`` can make it misbehave."""

    def __init__(self, folder):
        self.hits, self.mode = 0, "ok"
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.hits += 1
                if server.mode == "cut":  # announce the whole file, send half, hang up
                    data = (Path(folder) / "aclImdb_v1.tar.gz").read_bytes()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.connection.close()
                    return
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/aclImdb_v1.tar.gz"


@pytest.fixture
def server(tmp_path):
    (tmp_path / "www").mkdir()
    make_archive(tmp_path / "www" / "aclImdb_v1.tar.gz")
    s = _Server(tmp_path / "www")
    yield s
    s.httpd.shutdown()


def test_download_verifies_and_caches(server, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    good = md5(tmp_path / "www" / "aclImdb_v1.tar.gz")
    cache = tmp_path / "cache"
    data = load_imdb(url=server.url, known_hash=good, cache_dir=cache, progress=False)
    assert len(data["train"]) == 3 and (cache / "aclImdb_v1.tar.gz").exists()
    load_imdb(url=server.url, known_hash=good, cache_dir=cache, progress=False)
    assert server.hits == 1  # the second call read the verified cache


def test_a_download_with_the_wrong_hash_leaves_nothing_behind(server, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    cache = tmp_path / "cache"
    with pytest.raises(ValueError, match="(?i)hash"):
        load_imdb(url=server.url, known_hash="md5:" + "0" * 32, cache_dir=cache, progress=False)
    assert not any(cache.iterdir())


def test_an_interrupted_download_leaves_nothing_behind(server, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    server.mode = "cut"
    cache = tmp_path / "cache"
    with pytest.raises((ConnectionError, ValueError)):
        load_imdb(url=server.url, known_hash=md5(tmp_path / "www" / "aclImdb_v1.tar.gz"), cache_dir=cache, progress=False)
    assert not cache.exists() or not any(cache.iterdir())


def test_a_corrupt_cached_file_is_not_trusted(server, tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "aclImdb_v1.tar.gz").write_bytes(b"half a download")
    data = load_imdb(url=server.url, known_hash=md5(tmp_path / "www" / "aclImdb_v1.tar.gz"), cache_dir=cache, progress=False)
    assert len(data["test"]) == 3 and server.hits == 1  # fetched again, verified


def test_offline_without_a_local_copy_says_how_to_supply_one(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    with pytest.raises(ConnectionError, match=f"pass load_imdb\\(path=.*or set {ENV_VAR}="):
        load_imdb(url="http://127.0.0.1:9/aclImdb_v1.tar.gz", cache_dir=tmp_path / "cache", progress=False)


@pytest.mark.skipif(not SHARED.exists() and os.environ.get("CI") != "true", reason=f"no {SHARED}")
def test_the_real_archive():
    data = read_imdb(SHARED)
    for split in ("train", "test"):
        assert len(data[split]) == 25_000 and sum(data[split].labels) == 12_500
        ratings = data[split].ratings
        assert all((r >= 7) == bool(y) for r, y in zip(ratings, data[split].labels))  # pos = 7-10 stars
