"""A model the engine does not know (model/foreign.py) runs on Hugging Face's own code, which
gives its attention patterns and nothing else: the Attention page shows them, and every other
page that needs the model says so in one line instead of running."""

from __future__ import annotations

import streamlit as st

from .page_registry import page_link
from .text import md_escape

# Pages that work with such a model: the attention page, and those that do not run the
# sidebar's model (start, lessons, teach, training).
WORKS_WITHOUT_ENGINE = frozenset({"", "start", "attention", "lessons", "teach", "training"})


def is_foreign(selection) -> bool:
    return bool(getattr(getattr(selection, "model", None), "foreign", False))


def gate(selection, url_path: str) -> None:
    """For a foreign model: a note in the sidebar and, on a page that needs the engine's own
    code, the same note in one line where the page would be, then stop."""
    if not is_foreign(selection):
        return
    note = md_escape(selection.model.pages_note)
    st.sidebar.info(note)
    if url_path not in WORKS_WITHOUT_ENGINE:
        st.info(note)
        page_link(st, "attention", label="Open the Attention page ▸", icon="")
        st.stop()
