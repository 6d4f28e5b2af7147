"""Run Attention Lab as N identical replicas behind nginx, sharing one Redis, on this machine.

    python deploy/launch.py --replicas 3 --listen 127.0.0.1:8080

starts redis-server, N `streamlit run asgi.py` processes on free local ports and nginx in front
of them (deploy/attention-lab.conf.template, the same file deploy/compose.yaml uses), all as
plain foreground processes whose files (configs, logs, Redis's data) go in one folder. Ctrl-C
stops everything. tests/deploy and bench/bench_class.py use `running_cluster` from here.

Needs the Debian packages redis-server and nginx (/usr/bin/redis-server, /usr/sbin/nginx).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = Path(__file__).resolve().parent / "attention-lab.conf.template"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
REDIS = shutil.which("redis-server") or "/usr/bin/redis-server"
COOKIE = "attention_lab_replica"  # the sticky cookie nginx sets (see the template)
LOG_LINE = re.compile(r'"(?P<method>\S+) (?P<path>\S+) [^"]*" (?P<status>\d+) '
                      r"replica=(?P<replica>.*?) cookie=(?P<cookie>\S*) ")  # the access log

# nginx's own settings around the template: one worker is plenty on one machine; every path it
# writes is under its prefix folder (-p), so nothing needs root.
MAIN_CONF = """worker_processes 1;
{user}
events {{ worker_connections 4096; }}
http {{
    client_body_temp_path temp/body;
    proxy_temp_path temp/proxy;
    fastcgi_temp_path temp/fastcgi;
    uwsgi_temp_path temp/uwsgi;
    scgi_temp_path temp/scgi;
    include attention-lab.conf;
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def render(listen: str, servers: list[str], access_log: str) -> str:
    """The template with its three ${ATTENTION_LAB_...} names filled in, as envsubst would;
    nginx's own $variables are left alone. `servers`: "host:port" of each replica."""
    values = {
        "ATTENTION_LAB_LISTEN": listen,
        "ATTENTION_LAB_SERVERS": "\n    ".join(
            f"server {s} max_fails=1 fail_timeout=10s;" for s in servers),
        "ATTENTION_LAB_ACCESS_LOG": access_log,
    }
    return re.sub(r"\$\{(ATTENTION_LAB_[A-Z_]+)\}", lambda m: values[m.group(1)],
                  TEMPLATE.read_text(encoding="utf-8"))


def wait_until(check, within_s: float, what: str, poll_s: float = 0.2) -> None:
    """Call check() until it returns true; RuntimeError naming `what` after within_s."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(poll_s)
    raise RuntimeError(f"{what} did not start within {within_s:.0f} s")


def answers(url: str) -> bool:
    try:
        urllib.request.urlopen(url, timeout=2).read()
        return True
    except OSError:
        return False


def port_open(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Replica:
    """One `streamlit run asgi.py` on 127.0.0.1:port, its output in `log`."""
    port: int
    log: Path
    env: dict
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "asgi.py",
                 "--server.port", str(self.port), "--server.address", "127.0.0.1",
                 "--server.headless", "true", "--browser.gatherUsageStats", "false",
                 # the defaults, said out loud: behind nginx the page, its websocket and its
                 # uploads all come from one origin, which these two checks accept
                 "--server.enableCORS", "true", "--server.enableXsrfProtection", "true"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT)

    def wait(self, within_s: float = 180.0) -> None:
        def up() -> bool:
            if self.proc.poll() is not None:
                raise RuntimeError(f"replica on port {self.port} exited; see {self.log}")
            return answers(self.url + "/_stcore/health")
        wait_until(up, within_s, f"the replica on port {self.port}")

    def kill(self) -> None:
        """SIGKILL: the replica dies as in a crash, without closing its websockets politely."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


@dataclass
class Cluster:
    """What `running_cluster` started. `url` is nginx's (ends without a slash)."""
    folder: Path
    url: str
    store: str
    replicas: list[Replica]
    procs: list[subprocess.Popen] = field(default_factory=list)  # redis (if any), nginx

    @property
    def access_log(self) -> Path:
        return self.folder / "nginx" / "logs" / "attention_lab.log"

    def replica_at(self, address: str) -> int | None:
        """The index of the replica whose "127.0.0.1:port" nginx logged."""
        for i, replica in enumerate(self.replicas):
            if address == f"127.0.0.1:{replica.port}":
                return i
        return None

    def served(self, cookie: str, at_least: int = 1) -> list[str]:
        """The replicas ("127.0.0.1:port") nginx logged for requests with this sticky cookie,
        oldest first; after a failover the one that answered. nginx logs a request just after
        answering it: this waits a moment for `at_least` lines."""
        found: list[str] = []
        for _ in range(50):
            lines = self.access_log.read_text(encoding="utf-8").splitlines()
            found = [m["replica"].split(",")[-1].strip() for m in map(LOG_LINE.search, lines)
                     if m and m["cookie"] == cookie]
            if len(found) >= at_least:
                break
            time.sleep(0.05)
        return found

    def cookie_for(self, replica: int, name: str) -> str:
        """A sticky cookie value that nginx routes to this replica."""
        for n in range(200):
            value = f"{name}-{n}"
            urllib.request.urlopen(urllib.request.Request(
                self.url + "/_stcore/health", headers={"Cookie": f"{COOKIE}={value}"}),
                timeout=30).read()
            if self.replica_at(self.served(value)[-1]) == replica:
                return value
        raise RuntimeError(f"no cookie reached replica {replica}")

    def restart(self, i: int, within_s: float = 180.0) -> None:
        self.replicas[i].stop()
        self.replicas[i].start()
        self.replicas[i].wait(within_s)

    def stop_redis(self) -> None:
        """SHUTDOWN SAVE, as an operator restarting Redis does: its data on disk, then gone."""
        port = int(self.store.rsplit(":", 1)[1].split("/")[0])
        with socket.create_connection(("127.0.0.1", port), 5) as conn:
            conn.sendall(b"SHUTDOWN SAVE\r\n")
            conn.recv(64)
        self.procs[0].wait(timeout=30)

    def start_redis(self) -> None:
        """Redis again on the same port, reading what stop_redis saved."""
        port = int(self.store.rsplit(":", 1)[1].split("/")[0])
        self.procs[0] = start_redis(self.folder, port)[0]


def start_redis(folder: Path, port: int | None = None) -> tuple[subprocess.Popen, str]:
    """redis-server on a free 127.0.0.1 port (or `port`), no timed disk snapshots (class data
    is short-lived; SHUTDOWN SAVE still writes them, and a start in `folder` reads them)."""
    port = port or free_port()
    out = open(folder / "redis.log", "wb")  # noqa: SIM115 - the child keeps its own copy
    proc = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
         "--dir", str(folder)], stdout=out, stderr=subprocess.STDOUT)
    out.close()
    wait_until(lambda: port_open(port), 20, "redis-server")
    return proc, f"redis://127.0.0.1:{port}/0"


