"""A tiny stand-in for the Hugging Face hub, on 127.0.0.1, serving model folders as repositories.

It answers the requests huggingface_hub's snapshot_download makes (read in its source,
huggingface_hub 2.x: hf_api.repo_info, hf_api.list_repo_tree, file_download.get_hf_file_metadata
and http_get):

  GET  /api/models/<org>/<name>/revision/<rev>          {"id", "sha", "siblings"}
  GET  /api/models/<org>/<name>/tree/<sha>?recursive=…  [{"type": "file", "path", "size", "oid"}]
  HEAD /<org>/<name>/resolve/<rev>/<file>               X-Repo-Commit, ETag, Content-Length
  GET  /<org>/<name>/resolve/<rev>/<file>               the bytes

Every request is logged (method, path), and the bytes of each file sent are counted (`sent`).
A Range request (`bytes=N-`) gets the rest of the file from byte N (206). `drop_after` makes
the server stop at that byte of any file larger than it and close the connection, as a dropped
network does (a request for the rest from there gets no bytes at all).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse


class FakeHub:
    def __init__(self, repos: dict[str, Path], drop_after: int | None = None) -> None:
        self.repos = repos  # "org/name" -> folder
        self.drop_after = drop_after
        self.log: list[tuple[str, str]] = []
        self.sent: dict[str, int] = {}  # bytes of each file's body sent, over every request
        self.ranges = True  # False: Range headers ignored, every answer the whole file
        self.sha = hashlib.sha1(b"attention-lab-test").hexdigest()  # one commit for every repo
        hub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
                hub._answer(self, head=True)

            def do_GET(self) -> None:  # noqa: N802
                hub._answer(self, head=False)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def files(self, repo: str) -> list[Path]:
        return sorted(p for p in self.repos[repo].iterdir() if p.is_file())

    def _json(self, handler, data) -> None:
        body = json.dumps(data).encode()
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)

    def _answer(self, handler, head: bool) -> None:
        path = unquote(urlparse(handler.path).path)
        self.log.append(("HEAD" if head else "GET", path))
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "models"] and len(parts) >= 6:
            repo = "/".join(parts[2:4])
            if repo not in self.repos:
                return handler.send_error(404)
            if parts[4] == "revision":
                return self._json(handler, {"id": repo, "sha": self.sha, "siblings": [
                    {"rfilename": f.name} for f in self.files(repo)]})
            if parts[4] == "tree":
                return self._json(handler, [
                    {"type": "file", "path": f.name, "size": f.stat().st_size,
                     "oid": hashlib.sha1(f.read_bytes()).hexdigest()} for f in self.files(repo)])
        if len(parts) >= 5 and parts[2] == "resolve":
            repo, name = "/".join(parts[:2]), "/".join(parts[4:])
            file = self.repos.get(repo, Path("/nonexistent")) / name
            if not file.is_file():
                return handler.send_error(404)
            self._file(handler, file, head)
            return None
        handler.send_error(404)
        return None

    def _file(self, handler, file: Path, head: bool) -> None:
        data = file.read_bytes()
        asked = re.fullmatch(r"bytes=(\d+)-", handler.headers.get("Range", "") or "")
        first = int(asked.group(1)) if asked and self.ranges and not head and 0 < int(
            asked.group(1)) < len(data) else 0
        handler.send_response(206 if first else 200)
        handler.send_header("X-Repo-Commit", self.sha)
        handler.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
        handler.send_header("Content-Length", str(len(data) - first))
        if first:
            handler.send_header("Content-Range", f"bytes {first}-{len(data) - 1}/{len(data)}")
        handler.send_header("Content-Type", "application/octet-stream")
        handler.end_headers()
        if head:
            return
        end = len(data) if self.drop_after is None else max(first, min(len(data),
                                                                         self.drop_after))
        for start in range(first, end, 65536):  # in pieces, so the progress moves
            piece = data[start:min(end, start + 65536)]
            handler.wfile.write(piece)
            self.sent[file.name] = self.sent.get(file.name, 0) + len(piece)
        if end < len(data):
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(2)  # the network goes away mid-file
