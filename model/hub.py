"""Hub ids: from the local Hugging Face cache, or downloaded into it on first use.

`fetch(name)` is what loading.resolve calls for a name that is neither bundled nor a folder:

1. the usual Hugging Face cache first (`local_files_only`): a model downloaded once loads
   again with no network request at all;
2. else, when HF_HUB_OFFLINE=1 is set (as Hugging Face documents it), HubOffline: no request;
3. else a quick look whether the hub's address answers (a TCP connection, REACH_SECONDS), so a
   computer with no network gets its one-sentence answer at once instead of after the
   download's own timeouts (HubUnreachable);
4. else `snapshot_download` of the model's config, weights and tokenizer files into the cache.
   `Download` counts its bytes as they arrive (the app draws them as a progress bar), and a
   connection that drops midway gives a message, never a traceback. The next try resumes
   from the bytes already on disk (model/hub_resume.py fetches each file before
   snapshot_download, which then only links them).

The hub's address is huggingface_hub's (HF_ENDPOINT when set), and the cache is the usual one
(HF_HOME / HF_HUB_CACHE). Bundled models and folders never come here.
"""

from __future__ import annotations

import io
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from .hub_resume import fetch_blobs
from .registry import BUNDLED, HubOffline, ModelLoadError

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$|^[A-Za-z0-9][\w.-]*$")
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "tokenizer*"]
REACH_SECONDS = 3.0  # how long the first connection to the hub may take
ETAG_SECONDS = 10.0  # each file's metadata request (huggingface_hub's etag_timeout)
CUT_OFF = ("RemoteProtocolError", "ReadError", "ReadTimeout", "IncompleteRead",
           "ChunkedEncodingError", "ConnectionResetError", "ContentLengthError")


class HubUnreachable(ModelLoadError):
    """A hub id not in the cache, and the hub cannot be reached from this computer."""

    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(
            f"“{name}” would be downloaded from the Hugging Face hub, but this computer cannot "
            "reach it (no network connection), so pick one of the bundled models "
            f"({', '.join(BUNDLED)}), which work offline.")


@dataclass
class Download:
    """Bytes of one download so far, updated from huggingface_hub's worker threads and read
    by whoever draws the progress (the app, every fraction of a second)."""

    name: str
    done: int = 0
    total: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def report(self, n: float, total: float | None) -> None:
        with self._lock:  # two byte counters (received, written) report: keep the larger
            self.done = max(self.done, int(n))
            self.total = max(self.total, int(total or 0))

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    def text(self) -> str:
        return f"{self.done / 1e6:.1f} of {self.total / 1e6:.1f} MB" if self.total else \
            f"{self.done / 1e6:.1f} MB"


def _byte_counter(download: Download):
    """A tqdm class for snapshot_download that draws nothing and tells `download` the bytes of
    every byte bar (unit "B"); the file-count bar is ignored."""
    from tqdm import tqdm

    class ByteCounter(tqdm):
        monitor_interval = 0  # no tqdm monitor thread

        def __init__(self, *args, **kwargs):
            kwargs.pop("name", None)
            kwargs.update(file=io.StringIO(), mininterval=0, disable=False)
            super().__init__(*args, **kwargs)

        def update(self, n=1):
            result = super().update(n)
            if self.unit == "B":
                download.report(self.n, self.total)
            return result

    return ByteCounter


def offline() -> bool:
    """HF_HUB_OFFLINE set to a true value, read now (huggingface_hub reads it at import)."""
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE")
    return constants.HF_HUB_OFFLINE if value is None else value.strip().lower() in (
        "1", "true", "yes", "on")


def reachable(seconds: float = REACH_SECONDS) -> bool:
    """Does the hub's address accept a connection within `seconds`? Behind a proxy the direct
    look says nothing, so the download itself decides (True)."""
    from huggingface_hub import constants

    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                                       "ALL_PROXY", "all_proxy")):
        return True

    url = urlparse(os.environ.get("HF_ENDPOINT") or constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=seconds).close()
        return True
    except (OSError, ValueError):
        return False


def cached(name: str) -> Path | None:
    """The model's snapshot folder in the Hugging Face cache, if it was downloaded whole."""
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(name, allow_patterns=HUB_FILES, local_files_only=True))
    except Exception:  # not cached, or only part of it: huggingface_hub raises several kinds
        return None


def needs_download(name: str) -> bool:
    """Would load_model(name) download it: a hub id (not bundled, not a folder here) that is
    not in the Hugging Face cache yet?"""
    if name in BUNDLED or not HUB_ID.match(name) or name.count("/") > 1 or Path(name).is_dir():
        return False
    return cached(name) is None


def failure(name: str, exc: Exception, download: Download | None) -> str:
    """Why a download failed, in one plain sentence."""
    kinds = {cls.__name__ for cls in type(exc).__mro__}
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        kinds |= {cls.__name__ for cls in type(cause).__mro__}
    if kinds & {"RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError"}:
        why = "the hub has no public model by that name (check the spelling, e.g. gpt2)"
    elif kinds & set(CUT_OFF) or "size" in str(exc) and "consistency" in str(exc).lower():
        got = f" after {download.text()}" if download and download.done else ""
        why = (f"the connection dropped{got}, so the download was cut off: try again when the "
               "network is back (it resumes), or pick a bundled model")
    elif kinds & {"ConnectError", "ConnectTimeout", "TimeoutException", "LocalEntryNotFoundError"}:
        why = "the hub could not be reached: check the network connection"
    else:
        why = f"the download failed ({type(exc).__name__})"
    return f"“{name}” could not be downloaded from the Hugging Face hub: {why}."


def _repo_files(name: str) -> dict[str, int]:
    """The files snapshot_download will fetch and their sizes, from the hub's file list."""
    from fnmatch import fnmatch

    from huggingface_hub import HfApi
    from huggingface_hub.hf_api import RepoFile

    return {f.path: f.size or 0 for f in HfApi().list_repo_tree(name, recursive=True)
            if isinstance(f, RepoFile) and any(fnmatch(f.path, p) for p in HUB_FILES)}


def download(name: str, progress: Download | None = None) -> Path:
    """Download a hub id's files into the Hugging Face cache (see the module's docstring)."""
    from huggingface_hub import snapshot_download

    if offline():
        raise HubOffline(name)
    if not reachable():
        raise HubUnreachable(name)
    try:
        files = _repo_files(name)
        if progress is not None:  # the whole size first, so the bar does not jump
            progress.report(0, sum(files.values()))
        # each file's bytes kept across tries, so a cut download resumes (model/hub_resume.py)
        fetch_blobs(name, sorted(files), lambda n: progress and progress.report(n, 0),
                    ETAG_SECONDS)
        return Path(snapshot_download(
            name, allow_patterns=HUB_FILES, etag_timeout=ETAG_SECONDS, max_workers=2,
            tqdm_class=_byte_counter(progress) if progress is not None else None))
    except Exception as exc:  # network, auth, not found, cut off: a message, never a traceback
        raise ModelLoadError(failure(name, exc, progress)) from exc


def fetch(name: str, progress: Download | None = None) -> Path:
    """The cached snapshot, or a fresh download (HubOffline / HubUnreachable / ModelLoadError)."""
    return cached(name) or download(name, progress)
