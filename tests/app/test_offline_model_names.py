"""The app's message when the hub cannot be reached names the bundled models as the sidebar's
model box does ("MiniLM (reads text)"), never by their internal ids ("minilm"). A fresh process
per start (tests/hub_client.py), as in test_hub_download.py."""

from __future__ import annotations

import socket

import pytest

from test_hub_download import REPO, start

from model import BUNDLED
from ui.model_names import short_label

pytestmark = pytest.mark.app


def test_the_unreachable_hub_message_uses_the_model_box_names(tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    page = start("app", REPO, f"http://127.0.0.1:{port}", tmp_path)
    said = [e for e in page["errors"] if "cannot reach" in e]
    assert said, page["errors"]
    for name in BUNDLED:
        assert short_label(name) in said[0], said[0]
    ids = [name for name in BUNDLED if short_label(name) != name]  # ids the box never shows
    assert ids and not [name for name in ids if name in said[0].replace(short_label(name), "")]
