"""A link that reopens the same view: model, text, layer and head live in the URL
(the page is the URL path). Read once per browser session, written after each run."""

from __future__ import annotations

import streamlit as st

from .settings import MAX_URL_TEXT

URL_KEYS = {"model": "sb_model", "text": "sb_text", "pair": "sb_pair",
            "layer": "attn_layer", "head": "attn_head"}
INT_KEYS = {"layer", "head"}


def load_from_url() -> None:
    """Seed session state from the query string, the first time this session runs."""
    if st.session_state.get("_url_loaded"):
        return
    st.session_state["_url_loaded"] = True
    params = st.query_params
    for param, key in URL_KEYS.items():
        if param not in params:
            continue
        value = params[param]
        if param in INT_KEYS:
            if not value.isdigit():
                continue
            value = int(value)
        st.session_state.setdefault(f"_url_{key}", value)


def url_default(key: str, default):
    """The value the URL asked for (once), else the default."""
    return st.session_state.pop(f"_url_{key}", default)


def write_to_url(**values) -> None:
    """Put the current view in the URL. Texts too long for a link are left out."""
    params = {}
    for name, value in values.items():
        if value is None or value == "":
            continue
        if name in ("text", "pair") and len(str(value)) > MAX_URL_TEXT:
            continue
        params[name] = str(value)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