def start_nginx(folder: Path, listen: str, ports: list[int]) -> subprocess.Popen:
    """nginx in the foreground with its prefix in folder/nginx, in front of the replicas."""
    prefix = folder / "nginx"
    for sub in ("logs", "temp"):
        (prefix / sub).mkdir(parents=True, exist_ok=True)
    site = render(listen, [f"127.0.0.1:{p}" for p in ports], "logs/attention_lab.log")
    (prefix / "attention-lab.conf").write_text(site, encoding="utf-8")
    # run as root (a container), nginx's workers would drop to "nobody" and could not write
    # the temp folders made here; as anyone else the directive does not apply
    user = "user root;" if os.geteuid() == 0 else ""
    (prefix / "nginx.conf").write_text(MAIN_CONF.format(user=user), encoding="utf-8")
    out = open(prefix / "logs" / "stdout.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(
        [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
         "-g", f"daemon off; pid {prefix / 'nginx.pid'}; "
               f"error_log {prefix / 'logs' / 'error.log'} warn;"],
        stdout=out, stderr=subprocess.STDOUT)
    out.close()
    port = int(listen.rsplit(":", 1)[-1])

    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited; see {prefix / 'logs'}")
        return port_open(port)
    wait_until(up, 20, "nginx")
    return proc


def replica_env(store: str, secret: str, extra: dict | None) -> dict:
    """Every replica's environment: the same class store and the same cookie secret (a
    browser moved to another replica keeps its cookies valid), the client's address from the
    header nginx sets (the template's X-Real-IP), offline, small malloc arenas."""
    return dict(os.environ, ATTENTION_LAB_CLASS_STORE=store, STREAMLIT_SERVER_COOKIE_SECRET=secret,
                ATTENTION_LAB_CLIENT_HEADER="X-Real-IP", HF_HUB_OFFLINE="1", MALLOC_ARENA_MAX="1",
                **(extra or {}))


@contextlib.contextmanager
def running_cluster(folder: Path, replicas: int = 2, store: str = "redis",
                    listen: str | None = None, env: dict | None = None,
                    start_within: float = 180.0):
    """Start Redis (store="redis"; or store="sqlite" for one shared SQLite file, or any
    store URL), `replicas` app processes (in parallel) and nginx; yield a Cluster; stop all."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    procs: list[subprocess.Popen] = []
    reps: list[Replica] = []
    try:
        if store == "redis":
            redis, store = start_redis(folder)
            procs.append(redis)
        elif store == "sqlite":
            store = f"sqlite:///{folder / 'classes.sqlite'}"
        common = replica_env(store, secrets.token_urlsafe(32), env)
        reps = [Replica(free_port(), folder / f"replica{i}.log", common) for i in range(replicas)]
        for replica in reps:
            replica.start()
        with ThreadPoolExecutor(len(reps)) as pool:
            list(pool.map(lambda r: r.wait(start_within), reps))
        listen = listen or f"127.0.0.1:{free_port()}"
        procs.append(start_nginx(folder, listen, [r.port for r in reps]))
        host = listen if ":" in listen else f"127.0.0.1:{listen}"
        yield Cluster(folder, f"http://{host}", store, reps, procs)
    finally:
        for replica in reps:
            replica.stop()
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replicas", type=int, default=3, help="app processes (default 3)")
    parser.add_argument("--listen", default="127.0.0.1:8080",
                        help="nginx's address (default 127.0.0.1:8080; 0.0.0.0:80 for a room)")
    parser.add_argument("--store", default="redis",
                        help='"redis" (started here), "sqlite" or a store URL')
    parser.add_argument("--dir", help="folder for configs and logs (default: a new temp folder)")
    args = parser.parse_args(argv)
    if args.replicas < 1:
        parser.error("--replicas must be at least 1")
    for tool in [NGINX] + ([REDIS] if args.store == "redis" else []):
        if not Path(tool).exists():
            parser.error(f"{tool} is not installed (apt-get install nginx redis-server)")
    folder = Path(args.dir or tempfile.mkdtemp(prefix="attention-lab-"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with running_cluster(folder, args.replicas, args.store, args.listen) as cluster:
        sys.stdout.write(f"Attention Lab on {cluster.url}/ ({args.replicas} replicas, store "
                         f"{cluster.store}); logs in {folder}. Ctrl-C stops it.\n")
        sys.stdout.flush()
        with contextlib.suppress(KeyboardInterrupt):
            while all(p.poll() is None for p in cluster.procs):
                time.sleep(1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
