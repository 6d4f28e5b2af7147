"""The app served on 127.0.0.1 for a browser test, its output in a log file. Every browser
test's server comes from here, and a Streamlit warning in its log fails the test run."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

from server_log import warnings_in  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def need_chromium() -> None:
    """Skip without Debian's Chromium; in CI it must be there (.ci/run installs it)."""
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run should have installed it")
        pytest.skip("Debian's chromium is not installed (apt-get install -y chromium)")


@contextlib.contextmanager
def running_app(log: Path, port: int | None = None, start_within: float = 90.0):
    """Yield the base URL of `streamlit run asgi.py` on 127.0.0.1 (offline), its output in
    `log`; stop it afterwards and fail if the log holds a Streamlit warning."""
    need_chromium()
    port = port or free_port()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "asgi.py", "--server.address",
             "127.0.0.1", "--server.port", str(port), "--server.headless", "true",
             "--browser.gatherUsageStats", "false"],
            cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1"), stdout=out,
            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + start_within
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/_stcore/health", timeout=2)
            break
        except OSError:
            time.sleep(0.5)
    else:
        proc.kill()
        pytest.fail(f"the app did not start within {start_within:.0f} s")
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert warnings_in(log) == []
