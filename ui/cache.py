"""Cached model loading and cached runs. Cached objects are shared: never mutate them."""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import threading
import time

import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import StopException

from model import LoadedModel, ModelLoadError, Trace, load_model
from model.allocator import arena_count, keep_freed_memory, release_free_memory, rss_bytes
from model.hook_names import suffix

from server import settings
from server.budget import MemoryBudget
from server.gate import MemoryCeiling, RunQueue
from server.settings import MODEL_CACHE_ENTRIES

from . import busy
from .download import fetch_with_progress, load_with_progress

# How often the memory keeper may hand freed memory back to the system, and for how long
# after an eviction or a closed session it keeps doing so.
RELEASE_EVERY_SECONDS = 5
RELEASE_WINDOW_SECONDS = 60

# As early as the app can: glibc's tuning, and no more malloc arenas than model/allocator.py
# allows from now on (the arenas made before stay: a server sets MALLOC_ARENA_MAX, see README).
keep_freed_memory()
_LOG = logging.getLogger(__name__)
# What the process holds before any model: the "model" part of the memory ceiling is this plus
# the bytes of each model loaded since (this module is imported once per server process).
_BASE_RSS = rss_bytes() or 0
_MODEL_BYTES: dict[str, int] = {}

# The app shows patterns, q/k (for the Q·K view), the residual stream and the embeddings;
# scores and q·k are recomputed from q and k when needed, so they are not kept. Names match
# whole (not as substrings: "hook_q" in "hook_qk" once kept every q·k matrix, twice the
# patterns' memory).
APP_HOOKS = frozenset(suffix(kind, what).rsplit(".", 1)[-1] for kind, what in (
    ("attn", "pattern"), ("attn", "q"), ("attn", "k"), ("attn", "rot_q"), ("attn", "rot_k"),
    ("resid", "pre"), ("resid", "post"), ("embed", "tok"), ("embed", "pos"), ("embed", "type"),
    ("embed", "sum")))
EMBED_NORM = suffix("embed", "ln").rsplit(".", 1)[0] + "."  # "embed.ln.": kept whole


def keep_for_app(name: str) -> bool:
    return name.rsplit(".", 1)[-1] in APP_HOOKS or name.startswith(EMBED_NORM)


@st.cache_resource(max_entries=MODEL_CACHE_ENTRIES, show_spinner="Loading the model…")
def _load(name: str, _progress=None) -> LoadedModel:
    """(_progress: a callback for the weights going in; not part of the cache key)"""
    loaded = load_model(name, foreign=True, progress=_progress)  # foreign: via HF's own code
    _MODEL_BYTES[name] = sum(t.untyped_storage().nbytes() for t in
                             [*loaded.model.parameters(), *loaded.model.buffers()])
    return loaded


def loaded(name: str) -> bool:
    """Whether this process has loaded the model (and not only begun to)."""
    return name in _MODEL_BYTES


def warm(name: str) -> None:
    """Load a bundled model before any page asks for it (ui/engine_warm.py), in a slot of the
    run queue like any load."""
    with run_queue().slot():
        _load(name)


def get_model(name: str) -> LoadedModel:
    """The shared model object. In hosted mode only allowlisted names are accepted, and the
    models this browser session trained itself (their folders are only known to it)."""
    trained_here = name in st.session_state.get("trained_models", {}).values()
    refusal = None if trained_here else settings.model_refusal(name)
    if refusal:
        raise ModelLoadError(refusal)
    fetch_with_progress(name)  # a hub id on first use: downloaded here, with a progress bar
    return load_with_progress(name, _load)  # the first load in this process: a progress bar


@st.cache_resource
def _run_cache() -> MemoryBudget:
    """The one memory budget of this server process: runs and everything derived from them."""
    return MemoryBudget(*settings.memory_budget())


@st.cache_resource
def run_queue() -> RunQueue:
    """The server's queue of page runs (server/gate.py)."""
    return RunQueue(settings.run_slots())


@st.cache_resource
def memory_ceiling() -> MemoryCeiling:
    """The server's last line of defence (server/gate.py): over model + budget + margin of
    resident memory, new computations are refused with a message."""
    def ceiling() -> int | None:
        models = sorted(_MODEL_BYTES.values())[-MODEL_CACHE_ENTRIES:]  # the cache keeps these
        return settings.memory_ceiling(_BASE_RSS + sum(models))
    return MemoryCeiling(ceiling, rss_bytes, release_free_memory)


