"""The start page's first visit: drawn at once, with the engine made ready behind it.

A server that has not run a page yet has not imported torch or loaded the default model: about
16 s on a busy 2-core machine. The start page draws from stored numbers (ui/start_example.py),
but the sidebar under it needs the model, and while the run waited for it the browser showed
Streamlit's "Stop" over a page that looked finished. So on a cold server the start page's run
ends after the page: a background thread, started once per process, imports the engine and
loads the default model (the model every visitor's first page loads anyway; its cost is the
same fixed one), and the sidebar says the model is getting ready, checks every few seconds,
and draws the whole sidebar once it is.

Nothing here imports torch: the thread does, off the page's run.
"""

from __future__ import annotations

import logging
import sys
import threading

import streamlit as st

DEFAULT_MODEL = "minilm"  # the sidebar's first choice, and the start page's example
CHECK_EVERY_SECONDS = 2
_READY = threading.Event()
_STARTED = threading.Lock()
_started = False
_LOG = logging.getLogger(__name__)


def ready() -> bool:
    """Whether the engine and the default model are loaded in this process (by the warm-up,
    or by a page that ran first)."""
    loaded = getattr(sys.modules.get("ui.cache"), "loaded", None)  # (None while it imports)
    return _READY.is_set() or (loaded is not None and loaded(DEFAULT_MODEL))


class _OffThePage(logging.Filter):
    """Streamlit warns that a thread has no page run ("missing ScriptRunContext") each time
    the shared cache is used from one: true and expected for this thread, so not logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.threadName != THREAD or "ScriptRunContext" not in record.getMessage()


THREAD = "engine-warm"
WARNS = "streamlit.runtime.scriptrunner_utils.script_run_context"  # the logger that says it


def start() -> None:
    """Begin the warm-up once per process; returns at once."""
    global _started
    with _STARTED:
        if _started:
            return
        _started = True
    logging.getLogger(WARNS).addFilter(_OffThePage())
    threading.Thread(target=_warm, name=THREAD, daemon=True).start()


def _warm() -> None:
    """Import the engine and load the default model into the shared cache (ui/cache.py: the
    same cache_resource every page loads it through, so a page that asks meanwhile waits for
    this load instead of starting its own)."""
    try:
        from ui import cache

        cache.warm(DEFAULT_MODEL)
    except Exception:  # noqa: BLE001 - the pages then load it themselves and say what failed
        _LOG.exception("the default model could not be loaded ahead of the first page")
    finally:
        _READY.set()


def note_in_sidebar() -> None:
    """In the sidebar of a cold server's start page: a line, and the check that brings the
    whole sidebar once the model is ready."""
    with st.sidebar:
        _waiting()


@st.fragment(run_every=CHECK_EVERY_SECONDS)
def _waiting() -> None:
    if ready():
        st.rerun(scope="app")
    st.caption(":material/hourglass_top: Getting the model ready. The text box and the "
               "model's choices appear here in a few seconds.")
