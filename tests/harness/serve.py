"""Start the app on 127.0.0.1 for a benchmark, and wait until it answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(log: str | Path | None = None, port: int | None = None,
              probe: str | Path | None = None, **env) -> tuple[subprocess.Popen, str]:
    """`streamlit run asgi.py` offline on `port` (default: a free local port); extra environment
    variables from `env`. The server's output goes to the file `log` (e.g. its tracebacks, for
    a bench that counts errors), or is discarded. With `probe` (a directory) the server runs
    under bench/bench_memory_probe.py, which answers memory questions asked there. Returns the
    process and the app's URL (ending in /)."""
    port = port or free_port()
    command = [sys.executable, "-m", "streamlit", "run", "asgi.py"]
    if probe is not None:
        command = [sys.executable, str(ROOT / "bench" / "bench_memory_probe.py"), "serve",
                   "--dir", str(probe), "--"]
    out = subprocess.DEVNULL
    if log is not None:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        out = open(log, "wb")  # noqa: SIM115 - the child keeps its own copy of the descriptor
    try:
        server = subprocess.Popen(
            [*command, "--server.address", "127.0.0.1", "--server.port", str(port),
             "--server.headless", "true", "--browser.gatherUsageStats", "false",
             # others may edit the tree during a bench: never reload modules mid-run
             "--server.fileWatcherType", "none"],
            cwd=ROOT, env=dict(os.environ, HF_HUB_OFFLINE="1", **env),
            stdout=out, stderr=subprocess.STDOUT if log is not None else subprocess.DEVNULL)
    finally:
        if log is not None:
            out.close()
    return server, f"http://127.0.0.1:{port}/"


def stop_app(server: subprocess.Popen, wait_s: float = 20.0) -> None:
    """Terminate the server started by `start_app`; kill it if it does not stop in time."""
    server.terminate()
    try:
        server.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


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
