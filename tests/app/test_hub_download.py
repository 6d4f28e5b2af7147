"""A hub model downloads on first use, for real, from a stand-in hub on 127.0.0.1
(tests/hub_server.py) that serves a random-weight GPT-2 repository: HF_ENDPOINT points at it,
HF_HOME at a fresh cache, and each "start" is a new Python process (tests/hub_client.py), since
huggingface_hub reads its environment at import.

Proved here: the bytes are counted as they arrive (the app's progress bar) and add up to the
files' sizes; the model loads and runs; a second start makes no request at all; a connection
dropped midway gives a message, and the next try completes; an unreachable hub gives one
sentence that offers the bundled models; HF_HUB_OFFLINE=1 keeps every request away; bundled
models never touch the network, in Python and in the app; hosted mode keeps its allowlist.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import tiny_models
from hub_server import FakeHub

CLIENT = str(Path(__file__).resolve().parents[1] / "hub_client.py")
REPO = "lab/tiny-gpt2"


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return tiny_models.make_gpt2(tmp_path_factory.mktemp("hub_repo") / "tiny-gpt2")


def start(command: str, name: str, endpoint: str, home: Path, **env) -> dict:
    """One fresh process (a new start of the app), online unless env says otherwise."""
    environ = {k: v for k, v in os.environ.items()
               if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    environ.update(HF_ENDPOINT=endpoint, HF_HOME=str(home), OMP_NUM_THREADS="1",
                   HF_HUB_DISABLE_TELEMETRY="1", **env)
    done = subprocess.run([sys.executable, CLIENT, command, name], env=environ,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def model_requests(hub: FakeHub) -> list:
    """Requests about models (huggingface_hub also asks once for its list of agent tools)."""
    return [r for r in hub.log if "agent-harnesses" not in r[1]]


def test_first_use_downloads_with_progress_and_a_second_start_does_not(repo, tmp_path):
    with FakeHub({REPO: repo}) as hub:
        first = start("load", REPO, hub.url, tmp_path)
        assert "error" not in first, first
        assert first["n_layers"] == 2 and first["pattern_shape"][:2] == [2, 4]
        sizes = sum(f.stat().st_size for f in hub.files(REPO))
        done = [d for d, _ in first["seen"]]
        assert done == sorted(done) and len(set(done)) >= 3  # it moved, and only forward
        assert first["seen"][-1] == [sizes, sizes]  # in bytes, every file counted
        assert {total for _, total in first["seen"]} == {sizes}  # the whole size from the start
        fetched = {path.rsplit("/", 1)[-1] for method, path in hub.log
                   if method == "GET" and "/resolve/" in path}
        assert fetched == {f.name for f in hub.files(REPO)}
        assert list((tmp_path / "hub").glob("models--lab--tiny-gpt2/snapshots/*/config.json"))
        before = len(model_requests(hub))
        second = start("load", REPO, hub.url, tmp_path)
        assert second["n_layers"] == 2 and second["seen"] == []
        assert len(model_requests(hub)) == before  # no request at all: the cache answered


def test_a_dropped_connection_gives_a_message_and_the_next_try_completes(repo, tmp_path):
    weights = (repo / "model.safetensors").stat().st_size
    with FakeHub({REPO: repo}, drop_after=weights // 3) as hub:
        cut = start("load", REPO, hub.url, tmp_path)
    assert cut["kind"] == "ModelLoadError"
    assert "connection dropped" in cut["error"] and "try again" in cut["error"]
    with FakeHub({REPO: repo}) as hub:  # the network is back
        again = start("load", REPO, hub.url, tmp_path)
    assert "error" not in again and again["n_layers"] == 2


def test_a_cut_download_resumes_and_the_next_try_fetches_only_the_rest(repo, tmp_path):
    weights = (repo / "model.safetensors").stat().st_size
    cut_at = weights // 2
    with FakeHub({REPO: repo}, drop_after=cut_at) as hub:
        cut = start("load", REPO, hub.url, tmp_path)
        first = hub.sent["model.safetensors"]
    assert cut["kind"] == "ModelLoadError" and "connection dropped" in cut["error"]
    assert "it resumes" in cut["error"] and first == cut_at
    with FakeHub({REPO: repo}) as hub:  # the network is back
        again = start("load", REPO, hub.url, tmp_path)
        second = hub.sent["model.safetensors"]
    assert "error" not in again and again["n_layers"] == 2
    assert second == weights - cut_at  # only the rest, not the whole file again
    sizes = sum(f.stat().st_size for f in hub.files(REPO))
    assert again["seen"][-1] == [sizes, sizes]  # the bar counts the resumed bytes too
    blobs = list((tmp_path / "hub").glob("models--lab--tiny-gpt2/blobs/*"))
    assert blobs and not [b for b in blobs if b.name.endswith(".part")]


def test_an_unreachable_hub_says_so_in_one_sentence_and_offers_the_bundled_models(tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = start("load", REPO, f"http://127.0.0.1:{port}", tmp_path)
    assert result["kind"] == "HubUnreachable" and result["seconds"] < 10
    message = result["error"]
    assert "cannot reach" in message and "minilm" in message
    assert message.count(". ") == 0 and message.endswith(".")  # one sentence


def test_hf_hub_offline_keeps_every_request_away(repo, tmp_path):
    with FakeHub({REPO: repo}) as hub:
        result = start("load", REPO, hub.url, tmp_path, HF_HUB_OFFLINE="1")
        assert result["kind"] == "HubOffline" and "HF_HUB_OFFLINE=1" in result["error"]
        assert hub.log == []


def test_bundled_models_never_touch_the_network(repo, tmp_path):
    with FakeHub({REPO: repo}) as hub:
        result = start("load", "minilm", hub.url, tmp_path)
        assert result["n_layers"] == 6
        page = start("app", "minilm", hub.url, tmp_path)
        assert not page["exception"] and "attn_heatmap" in page["charts"]
        assert hub.log == []


def test_the_app_downloads_a_hub_id_on_first_use_and_says_where_it_went(repo, tmp_path):
    with FakeHub({REPO: repo}) as hub:
        page = start("app", REPO, hub.url, tmp_path)
    assert not page["exception"] and not page["errors"], page
    assert "attn_heatmap" in page["charts"]
    shown = [c for c in page["sidebar_captions"] if c.startswith("Downloaded “lab/tiny")]
    assert len(shown) == 1 and " MB)" in shown[0] and "Hugging Face cache" in shown[0]


def test_hosted_mode_keeps_its_allowlist(repo, tmp_path):
    """A link naming a hub id off the allowlist contacts nobody; on the allowlist, it downloads."""
    with FakeHub({REPO: repo}) as hub:
        refused = start("link", REPO, hub.url, tmp_path, ATTENTION_LAB_HOSTED="1")
        assert not refused["exception"] and refused["model"] == "minilm"
        assert any("does not offer" in w for w in refused["warnings"])
        assert hub.log == []
        listed = start("link", REPO, hub.url, tmp_path, ATTENTION_LAB_HOSTED="1",
                       ATTENTION_LAB_MODELS=f"minilm,{REPO}")
        assert not listed["exception"] and listed["model"] == REPO
        assert "attn_heatmap" in listed["charts"] and model_requests(hub)
