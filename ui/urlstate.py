"""A link that reopens the same view: model, text, layer and head live in the URL
(the page is the URL path). Read once per browser session, written after each run."""

from __future__ import annotations

import streamlit as st

from .settings import MAX_URL_TEXT

URL_KEYS = {"model": "sb_model", "text": "sb_text", "pair": "sb_pair",
            "layer": "attn_layer", "head": "attn_head"}
INT_KEYS = {"layer", "head"}


URL_INT_DIGITS = 6  # no layer, head or step of any model here needs more


def url_int(value) -> int | None:
    """A small non-negative integer from a link, or None. Strict on purpose: `str.isdigit()`
    accepts "²" and other Unicode digits that int() refuses, and int() of 5,000 digits
    raises; a link anyone can send must never break a page."""
    text = str(value).strip()
    if not 0 < len(text) <= URL_INT_DIGITS or not text.isascii() or not text.isdecimal():
        return None
    return int(text)


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
            value = url_int(value)
            if value is None:
                continue
        st.session_state.setdefault(f"_url_{key}", value)


def url_default(key: str, default):
    """The value the URL asked for (once), else the default."""
    return st.session_state.pop(f"_url_{key}", default)


def url_param(name: str) -> str | None:
    """A raw value from the link (a page's own key), or None."""
    return st.query_params.get(name)


def write_to_url(**values) -> None:
    """Set these keys in the link and keep the others; None or "" removes a key. The sidebar
    writes model, text and pair once per run; a page writes only its own keys (layer, head,
    step...). Texts too long for a link are left out."""
    params = dict(st.query_params)
    for name, value in values.items():
        too_long = name in ("text", "pair") and len(str(value)) > MAX_URL_TEXT
        if value is None or value == "" or too_long:
            params.pop(name, None)
        else:
            params[name] = str(value)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
