"""Fixtures for tests of the built website (``make book`` builds it into _build/html)."""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _unavailable(reason: str):
    """Skip locally; under CI=true a missing prerequisite is a failure, never a silent skip."""
    if IN_CI:
        pytest.fail(f"{reason} (CI=true requires it)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def site() -> Path:
    if not (SITE / "index.html").exists():
        _unavailable(f"no built site at {SITE}; run `make book` first")
    return SITE


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="session")
def server(site):
    """Serve the site on 127.0.0.1 at a free port; yields the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        _unavailable("no Chromium found; install Debian's `chromium` package (make test does so as root) "
                     "or point CHROMIUM at a Chromium binary")
    return path
