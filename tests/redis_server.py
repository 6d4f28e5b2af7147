"""A real Redis server for tests and benches: Debian's redis-server on 127.0.0.1, a free port,
nothing saved to disk, in a temporary folder, stopped afterwards.

    from redis_server import running_redis
    with running_redis() as url:      # "redis://127.0.0.1:<port>/0"
        ...

Without redis-server this raises RedisMissing with the command that installs it: the Redis
tests then fail with that message (CI installs the package in .ci/run), never skip.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

REDIS_SERVER = "/usr/bin/redis-server"
INSTALL = "apt-get install -y redis-server"


class RedisMissing(RuntimeError):
    """redis-server is not installed (or would not start)."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def redis_binary() -> str:
    found = shutil.which("redis-server") or (REDIS_SERVER if Path(REDIS_SERVER).exists() else None)
    if not found:
        raise RedisMissing(f"redis-server is not installed, and the Redis tests need a real one: "
                           f"run `{INSTALL}` (.ci/run does).")
    return found


def _tail(folder: Path) -> str:
    """The end of what redis-server said (its output and its log file)."""
    said = [p.read_text(errors="replace") for p in sorted(folder.glob("*.log")) if p.exists()]
    return "\n".join(said)[-2000:]


def _wait_until_up(port: int, process: subprocess.Popen, folder: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RedisMissing(f"redis-server stopped at start:\n{_tail(folder)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2) as s:
            s.sendall(b"PING\r\n")
            if s.recv(16).startswith(b"+PONG"):
                return
        time.sleep(0.05)
    raise RedisMissing(f"redis-server did not answer on port {port} within {timeout:.0f} s:\n"
                       f"{_tail(folder)}")


class RedisProcess:
    """One redis-server in `folder` on 127.0.0.1:`port` that a test can take away and bring
    back as an operator would: `restart()` (SHUTDOWN SAVE, then start again on the same port
    with the same folder, so it loads its data again) and `pause()` / `resume()` (SIGSTOP,
    SIGCONT: a server that answers nothing, longer than a client's timeouts)."""

    def __init__(self, folder: Path, port: int | None = None, binary: str | None = None):
        self.folder, self.port = Path(folder), port or free_port()
        self.binary = binary or redis_binary()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 10.0) -> None:
        command = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", str(self.folder), "--logfile",
                   str(self.folder / "redis.log"), "--protected-mode", "yes"]
        with open(self.folder / "output.log", "ab") as output:
            self.process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        _wait_until_up(self.port, self.process, self.folder, timeout)

    def shut_down(self) -> None:
        """SHUTDOWN SAVE: its data on disk, the process gone."""
        with socket.create_connection(("127.0.0.1", self.port), 5) as s:
            s.sendall(b"SHUTDOWN SAVE\r\n")
            s.recv(64)
        self.process.wait(timeout=30)

    def restart(self) -> None:
        self.shut_down()
        self.start()

    def pause(self) -> None:
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.resume()  # a paused server cannot take its SIGTERM
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def restartable_redis() -> Iterator[RedisProcess]:
    """A RedisProcess in a temporary folder, started; stopped afterwards."""
    with tempfile.TemporaryDirectory(prefix="attention-lab-redis-") as folder:
        server = RedisProcess(Path(folder))
        try:
            server.start()
            yield server
        finally:
            server.stop()


@contextlib.contextmanager
def running_redis(port: int | None = None, timeout: float = 10.0,
                  binary: str | None = None) -> Iterator[str]:
    """Start redis-server on 127.0.0.1 (a free port unless given); yield its URL; stop it."""
    binary = binary or redis_binary()
    port = port or free_port()
    with tempfile.TemporaryDirectory(prefix="attention-lab-redis-") as folder:
        log = Path(folder) / "redis.log"
        output = open(Path(folder) / "output.log", "wb")  # what it says before its log opens
        command = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", folder, "--logfile", str(log),
                   "--protected-mode", "yes"]
        try:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        except OSError as exc:
            output.close()
            raise RedisMissing(f"could not run {binary}: {exc}. Install it with `{INSTALL}`.") \
                from None
        try:
            _wait_until_up(port, process, Path(folder), timeout)
            yield f"redis://127.0.0.1:{port}/0"
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            output.close()
