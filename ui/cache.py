"""Cached model loading and cached runs. Cached objects are shared: never mutate them."""

from __future__ import annotations

import threading
from collections import OrderedDict

import streamlit as st

from model import LoadedModel, ModelLoadError, Trace, load_model

from . import settings
from .settings import MODEL_CACHE_ENTRIES

# The app shows patterns, q/k (for the Q·K view), the residual stream and the embeddings;
# scores and q·k are recomputed from q and k when needed, so they are not kept.
APP_HOOKS = ("hook_pattern", "hook_q", "hook_k", "hook_rot_q", "hook_rot_k", "hook_resid_pre",
             "hook_resid_post", "hook_tok", "hook_pos", "hook_type", "hook_sum", "embed.ln")


def keep_for_app(name: str) -> bool:
    return any(part in name for part in APP_HOOKS)


class RunCache:
    """Least-recently-used runs, bounded by entry count and by the bytes of their tensors.

    One per server process, shared by every session (the same text on the same model is run
    once). Thread-safe; a run bigger than the whole budget is returned but not kept.
    """

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self._runs: OrderedDict[tuple, tuple[Trace, int]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(size for _, size in self._runs.values())

    def __len__(self) -> int:
        return len(self._runs)

    def get(self, key: tuple) -> Trace | None:
        with self._lock:
            if key not in self._runs:
                return None
            self._runs.move_to_end(key)
            return self._runs[key][0]

    def put(self, key: tuple, trace: Trace) -> None:
        size = trace.nbytes
        with self._lock:
            self._runs.pop(key, None)
            if size > self.max_bytes:
                return
            self._runs[key] = (trace, size)
            total = sum(s for _, s in self._runs.values())
            while len(self._runs) > self.max_entries or total > self.max_bytes:
                _, (_, freed) = self._runs.popitem(last=False)
                total -= freed


@st.cache_resource(max_entries=MODEL_CACHE_ENTRIES, show_spinner="Loading the model…")
def _load(name: str) -> LoadedModel:
    return load_model(name)


def get_model(name: str) -> LoadedModel:
    """The shared model object. In hosted mode only allowlisted names are accepted, and the
    models this browser session trained itself (their folders are only known to it)."""
    trained_here = name in st.session_state.get("trained_models", {}).values()
    refusal = None if trained_here else settings.model_refusal(name)
    if refusal:
        raise ModelLoadError(refusal)
    return _load(name)


@st.cache_resource
def _run_cache() -> RunCache:
    return RunCache(*settings.trace_cache_bounds())


def cached_run(name: str, text: str, pair: str = "", keep=keep_for_app, kind: str = "app",
               as_batch: bool = False) -> Trace:
    """model.run(text, pair, keep=keep), cached per (name, text, pair, kind, as_batch) in the
    shared cache bounded by entries and bytes. `kind` names the `keep` selection, so different
    selections don't collide; as_batch runs text and pair as a padded batch of two instead of
    a sentence pair."""
    store = _run_cache()
    key = (name, text, pair, kind, as_batch)
    trace = store.get(key)
    if trace is None:
        with st.spinner("Running the model…"):
            model = get_model(name)
            if as_batch:
                trace = model.run([text, pair], keep=keep)
            else:
                trace = model.run(text, pair or None, keep=keep)
        store.put(key, trace)
    return trace


def get_trace(name: str, text: str, pair: str) -> Trace:
    return cached_run(name, text, pair)
