"""A cut hub download resumes from the bytes already on disk (model/hub_resume.py), against the
stand-in hub on 127.0.0.1 (tests/hub_server.py): a whole partial file is not asked for again,
a server that ignores Range requests makes the file start over, and bytes that do not match the
hub's sha256 are thrown away, never resumed from."""

from __future__ import annotations

import hashlib

import pytest

import tiny_models
from hub_server import FakeHub
from model.hub_resume import PART, fetch_blobs

REPO = "lab/tiny-gpt2"
WEIGHTS = "model.safetensors"


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return tiny_models.make_gpt2(tmp_path_factory.mktemp("hub_repo") / "tiny-gpt2")


@pytest.fixture
def hub(repo, tmp_path, monkeypatch):
    from huggingface_hub import constants

    with FakeHub({REPO: repo}) as server:  # huggingface_hub read these at import: set anew
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        monkeypatch.setattr(constants, "ENDPOINT", server.url)
        monkeypatch.setattr(constants, "HUGGINGFACE_CO_URL_TEMPLATE",
                            server.url + "/{repo_id}/resolve/{revision}/{filename}")
        monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
        yield server


def _blob(repo, tmp_path):
    data = (repo / WEIGHTS).read_bytes()
    blobs = tmp_path / "hub" / "models--lab--tiny-gpt2" / "blobs"
    blobs.mkdir(parents=True, exist_ok=True)
    return data, blobs / hashlib.sha256(data).hexdigest()


def _fetch(seen: list | None = None) -> None:
    fetch_blobs(REPO, [WEIGHTS], [].append if seen is None else seen.append, etag_timeout=10)


def test_a_whole_partial_file_is_not_asked_for_again(hub, repo, tmp_path):
    data, blob = _blob(repo, tmp_path)
    blob.with_name(blob.name + PART).write_bytes(data)  # a try that stopped before the rename
    _fetch()
    assert blob.read_bytes() == data and WEIGHTS not in hub.sent


def test_a_server_that_ignores_ranges_starts_the_file_over(hub, repo, tmp_path):
    data, blob = _blob(repo, tmp_path)
    blob.with_name(blob.name + PART).write_bytes(data[: len(data) // 2])
    hub.ranges = False
    seen = []
    _fetch(seen)
    assert blob.read_bytes() == data and hub.sent[WEIGHTS] == len(data)
    assert seen[-1] == len(data) and not blob.with_name(blob.name + PART).exists()


def test_bytes_that_fail_the_checksum_are_thrown_away(hub, repo, tmp_path):
    data, blob = _blob(repo, tmp_path)
    part = blob.with_name(blob.name + PART)
    part.write_bytes(b"\0" * (len(data) // 2))  # not the file's first half
    with pytest.raises(OSError, match="checksum"):
        _fetch()
    assert hub.sent[WEIGHTS] == len(data) - len(data) // 2  # only the rest was asked for
    assert not part.exists() and not blob.exists()
    _fetch()  # the next try starts from byte 0
    assert blob.read_bytes() == data and hub.sent[WEIGHTS] == 2 * len(data) - len(data) // 2
