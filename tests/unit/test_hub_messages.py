"""model/hub.py's plain-words answers, without a network: which failure gets which sentence,
when the hub counts as reachable, and which names would be downloaded at all."""

from __future__ import annotations

import socket

import pytest

from model import hub


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _error(kind: str) -> Exception:
    return type(kind, (Exception,), {})("boom")


@pytest.mark.parametrize("kind, words", [
    ("RepositoryNotFoundError", "no public model by that name"),
    ("RemoteProtocolError", "connection dropped after 1.0 of 4.0 MB"),
    ("ConnectError", "could not be reached"),
    ("SomethingElse", "the download failed (SomethingElse)"),
])
def test_each_failure_gets_its_sentence(kind, words):
    progress = hub.Download("x/y")
    progress.report(1_000_000, 4_000_000)
    message = hub.failure("x/y", _error(kind), progress)
    assert words in message and message.startswith("“x/y” could not be downloaded")
    assert message.endswith(".") and "Traceback" not in message


def test_a_cut_that_only_the_cause_names_is_still_a_dropped_connection():
    try:
        try:
            raise _error("ReadError")
        except Exception as cause:
            raise OSError("download failed") from cause
    except OSError as exc:
        assert "connection dropped" in hub.failure("x/y", exc, None)


def test_reachable_looks_at_the_endpoint_unless_a_proxy_decides(monkeypatch):
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY",
                "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    assert not hub.reachable(1.0)
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.getsockname()[1]}")
        assert hub.reachable(1.0)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert hub.reachable(1.0)


def test_only_hub_ids_missing_from_the_cache_would_download(tmp_path):
    assert not hub.needs_download("minilm")  # bundled
    assert not hub.needs_download(str(tmp_path))  # a folder
    assert not hub.needs_download("a/b/c")  # not a hub id
    assert hub.needs_download("lab/not-in-any-cache-0")
