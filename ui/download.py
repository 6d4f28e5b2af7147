"""A model on first use: a hub id downloaded into the Hugging Face cache with a progress bar
in bytes (model/hub.py does the work; this draws it), then the weights going into the model
with a progress bar of their own.

The download runs in a worker thread while this script's thread redraws the bar a few times a
second, so the bar moves with the bytes. Once a name is in the cache it is remembered here and
never checked again in this process.
"""

from __future__ import annotations

import threading
import time

import streamlit as st

from model.hub import Download, download, needs_download
from model.registry import ModelLoadError

from .text import md_escape

REDRAW_SECONDS = 0.25
RETRY_AFTER_SECONDS = 30  # a failed download is not tried again on every rerun before this
_PRESENT: set[str] = set()  # names known to be in the cache (or not hub ids at all)
_FAILED: dict[str, tuple[float, ModelLoadError]] = {}  # name -> (when, why), for a while
_LOADED: set[str] = set()  # names loaded once in this process (then the model cache has them)


def fetch_with_progress(name: str) -> None:
    """Download `name` first if it is a hub id the cache lacks; raises ModelLoadError (and its
    kinds HubOffline, HubUnreachable) with a one-sentence message when it cannot."""
    if name in _PRESENT:
        return
    failed = _FAILED.get(name)
    if failed and time.monotonic() - failed[0] < RETRY_AFTER_SECONDS:
        raise failed[1]
    if not needs_download(name):
        _PRESENT.add(name)
        return
    progress, outcome = Download(name), {}

    def work() -> None:
        try:
            outcome["path"] = download(name, progress)
        except ModelLoadError as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=work, name=f"download {name}", daemon=True)
    worker.start()
    place = st.empty()  # where the page will be, in sight (the sidebar's end may not be)
    label = f"Downloading “{md_escape(name)}” from the Hugging Face hub"
    while worker.is_alive():
        place.progress(progress.fraction, text=f"{label}: {progress.text()}")
        worker.join(REDRAW_SECONDS)
    place.empty()
    if "error" in outcome:
        _FAILED[name] = (time.monotonic(), outcome["error"])
        raise outcome["error"]
    _FAILED.pop(name, None)
    _PRESENT.add(name)
    st.sidebar.caption(f"Downloaded “{md_escape(name)}” ({progress.text()}) into the "
                       "Hugging Face cache: next time it loads from there.")


class Stages:
    """Where a load is: "reading" (bytes of the weight files) or "loading" (numbers going into
    the model), how far, out of how much. Written by the loading thread, read by the page."""

    def __init__(self) -> None:
        self.stage, self.done, self.total = "reading", 0, 0

    def report(self, stage: str, done: int, total: int) -> None:
        self.stage, self.done, self.total = stage, done, total  # read together, roughly

    def bar(self) -> tuple[float, str]:
        fraction = min(1.0, self.done / self.total) if self.total else 0.0
        if self.stage == "reading":
            text = (f"Reading the model's weights: {self.done / 1e6:,.1f} of "
                    f"{self.total / 1e6:,.1f} MB" if self.total else "Reading the model's weights…")
        else:
            text = (f"Putting the weights into the model: {self.done / 1e6:,.1f} of "
                    f"{self.total / 1e6:,.1f} million numbers")
        return fraction, text


def load_with_progress(name: str, load):
    """load(name, _progress=callback) (the cached loader), the first time for this name with
    a progress bar of the weights being read and going into the model; afterwards a plain call
    (a cache hit, or after an eviction a reload under the loader's own spinner)."""
    if name in _LOADED:
        return load(name)
    stages, outcome = Stages(), {}

    def work() -> None:
        try:
            outcome["model"] = load(name, _progress=stages.report)
        except Exception as exc:  # handed to this thread, raised below as it was
            outcome["error"] = exc

    worker = threading.Thread(target=work, name=f"load {name}", daemon=True)
    worker.start()
    place = st.empty()
    while worker.is_alive():
        fraction, text = stages.bar()
        place.progress(fraction, text=text)
        worker.join(REDRAW_SECONDS)
    place.empty()
    if "error" in outcome:
        raise outcome["error"]
    _LOADED.add(name)
    return outcome["model"]