@contextlib.contextmanager
def turn_to_compute():
    """Around a computation (a cache miss): it waits its turn in the run queue, showing its
    place in line, unless this run holds a slot already (app.py's whole-page slot); a
    fragment's rerun never passed there. Then, if the server is over its memory ceiling, the
    run stops with a message instead of computing."""
    queue = run_queue()
    if queue.holds_slot():
        queue.mark_computing()  # the queue's wait estimate: a long run
        refuse_if_short_of_memory()
        yield
        return
    line = busy.BusyLine()
    with queue.slot(on_wait=line, computes=True):
        line.clear()
        refuse_if_short_of_memory()
        yield


def refuse_if_short_of_memory() -> None:
    """Over the server's memory ceiling: a message on the page, and this run stops."""
    message = memory_ceiling().refusal()
    if message:
        st.warning(message, icon=":material/memory:")
        st.stop()
        raise StopException  # no script to stop (a bare thread): stop the caller all the same


_KEEPER = {"dirty_until": 0.0}  # this module is imported once per server process


def note_freed() -> None:
    """Something big was let go (a closed session, a finished training run): the memory keeper
    hands the freed memory back to the system over the next minute. Any thread may call it."""
    _KEEPER["dirty_until"] = time.monotonic() + RELEASE_WINDOW_SECONDS


@st.cache_resource
def start_memory_keeper() -> threading.Thread:
    """One thread per server: every RELEASE_EVERY_SECONDS, `keep_memory` (runs nobody read for
    settings.idle_seconds() leave the budget, and freed memory goes back to the system)."""
    store, idle = _run_cache(), settings.idle_seconds()
    if settings.hosted() and not os.environ.get("MALLOC_ARENA_MAX"):
        _LOG.warning("MALLOC_ARENA_MAX is not set: glibc made %s malloc arenas before the app "
                     "could limit them, and memory freed in them may not go back to the system. "
                     "Start the server with MALLOC_ARENA_MAX=1 (README, hosted mode).",
                     arena_count())

    def keep() -> None:
        while True:
            time.sleep(RELEASE_EVERY_SECONDS)
            keep_memory(store, idle)

    thread = threading.Thread(target=keep, name="attention-lab-memory", daemon=True)
    thread.start()
    return thread


def keep_memory(store: MemoryBudget, idle: float, release=release_free_memory) -> None:
    """One round of the memory keeper: drop the runs nobody has read for `idle` seconds, and
    while memory was recently evicted or freed, ask glibc to give free pages back (RSS falls,
    not just Python's count). It keeps asking for a minute because an evicted run is freed
    only when the last page that was drawing it finishes."""
    store.drop_idle(idle)
    if store.evicted_bytes:
        store.evicted_bytes = 0
        _KEEPER["dirty_until"] = time.monotonic() + RELEASE_WINDOW_SECONDS
    if time.monotonic() < _KEEPER["dirty_until"]:
        release()


def shared(kind: str):
    """Like st.cache_data, but in the server's one memory budget and without copies: the value
    is shared by every session and must never be mutated. Arguments whose name starts with "_"
    are not part of the key (pass a key argument that names them)."""
    def decorate(fn):
        params = list(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        def wrapper(*args):
            key = (kind,) + tuple(a for p, a in zip(params, args) if not p.startswith("_"))
            store = _run_cache()
            value = store.get(key)
            if value is not None:
                return value
            with turn_to_compute():
                return store.get_or_compute(key, lambda: fn(*args))
        return wrapper
    return decorate


def cached_run(name: str, text: str, pair: str = "", keep=keep_for_app, kind: str = "app",
               as_batch: bool = False) -> Trace:
    """model.run(text, pair, keep=keep), cached per (name, text, pair, kind, as_batch) in the
    shared cache bounded by entries and bytes. `kind` names the `keep` selection, so different
    selections don't collide; as_batch runs text and pair as a padded batch of two instead of
    a sentence pair."""
    store = _run_cache()
    key = ("run", name, text, pair, kind, as_batch)
    trace = store.get(key)
    if trace is not None:
        return trace

    def run() -> Trace:
        model = get_model(name)
        if as_batch:
            return model.run([text, pair], keep=keep)
        return model.run(text, pair or None, keep=keep)

    with turn_to_compute(), st.spinner("Running the model…"):
        return store.get_or_compute(key, run)


def get_trace(name: str, text: str, pair: str) -> Trace:
    return cached_run(name, text, pair)
