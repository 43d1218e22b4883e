"""``make lab``: JupyterLab is part of the set-up and serves the chapter notebooks."""

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_jupyterlab_serves_the_chapters(tmp_path):
    assert importlib.util.find_spec("jupyterlab"), "no JupyterLab: make setup installs the lab extra for make lab"
    port = free_port()
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
               "--IdentityProvider.token=", f"--ServerApp.root_dir={ROOT / 'chapters'}"]
    command += ["--allow-root"] if os.geteuid() == 0 else []  # as make lab does (CI runs as root)
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path)}
    log = tmp_path / "lab.log"  # a file, not a pipe: a full pipe would stall the server
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("w"), env=env)
    try:
        for _ in range(120):  # up to a minute to start
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents", timeout=2) as reply:
                    listing = json.load(reply)
                break
            except OSError:
                assert server.poll() is None, log.read_text()
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not answer within a minute")
        names = {item["name"] for item in listing["content"]}
        assert {p.name for p in (ROOT / "chapters").glob("*.ipynb")} <= names
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/lab", timeout=10) as reply:
            assert reply.status == 200 and "JupyterLab" in reply.read().decode()
    finally:
        server.terminate()
        server.wait(timeout=30)
