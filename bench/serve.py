"""Start the app on 127.0.0.1 for a benchmark, and wait until it answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(**env) -> tuple[subprocess.Popen, str]:
    """`streamlit run app.py` offline on a free local port, output discarded; extra
    environment variables from `env`. Returns the process and the app's URL (ending in /)."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.address", "127.0.0.1",
         "--server.port", str(port), "--server.headless", "true",
         "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1", **env),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return server, f"http://127.0.0.1:{port}/"


def wait_healthy(url: str, since: float, limit_s: float = 120.0, poll_s: float = 0.1) -> None:
    """Poll the health endpoint until it answers; `since` is when the server was started."""
    while True:
        try:
            urllib.request.urlopen(url + "_stcore/health", timeout=2)
            return
        except OSError:
            if time.perf_counter() - since > limit_s:
                raise RuntimeError("the app server did not start") from None
            time.sleep(poll_s)
